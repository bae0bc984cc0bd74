"""Shared fixtures: every test gets its own cache directory and a clean Dynamo state."""

from __future__ import annotations

import gc
import contextlib
import json
import logging
import os
import subprocess
import sys
import textwrap

import pytest
import torch

import inductor_cpp


_graphs_at_start: set[int] = set()


def test_graphs() -> list:
    """Compiled graphs made by the running test: live_graphs() minus those alive when it began
    (torch/AOT autograd can keep graphs of earlier tests alive past torch._dynamo.reset())."""
    return [g for g in inductor_cpp.live_graphs() if id(g) not in _graphs_at_start]


test_graphs.__test__ = False  # a helper, not a test


@pytest.fixture(autouse=True)
def fresh_state(tmp_path, monkeypatch):
    """A private cache root per test; Dynamo's caches and our counters reset. What a test may
    change for the whole process (the environment, torch's thread count: the bench CLI run
    in-process sets both) is put back after it."""
    environment = dict(os.environ)
    threads = torch.get_num_threads()
    monkeypatch.setenv("INDUCTOR_CPP_CACHE_DIR", str(tmp_path / "cache"))
    torch._dynamo.reset()
    gc.collect()  # compiled graphs of earlier tests may sit in reference cycles
    inductor_cpp.reset_counters()
    torch.manual_seed(0)
    _graphs_at_start.clear()
    _graphs_at_start.update(id(g) for g in inductor_cpp.live_graphs())
    yield
    torch._dynamo.reset()
    torch.set_num_threads(threads)
    os.environ.clear()
    os.environ.update(environment)


def compile_cpp(fn, **kwargs):
    return torch.compile(fn, backend="inductor_cpp", **kwargs)


def assert_same(actual, expected, rtol=1e-5, atol=1e-6):
    """Compiled vs eager: same structure, dtypes, shapes and (close) values."""
    if isinstance(expected, (tuple, list)):
        assert isinstance(actual, (tuple, list)) and len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_same(a, e, rtol, atol)
        return
    if isinstance(expected, torch.Tensor):
        assert isinstance(actual, torch.Tensor)
        assert actual.dtype == expected.dtype and actual.shape == expected.shape
        torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=True)
        return
    assert actual == expected


def run_python(code: str, env_extra: dict | None = None, timeout: int = 300) -> dict:
    """Runs `code` in a fresh interpreter (same venv), seeded like the in-process tests;
    returns the JSON it prints last."""
    code = "import torch\ntorch.manual_seed(0)\n" + textwrap.dedent(code)
    env = dict(os.environ)
    env.update(env_extra or {})
    proc = subprocess.run([sys.executable, "-c", code], env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"child failed:\n{proc.stdout}\n{proc.stderr}"
    lines = [l for l in proc.stdout.splitlines() if l.startswith("{")]
    assert lines, f"child printed no JSON:\n{proc.stdout}\n{proc.stderr}"
    result = json.loads(lines[-1])
    result["_stderr"] = proc.stderr
    return result


def fake_compiler(path, body: str):
    """An executable shell script at `path` standing in for the C++ compiler: it answers the
    version query (-dumpfullversion / -dumpversion) as g++ 12 would, then runs `body` (a compile
    that hangs, fails, prints errors, ...). Returns the path."""
    path.write_text("#!/bin/sh\n"
                    'case "$1" in -dump*) echo 12.0; exit 0;; esac\n' + body)
    path.chmod(0o755)
    return path


@contextlib.contextmanager
def collect_logs():
    """Collects the messages of the "inductor_cpp" logger (it does not propagate to root)."""
    messages: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record):
            messages.append(record.getMessage())

    handler = Collect()
    logger = logging.getLogger("inductor_cpp")
    logger.addHandler(handler)
    try:
        yield messages
    finally:
        logger.removeHandler(handler)
