"""`python -m inductor_cpp.bench matrix` (issue 7's matrix benchmark) runs end to end on tiny
shapes (--smoke): every group produces rows, every compiled output matches eager, the float32
matmuls of ours run on our library. No timing assertions (the machine is shared); the real
numbers come from running the command by hand (docs/benchmarks.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from inductor_cpp import _C
from inductor_cpp.bench import matrix, matrix_cases, matrix_report


def _run_bench(tmp_path, *argv: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, INDUCTOR_CPP_CACHE_DIR=str(tmp_path / "cache"))
    return subprocess.run([sys.executable, "-m", "inductor_cpp.bench", "matrix", *argv], env=env,
                          capture_output=True, text=True, timeout=600)


def test_smoke_run_produces_checked_rows(tmp_path):
    out = tmp_path / "matrix.json"
    proc = _run_bench(tmp_path, "--smoke", "--no-stock", "--threads", "1", "--iters", "1",
                      "--warmup", "0", "--json", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "inductor_cpp correctness: PASS" in proc.stdout
    assert "1 thread(s)" in proc.stdout

    data = json.loads(out.read_text())
    assert data["ok"] is True and data["environment"]["threads"] == 1
    cases = data["cases"]
    assert {c["group"] for c in cases} == set(matrix.GROUPS)
    for case in cases:
        if case["skipped"]:  # only the AMX row may be skipped, on a CPU without AMX
            assert case["group"] == "amx" and "AMX" in case["skipped"]
            continue
        variants = case["variants"]
        assert {matrix.EAGER, matrix.OURS} <= set(variants), case["name"]
        assert matrix.STOCK not in variants  # --no-stock
        assert case["flops"] and case["flops"] > 0, case["name"]
        for name, v in variants.items():
            assert v["error"] is None, (case["name"], name, v["error"])
            assert v["timing"]["median_s"] > 0 and len(v["timing"]["samples_s"]) == 1
            assert v["first_call_s"] > 0 and v["gflops"] > 0 and v["vs_eager"] > 0
            if name != matrix.EAGER:
                assert v["check"]["ok"] and v["check"]["mismatches"] == 0, (case["name"], name)
        if case["group"] in ("gemm", "addmm", "small"):  # float32 matmuls run on our library
            assert variants[matrix.OURS]["path"] == "lib 1/1", case["name"]
        if case["group"] == "conv_bwd":  # each gradient on our convolution backward
            assert variants[matrix.OURS]["path"] == "lib 1/1", (case["name"], variants[matrix.OURS]["path"])
            if hasattr(getattr(_C, "matrix", None), "conv2d_backward_f32"):
                assert matrix_cases.LIBRARY in variants, case["name"]
        if case["group"] == "tile":  # the consumer inside the GEMM, and as its own kernel
            assert variants[matrix.OURS]["path"] == "lib 1/1", case["name"]
            assert variants[matrix.TILE_OFF]["path"] == "lib 1/1", case["name"]
        if case["group"] == "models":
            assert variants[matrix.OURS_OFF]["path"].startswith("lib 0/")
        if case["group"] == "amx" and "frozen" in case["name"]:  # bf16 Linear on AMX
            assert variants[matrix.OURS]["path"] == "lib 1/1", case["name"]
        elif case["group"] == "amx" or (case["group"] in ("gemm", "addmm", "small")
                                        and hasattr(getattr(_C, "matrix", None), "gemm_f32")):
            assert matrix_cases.LIBRARY in variants, case["name"]  # checked against eager above
    names = [c["name"] for c in cases]
    assert "Linear 8x24x40" in names and "mm 1x24x40" in names
    assert any(n.startswith("conv b2 ") and n.endswith("+b+res+relu") for n in names)
    assert any(n.startswith("conv_bwd b2 ") and n.endswith(" dx") for n in names)
    assert any(n.startswith("conv_bwd b2 3x3/2") and n.endswith(" dw") for n in names)
    if hasattr(_C, "matrix"):
        assert data["peaks"]["fma"] > 0
        assert (data["peaks"]["amx"] is not None) == data["cpu_features"]["amx_usable"]


def test_groups_are_parsed_and_unknown_ones_rejected():
    assert matrix._parse_groups("gemm, conv") == ["gemm", "conv"]
    with pytest.raises(SystemExit, match="nonesuch"):
        matrix._parse_groups("gemm,nonesuch")


def test_matmul_path_counts_library_and_aten_steps():
    plan = ("%s3 = matrix::addmm(%s2, %s3) -> bias_col(%s1) -> relu\n"
            "%s5 = aten::convolution(%s0, %s1, None, [1, 1])\n"
            "%s6 = aten::relu(%s5)\n")
    assert matrix._matmul_path([plan, "%s2 = aten::mm(%s0, %s1)"]) == "lib 1/3"
    assert matrix._matmul_path([]) == "lib 0/0"


def test_tolerance_grows_with_the_reduction_length():
    small = matrix._tolerance(matrix.Workload(None, (), 1.0, k=64))
    large = matrix._tolerance(matrix.Workload(None, (), 1.0, k=4096))
    assert small == (1e-5, 1e-5) and large[0] == pytest.approx(8e-5)
    assert matrix._tolerance(matrix.Workload(None, (), 1.0)) == (matrix.MODEL_TOL,) * 2


@pytest.mark.skipif(not hasattr(_C, "matrix"), reason="this _C predates the matrix bindings")
def test_peak_bindings():
    import torch

    features = _C.matrix.cpu_features()
    assert set(features) >= {"avx2", "avx512", "amx_usable", "describe"}
    assert _C.matrix.fma_peak_gflops(1, iterations=100_000, reps=1) > 0
    if features["amx_usable"]:
        assert _C.matrix.amx_peak_gflops(1, iterations=10_000, reps=1) > 0
        a, b = torch.randn(40, 64).bfloat16(), torch.randn(64, 24).bfloat16()
        c = _C.matrix.gemm_bf16(a, b, 1)
        assert c.dtype == torch.float32
        torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-5, atol=1e-5)
    else:
        with pytest.raises(RuntimeError, match="AMX"):
            _C.matrix.amx_peak_gflops(1)
    with pytest.raises(ValueError):
        _C.matrix.fma_peak_gflops(0)


def test_rows_faster_than_the_peak_are_flagged():
    case = matrix.Case("gemm", "mm 64^3", lambda: None, (1, 0))
    case.flops = 2e9  # 2 GFLOP in 10 ms: 200 GFLOP/s
    case.results[matrix.EAGER] = {"timing": matrix.timing.summarize([0.01])}
    assert matrix_report.peak_warnings([case], {"fma": 1000.0, "amx": None}) == []
    (warning,) = matrix_report.peak_warnings([case], {"fma": 100.0, "amx": None})
    assert "200% of the FMA peak" in warning and "--fma-peak" in warning


@pytest.mark.skipif(not hasattr(_C, "matrix"), reason="this _C predates the matrix bindings")
def test_float32_library_binding_matches_torch():
    import torch

    torch.manual_seed(0)
    a, w, bias = torch.randn(37, 70), torch.randn(45, 70), torch.randn(45)
    b = w.t()  # transposed B, as nn.Linear's weight
    want = torch.relu(torch.addmm(bias, a, b))
    for packed in (None, _C.matrix.pack_b_f32(b)):
        got = _C.matrix.gemm_f32(a, b, 2, bias, True, packed)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    one_row = _C.matrix.gemm_f32(a[:1], b, 1)  # a matrix-vector product
    torch.testing.assert_close(one_row, a[:1] @ b, rtol=1e-5, atol=1e-5)
    strided = torch.randn(70, 90)[:, ::2]  # neither plain nor transposed: copied
    torch.testing.assert_close(_C.matrix.gemm_f32(a, strided, 1), a @ strided, rtol=1e-5,
                               atol=1e-5)
    with pytest.raises(ValueError, match="packed for another shape"):
        _C.matrix.gemm_f32(a, b[:, :40], 1, packed=_C.matrix.pack_b_f32(b))
    with pytest.raises(ValueError, match="float32"):
        _C.matrix.gemm_f32(a.double(), b, 1)


def test_shapes_replace_the_groups():
    cases = matrix_cases.shape_cases("8x16x32, L4x8x16,r2x4x8", threads=1)
    assert [(c.group, c.name) for c in cases] == [
        ("shapes", "mm 8x16x32"), ("shapes", "Linear 4x8x16"), ("shapes", "relu(addmm) 2x4x8")]
    work = cases[1].make()
    assert work.flops == 2.0 * 4 * 8 * 16 and work.inputs[0].shape == (4, 16)
    with pytest.raises(SystemExit, match="bad shape"):
        matrix_cases.shape_cases("8x16", threads=1)
