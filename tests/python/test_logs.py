"""INDUCTOR_CPP_LOGS artifacts and levels, logs and the cache key, the progress line."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import textwrap

import pytest
import torch

import inductor_cpp
from inductor_cpp import dynamo_backend, logs
from conftest import collect_logs, compile_cpp, run_python


def softmax_logcumsumexp(x):
    return torch.softmax(torch.sin(x) + 1, -1).logcumsumexp(0)


@pytest.fixture
def logs_on():
    """Enable artifacts for one test (restores "nothing enabled" afterwards)."""

    def enable(spec: str) -> None:
        inductor_cpp.set_logs(spec)

    yield enable
    inductor_cpp.set_logs("")


def compiled_messages(spec: str, fn=softmax_logcumsumexp, x=None) -> list[str]:
    inductor_cpp.set_logs(spec)
    with collect_logs() as messages:
        compile_cpp(fn)(torch.randn(4, 8) if x is None else x)
    return messages


def test_graph_artifact(logs_on):
    messages = compiled_messages("graph")
    head = "[graph] graph inference(%in0: float32[4, 8]{8, 1} cpu)"
    assert any(m.startswith(head) for m in messages)
    assert not any(m.startswith("[cache]") for m in messages)


def test_ir_artifact_prints_each_pass_and_is_rebuilt_on_a_cache_hit(logs_on):
    messages = compiled_messages("ir")
    ir = [m for m in messages if m.startswith("[ir]")]
    assert any("as lowered:\nprogram {" in m for m in ir), ir[:1]
    for i, name in enumerate(["eliminate_dead_code", "eliminate_common_subexpressions",
                              "inline_producers"], start=1):
        assert any(f"after pass {i} {name} (" in m for m in ir), name
    assert any("fuse_kernels" in m and "kernel %2.max, %5.sum, %6" in m for m in ir)
    assert any("schedule" in m and "kernel kernel0(" in m for m in ir)
    torch._dynamo.reset()
    ir = [m for m in compiled_messages("ir") if m.startswith("[ir]")]
    assert any("cache hit: IR rebuilt" in m for m in ir)
    assert any("as lowered:" in m for m in ir)


def test_fusion_artifact_names_the_nodes_of_each_kernel(logs_on):
    fusion = [m for m in compiled_messages("fusion") if m.startswith("[fusion]")]
    assert len(fusion) == 1
    text = fusion[0]
    assert "8 node(s): 1 kernel(s), 1 ATen call(s)" in text
    assert "kernel0 computes 7 node(s):" in text and "%0 aten::sin (" in text
    assert "%6 aten::div.Tensor" in text
    assert "ATen call: %7 aten::logcumsumexp (" in text and "test_logs.py" in text


def test_schedule_artifact_prints_the_kernel_ir(logs_on):
    schedule = [m for m in compiled_messages("schedule") if m.startswith("[schedule]")]
    assert len(schedule) == 1
    assert "kernel kernel0(%in0: float32 in, %6: float32 out)" in schedule[0]
    assert "vector(" in schedule[0] and "extern node 7" in schedule[0]


def test_output_code_cache_and_fallbacks_artifacts(logs_on):
    messages = compiled_messages("output_code,cache,fallbacks")
    assert any(m.startswith("[output_code] graph ") and 'extern "C" int32_t kernel0(' in m
               for m in messages)
    assert any(m.startswith("[cache] graph ") and m.endswith(": built") for m in messages)
    assert any(m.startswith("[fallbacks] aten::logcumsumexp (") and "runs as an ATen call" in m
               for m in messages)
    torch._dynamo.reset()
    messages = compiled_messages("cache")
    assert any(m.startswith("[cache] graph ") and m.endswith(": hit") for m in messages)


def test_perf_artifact_reports_passes_and_the_cxx_compiler(logs_on):
    perf = [m for m in compiled_messages("perf") if m.startswith("[perf]")]
    text = "\n".join(perf)
    assert "(cache built): import" in text and "build: plan" in text
    assert "C++ compiler" in text and "for 1 kernel(s)" in text
    assert "passes: eliminate_dead_code" in text and "compiler command: " in text
    assert "inference graph" in text and "ready in" in text  # the Python side's total
    torch._dynamo.reset()
    text = "\n".join(m for m in compiled_messages("perf") if m.startswith("[perf]"))
    assert "(cache hit)" in text and "original build: plan" in text


def test_levels_and_all():
    try:
        inductor_cpp.set_logs("1")
        assert logs.requested() == ["cache", "cudagraphs", "fallbacks", "perf"]
        inductor_cpp.set_logs("2")
        assert {"graph", "fusion"} <= set(logs.requested()) and not logs.enabled("ir")
        inductor_cpp.set_logs("3")
        assert logs.enabled("output_code") and logs.enabled("schedule") and not logs.enabled("ir")
        inductor_cpp.set_logs("4")
        assert set(logs.requested()) == set(logs.ARTIFACTS)
        inductor_cpp.set_logs("all")
        assert set(logs.requested()) == set(logs.ARTIFACTS)
        inductor_cpp.set_logs("1,ir")
        assert logs.enabled("ir") and logs.enabled("cache") and not logs.enabled("graph")
        with pytest.raises(ValueError, match="or a level 0-4"):
            inductor_cpp.set_logs("7")
    finally:
        inductor_cpp.set_logs("")


def test_records_are_built_only_for_requested_artifacts():
    inductor_cpp.set_logs("")
    before = {id(g) for g in inductor_cpp.live_graphs()}
    compile_cpp(softmax_logcumsumexp)(torch.randn(4, 8))
    (graph,) = [g for g in inductor_cpp.live_graphs() if id(g) not in before]
    assert [a for a, _ in graph.logs() if a != "warning"] == []


def test_logging_does_not_change_the_cache_key(logs_on):
    before = {id(g) for g in inductor_cpp.live_graphs()}
    compile_cpp(softmax_logcumsumexp)(torch.randn(4, 8))
    (quiet,) = [g for g in inductor_cpp.live_graphs() if id(g) not in before]
    torch._dynamo.reset()
    compiled_messages("all")
    loud = [g for g in inductor_cpp.live_graphs() if g is not quiet and id(g) not in before]
    assert [g.key for g in loud] == [quiet.key]
    assert loud[0].cache_outcome == "hit"


def test_progress_needs_a_terminal(monkeypatch):
    assert dynamo_backend._progress("graph 0 (inference)") is None  # pytest captures stderr
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    monkeypatch.setattr(os, "isatty", lambda fd: True)
    assert dynamo_backend._progress("graph 0") == {"label": "graph 0", "after_s": 1.0}
    monkeypatch.setenv("INDUCTOR_CPP_PROGRESS", "0.5")
    assert dynamo_backend._progress("graph 0")["after_s"] == 0.5
    monkeypatch.setenv("INDUCTOR_CPP_PROGRESS", "0")
    assert dynamo_backend._progress("graph 0") is None


def test_progress_line_appears_on_a_terminal(tmp_path):
    code = textwrap.dedent("""
        import torch
        f = torch.compile(lambda x: torch.softmax(x.sin() + 1, -1), backend="inductor_cpp")
        f(torch.randn(8, 8))
        print("done")
    """)
    env = dict(os.environ, INDUCTOR_CPP_PROGRESS="0.01", INDUCTOR_CPP_CACHE_DIR=str(tmp_path / "c"))
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                            stderr=follower, stdin=subprocess.DEVNULL)
    os.close(follower)
    seen = b""
    while True:
        ready, _, _ = select.select([leader], [], [], 120)
        if not ready:
            break
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the child closed its end
            break
        if not chunk:
            break
        seen += chunk
    out, _ = proc.communicate(timeout=120)
    os.close(leader)
    assert proc.returncode == 0 and b"done" in out
    text = seen.decode(errors="replace")
    assert "inductor_cpp: compiling graph 0 (inference)" in text, text
    assert "\x1b[K" in text  # the line is erased when the compile ends


def test_torch_profiler_names_generated_and_matrix_steps():
    """Each generated kernel and matrix step is a torch.profiler range named after the ops it
    computes; ATen calls show up under their own names as usual."""

    def linear_gelu_softmax(x, w, b):
        return torch.nn.functional.gelu(torch.nn.functional.linear(x, w, b)).softmax(-1).logcumsumexp(0)

    x, w, b = torch.randn(64, 32), torch.randn(48, 32), torch.randn(48)
    compiled = compile_cpp(linear_gelu_softmax, options={"matrix_kernels": True})
    expected = linear_gelu_softmax(x, w, b)
    torch.testing.assert_close(compiled(x, w, b), expected)
    with torch.profiler.profile() as prof:
        torch.testing.assert_close(compiled(x, w, b), expected)
    names = [e.name for e in prof.events()]
    ours = sorted({n for n in names if n.startswith("inductor_cpp::")})
    # Matrix steps also name their output's sizes (convolutions: stride and padding too).
    assert "inductor_cpp::matrix::addmm (addmm, gelu) [64, 48]" in ours, ours
    assert any(n.startswith("inductor_cpp::kernel") and "amax" in n and "div" in n for n in ours), ours
    assert "aten::logcumsumexp" in names


# A fresh process compiling one graph (for TORCH_LOGS, which torch reads when it is imported).
ONE_GRAPH = """
    import json, torch
    f = torch.compile(lambda x: torch.sin(x) * 3 + 1, backend="inductor_cpp")
    with torch.no_grad():
        f(torch.randn(16))
    print(json.dumps({}))
"""


def test_torch_logs_output_code_shows_our_kernels_too():
    """TORCH_LOGS=output_code (torch's own switch for stock Inductor's code) prints our plan and
    generated C++ as well; torch._logging.set_logs(output_code=True) does the same in-process."""
    out = run_python(ONE_GRAPH, {"TORCH_LOGS": "output_code", "INDUCTOR_CPP_LOGS": ""})
    assert "[output_code] graph " in out["_stderr"] and 'extern "C"' in out["_stderr"], out["_stderr"][-2000:]
    assert "[cache]" not in out["_stderr"]  # only what torch's switch asked for
    torch._logging.set_logs(output_code=True)
    try:
        with collect_logs() as messages:
            compile_cpp(lambda x: x.cos() - 2)(torch.randn(8))
    finally:
        torch._logging.set_logs()
    assert any(m.startswith("[output_code] graph ") and 'extern "C"' in m for m in messages), messages
    logs.set_logs("")


def test_torch_logs_with_our_module_name_turns_on_our_log():
    """TORCH_LOGS="+inductor_cpp": every artifact of ours (torch set our logger to DEBUG when
    it was imported, with its handler, which then prints our records once)."""
    out = run_python(ONE_GRAPH, {"TORCH_LOGS": "+inductor_cpp", "INDUCTOR_CPP_LOGS": ""})
    err = out["_stderr"]
    for artifact in ("[cache]", "[perf]", "[fusion]", "[output_code]", "[ir]"):
        assert artifact in err, (artifact, err[-3000:])
    assert err.count("[cache] graph ") == 1, err[-3000:]  # one handler, not two
