"""pad_mm.py: half-precision matrix products padded to multiples of 8 (CUDA only in the
backend; here the pass runs on CPU graphs, device_types=("cpu",), with the size threshold
lowered, and the padded graph must compute what the original does)."""

from __future__ import annotations

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

from inductor_cpp import pad_mm

aten = torch.ops.aten


def _padded_graph(fn, *args, monkeypatch):
    monkeypatch.setattr(pad_mm, "MIN_WORK", 0)
    gm = make_fx(fn, tracing_mode="fake")(*args)
    fakes = [n.meta["val"] for n in gm.graph.nodes if n.op == "placeholder"]
    count = pad_mm.pad_matrix_products(gm, fakes, device_types=("cpu",))
    return gm, count


def _targets(gm):
    return [n.target for n in gm.graph.nodes if n.op == "call_function"]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_mm_and_addmm_with_odd_sizes_are_padded_and_match(dtype, monkeypatch):
    torch.manual_seed(0)
    a, b = torch.randn(37, 41, dtype=dtype), torch.randn(41, 51, dtype=dtype)
    bias, w = torch.randn(51, dtype=dtype), torch.randn(51, 41, dtype=dtype)

    def fn(a, b, bias, w):
        # a plain product, a bias product with a transposed (column-major) weight, and uses
        # of both that read the sliced results
        return (torch.mm(a, b) * 2, torch.addmm(bias, a, w.t()).relu().sum(0))

    gm, count = _padded_graph(fn, a, b, bias, w, monkeypatch=monkeypatch)
    assert count == 2
    targets = _targets(gm)
    assert targets.count(aten.constant_pad_nd.default) >= 4 and aten.slice.Tensor in targets
    for n in gm.graph.nodes:
        if n.op == "call_function" and n.target in (aten.mm.default, aten.addmm.default):
            assert all(s % 8 == 0 for s in n.meta["val"].shape), n.meta["val"].shape
    got, want = gm(a, b, bias, w), fn(a, b, bias, w)
    for g, e in zip(got, want):
        assert g.shape == e.shape and g.dtype == e.dtype
        torch.testing.assert_close(g, e, rtol=2e-2, atol=2e-2)


def test_left_alone_when_aligned_even_float32_or_small(monkeypatch):
    aligned = (torch.randn(16, 32, dtype=torch.bfloat16), torch.randn(32, 8, dtype=torch.bfloat16))
    odd32 = (torch.randn(7, 9), torch.randn(9, 5))
    even = (torch.randn(6, 10, dtype=torch.bfloat16), torch.randn(10, 14, dtype=torch.bfloat16))
    odd = (torch.randn(7, 9, dtype=torch.bfloat16), torch.randn(9, 5, dtype=torch.bfloat16))
    for args in (aligned, odd32, even):  # even sizes: cuBLAS is fast enough (docstring)
        assert _padded_graph(lambda a, b: torch.mm(a, b) + 1, *args, monkeypatch=monkeypatch)[1] == 0
    # a result that is a graph output is copied back to eager's contiguous strides
    gm, count = _padded_graph(lambda a, b: torch.mm(a, b), *odd, monkeypatch=monkeypatch)
    assert count == 1 and aten.clone.default in _targets(gm)
    out = gm(*odd)
    assert out.is_contiguous() and out.shape == (7, 5)
    torch.testing.assert_close(out, torch.mm(*odd))
    # the threshold (restored): this product is far below it
    monkeypatch.undo()
    gm = make_fx(lambda a, b: torch.mm(a, b) + 1, tracing_mode="fake")(*odd)
    fakes = [n.meta["val"] for n in gm.graph.nodes if n.op == "placeholder"]
    assert pad_mm.pad_matrix_products(gm, fakes, device_types=("cpu",)) == 0
