"""INDUCTOR_CPP_DEBUG_DIR / options={"debug_dir": ...}: the contents of each graph's dump."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys

import torch

import inductor_cpp
from conftest import assert_same, collect_logs, compile_cpp

PASSES = ["eliminate_dead_code", "eliminate_common_subexpressions", "inline_producers", "direct_indices",
          "eliminate_dead_code", "absorb_epilogues", "split_reductions", "fuse_kernels", "eliminate_dead_code",
          "schedule", "fuse_horizontal", "plan_memory"]


def softmax_logcumsumexp(x):
    return torch.softmax(torch.sin(x) + 1, -1).logcumsumexp(0)


def only_subdir(root) -> str:
    (name,) = os.listdir(root)
    return os.path.join(root, name)


def read(directory, name) -> str:
    with open(os.path.join(directory, name)) as f:
        return f.read()


def test_dump_has_every_artifact(tmp_path):
    root = tmp_path / "dbg"
    x = torch.randn(4, 8)
    before = {id(g) for g in inductor_cpp.live_graphs()}
    assert_same(compile_cpp(softmax_logcumsumexp, options={"debug_dir": str(root)})(x), softmax_logcumsumexp(x))
    d = only_subdir(root)
    (graph,) = [g for g in inductor_cpp.live_graphs() if id(g) not in before]
    assert re.fullmatch(rf"\d{{3}}-inference-{graph.key[:12]}", os.path.basename(d))
    assert "torch.ops.aten.logcumsumexp.default" in read(d, "fx_graph.txt")
    assert "%7 = aten::logcumsumexp(%6, 0)" in read(d, "graph.txt")
    ir = sorted(os.listdir(os.path.join(d, "ir")))
    assert ir == ["00-lowered.txt"] + [f"{i:02d}-{p}.txt" for i, p in enumerate(PASSES, start=1)]
    assert "program {" in read(d, "ir/00-lowered.txt")
    assert "kernel %2.max, %5.sum, %6" in read(d, "ir/08-fuse_kernels.txt")
    assert "kernel kernel0(" in read(d, "ir/10-schedule.txt")
    assert "kernel kernel0(" in read(d, "schedule.txt")
    assert "kernel0 computes 7 node(s)" in read(d, "fusion.txt")
    assert 'extern "C" int32_t kernel0(' in read(d, "kernels.cpp")
    assert "namespace ic" in read(d, "ic_runtime.h")
    assert os.path.getsize(os.path.join(d, "kernels.so")) > 0
    assert "kernel0(%s0, %s1)" in read(d, "plan.txt")
    assert json.loads(read(d, "plan.json"))["kernel_library"] == "kernels.so"
    decisions = json.loads(read(d, "decisions.json"))
    logcumsumexp = [x for x in decisions if x["op"].startswith("aten::logcumsumexp")]
    assert len(logcumsumexp) == 1 and not logcumsumexp[0]["generated"] and "no lowering" in logcumsumexp[0]["reason"]
    assert "test_debug_dir.py" in logcumsumexp[0]["op"]
    (kernel,) = json.loads(read(d, "kernels.json"))
    assert kernel["name"] == "kernel0" and kernel["graph_nodes"] == [0, 1, 2, 3, 4, 5, 6]
    assert [p["written"] for p in kernel["params"]] == [False, True]
    assert kernel["params"][0] == {"buffer": "%in0", "dtype": "float32", "sizes": [4, 8],
                                   "strides": [8, 1], "written": False}
    assert kernel["flops"] > 0
    timings = json.loads(read(d, "timings.json"))
    assert timings["key"] == graph.key and timings["cache"] == "built"
    assert {"describe", "compile_graph", "total"} <= set(timings["python_ms"])
    assert {"import_ms", "key_ms", "build_ms", "cache_ms", "total_ms"} <= set(timings["compile_ms"])
    assert [p["name"] for p in timings["build"]["passes"]] == PASSES
    assert timings["build"]["cxx"]["ok"] and timings["build"]["cxx"]["seconds"] > 0
    assert os.path.exists(os.path.join(d, "inputs.pt"))  # saved by the first call
    saved = torch.load(os.path.join(d, "inputs.pt"))
    assert_same(saved[0], x)


def test_compile_command_and_repro_run_standalone(tmp_path):
    root = tmp_path / "dbg"
    compile_cpp(softmax_logcumsumexp, options={"debug_dir": str(root)})(torch.randn(4, 8))
    d = only_subdir(root)
    command = read(d, "compile_command.txt")
    assert command.startswith("# the C++ compiler command") and f"-I{d}" in command
    os.remove(os.path.join(d, "kernels.so"))
    subprocess.run(["sh", "compile_command.txt"], cwd=d, check=True)
    assert os.path.getsize(os.path.join(d, "kernels.so")) > 0
    env = dict(os.environ, INDUCTOR_CPP_CACHE_DIR=str(tmp_path / "cache2"))
    proc = subprocess.run([sys.executable, "repro.py"], cwd=d, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "inputs: the first call's (inputs.pt)" in proc.stdout
    assert "output 0: (4, 8) torch.float32 matches eager" in proc.stdout and "OK" in proc.stdout

    # --direct and --random, in this process: the exact ATen graph on random inputs
    spec = importlib.util.spec_from_file_location("repro_under_test", os.path.join(d, "repro.py"))
    repro = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(repro)
    (x,) = repro.make_inputs(random=True)
    assert x.shape == (4, 8) and x.stride() == (8, 1) and x.dtype == torch.float32
    module = repro.Repro()
    run = repro.compile_direct(module, repro.make_inputs(random=True))
    assert_same(run(*repro.make_inputs(random=True))[0], module(*repro.make_inputs(random=True))[0])


def test_env_variable_training_graphs_and_cache_hits(tmp_path, monkeypatch):
    root = tmp_path / "dbg"
    monkeypatch.setenv("INDUCTOR_CPP_DEBUG_DIR", str(root))
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Tanh())
    x = torch.randn(4, 8)
    compile_cpp(model)(x).sum().backward()
    names = sorted(os.listdir(root))
    assert [n.split("-")[1] for n in names] == ["forward", "backward"]
    torch._dynamo.reset()
    compile_cpp(model)(x).sum().backward()
    hits = [n for n in sorted(os.listdir(root)) if n not in names]
    assert [n.split("-")[1] for n in hits] == ["forward", "backward"]
    assert [n.split("-", 2)[2] for n in hits] == [n.split("-", 2)[2] for n in names]  # same keys
    for n in hits:
        d = os.path.join(root, n)
        assert json.loads(read(d, "timings.json"))["cache"] == "hit"
        assert read(d, "ir/00-lowered.txt").startswith("# cache hit: IR rebuilt")


def test_a_dump_that_cannot_be_written_is_a_warning(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    x = torch.randn(4, 8)
    with collect_logs() as messages:
        out = compile_cpp(softmax_logcumsumexp, options={"debug_dir": str(blocker)})(x)
    assert_same(out, softmax_logcumsumexp(x))
    assert any("could not write graph" in m for m in messages), messages
