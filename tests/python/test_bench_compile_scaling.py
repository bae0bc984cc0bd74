"""bench compile_scaling: captures a GPT-style training step's graphs and recompiles them cold."""

import json

from inductor_cpp.bench import compile_scaling as cs


def test_to_device_rewrites_cpu_tensors_only():
    graph = {"inputs": [{"device": "cpu", "sizes": [2]}, {"device": "meta"}],
             "nodes": [{"outputs": [{"device": "cpu"}]}]}
    out = cs.to_device(graph, "cuda:0")
    assert out["inputs"][0]["device"] == "cuda:0" and out["inputs"][1]["device"] == "meta"
    assert out["nodes"][0]["outputs"][0]["device"] == "cuda:0"
    assert graph["inputs"][0]["device"] == "cpu"  # not modified in place


def test_phases_read_gpu_and_cpu_build_records():
    gpu = {"lowering_ms": 1.0, "emit_ms": 5.0, "passes": [{"ms": 2.0}, {"ms": 3.0}], "gpu": {"ptxas_ms": 7.0}}
    assert cs.phases(gpu) == {"lowering": 1.0, "passes": 5.0, "emit": 5.0, "assemble": 7.0}
    cpu = {"lowering_ms": 1.0, "emit_ms": 2.0, "passes": [], "cxx": {"seconds": 0.5}}
    assert cs.phases(cpu)["assemble"] == 500.0


def test_one_depth_end_to_end_on_the_cpu(tmp_path):
    """A 1-block model: forward and backward graphs captured, each recompiled cold, with
    kernels and a C++ compile in its phases; deeper models have more nodes."""
    sizes = {"hidden": 32, "heads": 2, "vocab": 64, "seq": 8, "batch": 2}
    graphs = cs.capture_graphs(1, sizes)
    assert len(graphs) == 2
    rows = [cs.recompile(g, "cpu") for g in graphs]
    for row in rows:
        assert row["nodes"] > 10 and row["kernels"] > 0, row
        assert row["phases"]["assemble"] > 0 and row["phases"]["passes"] > 0, row
    deeper = cs.capture_graphs(2, sizes)
    assert len(json.loads(deeper[0][0])["nodes"]) > rows[0]["nodes"]
    table = cs.report([dict(r, depth=1, graph=name) for r, name in zip(rows, ("forward", "backward"))])
    assert "forward" in table and "us/node" in table
