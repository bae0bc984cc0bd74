"""With matrix_kernels on (the default), float32 CPU matrix multiplies in compiled graphs run
on our GEMM library (MatmulLaunch plan steps, matrix/gemm.h), with a following
activation or residual add folded into the GEMM epilogue; bfloat16 mm / addmm run on the AMX
GEMM where usable (test_matmul_bf16.py); other dtypes stay ATen calls.
mm/addmm keep B packed across calls while its version and contents are unchanged
(runtime/matmul_step.h). Compared against eager with a GEMM tolerance (the summation order
differs from MKL's)."""

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


# ---- packed-B cache (runtime/matmul_step.h): B packed once while it does not change ----------


def test_packed_weight_is_reused_across_calls():
    lin = torch.nn.Linear(64, 48)
    compiled = compile_cpp(lin)
    with torch.no_grad():
        for _ in range(4):  # call 2 packs into the cache, calls 3-4 reuse it
            x = torch.randn(20, 64)
            assert_same(compiled(x), lin(x), rtol=RTOL, atol=ATOL)
    assert any("matrix::addmm" in g.plan_text for g in test_graphs())


def test_long_k_few_tiles_on_many_threads():
    # A few output tiles, a long K and more threads than tiles: the GEMM splits K over groups of
    # the team (matrix/gemm_driver.cpp, split_k_parts), on the per-call B (first call)
    # and on the cached packed weight (later calls), with the bias + ReLU epilogue after the
    # reduction. More threads than this machine has cores is fine: OpenMP oversubscribes.
    torch.manual_seed(0)
    lin = torch.nn.Sequential(torch.nn.Linear(8192, 16), torch.nn.ReLU())
    compiled = compile_cpp(lin)
    threads = torch.get_num_threads()
    torch.set_num_threads(6)
    try:
        with torch.no_grad():
            for _ in range(3):
                x = torch.randn(4, 8192)
                assert_same(compiled(x), lin(x), rtol=RTOL, atol=1e-4)
    finally:
        torch.set_num_threads(threads)
    (graph,) = test_graphs()
    assert "matrix::addmm" in graph.plan_text and "-> relu" in graph.plan_text, graph.plan_text


def warm_linear():
    """A Linear compiled with matrix kernels, called 3 times (its packed weight is cached: 48
    rows, more than the few-row path that reads the weight in place, gemv.h)."""
    lin = torch.nn.Linear(64, 48)
    compiled = compile_cpp(lin)
    x = torch.randn(48, 64)
    with torch.no_grad():
        for _ in range(3):
            compiled(x)
    return lin, compiled, x


def test_in_place_weight_update_forces_a_repack():
    lin, compiled, x = warm_linear()
    with torch.no_grad():
        lin.weight.add_(1)  # bumps the version counter
        assert_same(compiled(x), lin(x), rtol=RTOL, atol=ATOL)
        assert_same(compiled(x), lin(x), rtol=RTOL, atol=ATOL)
        lin.weight.mul_(0.5)
        assert_same(compiled(x), lin(x), rtol=RTOL, atol=ATOL)


def weight_cache_counts() -> tuple[int, int]:
    (graph,) = test_graphs()
    c = graph.counters()
    return c["weight_packs"], c["weight_stale_drops"]


def test_cached_weight_is_reused_while_unchanged():
    lin, compiled, x = warm_linear()
    with torch.no_grad():
        for _ in range(3):
            assert_same(compiled(x), lin(x), rtol=RTOL, atol=ATOL)
    assert weight_cache_counts() == (1, 0)  # packed into the cache once, on the second call


def test_writes_that_bypass_the_version_counter_are_seen():
    """`.data` writes (an EMA, weight surgery) and writes through numpy leave the version counter
    alone; the packed copy's content fingerprint (runtime/weight_fingerprint.h) catches them."""
    lin, compiled, x = warm_linear()
    with torch.no_grad():
        lin.weight.data.add_(1)
        assert_same(compiled(x), lin(x), rtol=RTOL, atol=ATOL)
        assert weight_cache_counts() == (2, 1)
        lin.weight.data[17, 5] += 0.25  # a single float: a CRC always sees it
        assert_same(compiled(x), lin(x), rtol=RTOL, atol=ATOL)
        lin.weight.detach().numpy()[47, 63] = -3.0  # the last element, through numpy
        assert_same(compiled(x), lin(x), rtol=RTOL, atol=ATOL)
        assert_same(compiled(x), lin(x), rtol=RTOL, atol=ATOL)
    assert weight_cache_counts() == (4, 3)


def test_freezing_trusts_the_version_counter():
    """options={"freezing": True} (stock Inductor's contract: parameters are constants): no
    per-call content check, so a `.data` write is not seen, while a versioned in-place update
    still is."""
    lin = torch.nn.Linear(64, 48)
    compiled = torch.compile(lin, backend="inductor_cpp", options={"freezing": True})
    x = torch.randn(48, 64)
    with torch.no_grad():
        for _ in range(3):
            stale = compiled(x)
        lin.weight.data.add_(1)
        assert torch.equal(compiled(x), stale)
        lin.weight.add_(1)  # bumps the version counter: packed per call, then cached again
        for _ in range(2):
            assert_same(compiled(x), lin(x), rtol=RTOL, atol=ATOL)
    assert weight_cache_counts() == (2, 0)


def test_freezing_must_be_a_bool():
    with pytest.raises(Exception, match='"freezing" must be True or False'):
        torch.compile(torch.mm, backend="inductor_cpp", options={"freezing": "yes"})(
            torch.randn(2, 2), torch.randn(2, 2))


def test_new_weight_tensor_is_detected():
    x, w = torch.randn(48, 64), torch.randn(64, 48)
    compiled = compile_cpp(torch.mm)
    for _ in range(3):
        compiled(x, w)
    for _ in range(3):  # fresh tensors, possibly at the freed one's address
        del w
        w = torch.randn(64, 48)
        assert_same(compiled(x, w), x @ w, rtol=RTOL, atol=ATOL)


def matrix_kernels_isa() -> str:
    """The ISA of the library's kernels here (INDUCTOR_CPP_MATRIX_ISA=avx2 forces AVX2)."""
    from inductor_cpp import _C, knobs

    forced = knobs.get_text("INDUCTOR_CPP_MATRIX_ISA") == "avx2"
    return "avx512" if _C.matrix.cpu_features()["avx512"] and not forced else "avx2"


@pytest.mark.parametrize("freezing", [False, True])
def test_few_rows_times_wt_read_in_place(freezing):
    """Up to 16 rows (32 on AVX2) times Wᵀ (a Linear on a small batch) read W in place (gemv.h):
    nothing is packed or cached, and a `.data` write is seen. With freezing on AVX-512 the packed
    kernels are faster and nothing checks the copy, so W is packed once and cached (runtime/
    matrix/gemm.h in_place_beats_packed_copy)."""
    lin = torch.nn.Linear(64, 48)
    compiled = torch.compile(lin, backend="inductor_cpp", options={"freezing": freezing})
    x = torch.randn(12, 64)
    with torch.no_grad():
        for _ in range(3):
            assert_same(compiled(x), lin(x), rtol=RTOL, atol=ATOL)
        if not freezing:
            lin.weight.data.add_(1)
            assert_same(compiled(x), lin(x), rtol=RTOL, atol=ATOL)
    packed = freezing and matrix_kernels_isa() == "avx512"
    assert weight_cache_counts() == ((1, 0) if packed else (0, 0))


def assert_read_in_place_on_avx512_unless_frozen(freezing: bool) -> None:
    """After three calls and (unless frozen) a `.data` write: under freezing the weight was
    packed once; on AVX-512 nothing was packed or checked (read in place); on AVX2 the packed
    copy was dropped by the write and packed again."""
    if freezing:
        assert weight_cache_counts() == (1, 0)
    elif matrix_kernels_isa() == "avx512":
        assert weight_cache_counts() == (0, 0)
    else:
        assert weight_cache_counts() == (2, 1)


class _PlainWeight(torch.nn.Module):
    """x @ W + b with W stored [in, out], as GPT-2's Conv1D keeps it: a plain B."""

    def __init__(self, k: int, n: int):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(k, n) / k**0.5)
        self.bias = torch.nn.Parameter(torch.randn(n))

    def forward(self, x):
        return torch.relu(torch.addmm(self.bias, x, self.weight))


@pytest.mark.parametrize("freezing", [False, True])
@pytest.mark.parametrize("rows", [24, 64])
def test_streamed_plain_b_keeps_no_packed_copy(rows, freezing):
    """2-64 rows times a plain B of 1-16 MiB stream B in place on AVX-512 (matrix/
    gemm_config.h "Streamed plain B"): nothing is packed or cached, the bias and ReLU apply per
    output feature, and a `.data` write is seen on the next call. Under freezing B is packed once
    and cached as before; on AVX2 it is packed and cached (checked by its fingerprint)."""
    torch.manual_seed(0)
    model = _PlainWeight(768, 1024)  # 768 Ki floats; 32 panels of 32 columns
    compiled = torch.compile(model, backend="inductor_cpp", options={"freezing": freezing})
    x = torch.randn(rows, 768)
    tol = ATOL * (768 / 64) ** 0.5
    with torch.no_grad():
        for _ in range(3):
            assert_same(compiled(x), model(x), rtol=RTOL, atol=tol)
        if not freezing:
            model.weight.data.mul_(-1)
            assert_same(compiled(x), model(x), rtol=RTOL, atol=tol)
    assert_read_in_place_on_avx512_unless_frozen(freezing)


@pytest.mark.parametrize("freezing", [False, True])
@pytest.mark.parametrize("rows", [40, 128])
def test_swapped_few_row_linear_reads_w_once(rows, freezing):
    """17-128 rows times a large enough Wᵀ on AVX-512 run as Cᵀ = W · xᵀ (matrix/
    gemm_swapped.h): W is read in place, nothing is packed or cached, the bias and ReLU still
    apply per output feature, and a `.data` write is seen on the next call. Under freezing W is
    packed once and cached as before. On AVX2 W is packed and cached (checked by its
    fingerprint)."""
    torch.manual_seed(0)
    threads = torch.get_num_threads()
    n = 64 * threads + 40  # W rows: at least 64 a thread, and 256 Ki floats a thread
    lin = torch.nn.Linear((256 * 1024 * threads) // n + 8, n)
    model = torch.nn.Sequential(lin, torch.nn.ReLU())
    compiled = torch.compile(model, backend="inductor_cpp", options={"freezing": freezing})
    x = torch.randn(rows, lin.in_features)
    tol = ATOL * (lin.in_features / 64) ** 0.5  # float32 sums over K ≈ 3,000 terms
    with torch.no_grad():
        for _ in range(3):
            assert_same(compiled(x), model(x), rtol=RTOL, atol=tol)
        if not freezing:
            lin.weight.data.mul_(-1)
            lin.bias.data.add_(0.5)
            assert_same(compiled(x), model(x), rtol=RTOL, atol=tol)
    assert_read_in_place_on_avx512_unless_frozen(freezing)


def test_swapped_and_packed_calls_of_one_weight_stay_in_step():
    """One weight read swapped at 40 and 72 rows and through its packed copy at 300 and 500
    (dynamic rows: a static graph per shape), with in-place and `.data` writes between calls:
    every call sees the weight's current values, and the packed copies saw the `.data` write."""
    torch.manual_seed(0)
    threads = torch.get_num_threads()
    n = 64 * threads + 40
    lin = torch.nn.Linear((256 * 1024 * threads) // n + 8, n)
    compiled = torch.compile(lin, backend="inductor_cpp", dynamic=True)
    xs = {rows: torch.randn(rows, lin.in_features) for rows in (40, 300, 72, 500)}
    tol = ATOL * (lin.in_features / 64) ** 0.5  # float32 sums over K ≈ 3,000 terms
    with torch.no_grad():
        for step in range(6):
            for x in xs.values():
                assert_same(compiled(x), lin(x), rtol=RTOL, atol=tol)
            if step == 1:
                lin.weight.add_(0.25)  # bumps the version counter: repacked two calls later
            if step == 3:
                lin.weight.data.mul_(-1)  # behind it: the packed copy's fingerprint sees it
    counts = [(g.counters()["weight_packs"], g.counters()["weight_stale_drops"]) for g in test_graphs()]
    assert sum(drops for _, drops in counts) >= 1, counts
    if matrix_kernels_isa() == "avx512":
        assert any(packs == 0 for packs, _ in counts), counts  # the swapped shapes keep no copy


@pytest.mark.parametrize("freezing", [False, True])
def test_plain_weight_under_few_rows(freezing):
    """x @ w with w [K, N] (GPT-2's Conv1D layout) on 4 rows: read in place by default (no copy
    to check), packed and cached under freezing (faster than reading it in place at 16
    threads)."""
    x, w = torch.randn(4, 64), torch.randn(64, 48)
    compiled = torch.compile(torch.mm, backend="inductor_cpp", options={"freezing": freezing})
    for _ in range(3):
        assert_same(compiled(x, w), x @ w, rtol=RTOL, atol=ATOL)
    assert weight_cache_counts() == ((1, 0) if freezing else (0, 0))


def test_intermediate_b_is_packed_per_call():
    fn = lambda x, w: x @ (w * 2)
    compiled = compile_cpp(fn)
    x, w = torch.randn(48, 64), torch.randn(64, 48)
    for i in range(4):
        w2 = w + i
        assert_same(compiled(x, w2), fn(x, w2), rtol=RTOL, atol=ATOL)


def test_concurrent_calls_share_the_packed_weight():
    import threading

    lin = torch.nn.Linear(64, 48)
    compiled = compile_cpp(lin)
    xs = [torch.randn(48, 64) for _ in range(4)]
    with torch.no_grad():
        compiled(xs[0])
        expected = [lin(x) for x in xs]
    errors = []

    def worker(i):
        try:
            with torch.no_grad():
                for _ in range(20):
                    assert_same(compiled(xs[i]), expected[i], rtol=RTOL, atol=ATOL)
        except Exception as e:  # noqa: BLE001 -- reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


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
