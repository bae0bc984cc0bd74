"""`python -m inductor_cpp.bench kernels`: each kernel of a compiled graph run alone (numbers are
reported, never asserted: timings on a shared machine are noise)."""

from __future__ import annotations

import json
import os
import socket
from dataclasses import asdict

import pytest
import torch

import inductor_cpp
from inductor_cpp.bench import __main__ as bench_main
from inductor_cpp.bench import kernels, machine
from conftest import compile_cpp


def two_kernels(x, w):
    h = torch.softmax(x * 2, -1)  # kernel0: a row reduction and its epilogue
    return h @ w, (h + 1).sum(0)  # mm falls back; the column sum is a second kernel


@pytest.fixture
def compiled_graph(tmp_path):
    root = tmp_path / "dbg"
    before = {id(g) for g in inductor_cpp.live_graphs()}
    compile_cpp(two_kernels, options={"debug_dir": str(root)})(torch.randn(16, 32),
                                                                torch.randn(32, 8))
    (graph,) = [g for g in inductor_cpp.live_graphs() if id(g) not in before]
    (sub,) = os.listdir(root)
    return graph, os.path.join(root, sub)


@pytest.fixture
def cached_machine_limits(tmp_path, monkeypatch):
    """Limits as the probe would cache them, so that no probe runs in the test."""
    monkeypatch.setenv("INDUCTOR_CPP_MACHINE_DIR", str(tmp_path / "machine"))
    threads = torch.get_num_threads()
    limits = machine.MachineLimits(host=socket.gethostname(), threads=threads,
                                   torch=torch.__version__, copy_dram_gbs=10.0,
                                   copy_cache_gbs=20.0, triad_dram_gbs=10.0, matmul_gflops=100.0,
                                   config=asdict(machine.ProbeConfig(threads=threads)),
                                   measured_at="test")
    os.makedirs(machine.cache_dir())
    with open(machine.cache_path(threads), "w") as f:
        json.dump(limits.to_dict(), f)
    return limits


def test_every_kernel_runs_alone_from_a_debug_dir(compiled_graph):
    _, directory = compiled_graph
    results = kernels.run_kernels(directory, threads=1, iters=3, warmup=1)
    assert [r.name for r in results] == ["kernel0", "kernel1"]
    for r in results:
        assert r.error is None and r.median_s > 0 and len(r.samples_s) == 3
        assert r.gbs > 0 and r.gflops > 0 and r.flops > 0
    # kernel0 reads x (16x32) and writes h (16x32), float32
    assert results[0].bytes == 2 * 16 * 32 * 4 and results[0].params == 2


def test_cli_with_a_cache_key_prefix(compiled_graph, cached_machine_limits, capsys, tmp_path):
    graph, _ = compiled_graph
    out_json = tmp_path / "k.json"
    rc = bench_main.main(["kernels", graph.key[:10], "--iters", "3", "--warmup", "1",
                          "--json", str(out_json)])
    out = capsys.readouterr().out
    assert rc == 0
    assert f"kernels of {graph.key[:10]}: 2 kernel(s)" in out
    assert "copy 10.0 GB/s (DRAM" in out  # the cached limits, no probe
    assert "kernel0" in out and "kernel1" in out and "GB/s" in out and "of matmul" in out
    data = json.loads(out_json.read_text())
    assert [k["name"] for k in data["kernels"]] == ["kernel0", "kernel1"]
    assert data["kernels"][0]["size_class"] == "cache"
    assert data["kernels"][0]["copy_share"] == pytest.approx(data["kernels"][0]["gbs"] / 20.0)


def test_debug_dir_without_library_is_compiled_from_its_command(compiled_graph):
    _, directory = compiled_graph
    os.remove(os.path.join(directory, "kernels.so"))
    results = kernels.run_kernels(directory, threads=1, iters=2, warmup=0)
    assert len(results) == 2 and all(r.error is None for r in results)


def test_bad_targets_are_explained(tmp_path):
    with pytest.raises(SystemExit, match="no cache entry"):
        kernels.locate("abcdef0123")
    with pytest.raises(SystemExit, match="neither a directory nor a cache key"):
        kernels.locate("not-a-key")
    with pytest.raises(SystemExit, match="neither a graph's debug directory nor a debug root"):
        kernels.locate(str(tmp_path))


def test_layout_helpers():
    assert kernels.span([4, 8], [8, 1]) == 32
    assert kernels.span([4, 8], [0, 1]) == 8  # broadcast rows share storage
    assert kernels.span([0, 8], [8, 1]) == 0
    t = kernels.make_argument({"dtype": "int64", "sizes": [3, 2], "strides": [1, 3]},
                              torch.Generator())
    assert t.stride() == (1, 3) and t.dtype == torch.int64 and not t.any()
