"""The knobs registry from Python: docs/knobs.md is current, every INDUCTOR_CPP_* variable the
Python and shell sources name is declared, options come from it, codegen knobs change the cache
key, and an unknown INDUCTOR_CPP_* variable is reported once, naming the closest knob."""

from __future__ import annotations

import os
import re

import pytest
import torch

import inductor_cpp
from inductor_cpp import knobs, options
from conftest import run_python

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REGENERATE = "python -m inductor_cpp.knobs --markdown > docs/knobs.md"


def test_docs_knobs_md_is_current():
    with open(os.path.join(ROOT, "docs", "knobs.md"), encoding="utf-8") as f:
        written = f.read()
    assert written == knobs.markdown(), f"docs/knobs.md is stale; regenerate it: {REGENERATE}"


def _sources(*folders: str):
    for folder in folders:
        for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, folder)):
            dirnames[:] = [d for d in dirnames if d not in ("debug", "__pycache__")]
            for name in filenames:
                path = os.path.join(dirpath, name)
                if name.endswith((".py", ".sh")) and path != os.path.abspath(__file__):
                    yield path  # (this file names unknown variables on purpose)


def test_every_variable_the_python_and_shell_sources_name_is_a_knob():
    # C/C++ sources also spell macros (INDUCTOR_CPP_ENUM_ENTRY, ...) this way; `-DNAME` is a
    # CMake option.
    named = set()
    for path in _sources("python", "scripts", "tests"):
        with open(path, encoding="utf-8") as f:
            named |= set(re.findall(r"(?<!-D)\b(INDUCTOR_CPP_[A-Z0-9_]+)", f.read()))
    assert named, "no sources found"
    assert sorted(named - set(knobs.KNOBS)) == []


def test_typed_reads_see_the_environment(monkeypatch):
    monkeypatch.delenv("INDUCTOR_CPP_CACHE_MAX_BYTES", raising=False)
    assert knobs.get_count("INDUCTOR_CPP_CACHE_MAX_BYTES") == int(
        knobs.KNOBS["INDUCTOR_CPP_CACHE_MAX_BYTES"].default)
    monkeypatch.setenv("INDUCTOR_CPP_CACHE_MAX_BYTES", "4096")
    assert knobs.get_count("INDUCTOR_CPP_CACHE_MAX_BYTES") == 4096
    monkeypatch.setenv("INDUCTOR_CPP_DIRECT_INFERENCE", "Off")
    assert knobs.get_bool("INDUCTOR_CPP_DIRECT_INFERENCE") is False
    monkeypatch.setenv("INDUCTOR_CPP_PROGRESS", "")
    assert knobs.raw("INDUCTOR_CPP_PROGRESS") is None
    assert knobs.get_float("INDUCTOR_CPP_PROGRESS") == 1.0
    with pytest.raises(KeyError, match="did you mean INDUCTOR_CPP_CACHE_DIR"):
        knobs.get_text("INDUCTOR_CPP_CACHE_DRI")


def test_options_take_variable_doc_and_default_from_the_registry(monkeypatch):
    for name, knob in options.KNOWN.items():
        assert knob.option == name and knob.doc
        monkeypatch.delenv(knob.name, raising=False)
    resolved = options.resolve()
    for name in ("strict", "cache", "freezing", "layout_optimization", "shape_specializations"):
        knob = options.KNOWN[name]
        expected = knobs.get_count(knob.name) if knob.type == "count" else knob.default == "1"
        assert getattr(resolved, name) == expected, name
    monkeypatch.setenv("INDUCTOR_CPP_CACHE", "no")
    assert options.resolve().cache is False
    assert options.resolve(options={"cache": True}).cache is True  # the option wins


def _key_with(monkeypatch, env: dict[str, str]) -> str:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    torch._dynamo.reset()
    before = inductor_cpp.live_graphs()  # held, so that no new graph reuses their ids
    torch.compile(lambda x: torch.relu(x) + 1, backend="inductor_cpp")(torch.randn(8))
    (graph,) = [g for g in inductor_cpp.live_graphs() if all(g is not b for b in before)]
    return graph.key


def test_gpu_codegen_changes_the_key_of_a_compiled_graph(monkeypatch):
    """The compiler's key takes the codegen knobs (tests/cpp/cache_key_test.cpp flips each)."""
    monkeypatch.delenv("INDUCTOR_CPP_GPU_CODEGEN", raising=False)
    default = _key_with(monkeypatch, {})
    assert _key_with(monkeypatch, {"INDUCTOR_CPP_GPU_CODEGEN": "1"}) == default  # the default
    assert _key_with(monkeypatch, {"INDUCTOR_CPP_GPU_CODEGEN": "0"}) != default


def test_unknown_variable_is_reported_once_naming_the_closest_knob():
    message = "INDUCTOR_CPP_CACHE_DRI is not a known knob; did you mean INDUCTOR_CPP_CACHE_DIR?"
    out = run_python("""
        import json, inductor_cpp
        from inductor_cpp import knobs
        knobs.get_text("INDUCTOR_CPP_CACHE_DIR")  # a later read: nothing more
        print(json.dumps({}))
    """, {"INDUCTOR_CPP_CACHE_DRI": "/tmp/x"})
    assert out["_stderr"].count(message) == 1, out["_stderr"]
    clean = run_python("import json, inductor_cpp\nprint(json.dumps({}))")
    assert "is not a known knob" not in clean["_stderr"]
