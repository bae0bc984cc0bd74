"""Library calls on the GPU (runtime/gpu_library_step.h): mm / addmm / bmm and convolutions
(forward and backward) are the same IR node as on the CPU, run by cuBLAS(Lt) and cuDNN through
ATen, with the bias, residual and activation epilogues those libraries apply themselves.

Each test checks the answer against eager and the plan's steps: which ops became library
calls, what their epilogue took over, which kernels are left. Skipped without a CUDA device."""
from __future__ import annotations

import copy
import json

import pytest
import torch
import torch.nn.functional as F

from conftest import test_graphs

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

DEV = "cuda"


def compiled(fn):
    return torch.compile(fn, backend="inductor_cpp")


def steps() -> list[dict]:
    return [s for g in test_graphs() for s in json.loads(g.plan_json)["steps"]]


def library_steps() -> list[dict]:
    return [s["library"] for s in steps() if "library" in s]


def epilogue_kinds(call: dict) -> list[str]:
    return [e["kind"] for e in call.get("epilogue", [])]


@pytest.mark.parametrize("act,kind", [(F.relu, "relu"), (lambda x: F.gelu(x, approximate="tanh"), "gelu_tanh")])
def test_linear_activation_runs_in_the_gemm_epilogue(act, kind):
    linear = torch.nn.Linear(256, 512).to(DEV)
    x = torch.randn(64, 256, device=DEV)
    fn = lambda x: act(linear(x))  # noqa: E731
    with torch.no_grad():
        torch.testing.assert_close(compiled(fn)(x), fn(x), rtol=1e-4, atol=1e-4)
    calls = library_steps()
    assert [c["op"] for c in calls] == ["addmm"]
    assert epilogue_kinds(calls[0]) == ["bias_col", kind]
    assert not [s for s in steps() if "kernel" in s], "the activation kernel should be gone"


def test_erf_gelu_stays_a_generated_kernel():
    linear = torch.nn.Linear(128, 128).to(DEV)
    x = torch.randn(32, 128, device=DEV)
    fn = lambda x: F.gelu(linear(x))  # noqa: E731
    with torch.no_grad():
        torch.testing.assert_close(compiled(fn)(x), fn(x), rtol=1e-4, atol=1e-4)
    assert [epilogue_kinds(c) for c in library_steps()] == [["bias_col"]]
    assert [s for s in steps() if "kernel" in s]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_linear(dtype):
    linear = torch.nn.Linear(128, 64).to(DEV, dtype)
    x = torch.randn(16, 128, device=DEV, dtype=dtype)
    with torch.no_grad():
        torch.testing.assert_close(compiled(linear)(x), linear(x), rtol=2e-2, atol=2e-2)
    assert [c["op"] for c in library_steps()] == ["addmm"]


def test_bmm_scale_and_residual():
    a, b = torch.randn(4, 32, 64, device=DEV), torch.randn(4, 64, 48, device=DEV)
    r = torch.randn(4, 32, 48, device=DEV)
    fn = lambda a, b, r: torch.bmm(a, b) * 0.125 + r  # noqa: E731
    torch.testing.assert_close(compiled(fn)(a, b, r), fn(a, b, r), rtol=1e-4, atol=1e-4)
    calls = library_steps()
    assert [c["op"] for c in calls] == ["bmm"]
    assert epilogue_kinds(calls[0]) == ["scale", "residual"]


@pytest.mark.parametrize("channels_last", [False, True])
def test_grouped_convolution_with_bias(channels_last):
    conv = torch.nn.Conv2d(32, 64, 3, stride=2, padding=1, groups=4).to(DEV)
    x = torch.randn(4, 32, 28, 28, device=DEV)
    if channels_last:
        conv = conv.to(memory_format=torch.channels_last)
        x = x.to(memory_format=torch.channels_last)
    fn = lambda x: torch.relu(conv(x))  # noqa: E731
    with torch.no_grad():
        actual = compiled(fn)(x)
        torch.testing.assert_close(actual, fn(x), rtol=1e-3, atol=1e-3)
    assert actual.stride() == fn(x).stride()
    calls = library_steps()
    assert [c["op"] for c in calls] == ["conv2d"]
    assert calls[0]["geometry"]["groups"] == 4
    # cuDNN would add the bias in a second kernel: the generated relu kernel adds it
    # (decompositions.py peels it off the convolution).
    assert epilogue_kinds(calls[0]) == []


def test_convolution_training_step_gradients_vs_float64():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(),
                                torch.nn.Conv2d(16, 8, 3, stride=2, groups=2), torch.nn.Flatten(),
                                torch.nn.Linear(8 * 7 * 7, 10)).to(DEV)
    reference = __import__("copy").deepcopy(model).double()
    x = torch.randn(4, 3, 16, 16, device=DEV)
    compiled(model)(x).square().sum().backward()
    reference(x.double()).square().sum().backward()
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad, q.grad.float(), rtol=1e-3, atol=1e-3, msg=name)
    ops = [c["op"] for c in library_steps()]
    assert ops.count("conv2d") == 2 and "conv2d_backward" in ops and "mm" in ops


def test_bf16_product_with_an_odd_vocabulary_is_padded_and_matches_eager():
    """GPT-2's 50257-word output projection under bf16 (pad_mm.py): forward and both backward
    products padded to multiples of 8, results and gradients as eager's."""
    from inductor_cpp import pad_mm

    torch._dynamo.reset()
    torch.manual_seed(0)
    head = torch.nn.Linear(768, 50257, bias=False, device=DEV, dtype=torch.bfloat16)
    x = torch.randn(1024, 768, device=DEV, dtype=torch.bfloat16, requires_grad=True)
    target = torch.randint(0, 50257, (1024,), device=DEV)

    def loss(model, x):
        return torch.nn.functional.cross_entropy(model(x).float(), target)

    before = pad_mm.padded_total
    compiled_head = copy.deepcopy(head)
    cx = x.detach().clone().requires_grad_()
    got = torch.compile(lambda x: loss(compiled_head, x), backend="inductor_cpp")(cx)
    got.backward()
    want = loss(head, x)
    want.backward()
    assert pad_mm.padded_total - before == 3  # the forward product and the two of backward
    torch.testing.assert_close(got, want, rtol=2e-2, atol=2e-2)
    torch.testing.assert_close(cx.grad, x.grad, rtol=5e-2, atol=5e-2)
    torch.testing.assert_close(compiled_head.weight.grad, head.weight.grad, rtol=5e-2, atol=5e-2)
