"""In training graphs, convolutions with at most 32 output positions and a filter of 1 MiB or
more, and their backward, run as matrix products reading the filter in place
(few_row_conv.py): forward and gradients against eager, with and without bias, stride 1 and 2,
channels-last and contiguous inputs, two training steps; inference graphs, more positions,
smaller filters and symbolic sizes keep the convolution."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F

from inductor_cpp import few_row_conv


@pytest.mark.parametrize("stride,side,bias,channels_last",
                         [(1, 2, True, True), (2, 4, False, False), (1, 3, True, False)])
def test_few_row_convolution_and_its_backward_match_eager(stride, side, bias, channels_last):
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(256, 384, 3, stride=stride, padding=1, bias=bias)
    reference = copy.deepcopy(conv)
    x = torch.randn(2, 256, side, side)
    if channels_last:
        x = x.to(memory_format=torch.channels_last)
    x_ours, x_ref = x.clone().requires_grad_(), x.clone().requires_grad_()
    before = few_row_conv.rewritten_total
    out = torch.compile(conv, backend="inductor_cpp")(x_ours)  # a training graph: filters change
    expected = reference(x_ref)
    torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-4)
    assert out.stride() == expected.stride()
    out.square().sum().backward()
    expected.square().sum().backward()
    torch.testing.assert_close(x_ours.grad, x_ref.grad, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(conv.weight.grad, reference.weight.grad, rtol=1e-4, atol=1e-3)
    if bias:
        torch.testing.assert_close(conv.bias.grad, reference.bias.grad, rtol=1e-4, atol=1e-3)
    assert few_row_conv.rewritten_total == before + 2  # the forward and its backward


def test_inference_many_positions_and_small_filters_keep_the_convolution():
    before = few_row_conv.rewritten_total
    for conv, x, grad in [(torch.nn.Conv2d(256, 384, 3, padding=1), torch.randn(2, 256, 2, 2), False),
                          (torch.nn.Conv2d(256, 384, 3, padding=1), torch.randn(2, 256, 8, 8), True),
                          (torch.nn.Conv2d(16, 16, 3, padding=1), torch.randn(1, 16, 2, 2), True)]:
        with torch.set_grad_enabled(grad):
            torch.testing.assert_close(torch.compile(conv, backend="inductor_cpp")(x), conv(x),
                                       rtol=1e-4, atol=1e-4)
    assert few_row_conv.rewritten_total == before


def test_a_training_step_through_few_row_convolutions_matches_eager():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(192, 512, 3, padding=1), torch.nn.ReLU(),
                                torch.nn.Conv2d(512, 512, 3, stride=2, padding=1),
                                torch.nn.Flatten(), torch.nn.Linear(512, 10))
    reference = copy.deepcopy(model)
    f = torch.compile(model, backend="inductor_cpp")
    before = few_row_conv.rewritten_total
    for _ in range(2):  # the second step: the filters changed in place
        x = torch.randn(4, 192, 2, 2)
        loss = F.cross_entropy(f(x), torch.arange(4))
        ref = F.cross_entropy(reference(x), torch.arange(4))
        loss.backward()
        ref.backward()
        torch.testing.assert_close(loss, ref, rtol=1e-4, atol=1e-5)
        for p, q in zip(model.parameters(), reference.parameters()):
            torch.testing.assert_close(p.grad, q.grad, rtol=1e-3, atol=1e-5)
        with torch.no_grad():
            for p, q in zip(model.parameters(), reference.parameters()):
                p -= 0.1 * p.grad
                q -= 0.1 * q.grad
                p.grad = q.grad = None
    assert few_row_conv.rewritten_total >= before + 4  # two forward, two backward


def test_symbolic_sizes_are_left_alone():
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(256, 384, 3, padding=1).eval()
    f = torch.compile(conv, backend="inductor_cpp", dynamic=True)
    for side in (2, 3):  # with grad: training graphs, where the rewrite would apply
        x = torch.randn(2, 256, side, side)
        torch.testing.assert_close(f(x), conv(x), rtol=1e-4, atol=1e-4)
    import inductor_cpp

    assert not any("symbolic number" in r for r in
                   inductor_cpp.dynamo_backend.recent_eager_fallback_reasons)
