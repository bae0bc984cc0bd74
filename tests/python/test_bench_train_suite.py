"""`python -m inductor_cpp.bench suite --mode train --breakdown` (issue 40): one quick CPU run end
to end (rows, checks, the breakdown's categories against the profiled step), and the breakdown's
attribution of CUDA kernels and its FLOP formulas on hand-made profiles (no GPU here)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

from inductor_cpp.bench import suite_breakdown as sb
from inductor_cpp.bench.suite_breakdown import Op

CATEGORY_SLACK = 0.05  # categories vs the profiled step: timer granularity between ranges


def _run_suite(tmp_path, only: str) -> tuple[subprocess.CompletedProcess, dict]:
    out_json = tmp_path / "suite.json"
    env = dict(os.environ)
    env.pop("INDUCTOR_CPP_CACHE_DIR", None)  # the suite makes its own fresh caches
    proc = subprocess.run(
        [sys.executable, "-m", "inductor_cpp.bench", "suite", "--mode", "train", "--device", "cpu",
         "--quick", "--only", only, "--no-stock", "--no-warm", "--breakdown", "--iters", "2",
         "--json", str(out_json), "--png", ""],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    return proc, json.loads(out_json.read_text())


def test_train_suite_breakdown_on_the_cpu(tmp_path):
    proc, data = _run_suite(tmp_path, "resnet18_train,gpt2_train")
    assert "inductor_cpp correctness: PASS" in proc.stdout
    assert "generated ms" in proc.stdout and "top " in proc.stdout
    assert data["config"]["mode"] == "train" and data["variants"] == ["eager", "inductor_cpp"]
    workloads = data["devices"]["cpu"]["workloads"]
    if importlib.util.find_spec("transformers") is None:
        assert workloads["gpt2_train"]["skipped"] == "skipped: needs transformers"
        assert "skipped: needs transformers" in proc.stdout
    else:
        assert workloads["gpt2_train"]["variants"]["inductor_cpp"]["check"]["ok"]
    w = workloads["resnet18_train"]
    assert w["train"] and "SGD" in w["description"]
    ours, eager = w["variants"]["inductor_cpp"], w["variants"]["eager"]
    assert ours["check"]["ok"] and ours["check"]["outputs"] == 1 + 62  # loss + 62 parameters
    assert ours["compile"]["graphs"] == 2  # forward and backward; the SGD step stays eager
    for variant in (ours, eager):
        b = variant["breakdown"]
        assert b["device"] == "cpu" and b["steps"] == 2
        assert b["step_ms"] == pytest.approx(variant["timing"]["median_ms"])
        assert set(b["categories_ms"]) == set(sb.CATEGORIES)
        assert all(v >= 0 for v in b["categories_ms"].values())
        assert sum(b["categories_ms"].values()) == pytest.approx(b["busy_ms"])
        assert 0 < b["busy_ms"] <= b["profiled_step_ms"] * (1 + CATEGORY_SLACK)
        assert b["profiled_host_ms"] >= -CATEGORY_SLACK * b["profiled_step_ms"]
        assert b["host_ms"] == pytest.approx(b["step_ms"] - b["busy_ms"])
        assert b["top"] and all(r["ms"] > 0 and r["category"] in sb.CATEGORIES for r in b["top"])
    cats = eager["breakdown"]["categories_ms"]
    assert cats["generated"] == 0 and cats["conv"] > 0 and cats["aten"] > 0
    mine = ours["breakdown"]
    assert mine["categories_ms"]["generated"] > 0
    assert mine["top"] == mine["kernels"][:10]
    generated = [r for r in mine["kernels"] if r["category"] == "generated"]
    assert generated and all(r["label"].startswith("inductor_cpp::kernel") for r in generated)
    # our kernels' bytes come from the graphs' kernel info, matched by range name
    assert any(r["gb_s"] and r["gb_s"] > 0 for r in generated)


# ------------------------------------------------------------- hand-made (CUDA-like) profiles

def _cuda_profile() -> list[Op]:
    """A step of ours (a generated kernel, a GPU library mm run through ATen, an ATen fallback),
    stock's Triton kernel, eager's convolution, and a copy."""
    kernel = Op("inductor_cpp::kernel3 (add, relu)", 5.0, kernels=[("kernel3", 100.0)])
    matrix = Op("inductor_cpp::matrix::mm (mm) [64, 32]", 4.0)
    mm = Op("aten::mm", 2.0, parent=matrix, shapes=[[64, 128], [128, 32], [64, 32]],
            kernels=[("sm90_xmma_gemm_f32", 50.0)])
    fallback = Op("aten::sort", 3.0, kernels=[("radixSortKernel", 30.0)])
    triton = Op("triton_poi_fused_add_0", 1.0, kernels=[("triton_poi_fused_add_0", 20.0)])
    conv = Op("aten::convolution", 1.0, shapes=[[2, 3, 16, 16], [8, 3, 3, 3], [8]],
              concrete=[None, None, None, [2, 2], [1, 1], [1, 1], False, [0, 0], 1])
    cudnn = Op("aten::cudnn_convolution", 2.0, parent=conv, kernels=[("implicit_gemm", 40.0)])
    copy = Op("aten::copy_", 1.0, kernels=[("Memcpy HtoD (Pageable -> Device)", 10.0)])
    engine = Op("autograd::engine::evaluate_function: MmBackward0", 7.0)
    return [kernel, matrix, mm, fallback, triton, conv, cudnn, copy, engine]


def test_breakdown_attributes_cuda_kernels_through_their_ranges():
    ops = _cuda_profile()
    intervals = [(0.0, 100.0), (50.0, 150.0), (200.0, 270.0)]  # union 220 us, 270 us of kernels
    b = sb.summarize(ops, intervals, steps=2, step_ms=0.5, profiled_ms=0.6, device=True,
                     bytes_of={"inductor_cpp::kernel3 (add, relu)": 4_000_000}, top=20)
    # 250 us of kernels attributed; 20 us of device time no range launched goes to "other"
    assert b["categories_ms"] == pytest.approx({"generated": 0.060, "gemm": 0.025, "conv": 0.020,
                                               "attention": 0.0, "aten": 0.015, "other": 0.015})
    assert b["busy_ms"] == pytest.approx(0.110) and b["host_ms"] == pytest.approx(0.390)
    # CPU self time by category (the engine's range is host time, in no category)
    assert b["cpu_ms"]["gemm"] == pytest.approx(0.003) and b["cpu_ms"]["aten"] == pytest.approx(0.002)
    rows = {r["label"]: r for r in b["top"]}
    ours = rows["inductor_cpp::kernel3 (add, relu)"]
    assert ours["gb_s"] == pytest.approx(4e6 / 100e-6 / 1e9) and ours["calls"] == 0.5
    gemm = rows["inductor_cpp::matrix::mm (mm) [64, 32]"]
    assert gemm["category"] == "gemm" and gemm["tflop_s"] == pytest.approx(2 * 64 * 32 * 128 / 50e-6 / 1e12)
    conv = rows["aten::convolution [[2, 3, 16, 16], [8, 3, 3, 3], [8]]"]
    assert conv["tflop_s"] == pytest.approx(2 * 2 * 8 * 8 * 8 * 27 / 40e-6 / 1e12)
    assert rows["triton_poi_fused_add_0"]["category"] == "generated"
    assert rows["radixSortKernel"]["category"] == "aten"
    assert rows["Memcpy HtoD"]["category"] == "other"


def test_library_kinds_and_flop_formulas():
    assert sb.library_kind("aten::addmm") == "gemm" and sb.library_kind("conv2d_backward") == "conv"
    assert sb.library_kind("aten::_scaled_dot_product_efficient_attention") == "attention"
    assert sb.library_kind("aten::convert_element_type") is None
    assert sb.library_kind("aten::add") is None
    assert sb.op_flops(Op("aten::bmm", 0, shapes=[[4, 8, 16], [4, 16, 2]])) == 2 * 4 * 8 * 2 * 16
    back = Op("aten::convolution_backward", 0, shapes=[[2, 8, 8, 8], [2, 3, 16, 16], [8, 3, 3, 3]],
              concrete=[None] * 10 + [[False, True, True]])  # weight gradient only
    assert sb.op_flops(back) == 2 * (2 * 8 * 8 * 8) * 27
    assert sb.op_flops(Op("aten::mm", 0)) is None  # no shapes recorded
    assert sb.union_us([(0, 2), (1, 3), (5, 6)]) == 4


def test_host_cost_probe_times_a_training_step_on_the_cpu():
    from inductor_cpp.bench import host_cost
    result = host_cost.main(["resnet18_train", "inductor_cpp", "--steps", "2", "--device", "cpu",
                             "--quick"])
    assert set(result) == {"forward_launch_ms", "backward_launch_ms", "step_ms"}
    assert 0 < result["forward_launch_ms"] + result["backward_launch_ms"] <= result["step_ms"] * 1.01
