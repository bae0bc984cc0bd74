"""bfloat16 matrix multiplies in compiled graphs (runtime/matmul_bf16_step.h): with the
"freezing" option on a CPU with usable AMX tiles, a 2-D bf16 mm / addmm (nn.Linear) of up to
256 rows runs on our AMX GEMM, B kept packed across calls, the bias added in fp32 and the result
rounded once to bf16; without freezing, without AMX, over 256 rows and for what the step does not
take (bmm, alpha != 1), ATen's bf16 GEMM runs as before.

Checked against a float64 product of the same bf16 inputs: within one bf16 rounding of it,
plus the fp32 sum's own error (eager's oneDNN result meets the same bound)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.profiler import profile

from conftest import test_graphs
from inductor_cpp import _C

AMX = _C.matrix.cpu_features()["amx_usable"]
needs_amx = pytest.mark.skipif(not AMX, reason="no usable AMX bf16 on this CPU: bf16 stays ATen")


def compile_cpp(fn, **options):
    options = {"matrix_kernels": True, "freezing": True, **options}
    return torch.compile(fn, backend="inductor_cpp", options=options)


def assert_bf16_product(actual, a, b, bias=None):
    """actual (bf16) == bias + a @ b up to one bf16 rounding and the fp32 sum's error."""
    assert actual.dtype == torch.bfloat16
    exact = a.double() @ b.double()
    terms = a.double().abs() @ b.double().abs()
    if bias is not None:
        exact, terms = exact + bias.double(), terms + bias.double().abs()
    ulp = torch.exp2(torch.floor(torch.log2(exact.abs().clamp_min(2.0**-126))) - 7)
    bound = ulp + terms * a.shape[-1] * 2.0**-23
    excess = (actual.double() - exact).abs() - bound
    assert excess.max() <= 0, f"off by up to {excess.max().item()} beyond one bf16 rounding"


def matmul_steps(graph) -> list[str]:
    return [line.strip() for line in graph.plan_text.splitlines() if "matrix::" in line]


def aten_gemms_in(fn, *args) -> list[str]:
    """The ATen GEMM calls one call of fn makes (torch.profiler)."""
    with profile() as prof:
        fn(*args)
    return [e.key for e in prof.key_averages() if e.key in ("aten::mm", "aten::addmm")]


def bf16(*shape):
    return torch.randn(*shape).bfloat16()


@needs_amx
@pytest.mark.parametrize("bias_shape, kind", [(None, None), ((45,), "bias_col"),
                                              ((1, 45), "bias_col"), ((33, 1), "bias_row"),
                                              ((33, 45), "residual")])
def test_mm_and_addmm_run_on_amx(bias_shape, kind):
    a, b = bf16(33, 70), bf16(70, 45)
    bias = None if bias_shape is None else bf16(*bias_shape)
    fn = (lambda a, b: torch.mm(a, b)) if bias is None else (lambda a, b: torch.addmm(bias, a, b))
    compiled = compile_cpp(fn)
    for _ in range(3):  # the first call packs nothing (runs ATen); then B is cached
        actual = compiled(a, b)
        assert_bf16_product(actual, a, b, bias)
    (graph,) = test_graphs()
    steps = matmul_steps(graph)
    assert len(steps) == 1, graph.plan_text
    assert "aten::mm" not in graph.plan_text and "aten::addmm" not in graph.plan_text
    if kind:
        assert f"-> {kind}(" in steps[0], graph.plan_text
    assert aten_gemms_in(compiled, a, b) == []  # B cached: our kernels, no ATen GEMM


@needs_amx
def test_linear_layers_of_a_bf16_model():
    model = torch.nn.Sequential(torch.nn.Linear(96, 200), torch.nn.GELU(),
                                torch.nn.Linear(200, 50)).bfloat16().eval()
    x = bf16(4, 9, 96)
    compiled = compile_cpp(model)
    with torch.no_grad():
        for _ in range(3):
            actual = compiled(x)
        expected = model(x)
    assert actual.dtype == torch.bfloat16 and actual.shape == expected.shape
    # Two roundings apart (each layer's output and the GELU's): compare as bf16 results.
    torch.testing.assert_close(actual.float(), expected.float(), rtol=2e-2, atol=2e-2)
    (graph,) = test_graphs()
    assert len(matmul_steps(graph)) == 2, graph.plan_text
    with torch.no_grad():
        assert aten_gemms_in(compiled, x) == []


@needs_amx
def test_first_call_and_changing_b_run_aten():
    """B not cached (its first sighting, or a B that changes every call): ATen's GEMM."""
    a = bf16(40, 64)
    compiled = compile_cpp(lambda a, b: torch.mm(a, b))
    b = bf16(64, 48)
    assert aten_gemms_in(compiled, a, b) == ["aten::mm"]
    for _ in range(3):
        b = bf16(64, 48)  # a new tensor every call: never cached
        assert_bf16_product(compiled(a, b), a, b)
    assert aten_gemms_in(compiled, a, bf16(64, 48)) == ["aten::mm"]


@needs_amx
def test_in_place_weight_update_is_seen():
    """freezing trusts the version counter: an in-place update (an optimizer step) bumps it."""
    lin = torch.nn.Linear(64, 48).bfloat16()
    x = bf16(20, 64)
    compiled = compile_cpp(lin)
    with torch.no_grad():
        for _ in range(3):
            compiled(x)
        lin.weight.mul_(-2)
        actual = compiled(x)
    assert_bf16_product(actual, x, lin.weight.detach().t(), lin.bias.detach())


@needs_amx
def test_dynamic_batch_runs_on_amx():
    lin = torch.nn.Linear(64, 48).bfloat16()
    compiled = torch.compile(lin, backend="inductor_cpp", dynamic=True,
                             options={"matrix_kernels": True, "freezing": True,
                                      "shape_specializations": 0})
    with torch.no_grad():
        for rows in (5, 17, 33, 40, 300):
            x = bf16(rows, 64)
            for _ in range(2):
                assert_bf16_product(compiled(x), x, lin.weight.t(), lin.bias)
            # Over kBf16AmxMaxRows (256) rows the step calls ATen's GEMM (faster there).
            assert aten_gemms_in(compiled, x) == (["aten::addmm"] if rows > 256 else [])
    (graph,) = test_graphs()
    assert len(matmul_steps(graph)) == 1, graph.plan_text


@pytest.mark.parametrize("case", ["bmm", "alpha", "many_rows", "not_frozen", "no_amx"])
def test_what_stays_aten(case):
    if case == "no_amx" and AMX:
        pytest.skip("AMX is usable here: bf16 mm runs on it")
    options = {"freezing": False} if case == "not_frozen" else {}
    if case == "bmm":
        fn, args = (lambda a, b: torch.bmm(a, b)), (bf16(3, 8, 16), bf16(3, 16, 8))
        expected_op = "aten::bmm"
    elif case == "alpha":
        fn, args = (lambda c, a, b: torch.addmm(c, a, b, alpha=0.5)), (bf16(8), bf16(8, 16),
                                                                       bf16(16, 8))
        expected_op = "aten::addmm"
    else:  # many_rows: over kBf16AmxMaxRows (256), where ATen's GEMM is the faster
        fn, args = (lambda a, b: F.relu(a @ b)), (bf16(300 if case == "many_rows" else 20, 64),
                                                   bf16(64, 48))
        expected_op = "aten::mm"
    torch.testing.assert_close(compile_cpp(fn, **options)(*args), fn(*args), rtol=1e-2, atol=1e-2)
    (graph,) = test_graphs()
    assert not matmul_steps(graph) and expected_op in graph.plan_text, graph.plan_text
