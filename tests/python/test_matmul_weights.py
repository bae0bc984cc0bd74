"""The packed-B cache of float32 CPU matrix multiplies (runtime/matmul_step.h): mm / addmm keep
B packed across calls while its version and contents are unchanged (a `.data` or numpy write is
caught by the packed copy's fingerprint, runtime/weight_fingerprint.h; under freezing only the
version counter is trusted), and the few-row forms read B in place instead, with no copy at all
(gemv.h, the streamed plain B, the swapped product). Compared against eager with
test_matmul.py's GEMM tolerance."""

from __future__ import annotations


import pytest
import torch

from conftest import assert_same, test_graphs
from test_matmul import ATOL, RTOL, compile_cpp

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
    # the team (matrix/gemm_split_k.cpp, split_k_parts), on the per-call B (first call)
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

