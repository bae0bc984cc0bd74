"""With matrix_kernels on (the default), float32 CPU matrix multiplies in compiled graphs run
on our GEMM library (GemmCall library steps, matrix/gemm.h), with a following
activation or residual add folded into the GEMM epilogue; bfloat16 mm / addmm run on the AMX
GEMM where usable (test_matmul_bf16.py); other dtypes stay ATen calls.
mm/addmm keep B packed across calls while its version and contents are unchanged
(runtime/matmul_step.h; tested in test_matmul_weights.py). Compared against eager with a GEMM
tolerance (the summation order differs from MKL's)."""

from __future__ import annotations

import re

import pytest
import torch
import torch.nn.functional as F

from conftest import assert_same, test_graphs

RTOL, ATOL = 1e-4, 1e-5


def compile_cpp(fn):
    return torch.compile(fn, backend="inductor_cpp", options={"matrix_kernels": True})


def test_matrix_kernels_are_on_by_default():
    x, w = torch.randn(8, 16), torch.randn(16, 4)
    torch.compile(torch.mm, backend="inductor_cpp")(x, w)
    (graph,) = test_graphs()
    assert "matrix::mm" in graph.plan_text and "aten::mm" not in graph.plan_text, graph.plan_text


def test_matrix_kernels_off_leaves_matmuls_to_aten():
    x, w = torch.randn(8, 16), torch.randn(16, 4)
    torch.compile(torch.mm, backend="inductor_cpp", options={"matrix_kernels": False})(x, w)
    (graph,) = test_graphs()
    assert "matrix::" not in graph.plan_text and "aten::mm" in graph.plan_text, graph.plan_text


def run_one_graph(fn, *args):
    """Runs fn compiled and eagerly, compares; returns (plan text, counters) of its one graph."""
    expected = fn(*args)
    actual = compile_cpp(fn)(*args)
    assert_same(actual, expected, rtol=RTOL, atol=ATOL)
    graphs = test_graphs()
    assert len(graphs) == 1, f"expected one graph, got {len(graphs)}"
    return graphs[0].plan_text, graphs[0].counters()


def matmul_steps(plan_text: str) -> list[str]:
    return [line.strip() for line in plan_text.splitlines() if "matrix::" in line]


def test_mm():
    plan, c = run_one_graph(torch.mm, torch.randn(33, 70), torch.randn(70, 45))
    assert len(matmul_steps(plan)) == 1 and "aten::mm" not in plan, plan
    assert c["ops_fallback"] == 0 and c["kernels"] == 0, c
    assert c["matrix_kernels"] == 1 and c["aten_calls"] == 0, c  # a matrix kernel, not ATen


@pytest.mark.parametrize("bias_shape, kind", [((45,), "bias_col"), ((1, 45), "bias_col"),
                                              ((33, 1), "bias_row"), ((33, 45), "residual")])
def test_addmm_bias_shapes(bias_shape, kind):
    fn = lambda b, x, y: torch.addmm(b, x, y)
    plan, c = run_one_graph(fn, torch.randn(bias_shape), torch.randn(33, 70), torch.randn(70, 45))
    steps = matmul_steps(plan)
    assert len(steps) == 1 and f"-> {kind}(" in steps[0], plan
    assert c["ops_fallback"] == 0, c


def test_addmm_alpha_and_beta():
    b, x, y = torch.randn(45), torch.randn(33, 70), torch.randn(70, 45)
    plan, _ = run_one_graph(lambda b, x, y: torch.addmm(b, x, y, alpha=0.5), b, x, y)
    assert "alpha=0.5" in plan, plan
    torch._dynamo.reset()
    plan, _ = run_one_graph(lambda b, x, y: torch.addmm(b, x, y, beta=2.0), b, x, y)
    assert not matmul_steps(plan), plan  # beta != 1 stays ATen


@pytest.mark.parametrize("m, k, n", [(1, 70, 45), (33, 1, 45), (33, 70, 1)])
def test_mm_degenerate_dims(m, k, n):
    plan, _ = run_one_graph(torch.mm, torch.randn(m, k), torch.randn(k, n))
    assert matmul_steps(plan), plan


def test_bmm():
    plan, c = run_one_graph(torch.bmm, torch.randn(5, 17, 40), torch.randn(5, 40, 23))
    assert "matrix::bmm" in plan and c["ops_fallback"] == 0, plan


def test_bmm_with_residual_absorbed():
    fn = lambda x, y, r: torch.bmm(x, y) + r
    plan, c = run_one_graph(fn, torch.randn(3, 17, 40), torch.randn(3, 40, 23), torch.randn(3, 17, 23))
    assert "-> residual(" in plan and c["kernels"] == 0, plan


def test_linear_uses_transposed_weight():
    lin = torch.nn.Linear(64, 48)
    with torch.no_grad():
        plan, c = run_one_graph(lin, torch.randn(20, 64))
    assert "matrix::addmm" in plan and c["ops_fallback"] == 0 and c["kernels"] == 0, plan


@pytest.mark.parametrize("act, kind", [(F.relu, "relu"), (F.gelu, "gelu"),
                                       (lambda t: F.gelu(t, approximate="tanh"), "gelu_tanh"),
                                       (F.silu, "silu"), (F.hardtanh, r"clamp\(-1, 1\)"),
                                       (lambda t: t.clamp(-0.5, 0.25), r"clamp\(-0\.5, 0\.25\)"),
                                       (torch.sigmoid, "sigmoid"), (torch.tanh, "tanh"),
                                       (lambda t: t * 0.125, r"scale\(0\.125\)"),
                                       (lambda t: -3.0 * t, r"scale\(-3\)")])
@pytest.mark.parametrize("rows", [20, 1])
def test_linear_activation_is_absorbed(act, kind, rows):
    # NaN and ±inf rows come out as eager's (relu / clamp / sigmoid / tanh of NaN are NaN); 20
    # rows take the micro-kernels' epilogue, 1 row the one-row product's (the C++ pass). No
    # ±inf for erf-GELU: eager's own paths disagree there (on an AVX-512 Xeon its vector
    # kernel gives GELU(+inf) = NaN, its scalar tail inf, which ours gives).
    lin = torch.nn.Linear(64, 48)
    x = torch.randn(rows, 64)
    x[0, 5] = float("nan")
    if rows > 1 and kind != "gelu":
        x[7, 1], x[9, 2] = float("inf"), -float("inf")
    with torch.no_grad():
        plan, c = run_one_graph(lambda t: act(lin(t)), x)
    steps = matmul_steps(plan)
    assert len(steps) == 1 and re.search(rf"-> {kind}(\(|\s|$)", steps[0]), plan
    assert c["kernels"] == 0 and c["ops_fallback"] == 0, (plan, c)


def test_residual_add_is_absorbed():
    x, w, r = torch.randn(20, 64), torch.randn(64, 48), torch.randn(20, 48)
    plan, c = run_one_graph(lambda x, w, r: r + x @ w, x, w, r)
    assert "-> residual(" in plan and c["kernels"] == 0, plan


def test_gate_multiply_is_absorbed():
    """(x @ w) · g with g a same-shape tensor is a product in the epilogue (GLU-style gates)."""
    x, w, g = torch.randn(20, 64), torch.randn(64, 48), torch.randn(20, 48)
    plan, c = run_one_graph(lambda x, w, g: (x @ w) * g, x, w, g)
    assert "-> mul(" in plan and c["kernels"] == 0, plan


def test_gate_after_an_activation_is_absorbed():
    """g · tanh(x @ w + b): the product follows a C++-pass activation."""
    x, w, g, b = torch.randn(20, 64), torch.randn(64, 48), torch.randn(20, 48), torch.randn(48)
    plan, c = run_one_graph(lambda x, w, b, g: g * torch.tanh(torch.addmm(b, x, w)), x, w, b, g)
    steps = matmul_steps(plan)
    assert len(steps) == 1 and "-> tanh" in steps[0] and "-> mul(" in steps[0], plan
    assert c["kernels"] == 0 and c["aten_calls"] == 0, (plan, c)


def test_residual_add_then_relu_is_absorbed():
    """A fused kernel of two nodes, relu(x @ w + r), is a chain of two epilogue ops."""
    x, w, r = torch.randn(20, 64), torch.randn(64, 48), torch.randn(20, 48)
    plan, c = run_one_graph(lambda x, w, r: F.relu(x @ w + r), x, w, r)
    steps = matmul_steps(plan)
    assert len(steps) == 1 and "-> residual(" in steps[0] and "-> relu" in steps[0], plan
    assert c["kernels"] == 0 and c["aten_calls"] == 0, (plan, c)


def test_activation_with_a_second_reader_is_not_absorbed():
    def fn(x, w):
        y = x @ w
        return F.relu(y), y.sum(1)

    plan, c = run_one_graph(fn, torch.randn(20, 64), torch.randn(64, 48))
    assert len(matmul_steps(plan)) == 1 and c["kernels"] >= 1, plan
    assert not any("-> relu" in s for s in matmul_steps(plan)), plan


def test_matmul_output_returned_is_not_absorbed():
    def fn(x, w):
        y = x @ w
        return y, F.relu(y)

    plan, c = run_one_graph(fn, torch.randn(20, 64), torch.randn(64, 48))
    assert len(matmul_steps(plan)) == 1 and c["kernels"] == 1, plan
    assert "-> relu" not in matmul_steps(plan)[0], plan


def test_non_contiguous_operands():
    a = torch.randn(70, 33).t()           # transposed
    b = torch.randn(45, 140)[:, ::2].t()  # neither layout: copied
    plan, _ = run_one_graph(torch.mm, a, b)
    assert matmul_steps(plan), plan
    x = torch.randn(4, 40, 17).transpose(1, 2)
    y = torch.randn(23, 4, 40).permute(1, 2, 0)
    torch._dynamo.reset()
    plan, _ = run_one_graph(torch.bmm, x, y)
    assert "matrix::bmm" in plan, plan


def test_training_step_through_linear_layers():
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 16))
    ref = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 16))
    ref.load_state_dict(model.state_dict())
    x = torch.randn(24, 32)
    compiled = compile_cpp(model)
    compiled(x).square().mean().backward()
    ref(x).square().mean().backward()
    for p, q in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=RTOL, atol=ATOL)
    assert any(matmul_steps(g.plan_text) for g in test_graphs())


def test_other_dtypes_stay_aten():
    """float64 stays ATen (bfloat16: test_matmul_bf16.py)."""
    x, w = torch.randn(20, 64).double(), torch.randn(64, 48).double()
    expected = F.relu(x @ w)
    actual = compile_cpp(lambda x, w: F.relu(x @ w))(x, w)
    assert_same(actual, expected, rtol=RTOL, atol=ATOL)
    (graph,) = test_graphs()
    assert not matmul_steps(graph.plan_text) and "aten::mm" in graph.plan_text, graph.plan_text


def test_plan_round_trips_through_the_cache():
    lin = torch.nn.Linear(64, 48)
    fn = lambda x: F.relu(lin(x))
    x = torch.randn(20, 64)
    with torch.no_grad():
        expected = fn(x)
        compile_cpp(fn)(x)
        torch._dynamo.reset()
        actual = compile_cpp(fn)(x)  # plan.json read back from the cache entry
    assert_same(actual, expected, rtol=RTOL, atol=ATOL)
    assert test_graphs()[-1].counters()["cache"] == "hit"
    assert all("-> relu" in g.plan_text for g in test_graphs())


def test_sgd_training_loop_matches_eager():
    torch.manual_seed(2)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 16))
    ref = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 16))
    ref.load_state_dict(model.state_dict())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    compiled = compile_cpp(model)
    x, target = torch.randn(24, 32), torch.randn(24, 16)
    for _ in range(3):
        for m, o in ((compiled, opt), (ref, ref_opt)):
            o.zero_grad()
            loss = (m(x) - target).square().mean()
            loss.backward()
            o.step()
        for p, q in zip(model.parameters(), ref.parameters()):
            torch.testing.assert_close(p, q, rtol=RTOL, atol=ATOL)
    with torch.no_grad():  # the inference graph after training sees the final weights
        for _ in range(3):
            assert_same(compiled(x), ref(x), rtol=RTOL, atol=ATOL)
    assert any(matmul_steps(g.plan_text) for g in test_graphs())


def test_denormals_are_flushed_only_when_the_user_asks():
    """torch.set_flush_denormal(True) (MXCSR FTZ|DAZ on the calling thread) reaches the matrix
    library's worker threads: products 1e-21 · 1e-21 (and their sums) are denormal and become zero; without
    it the result keeps them (IEEE). 256³ runs on several threads when there are several."""
    a = torch.full((256, 256), 1e-21)
    b = torch.full((256, 256), 1e-21)
    fn = compile_cpp(torch.mm)
    ieee = fn(a, b)
    assert (ieee > 0).all() and (ieee < torch.finfo(torch.float32).tiny).all(), ieee.max()
    assert torch.set_flush_denormal(True)
    try:
        flushed = fn(a, b)
    finally:
        torch.set_flush_denormal(False)
    assert (flushed == 0).all(), flushed.abs().max()
    assert torch.equal(fn(a, b), ieee)  # and the library restores IEEE afterwards


def test_activation_behind_a_view_is_absorbed():
    """nn.Linear on [B, S, K] is addmm on [B·S, K] and a view back to [B, S, N]: the GELU
    after the view still joins the matmul's epilogue, which then writes the 3-D result."""
    lin = torch.nn.Linear(64, 48)
    with torch.no_grad():
        plan, c = run_one_graph(lambda x: F.gelu(lin(x)), torch.randn(3, 7, 64))
    steps = matmul_steps(plan)
    assert len(steps) == 1 and "-> gelu" in steps[0], plan
    assert c["kernels"] == 0 and c["ops_fallback"] == 0, (plan, c)


def test_residual_behind_a_view_is_absorbed():
    lin = torch.nn.Linear(64, 48)
    with torch.no_grad():
        plan, c = run_one_graph(lambda x, r: F.relu(lin(x) + r), torch.randn(3, 7, 64),
                                torch.randn(3, 7, 48))
    steps = matmul_steps(plan)
    assert len(steps) == 1 and "-> residual(" in steps[0] and "-> relu" in steps[0], plan
    assert c["kernels"] == 0, (plan, c)


def test_view_that_reorders_elements_is_not_absorbed():
    """A permute between the matmul and the activation changes the element order: the
    activation stays a kernel of its own."""
    x, w = torch.randn(12, 32), torch.randn(32, 20)
    plan, c = run_one_graph(lambda x, w: F.relu((x @ w).view(3, 4, 20).permute(1, 0, 2)) * 2, x, w)
    assert c["kernels"] >= 1, plan


@pytest.mark.parametrize("with_relu", [False, True])
def test_dynamic_batch_stays_on_the_library(with_relu):
    """Dynamo's dynamic shapes make the batch of a Linear symbolic: the symbolic graph's own plan
    still runs the matmul on the library (its output allocated per call from A's rows), for
    every batch size. (shape_specializations=0: no static graph per shape, test_dynamic_shapes.)"""
    lin = torch.nn.Linear(64, 48)

    def fn(x):
        y = lin(x)
        return F.relu(y) if with_relu else y

    compiled = torch.compile(fn, backend="inductor_cpp", dynamic=True,
                             options={"matrix_kernels": True, "shape_specializations": 0})
    with torch.no_grad():
        for rows in (5, 17, 33):
            x = torch.randn(rows, 64)
            assert_same(compiled(x), fn(x), rtol=RTOL, atol=ATOL)
        graphs = test_graphs()
        assert len(graphs) == 1, [g.plan_text for g in graphs]  # one graph for all three
        plan, c = graphs[0].plan_text, graphs[0].counters()
        assert c["matrix_kernels"] == 1 and "aten::addmm" not in plan, plan
        assert "-> bias_col(" in plan, plan
        for rows in (1, 0):  # Dynamo specializes these: graphs of their own, same answers
            x = torch.randn(rows, 64)
            assert_same(compiled(x), fn(x), rtol=RTOL, atol=ATOL)


def test_dynamic_rows_with_a_symbolic_weight_stay_aten():
    """Only the rows may be symbolic: a B with symbolic sizes keeps the ATen call."""
    compiled = torch.compile(torch.mm, backend="inductor_cpp", dynamic=True,
                             options={"matrix_kernels": True, "shape_specializations": 0})
    for n in (7, 9):
        a, b = torch.randn(5, n), torch.randn(n, 3)
        assert_same(compiled(a, b), a @ b, rtol=RTOL, atol=ATOL)
    graphs = test_graphs()
    assert graphs and all("aten::mm" in g.plan_text for g in graphs), [g.plan_text for g in graphs]
