"""Generated C++ kernels end to end: fusion is visible in the plan, numerics match eager,
and code generation trouble falls back to ATen instead of failing."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import inductor_cpp

from conftest import assert_same, compile_cpp, fake_compiler, test_graphs


def compiled_graph_counters(fn, *args, **options):
    """Runs fn compiled (with `options`) and eagerly; returns the counters of the one graph it
    made."""
    expected = fn(*args)
    actual = compile_cpp(fn, options=options)(*args)
    assert_same(actual, expected, rtol=1e-4, atol=1e-5)
    graphs = test_graphs()
    assert len(graphs) == 1, f"expected one graph, got {len(graphs)}"
    return graphs[0].counters()


def test_pointwise_chain_is_one_kernel():
    x, w, b = torch.randn(64, 1000), torch.randn(1000), torch.randn(1000)
    c = compiled_graph_counters(lambda x, w, b: F.gelu(x * w + b) * torch.sigmoid(x), x, w, b)
    assert c["kernels"] == 1 and c["aten_calls"] == 0 and c["ops_fallback"] == 0, c


def test_softmax_is_one_kernel():
    c = compiled_graph_counters(lambda x: torch.softmax(x, -1), torch.randn(128, 1000))
    assert c["kernels"] <= 2 and c["aten_calls"] == 0, c


def test_layer_norm_is_one_kernel():
    ln = torch.nn.LayerNorm(768).eval()
    with torch.no_grad():
        ln.weight.normal_()
        ln.bias.normal_()
        c = compiled_graph_counters(ln, torch.randn(64, 768))
    assert c["kernels"] <= 2 and c["aten_calls"] == 0, c


def test_pointwise_feeding_sum_is_fused_into_the_reduction():
    c = compiled_graph_counters(lambda x: (x.exp() * 2 + 1).sum(-1), torch.randn(256, 512))
    assert c["kernels"] == 1 and c["aten_calls"] == 0, c


def test_sum_over_dim_zero_and_full_sum():
    x = torch.randn(3000, 257)
    c = compiled_graph_counters(lambda x: (x.sum(0), x.sum(), x.amax(1)), x)
    assert c["ops_fallback"] == 0, c


@pytest.mark.parametrize("case", ["sum", "mean", "amax", "amin", "prod", "int_sum", "any", "all",
                                  "sum_01", "sum_1_of_3d", "bias_grad_like"])
def test_large_column_reductions_run_in_chunks_of_rows(case):
    # Past 2^21 elements a column reduction (x.sum(0)) is split into chunks of 16 rows,
    # partials chunk-major, then a reduction of the partials (ir/passes/split_reductions.h):
    # two kernels; 4100 rows leave a masked last chunk.
    torch.manual_seed(0)
    x = torch.randn(4100, 600)
    fns = {
        "sum": lambda x: x.sum(0), "mean": lambda x: x.mean(0), "amax": lambda x: x.amax(0),
        "amin": lambda x: x.amin(0), "prod": lambda x: (1 + x * 1e-3).prod(0),
        "int_sum": lambda x: (x * 100).to(torch.int64).sum(0),
        "any": lambda x: (x > 3.5).any(0), "all": lambda x: (x > -3.5).all(0),
        "sum_01": lambda x: x.view(41, 100, 600).sum((0, 1)),
        "sum_1_of_3d": lambda x: x.view(2, 2050, 600).sum(1),
        "bias_grad_like": lambda x: (x * 2).sum(0),
    }
    c = compiled_graph_counters(fns[case], x)
    assert c["kernels"] == 2 and c["aten_calls"] == 0 and c["ops_fallback"] == 0, c


def test_chunked_column_sum_is_as_accurate_as_eager():
    x = torch.rand(65536, 64) + 100  # a long sum of large positive values
    got, want = compile_cpp(lambda x: x.sum(0))(x), x.double().sum(0)
    assert (got.double() - want).abs().max() <= (x.sum(0).double() - want).abs().max() * 2 + 1e-3


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_signed_zero_constants_and_divisors_keep_their_sign(dtype):
    # A broadcast -0.0 used to become +0.0 (0 + -0 = +0): x / -0.0 gave inf of the wrong sign.
    x = torch.tensor([1.0, -2.0, 0.0, 3.0, -0.0] * 7, dtype=dtype)
    s = torch.tensor([-0.0, 0.0, 3.0, -7.0], dtype=dtype)
    f = lambda x, s: (x / -0.0, x * -0.0, torch.where(x > 0, x, -0.0),  # noqa: E731
                      x.view(5, 7) / s[:1].view(1, 1), (x.view(7, 5) / s[:, None].repeat(2, 1)[:7]))
    for got, want in zip(compile_cpp(f)(x, s), f(x, s)):
        torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)
        real = ~want.isnan()  # a NaN's sign means nothing (bfloat16 NaNs are made canonical)
        assert torch.equal(got.signbit()[real], want.signbit()[real]), (got, want)


def test_softmax_normalization_is_correctly_rounded_division():
    # The row sum divides every element through a reciprocal and a correction step
    # (ic::div_by_invariant): the same bits as dividing exp(x - max) by the sum.
    x = torch.randn(64, 1000) * 30  # large spread: tiny exps take the division fallback
    got = compile_cpp(lambda x: torch.softmax(x, -1))(x)
    e = torch.exp(x - x.amax(-1, keepdim=True))
    ref = e / e.double().sum(-1, keepdim=True).float()
    assert torch.equal(got.signbit(), ref.signbit())
    torch.testing.assert_close(got, ref, rtol=2e-6, atol=1e-30)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_floating_pointwise_and_reductions(dtype):
    x = torch.randn(37, 129).to(dtype)
    y = torch.randn(129).to(dtype)

    def f(x, y):
        z = torch.tanh(x) * y - torch.exp(-x.abs()) + torch.erf(x) / 3
        return z, z.sum(1), z.amax(0), z.mean(), torch.where(x > 0, x, y)

    expected = f(x, y)
    actual = compile_cpp(f)(x, y)
    tol = {torch.float16: (1e-2, 1e-2), torch.bfloat16: (2e-2, 2e-2)}.get(dtype, (1e-4, 1e-5))
    assert_same(actual, expected, *tol)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.int8, torch.uint8])
def test_integer_semantics(dtype):
    lo = 0 if dtype == torch.uint8 else -50
    x = torch.randint(lo, 50, (64, 33), dtype=dtype)
    d = torch.randint(1, 7, (33,), dtype=dtype)

    def f(x, d):
        return x // d, x % d, x * 3 - d, (x > 2) & (d < 5), x.sum(0), torch.maximum(x, d)

    assert_same(compile_cpp(f)(x, d), f(x, d))


def test_views_and_transposes_inside_fused_code():
    x = torch.randn(16, 24, 8)

    def f(x):
        y = x.permute(2, 0, 1).reshape(8, 384)
        return (y * 2).t().contiguous() + 1, x[:, 3:20:2, ::3].sin(), x.unsqueeze(1).expand(16, 5, 24, 8).sum(1)

    assert_same(compile_cpp(f)(x), f(x))


def test_argmax_max_with_indices_var_and_nan():
    x = torch.randn(40, 300)
    x[3, 17] = float("nan")

    def f(x):
        v, i = x.max(1)
        return v, i, x.argmax(0), x.argmin(1), x.var(1), x.std(0, correction=0)

    assert_same(compile_cpp(f)(x), f(x), rtol=1e-4, atol=1e-5)


def test_cat_pad_and_index():
    a, b = torch.randn(8, 5), torch.randn(8, 3)
    idx = torch.tensor([0, 7, 3, -1])

    def f(a, b, idx):
        return torch.cat([a, b.exp()], 1), F.pad(a, (2, 1, 0, 3), value=0.5), a[idx] * 2

    assert_same(compile_cpp(f)(a, b, idx), f(a, b, idx))


def test_keepdim_reduction_read_by_an_aten_op():
    # The keepdim result is a re-indexing of the reduction's accumulator; an ATen op reading
    # it needs it in memory with its own shape.
    def f(x, w):
        m = x.amax(1, keepdim=True)
        return torch.mm(m, w), x.sum(1, keepdim=True)

    compiled_graph_counters(f, torch.randn(4, 6), torch.randn(1, 5))


def test_scatter_of_one_value_is_generated():
    # nll_loss's backward scatters one value; duplicates and a smaller index tensor included.
    def f(x, idx):
        return torch.scatter(x, 1, idx, -2.5), torch.zeros_like(x).scatter_(0, idx[:2], 1.0)

    x = torch.randn(6, 5)
    idx = torch.tensor([[0, 0], [4, 1], [2, 2], [1, 3], [3, 0], [0, 4]])
    c = compiled_graph_counters(f, x, idx)
    assert c["ops_fallback"] == 0, c


def test_index_out_of_bounds_raises_index_error():
    a = torch.randn(8, 5)

    def f(a, idx):
        return a[idx] + 1

    with pytest.raises(IndexError):
        compile_cpp(f)(a, torch.tensor([0, 9]))


def test_mixed_extern_and_generated_ops():
    x, w = torch.randn(32, 64), torch.randn(64, 48)

    def f(x, w):
        return torch.relu(x @ w + 1).sum(-1)

    c = compiled_graph_counters(f, x, w, matrix_kernels=False)  # the matmul an ATen call
    assert c["aten_calls"] == 1 and c["kernels"] >= 1, c


def test_matmul_absorbs_its_pointwise_consumers_by_default():
    x, w = torch.randn(32, 64), torch.randn(64, 48)

    def f(x, w):
        return torch.relu(x @ w + 1).sum(-1)

    c = compiled_graph_counters(f, x, w)  # our GEMM with + 1 and relu in its epilogue
    assert c["aten_calls"] == 0 and c["matrix_kernels"] == 1 and c["kernels"] == 1, c


def test_failed_kernel_compile_falls_back_to_aten(monkeypatch, caplog):
    monkeypatch.setenv("CXX", "false")  # a "compiler" that always fails
    x = torch.randn(100)
    with caplog.at_level("WARNING", logger="inductor_cpp"):
        out = compile_cpp(lambda x: torch.sin(x) * 2)(x)
    assert_same(out, torch.sin(x) * 2)
    assert inductor_cpp.counters()["cxx_compile_failures"] >= 1
    assert any("failed to compile" in r.getMessage() for r in caplog.records)


def test_a_compiler_failure_is_warned_about_once_in_one_line(monkeypatch, caplog, tmp_path):
    """A toolchain that fails every graph the same way (here: a missing sleef.h, followed by
    300 lines of errors, as g++ prints them) is one warning of one line for the process, not
    one per graph; the graphs still run as ATen calls; reset_counters() re-arms it."""
    fake = fake_compiler(tmp_path / "no-sleef-cxx",
                         'for a in "$@"; do case "$a" in *.cpp) src=$a;; esac; done\n'
                         'echo "$src:3:10: fatal error: sleef.h: No such file or directory" >&2\n'
                         'i=0; while [ $i -lt 300 ]; do echo "$src:$i: error: more trouble" >&2; '
                         'i=$((i+1)); done\n'
                         "exit 1\n")
    monkeypatch.setenv("CXX", str(fake))
    x = torch.randn(64)
    with caplog.at_level("WARNING", logger="inductor_cpp"):
        assert_same(compile_cpp(lambda x: torch.sin(x) * 2)(x), torch.sin(x) * 2)
        assert_same(compile_cpp(lambda x: torch.cos(x) + 3)(x), torch.cos(x) + 3)
    warned = [r.getMessage() for r in caplog.records if "failed to compile" in r.getMessage()]
    assert inductor_cpp.counters()["cxx_compile_failures"] == 2
    assert len(warned) == 1 and "\n" not in warned[0], warned
    assert "kernels.cpp:3:10: fatal error: sleef.h: No such file or directory" in warned[0], warned
    inductor_cpp.reset_counters()
    caplog.clear()
    with caplog.at_level("WARNING", logger="inductor_cpp"):
        compile_cpp(lambda x: torch.tan(x) - 1)(x)
    assert sum("failed to compile" in r.getMessage() for r in caplog.records) == 1


def test_output_code_prints_the_generated_source(caplog):
    inductor_cpp.set_logs("output_code")
    try:
        with caplog.at_level("INFO", logger="inductor_cpp"):
            compile_cpp(lambda x: x.cos() + 1)(torch.randn(10))
    finally:
        inductor_cpp.set_logs("")
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert 'extern "C"' in text and "#include \"ic_runtime.h\"" in text


def test_second_process_loads_kernels_without_compiling(tmp_path):
    from conftest import run_python

    code = """
        import json, torch, inductor_cpp
        f = torch.compile(lambda x: torch.tanh(x) * 3 + x.sum(), backend="inductor_cpp")
        x = torch.randn(1000)
        # A sum of 1000 float32 values in another order differs by a few ulps of the
        # sum: compare with the float64 result at a tolerance a float32 sum meets.
        reference = (torch.tanh(x.double()) * 3 + x.double().sum()).float()
        torch.testing.assert_close(f(x), reference, rtol=1e-5, atol=1e-4)
        print(json.dumps(inductor_cpp.counters()))
    """
    env = {"INDUCTOR_CPP_CACHE_DIR": str(tmp_path / "shared")}
    first = run_python(code, env)
    second = run_python(code, env)
    assert first["cxx_compiler_invocations"] >= 1
    assert second["cxx_compiler_invocations"] == 0 and second["cache_hits"] >= 1
