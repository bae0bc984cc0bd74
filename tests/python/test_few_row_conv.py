"""Convolutions with at most 32 output positions and a filter of 1 MiB or more run as a matrix
product reading the filter in place (few_row_conv.py): inference and a training step against
eager, with and without bias, stride 1 and 2, channels-last and contiguous inputs; smaller
cases keep the convolution."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F

from inductor_cpp import few_row_conv


@pytest.mark.parametrize("stride,side,bias,channels_last",
                         [(1, 2, True, True), (2, 4, False, False), (1, 3, True, False)])
def test_few_row_convolution_matches_eager(stride, side, bias, channels_last):
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(256, 384, 3, stride=stride, padding=1, bias=bias).eval()
    x = torch.randn(2, 256, side, side)
    if channels_last:
        x = x.to(memory_format=torch.channels_last)
    before = few_row_conv.rewritten_total
    f = torch.compile(conv, backend="inductor_cpp")
    with torch.no_grad():
        out = f(x)
        expected = conv(x)
    torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-4)
    assert out.stride() == expected.stride()
    assert few_row_conv.rewritten_total == before + 1


def test_many_positions_or_small_filters_keep_the_convolution():
    before = few_row_conv.rewritten_total
    for conv, x in [(torch.nn.Conv2d(256, 384, 3, padding=1), torch.randn(2, 256, 8, 8)),
                    (torch.nn.Conv2d(16, 16, 3, padding=1), torch.randn(1, 16, 2, 2))]:
        with torch.no_grad():
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
    with torch.no_grad():
        for side in (2, 3):
            x = torch.randn(2, 256, side, side)
            torch.testing.assert_close(f(x), conv(x), rtol=1e-4, atol=1e-4)
    import inductor_cpp

    assert not any("symbolic number" in r for r in
                   inductor_cpp.dynamo_backend.recent_eager_fallback_reasons)
