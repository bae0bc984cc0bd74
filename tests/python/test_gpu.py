"""GPU code generation end to end (CUDA): generated NVPTX kernels vs eager, the plan's launch
configuration, the output_code log, out-of-range indices, and whole models (resnet18 inference,
a transformer encoder's inference and training step, gradients against a float64 reference).

Skipped without a CUDA device (the development machine); scripts/gpu.sh runs it on the GPU
machine."""

from __future__ import annotations

import copy
import json

import pytest
import torch
import torch.nn.functional as F

import inductor_cpp
from conftest import collect_logs, test_graphs

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

DEV = "cuda"


def compiled(fn):
    return torch.compile(fn, backend="inductor_cpp")


def generated_ops() -> tuple[int, int]:
    counters = [g.counters() for g in test_graphs()]
    return (sum(c.get("ops_generated", 0) for c in counters),
            sum(c.get("ops_fallback", 0) for c in counters))


def gpu_plans() -> list[dict]:
    return [json.loads(g.plan_json) for g in test_graphs()
            if json.loads(g.plan_json).get("library_kind") in ("ptx", "cubin")]


def test_pointwise_chain_runs_as_generated_gpu_kernel():
    x = torch.randn(1 << 20, device=DEV)
    fn = lambda x: F.gelu(x * 1.5 + 0.25) * torch.sigmoid(x) - torch.tanh(x)  # noqa: E731
    torch.testing.assert_close(compiled(fn)(x), fn(x), rtol=1e-4, atol=1e-5)
    generated, fallback = generated_ops()
    assert generated > 0 and fallback == 0
    plans = gpu_plans()
    assert plans, "no GPU plan was built"
    kernel_steps = [s for p in plans for s in p["steps"] if "kernel" in s]
    assert kernel_steps and all(s["kernel"]["gpu"]["grid"][0] >= 1 for s in kernel_steps)


@pytest.mark.parametrize("offset,n", [(0, 1 << 20), (0, 100003), (1, 100003), (3, 4099),
                                      (2, 6)])
def test_pointwise_vector_loop_tail_and_misaligned_view(offset, n):
    """The vector loop's versions: all chunks full, a partial last chunk (n % 4 != 0), and a
    view starting 4/8/12 bytes off a 16-byte boundary (the scalar-chunk loop)."""
    x = torch.randn(n + offset, device=DEV)[offset:]
    fn = lambda x: torch.sigmoid(x) * 2 - torch.erf(x) + torch.tanh(x * 0.5)  # noqa: E731
    torch.testing.assert_close(compiled(fn)(x), fn(x), rtol=1e-5, atol=1e-6)
    assert generated_ops()[0] > 0


@pytest.mark.parametrize("name,fn", [
    ("softmax", lambda x: torch.softmax(x, -1)),
    ("log_softmax", lambda x: torch.log_softmax(x, -1)),
    ("sum_last", lambda x: x.sum(-1)),
    ("sum_first", lambda x: x.sum(0)),
    ("amax", lambda x: x.amax(-1)),
    ("mean_var", lambda x: x.var(-1) + x.mean(0).sum()),
    ("layer_norm", lambda x: F.layer_norm(x, (x.shape[-1],))),
])
@pytest.mark.parametrize("shape", [(64, 1000), (3, 70000), (4096, 33)])
def test_reductions_match_eager(name, fn, shape):
    x = torch.randn(*shape, device=DEV)
    torch.testing.assert_close(compiled(fn)(x), fn(x), rtol=1e-4, atol=1e-4)
    assert generated_ops()[0] > 0


@pytest.mark.parametrize("name,fn", [
    ("sum", lambda x: x.sum(0)),
    ("amax", lambda x: x.amax(0)),
    ("argmax", lambda x: x.argmax(0)),
    ("var", lambda x: x.var(0)),
    ("mean_times_std", lambda x: x.mean(0) * x.std(0)),
])
@pytest.mark.parametrize("shape,cols", [
    ((1024, 256), None),        # 4 columns per thread group (128-bit loads)
    ((1000, 260), None),
    ((16384, 512), None),
    ((512, 260), (1, 257)),     # 16-byte row steps, base 4 bytes off: the run-time fallback
    ((4096, 33), None),         # 33 columns: one column per group
    ((2048, 130), (0, 129)),    # 130 * 4 bytes per row: no 128-bit steps
])
def test_column_reductions_match_eager(name, fn, shape, cols):
    x = torch.randn(*shape, device=DEV)
    run = (lambda x: fn(x[:, cols[0]:cols[1]])) if cols else fn  # noqa: E731
    got, want = compiled(run)(x), run(x)
    if name == "argmax":
        assert torch.equal(got, want)
    else:
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    assert generated_ops()[0] > 0


@pytest.mark.parametrize("shape,offset", [
    ((8, 96, 32, 32), 0),   # runs of 96 channels: 128-bit loads down the channels
    ((4, 6, 40, 40), 0),    # runs of 6: chunks of 4 would cross images, read lane by lane
    ((4, 96, 20, 20), 1),   # a view one float off: the run-time misaligned fallback
])
def test_channels_last_sums_per_image_and_channel(shape, offset):
    """The first stage of a split channel sum, and a layer norm's backward over NHWC: per
    (image, channel) sums over the pixels of an NHWC tensor times a per-pixel value. The
    channels within an image go to threads (column groups over the flattened N, C)."""
    torch.manual_seed(0)
    n, c, h, w = shape
    flat = torch.randn(n * c * h * w + offset, device=DEV)
    x = flat[offset:].view(n, h, w, c).permute(0, 3, 1, 2)  # channels last
    m = torch.randn(n, 1, h, w, device=DEV)
    fn = lambda x, m: (x * m).sum((2, 3)) + x.sum((2, 3))  # noqa: E731
    torch.testing.assert_close(compiled(fn)(x, m), fn(x, m), rtol=1e-4, atol=1e-3)
    assert generated_ops()[0] > 0


@pytest.mark.parametrize("shape", [(4, 96, 56, 56), (2, 768, 7, 7), (3, 40, 5, 9)])
def test_channel_layer_norm_of_nchw_matches_eager(shape):
    """convnext's block: layer norm over the channels of an NCHW tensor, written NHWC. The
    scheduler maps positions (not channels) to threads there (reads down the runs of the
    flattened N, H*W); forward and backward against eager."""
    torch.manual_seed(0)
    c = shape[1]
    x = torch.randn(*shape, device=DEV, requires_grad=True)
    w = torch.randn(c, device=DEV, requires_grad=True)
    b = torch.randn(c, device=DEV, requires_grad=True)

    def block(x, w, b):
        return F.gelu(F.layer_norm(x.permute(0, 2, 3, 1), (c,), w, b)).permute(0, 3, 1, 2)

    with torch.no_grad():
        torch.testing.assert_close(compiled(block)(x, w, b), block(x, w, b), rtol=1e-4, atol=1e-4)
    got = compiled(block)(x, w, b)
    got_grads = torch.autograd.grad(got.square().sum(), (x, w, b))
    want_grads = torch.autograd.grad(block(x, w, b).square().sum(), (x, w, b))
    for g, e in zip(got_grads, want_grads):
        torch.testing.assert_close(g, e, rtol=1e-3, atol=1e-3 * e.abs().max().item())
    assert generated_ops()[0] > 0


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_pointwise_and_softmax(dtype):
    x = torch.randn(513, 1031, device=DEV, dtype=dtype)
    fn = lambda x: torch.softmax(x * 2 + 1, -1) + x.sigmoid()  # noqa: E731
    tol = {"rtol": 1e-3, "atol": 1e-3} if dtype == torch.float16 else {"rtol": 1.6e-2, "atol": 1e-2}
    torch.testing.assert_close(compiled(fn)(x), fn(x), **tol)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_rounding_of_every_half_precision_value_is_exact(dtype):
    # All 65536 bit patterns (NaN and infinities included): round is half to even, as eager's.
    x = torch.arange(-32768, 32768, dtype=torch.int32).to(torch.int16).view(dtype).to(DEV)
    fn = lambda x: torch.stack([x.round(), x.floor(), x.ceil(), x.trunc(),  # noqa: E731
                                torch.round(x, decimals=0)])
    got, want = compiled(fn)(x), fn(x)
    wrong = ~((got == want) | (got.isnan() & want.isnan()))
    assert not wrong.any(), (f"{int(wrong.sum())} wrong, inputs {x[wrong.any(0)][:8].tolist()}: "
                             f"got {got[:, wrong.any(0)][:, :8].tolist()}, "
                             f"eager {want[:, wrong.any(0)][:, :8].tolist()}")


def test_zero_size_tensors_are_generated():
    x, y = torch.randn(0, 37, device=DEV), torch.randn(37, device=DEV)
    fn = lambda x, y: ((x * y).exp() + 1, x.sum(1), x.t().contiguous())  # noqa: E731
    for got, want in zip(compiled(fn)(x, y), fn(x, y)):
        assert got.shape == want.shape and got.stride() == want.stride(), (got.shape, want.shape)
    assert generated_ops()[1] == 0, generated_ops()


def test_non_contiguous_and_broadcast_inputs():
    a = torch.randn(128, 256, device=DEV).t()
    b = torch.randn(128, device=DEV)
    fn = lambda a, b: (a * b).relu() + a.exp().sum(-1, keepdim=True)  # noqa: E731
    torch.testing.assert_close(compiled(fn)(a, b), fn(a, b), rtol=1e-4, atol=1e-4)


def test_cpu_scalar_tensor_operand():
    x = torch.randn(1000, device=DEV)
    s = torch.tensor(2.5)
    fn = lambda x, s: x * s + 1  # noqa: E731
    torch.testing.assert_close(compiled(fn)(x, s), fn(x, s))


def _ulp_distance(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Steps between float32 values on the ordered line of floats (0 for equal values, NaNs
    and infinities of the same sign); int64."""
    def ordered(t):
        i = t.contiguous().view(torch.int32).to(torch.int64)
        return torch.where(i < 0, -(2 ** 31) - i, i)
    d = (ordered(x) - ordered(y)).abs()
    both_nan = torch.isnan(x) & torch.isnan(y)
    return torch.where(both_nan, torch.zeros_like(d), d)


def _wide_float32(n: int, generator: torch.Generator, min_exp: int = -149,
                  max_exp: int = 127) -> torch.Tensor:
    """n float32 values with random signs, mantissas and exponents in [min_exp, max_exp)."""
    mantissa = torch.rand(n, generator=generator, dtype=torch.float64) + 1
    exponent = torch.randint(min_exp, max_exp, (n,), generator=generator)
    sign = torch.randint(0, 2, (n,), generator=generator) * 2 - 1
    return (sign * torch.ldexp(mantissa, exponent.double())).float()


def test_float32_division_within_2_ulp_over_the_whole_range():
    """a / b (div.full.f32 on the GPU) against the correctly rounded quotient, divisors and
    dividends from subnormal to huge, plus the special values."""
    g = torch.Generator().manual_seed(0)
    a = _wide_float32(1 << 20, g)
    b = _wide_float32(1 << 20, g)
    special = torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1e-45, 3e38])
    a = torch.cat([a, special.repeat_interleave(len(special))])
    b = torch.cat([b, special.repeat(len(special))])
    got = compiled(lambda a, b: a / b)(a.to(DEV), b.to(DEV)).cpu()
    generated, fallback = generated_ops()
    assert generated > 0 and fallback == 0
    want = (a.double() / b.double()).float()
    assert torch.equal(torch.isnan(got), torch.isnan(want))
    worst = _ulp_distance(got, want).max().item()
    assert worst <= 2, worst


@pytest.mark.parametrize("a_exp,scale_exp", [(0, 0), (-20, -120), (0, -105), (0, 110),
                                             (100, 20)])
def test_row_invariant_division_within_2_ulp(a_exp, scale_exp):
    """A divisor fixed over the row (here max * 2^k) is inverted once per row and multiplied;
    the range scaling keeps subnormal (2^-138) and huge divisors accurate."""
    g = torch.Generator().manual_seed(1)
    a = (torch.randn(64, 1000, generator=g) * 2.0 ** a_exp).float()
    scale = 2.0 ** scale_exp
    fn = lambda a: a / (a.amax(-1, keepdim=True) * scale)  # noqa: E731
    got = compiled(fn)(a.to(DEV)).cpu()
    assert generated_ops()[0] > 0
    divisor = a.amax(-1, keepdim=True) * scale  # float32, as the kernel rounds it
    want = (a.double() / divisor.double()).float()
    worst = _ulp_distance(got, want).max().item()
    assert worst <= 2, worst


@pytest.mark.parametrize("shape", [(64, 4096), (3, 70000)])
def test_variance_of_offset_data_vs_float64(shape):
    """Welford (merged per 4-element chunk on the GPU) stays accurate when the mean dwarfs the
    spread: as close to float64 as eager float32, within a small margin."""
    g = torch.Generator().manual_seed(3)
    x = (1000 + torch.randn(*shape, generator=g)).float()
    fn = lambda x: (x.var(-1), F.layer_norm(x, (x.shape[-1],)))  # noqa: E731
    got_var, got_ln = compiled(fn)(x.to(DEV))
    assert generated_ops()[0] > 0
    eager_var, eager_ln = fn(x.to(DEV))
    want_var, want_ln = fn(x.double())
    err = lambda a: (a.cpu().double() - want_var).abs().max().item()  # noqa: E731
    assert err(got_var) <= 2 * err(eager_var) + 1e-5 * want_var.abs().max().item()
    ln_err = lambda a: (a.cpu().double() - want_ln).abs().max().item()  # noqa: E731
    assert ln_err(got_ln) <= 2 * ln_err(eager_ln) + 1e-5


@pytest.mark.parametrize("name,fn", [
    ("exp", torch.exp),
    ("sigmoid", torch.sigmoid),
    ("tanh", torch.tanh),
    ("erf", torch.erf),
    ("gelu", F.gelu),
    ("reciprocal", torch.reciprocal),
    ("bench_chain", lambda x: F.gelu(x * 1.5 + 0.25) * torch.sigmoid(x) - torch.tanh(x)),
])
def test_float32_math_ulp_sweep_vs_float64(name, fn):
    """Dense sweep (all magnitudes from subnormal to overflow, +-0, +-inf, NaN) against float64
    rounded to float32: within 4 ulp, or within 2 ulp of eager float32's own worst error where
    eager itself is further off (cancellation in gelu's 1 + erf, the chain's difference)."""
    g = torch.Generator().manual_seed(2)
    dense = torch.linspace(-30, 30, 1 << 20, dtype=torch.float32)
    tiny = _wide_float32(1 << 18, g, -149, 0)
    wide = _wide_float32(1 << 18, g)
    special = torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan")])
    x = torch.cat([dense, tiny, wide, special])
    got = compiled(lambda x: fn(x))(x.to(DEV)).cpu()
    assert generated_ops()[0] > 0
    eager = fn(x.to(DEV)).cpu()
    want = fn(x.double()).float()
    assert torch.equal(torch.isnan(got), torch.isnan(eager)), name
    ours = _ulp_distance(got, want)
    theirs = _ulp_distance(eager, want)
    bound = max(4, theirs.max().item() + 2)
    assert ours.max().item() <= bound, (name, ours.max().item(), theirs.max().item(),
                                        x[ours.argmax()].item())


def test_out_of_range_gather_raises_index_error_at_the_next_call():
    """The status words are read without a sync: a bad index is reported by the graph's next
    call, naming the kernel and saying so (eager's device-side asserts also surface later)."""
    w = torch.randn(10, 16, device=DEV)
    fn = lambda w, i: F.embedding(i, w) * 2  # noqa: E731
    ok = torch.tensor([1, 2, 9], device=DEV)
    f = compiled(fn)
    torch.testing.assert_close(f(w, ok), fn(w, ok))
    f(w, torch.tensor([1, 12, 3], device=DEV))  # launched; nothing waits for it
    torch.cuda.synchronize()
    with pytest.raises(IndexError, match="earlier call"):
        f(w, ok)
    torch.testing.assert_close(f(w, ok), fn(w, ok))  # reported once; the graph goes on


def test_out_of_range_gather_raises_at_its_call_with_launch_blocking(monkeypatch):
    monkeypatch.setenv("CUDA_LAUNCH_BLOCKING", "1")
    w = torch.randn(10, 16, device=DEV)
    fn = lambda w, i: F.embedding(i, w) * 3  # noqa: E731
    with pytest.raises(IndexError):
        compiled(fn)(w, torch.tensor([1, 12, 3], device=DEV))


def test_output_code_log_shows_llvm_ir_and_ptx():
    inductor_cpp.set_logs("output_code")
    try:
        with collect_logs() as messages:
            compiled(lambda x: x.sin() * 2)(torch.randn(4096, device=DEV))
    finally:
        inductor_cpp.set_logs("")
    code = [m for m in messages if m.startswith("[output_code] graph ")]
    assert code, messages
    assert "LLVM IR" in code[0] and "PTX" in code[0] and ".entry" in code[0]
    assert "<<<(" in code[0]  # the plan's kernel steps show their launch dims


def test_second_process_like_compile_hits_the_cache():
    x = torch.randn(4096, device=DEV)
    fn = lambda x: x.cos() + 1  # noqa: E731
    compiled(fn)(x)
    torch._dynamo.reset()
    inductor_cpp.reset_counters()
    torch.testing.assert_close(compiled(fn)(x), fn(x))
    assert inductor_cpp.counters()["cache_hits"] == 1


def test_resnet18_inference_matches_eager():
    torchvision = pytest.importorskip("torchvision")
    model = torchvision.models.resnet18(weights=None).eval().to(DEV)
    x = torch.randn(8, 3, 224, 224, device=DEV)
    with torch.no_grad():
        expected = model(x)
        actual = compiled(model)(x)
    torch.testing.assert_close(actual, expected, rtol=1e-3, atol=1e-3)
    assert generated_ops()[0] > 0


def _encoder() -> torch.nn.Module:
    layer = torch.nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=256,
                                             dropout=0.0, batch_first=True)
    return torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)


def test_transformer_encoder_inference_matches_eager():
    model = _encoder().eval().to(DEV)
    x = torch.randn(4, 64, 128, device=DEV)
    with torch.no_grad():
        expected = model(x)
        actual = compiled(model)(x)
    torch.testing.assert_close(actual, expected, rtol=1e-3, atol=1e-4)


def test_transformer_encoder_training_step_gradients_vs_float64():
    torch.manual_seed(0)
    model = _encoder().to(DEV)
    reference = copy.deepcopy(model).double()
    ours = copy.deepcopy(model)
    x = torch.randn(4, 32, 128, device=DEV)
    target = torch.randn(4, 32, 128, device=DEV)

    def step(m, x, t):
        loss = F.mse_loss(m(x), t)
        loss.backward()
        return loss

    step(model, x, target)
    loss64 = step(reference, x.double(), target.double())
    loss = step(compiled(ours), x, target)
    torch.testing.assert_close(loss.double(), loss64, rtol=1e-4, atol=1e-5)
    for (name, p32), p_ours, p64 in zip(model.named_parameters(), ours.parameters(),
                                        reference.parameters()):
        eager_err = (p32.grad.double() - p64.grad).abs().max().item()
        ours_err = (p_ours.grad.double() - p64.grad).abs().max().item()
        # As close to the float64 gradient as eager float32 is, up to a small factor.
        assert ours_err <= 4 * eager_err + 1e-6, (name, ours_err, eager_err)
    assert generated_ops()[0] > 0


def test_resnet18_training_step_gradients_vs_float64():
    # Convolutions stay ATen (cuDNN) calls; BatchNorm forward/backward, ReLU, pooling, the
    # residual adds and the loss are generated kernels. Running statistics are updated in place.
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    model = torchvision.models.resnet18(weights=None, num_classes=10).to(DEV).train()
    reference = copy.deepcopy(model).double()
    ours = copy.deepcopy(model)
    x = torch.randn(4, 3, 64, 64, device=DEV)
    target = torch.randint(0, 10, (4,), device=DEV)

    def step(m, x):
        loss = F.cross_entropy(m(x), target)
        loss.backward()
        return loss

    step(model, x)
    loss64 = step(reference, x.double())
    loss = step(compiled(ours), x)
    torch.testing.assert_close(loss.double(), loss64, rtol=1e-3, atol=1e-4)
    for (name, p32), p_ours, p64 in zip(model.named_parameters(), ours.parameters(),
                                        reference.parameters()):
        scale = p64.grad.abs().max().item() or 1.0
        eager_err = (p32.grad.double() - p64.grad).abs().max().item()
        ours_err = (p_ours.grad.double() - p64.grad).abs().max().item()
        assert ours_err <= 3 * eager_err + 1e-6 * scale, (name, ours_err, eager_err)
    # Running statistics: as close to float64's as eager's are (cuDNN's TF32 convolutions make
    # float32 eager itself differ from float64 by ~1e-3 relative in deep layers).
    for (name, b_eager), b_ours, b64 in zip(model.named_buffers(), ours.buffers(), reference.buffers()):
        if not b_eager.is_floating_point():
            assert torch.equal(b_ours, b_eager), name
            continue
        scale = b64.abs().max().item() or 1.0
        eager_err = (b_eager.double() - b64).abs().max().item()
        ours_err = (b_ours.double() - b64).abs().max().item()
        assert ours_err <= 3 * eager_err + 1e-6 * scale, (name, ours_err, eager_err)
    assert generated_ops()[0] > 0


def test_dynamic_shapes_get_gpu_kernels_per_shape():
    """After a shape change Dynamo sends symbolic sizes; each concrete shape then gets a static
    GPU graph with generated kernels (specialize.py), and the results match eager."""
    fn = lambda x: torch.softmax(x.sin() * 2, -1)  # noqa: E731
    f = torch.compile(fn, backend="inductor_cpp", dynamic=True)
    for rows in (5, 7, 5, 33):
        x = torch.randn(rows, 96, device=DEV)
        torch.testing.assert_close(f(x), fn(x))
    ran = [g for g in test_graphs() if g.counters()["calls"] > 0]
    assert len(ran) == 3 and all(g.counters()["kernels"] > 0 for g in ran), \
        [g.plan_text for g in ran]
    assert all(json.loads(g.plan_json).get("library_kind") in ("ptx", "cubin") for g in ran)
