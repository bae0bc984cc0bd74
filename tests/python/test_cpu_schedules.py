"""CPU schedules that restructure loops, against eager on odd sizes and layouts:

* transposing pointwise kernels, tiled 16 x 16 (schedule_cpu.cpp `transpose_tiles`), the
  transposed read copied into a tile through registers (codegen/cpu/transposed_tiles.cpp);
* concatenations read through masked loads, split into one loop per input's channel range with
  the masks folded (`split_at_mask_points`: densenet121's cat + batch norm + ReLU);
* scans (cumsum, cumprod: running accumulators, ir/passes/schedule_scan.cpp);
* loads through a modulo of the loop variable (repeat; roll, whose computed index values
  ir/passes/direct_indices.cpp turns into index expressions), split where the modulo wraps.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from conftest import test_graphs


def compiled(fn):
    return torch.compile(fn, backend="inductor_cpp")


def _fully_generated():
    return all(g.counters().get("ops_fallback", 0) == 0 for g in test_graphs())


@pytest.mark.parametrize("shape", [(37, 45), (128, 96), (300, 17), (513, 1031)])
def test_transpose_add_matches_eager(shape):
    x, y = torch.randn(shape[1], shape[0]), torch.randn(*shape)
    torch.testing.assert_close(compiled(lambda a, b: a.t() + b)(x, y), x.t() + y)


@pytest.mark.parametrize("dtype", [torch.int32, torch.bfloat16, torch.float64])
def test_transposes_of_other_types_match_eager(dtype):
    """int32 and bf16 tiles go through registers like float32; 8-byte types stay gathers."""
    x, y = (torch.randn(s).mul(50).to(dtype) for s in [(70, 45), (45, 70)])
    torch.testing.assert_close(compiled(lambda a, b: a.t() * 3 + b)(x, y), x.t() * 3 + y)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int32, torch.bool])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scans_match_eager(dtype, dim):
    x = torch.randn(3, 131, 37).mul(3).to(dtype) if dtype != torch.bool else torch.rand(3, 131, 37) > 0.5
    for fn in (lambda t: t.cumsum(dim) + 1, lambda t: t.cumprod(dim), lambda t: t.cumsum(dim, dtype=torch.float64)):
        got, want = compiled(fn)(x), fn(x)
        assert got.dtype == want.dtype
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5, equal_nan=True)


def test_scans_along_non_contiguous_dims_are_generated():
    x = torch.randn(45, 300).t()  # cumsum(1) runs down rows of the row-major storage
    got = compiled(lambda t: t.cumsum(1))(x)
    torch.testing.assert_close(got, x.cumsum(1), rtol=1e-5, atol=1e-5)
    assert _fully_generated()
    empty = torch.randn(0, 5)
    torch.testing.assert_close(compiled(lambda t: t.cumsum(0) * 2)(empty), empty.cumsum(0) * 2)


def test_float_scans_along_the_contiguous_dim_stay_aten_calls():
    x = torch.randn(8, 4096)
    torch.testing.assert_close(compiled(lambda t: t.cumsum(-1))(x), x.cumsum(-1), rtol=1e-5, atol=1e-5)
    assert not _fully_generated()


@pytest.mark.parametrize("shifts,dims", [(7, -1), (-3, 0), ((2, -5), (0, 1)), (40, 1)])
def test_roll_matches_eager_and_is_generated(shifts, dims):
    x = torch.randn(37, 45)
    torch.testing.assert_close(compiled(lambda t: torch.roll(t, shifts, dims) * 2)(x),
                               torch.roll(x, shifts, dims) * 2)
    assert _fully_generated()


@pytest.mark.parametrize("repeats", [(1, 4), (3, 1), (2, 3)])
def test_repeat_and_flip_match_eager(repeats):
    x = torch.randn(19, 33)
    torch.testing.assert_close(compiled(lambda t: t.repeat(*repeats).flip(-1) + 1)(x),
                               x.repeat(*repeats).flip(-1) + 1)


def test_indexing_with_computed_negative_indices_matches_eager():
    """Advanced indexing wraps negative indices (a where the ranges decide); index_select
    raises IndexError for them, as eager does."""
    x = torch.randn(50, 24)
    fn = compiled(lambda t: t[torch.arange(-1, -51, -1)] - t)
    torch.testing.assert_close(fn(x), x[torch.arange(-1, -51, -1)] - x)
    assert _fully_generated()
    with pytest.raises(IndexError):
        compiled(lambda t: t.index_select(0, torch.arange(-1, -51, -1)) - t)(x)


@pytest.mark.parametrize("channels_last", [False, True])
def test_nchw_nhwc_conversions_match_eager(channels_last):
    x = torch.randn(3, 29, 33, 35)
    if channels_last:
        x = x.to(memory_format=torch.channels_last)
    to_other = torch.contiguous_format if channels_last else torch.channels_last
    fn = compiled(lambda t: (t * 2 + 1).contiguous(memory_format=to_other))
    got = fn(x)
    assert got.is_contiguous(memory_format=to_other)
    torch.testing.assert_close(got, (x * 2 + 1).contiguous(memory_format=to_other))


def test_permute_of_a_slice_matches_eager():
    x = torch.randn(40, 70, 9)[:, 3:60, ::2]
    torch.testing.assert_close(compiled(lambda t: t.permute(2, 0, 1).sin().contiguous())(x),
                               x.permute(2, 0, 1).sin())


@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("channels", [(64, 32, 32), (3, 17, 29, 1), (7,) * 20])
def test_concat_then_batch_norm_relu_matches_eager(channels, channels_last):
    torch.manual_seed(0)
    parts = [torch.randn(2, c, 9, 11) for c in channels]
    if channels_last:
        parts = [p.to(memory_format=torch.channels_last) for p in parts]
    total = sum(channels)
    bn = torch.nn.BatchNorm2d(total).eval()
    with torch.no_grad():
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2)

    def block(*xs):
        return F.relu(bn(torch.cat(xs, 1)))

    with torch.no_grad():
        torch.testing.assert_close(compiled(block)(*parts), block(*parts))
    assert _fully_generated()


def test_concat_of_non_contiguous_inputs_matches_eager():
    a = torch.randn(2, 9, 8, 8)[:, ::2]          # strided channels
    b = torch.randn(2, 8, 8, 5).permute(0, 3, 1, 2)  # channels innermost
    c = torch.randn(2, 3, 8, 8)
    fn = compiled(lambda *xs: torch.cat(xs, 1).relu() * 2)
    torch.testing.assert_close(fn(a, b, c), torch.cat((a, b, c), 1).relu() * 2)
