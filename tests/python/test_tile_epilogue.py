"""Tile epilogues (ir/passes/tile_epilogue.h, ir/passes/absorb_epilogues.h): with
matrix_kernels, a pointwise kernel after an mm / addmm that the GEMM's fixed epilogue ops cannot
express is rescheduled over one output tile and called by the GEMM on each tile it finishes. The
plan then has one matrix step ending in `-> kernel tile<k>(...)` and no kernel step.
Compared against eager with a GEMM tolerance."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from conftest import assert_same, test_graphs

RTOL, ATOL = 1e-4, 1e-5


def compile_cpp(fn, **options):
    return torch.compile(fn, backend="inductor_cpp", options={"matrix_kernels": True, **options})


def run_one_graph(fn, *args, **options):
    """fn compiled and eagerly, compared; (plan text, counters) of its one graph."""
    expected = fn(*args)
    actual = compile_cpp(fn, **options)(*args)
    # Absolute error relative to the output's scale: a K = 600 product summed in MKL's order and
    # in ours differs by ~2e-5 where its terms are ~25 (seen on an AVX-512 Xeon).
    outputs = expected if isinstance(expected, (tuple, list)) else (expected,)
    scale = max(1.0, *(float(t.abs().max()) for t in outputs))
    assert_same(actual, expected, rtol=RTOL, atol=ATOL * scale)
    (graph,) = test_graphs()
    return graph.plan_text, graph.counters()


def tiled(plan: str) -> bool:
    steps = [line for line in plan.splitlines() if "matrix::" in line]
    return len(steps) == 1 and "-> kernel tile" in steps[0]


def mix(z, y):
    return z * 0.5 + y * y


@pytest.mark.parametrize("m, k, n", [(64, 128, 96), (33, 70, 45), (1, 300, 200), (8, 4096, 32),
                                     (300, 600, 97)])
def test_mm_then_a_mix_the_epilogue_ops_cannot_express(m, k, n):
    """Tails, the one-row (matrix-vector) path and split K (long K, few tiles) all call it."""
    fn = lambda x, w, y: mix(x @ w, y)  # noqa: E731
    plan, c = run_one_graph(fn, torch.randn(m, k), torch.randn(k, n), torch.randn(m, n))
    if m == 1:  # one row: y·y is a vector along the columns, a bias (computed by a kernel)
        assert "-> scale(0.5) -> bias_col(" in plan and c["kernels"] == 1, plan
        return
    assert tiled(plan), plan
    assert c["kernels"] == 0 and c["matrix_kernels"] == 1 and c["ops_fallback"] == 0, c


def test_two_threads_and_a_transposed_operand():
    old = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        fn = lambda x, w, y: mix(x @ w, y.t())  # noqa: E731
        plan, _ = run_one_graph(fn, torch.randn(200, 300), torch.randn(300, 150), torch.randn(150, 200))
    finally:
        torch.set_num_threads(old)
    assert tiled(plan), plan


def test_linear_leaky_relu_after_a_view_with_a_broadcast_gate():
    """Linear on a 3-D input (addmm, then a view to [B, S, N]) and an op with no epilogue form,
    times a per-feature vector: the tile kernel indexes the view and the broadcast."""
    lin = torch.nn.Linear(48, 40)
    gate = torch.randn(40)
    fn = lambda x: F.leaky_relu(lin(x), 0.1) * gate.abs()  # noqa: E731
    with torch.no_grad():
        plan, c = run_one_graph(fn, torch.randn(3, 7, 48))
    assert tiled(plan), plan
    assert c["kernels"] == 0, c


def test_chain_the_epilogue_ops_express_keeps_them():
    """relu + residual are library ops: the JIT epilogue, not a tile kernel."""
    fn = lambda x, w, y: torch.relu(x @ w + y)  # noqa: E731
    plan, _ = run_one_graph(fn, torch.randn(20, 30), torch.randn(30, 40), torch.randn(20, 40))
    assert "-> residual(" in plan and "-> kernel" not in plan, plan


@pytest.mark.parametrize("case", ["transposed_read", "float64_output", "second_reader", "bmm", "option_off",
                                  "transcendental"])
def test_consumers_that_stay_kernels(case):
    x, w = torch.randn(24, 16), torch.randn(16, 24)
    options = {}
    if case == "transposed_read":  # reads C at elements other tiles write
        def fn(x, w):
            z = x @ w
            return z * 2 + z.t()
        args = (x, w)
    elif case == "float64_output":
        fn, args = (lambda x, w: (x @ w).double() * 0.5 + 1), (x, w)
    elif case == "second_reader":
        def fn(x, w):
            z = x @ w
            return z * 0.5 + 1, z.sum()
        args = (x, w)
    elif case == "transcendental":  # compute-bound: measured slower as a tile kernel
        gate = torch.randn(24)
        fn, args = (lambda x, w: F.leaky_relu(x @ w, 0.1) * torch.sigmoid(gate)), (x, w)
    elif case == "bmm":
        fn, args = (lambda x, w: mix(torch.bmm(x, w), x)), (torch.randn(3, 8, 5), torch.randn(3, 5, 5))
    else:
        fn, args = (lambda x, w, y: mix(x @ w, y)), (x, w, torch.randn(24, 24))
        options = {"matrix_tile_epilogues": False}
    plan, c = run_one_graph(fn, *args, **options)
    assert "matrix::" in plan and "-> kernel tile" not in plan, plan
    assert c["kernels"] >= 1, c


def test_out_of_bounds_gather_in_the_tile_kernel_raises():
    """The tile kernel's status (an index out of bounds) reaches the caller as an IndexError,
    as the same gather does in eager and in an ordinary kernel."""
    table = torch.randn(10)
    fn = lambda x, w, i: (x @ w) * table[i]  # noqa: E731
    x, w = torch.randn(6, 8), torch.randn(8, 5)
    i = torch.randint(0, 10, (6, 5))
    plan, _ = run_one_graph(fn, x, w, i)
    assert tiled(plan), plan
    bad = i.clone()
    bad[4, 3] = 10
    with pytest.raises(IndexError):
        compile_cpp(fn)(x, w, bad)


def test_plan_round_trips_through_the_cache():
    """The plan, with its "kernel" op, read back from the cache entry."""
    fn = lambda x, w, y: mix(x @ w, y)  # noqa: E731
    x, w, y = torch.randn(40, 50), torch.randn(50, 30), torch.randn(40, 30)
    compile_cpp(fn)(x, w, y)
    torch._dynamo.reset()
    actual = compile_cpp(fn)(x, w, y)
    assert_same(actual, mix(x @ w, y), rtol=RTOL, atol=ATOL)
    assert test_graphs()[-1].counters()["cache"] == "hit"
    assert all(tiled(g.plan_text) for g in test_graphs())


# ---- convolutions: the channels-last output is the [N·OH·OW, OC] matrix the kernels write --


def channels_last(*sizes):
    return torch.randn(*sizes).contiguous(memory_format=torch.channels_last)


@pytest.mark.parametrize("geometry", [(16, 40, 15, 3, 1, 1), (24, 72, 11, 1, 1, 0), (16, 40, 17, 3, 2, 1)],
                         ids=["3x3", "1x1 (GEMM path)", "3x3 stride 2"])
@pytest.mark.parametrize("act", [F.hardswish, lambda t: F.leaky_relu(t, 0.2)], ids=["hardswish", "leaky_relu"])
def test_conv_then_an_activation_the_epilogue_ops_cannot_express(geometry, act):
    """MobileNetV3's hardswish, a GAN's leaky ReLU: the conv step runs them per block."""
    c, oc, hw, k, stride, pad = geometry
    x, w, b = channels_last(2, c, hw, hw), torch.randn(oc, c, k, k), torch.randn(oc)
    fn = lambda x, w, b: act(F.conv2d(x, w, b, stride=stride, padding=pad))  # noqa: E731
    with torch.no_grad():
        expected = fn(x, w, b)
        actual = torch.compile(fn, backend="inductor_cpp", dynamic=False,
                               options={"matrix_kernels": True})(x, w, b)
    assert actual.stride() == expected.stride()
    assert_same(actual, expected, rtol=RTOL, atol=ATOL)
    (graph,) = test_graphs()
    steps = [line for line in graph.plan_text.splitlines() if "matrix::conv2d" in line]
    assert len(steps) == 1 and "-> bias_col(" in steps[0] and "-> kernel tile" in steps[0], graph.plan_text
    assert graph.counters()["kernels"] == 0, graph.plan_text


def test_conv_tile_kernel_with_a_residual_and_two_threads():
    old = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        x, w, r = channels_last(3, 16, 14, 14), torch.randn(32, 16, 3, 3), channels_last(3, 32, 14, 14)
        fn = lambda x, w, r: F.leaky_relu(F.conv2d(x, w, padding=1), 0.1) * 0.5 + r * r  # noqa: E731
        with torch.no_grad():
            expected = fn(x, w, r)
            actual = torch.compile(fn, backend="inductor_cpp", dynamic=False,
                                   options={"matrix_kernels": True})(x, w, r)
    finally:
        torch.set_num_threads(old)
    assert_same(actual, expected, rtol=RTOL, atol=ATOL)
    (graph,) = test_graphs()
    assert "-> kernel tile" in graph.plan_text, graph.plan_text
