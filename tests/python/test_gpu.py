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
    assert kernel_steps and all(s["gpu"]["grid"][0] >= 1 for s in kernel_steps)


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


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_pointwise_and_softmax(dtype):
    x = torch.randn(513, 1031, device=DEV, dtype=dtype)
    fn = lambda x: torch.softmax(x * 2 + 1, -1) + x.sigmoid()  # noqa: E731
    tol = {"rtol": 1e-3, "atol": 1e-3} if dtype == torch.float16 else {"rtol": 1.6e-2, "atol": 1e-2}
    torch.testing.assert_close(compiled(fn)(x), fn(x), **tol)


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


def test_out_of_range_gather_raises_index_error():
    w = torch.randn(10, 16, device=DEV)
    fn = lambda w, i: F.embedding(i, w) * 2  # noqa: E731
    ok = torch.tensor([1, 2, 9], device=DEV)
    torch.testing.assert_close(compiled(fn)(w, ok), fn(w, ok))
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
    for b_eager, b_ours in zip(model.buffers(), ours.buffers()):
        torch.testing.assert_close(b_ours, b_eager, rtol=1e-3, atol=1e-4)
    assert generated_ops()[0] > 0
