"""pytest setup for the OpInfo slice: one private inductor_cpp cache directory per session.

Why: tests must not read or write the user's ~/.cache/inductor_cpp. One directory for the whole
session (not one per test) lets samples that produce the same graph hit the cache, which keeps
the slice fast; cache hits do not change what is compared. The harness resets Dynamo itself.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)  # `import harness` from the test modules, whatever the import mode


@pytest.fixture(scope="session", autouse=True)
def opinfo_cache_dir(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("INDUCTOR_CPP_CACHE_DIR", str(tmp_path_factory.mktemp("inductor_cpp_cache")))
    yield
    mp.undo()
