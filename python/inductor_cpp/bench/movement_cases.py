"""The rows of `python -m inductor_cpp.bench movement`: data movement, index and scan kernels.

Issue 42's micro suite: permutes (2-D, 3-D, 4-D, NCHW <-> NHWC), broadcasts, concatenation and
stacking, pads, slices, flips, gathers and embeddings, index_put / scatter_add with duplicate
indices, cumulative sums, middle-dim reductions, argmax along rows and columns, in float32 and
in bf16 / fp16, with odd (prime) sizes and non-contiguous inputs. Each row builds its function
and inputs for a size class: `n` elements per main tensor (the CPU default 2^22, 16 MiB of
float32; on CUDA 2^26), so rows of one run move comparable bytes.

A row's bytes are what the operation must move at least: every input read once and the output
written once, except where it reads only part of an input (gather, embedding, index_select:
the selected elements, i.e. the output's size, plus the indices).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class Sizes:
    """Shapes of one size class: rows x cols (2-D), b x m x k (3-D), n x c x h x w (4-D)."""

    rows: int
    cols: int
    prime: tuple[int, int]
    three: tuple[int, int, int]
    four: tuple[int, int, int, int]
    vocab: int
    dim: int

    @staticmethod
    def for_elements(n: int) -> "Sizes":
        cols = 4096 if n <= (1 << 24) else 8192
        rows = max(n // cols, 16)
        k = 512 if n <= (1 << 24) else 1024
        four_c = 64 if n <= (1 << 24) else 128
        primes = (1021, 4099) if n <= (1 << 24) else (8191, 8209)
        return Sizes(rows=rows, cols=cols, prime=primes, three=(max(n // (k * k), 1), k, k),
                     four=(max(n // (four_c * 64 * 128), 1), four_c, 64, 128), vocab=32000, dim=128)


def _nbytes(x: Any) -> int:
    if isinstance(x, torch.Tensor):
        return x.numel() * x.element_size()
    if isinstance(x, (tuple, list)):
        return sum(_nbytes(v) for v in x)
    return 0


def read_and_write(inputs: tuple, out: Any) -> int:
    return _nbytes(inputs) + _nbytes(out)


def selected(index_position: int) -> Callable[[tuple, Any], int]:
    """Bytes of an op that reads only the selected elements: the indices, then the output's
    size read and written."""
    return lambda inputs, out: _nbytes(inputs[index_position]) + 2 * _nbytes(out)


@dataclass(frozen=True)
class Row:
    name: str
    what: str
    build: Callable[[Sizes, str], tuple[Callable, tuple]]
    bytes: Callable[[tuple, Any], int] = read_and_write
    tol: tuple[float, float] = (1e-4, 1e-5)  # rtol, atol; integer outputs compare exactly


def _randn(shape, dev, dtype=torch.float32):
    return torch.randn(*shape, device=dev).to(dtype)


def _two(s: Sizes, dev, dtype=torch.float32, prime=False):
    r, c = s.prime if prime else (s.rows, s.cols)
    return _randn((c, r), dev, dtype), _randn((r, c), dev, dtype)


def _dups(high: int, count: int, dev) -> torch.Tensor:
    """`count` indices below `high`, each value about 4 times (duplicates on purpose)."""
    return torch.randint(0, max(high // 4, 1), (count,), device=dev)


HALF = (1e-2, 1e-2)
SCAN = (1e-3, 1e-2)  # prefix sums of thousands of terms: order-dependent rounding

ROWS: list[Row] = [
    Row("transpose", "x.t().contiguous()",
        lambda s, d: (lambda x: x.t().contiguous(), (_randn((s.cols, s.rows), d),))),
    Row("transpose_add", "x.t() + y",
        lambda s, d: (lambda x, y: x.t() + y, _two(s, d))),
    Row("transpose_add_prime", "x.t() + y, prime sizes",
        lambda s, d: (lambda x, y: x.t() + y, _two(s, d, prime=True))),
    Row("transpose_bf16", "x.t().contiguous(), bfloat16",
        lambda s, d: (lambda x: x.t().contiguous(), (_randn((s.cols, s.rows), d, torch.bfloat16),)),
        tol=HALF),
    Row("transpose_add_fp16", "x.t() + y, float16",
        lambda s, d: (lambda x, y: x.t() + y, _two(s, d, torch.float16)), tol=HALF),
    Row("permute_201", "x.permute(2, 0, 1).contiguous(), b x m x k",
        lambda s, d: (lambda x: x.permute(2, 0, 1).contiguous(), (_randn(s.three, d),))),
    Row("permute_0213", "x.permute(0, 2, 1, 3).contiguous() (attention heads)",
        lambda s, d: (lambda x: x.permute(0, 2, 1, 3).contiguous(), (_randn(s.four, d),))),
    Row("nchw_to_nhwc", "x.contiguous(memory_format=channels_last)",
        lambda s, d: (lambda x: x.contiguous(memory_format=torch.channels_last), (_randn(s.four, d),))),
    Row("nhwc_to_nchw", "channels-last x .contiguous()",
        lambda s, d: (lambda x: x.contiguous(),
                      (_randn(s.four, d).contiguous(memory_format=torch.channels_last),))),
    Row("row_broadcast", "x + b, b of one row",
        lambda s, d: (lambda x, b: x + b, (_randn((s.rows, s.cols), d), _randn((s.cols,), d)))),
    Row("column_broadcast", "x * v[:, None], v of one column",
        lambda s, d: (lambda x, v: x * v[:, None], (_randn((s.rows, s.cols), d), _randn((s.rows,), d)))),
    Row("broadcast_fp16", "x * w + b, float16",
        lambda s, d: (lambda x, w, b: x * w + b, (_randn((s.rows, s.cols), d, torch.float16),
                                                  _randn((s.cols,), d, torch.float16),
                                                  _randn((s.rows, 1), d, torch.float16))), tol=HALF),
    Row("cat_rows", "cat([a, b], 0)",
        lambda s, d: (lambda a, b: torch.cat([a, b], 0),
                      (_randn((s.rows // 2, s.cols), d), _randn((s.rows // 2, s.cols), d)))),
    Row("cat_columns", "cat([a, b, c], 1), widths 1/2, 1/4, 1/4",
        lambda s, d: (lambda a, b, c: torch.cat([a, b, c], 1),
                      (_randn((s.rows, s.cols // 2), d), _randn((s.rows, s.cols // 4), d),
                       _randn((s.rows, s.cols // 4), d)))),
    Row("stack_last", "stack([a, b], -1)",
        lambda s, d: (lambda a, b: torch.stack([a, b], -1),
                      (_randn((s.rows // 2, s.cols), d), _randn((s.rows // 2, s.cols), d)))),
    Row("pad", "F.pad(x, (3, 5, 1, 2))",
        lambda s, d: (lambda x: F.pad(x, (3, 5, 1, 2)), (_randn((s.rows, s.cols), d),))),
    Row("strided_slice", "x[:, 1::2] * 2 (every other column)",
        lambda s, d: (lambda x: x[:, 1::2] * 2, (_randn((s.rows, s.cols), d),))),
    Row("flip", "x.flip(-1)",
        lambda s, d: (lambda x: x.flip(-1), (_randn((s.rows, s.cols), d),))),
    Row("roll", "torch.roll(x, 7, -1)",
        lambda s, d: (lambda x: torch.roll(x, 7, -1), (_randn((s.rows, s.cols), d),))),
    Row("repeat", "x.repeat(1, 4)",
        lambda s, d: (lambda x: x.repeat(1, 4), (_randn((s.rows, s.cols // 4), d),))),
    Row("gather", "x.gather(1, idx)",
        lambda s, d: (lambda x, i: x.gather(1, i),
                      (_randn((s.rows, s.cols), d), torch.randint(0, s.cols, (s.rows, s.cols), device=d))),
        bytes=selected(1)),
    Row("embedding", "F.embedding(ids, w), 32000 x 128",
        lambda s, d: (lambda i, w: F.embedding(i, w),
                      (torch.randint(0, s.vocab, (s.rows * s.cols // s.dim,), device=d),
                       _randn((s.vocab, s.dim), d))),
        bytes=selected(0)),
    Row("index_select", "x.index_select(0, idx)",
        lambda s, d: (lambda x, i: x.index_select(0, i),
                      (_randn((s.rows, s.cols), d), torch.randint(0, s.rows, (s.rows,), device=d))),
        bytes=selected(1)),
    Row("index_put_accumulate", "index_put(x, (idx,), v, accumulate=True), duplicate rows",
        lambda s, d: (lambda x, i, v: torch.index_put(x, (i,), v, accumulate=True),
                      (_randn((s.rows, s.cols), d), _dups(s.rows, s.rows // 2, d),
                       _randn((s.rows // 2, s.cols), d))), tol=(1e-4, 1e-4)),
    Row("scatter_add", "x.scatter_add(0, idx, src), duplicate targets",
        lambda s, d: (lambda x, i, v: x.scatter_add(0, i, v),
                      (_randn((s.rows, s.cols), d),
                       torch.randint(0, max(s.rows // 4, 1), (s.rows, s.cols), device=d),
                       _randn((s.rows, s.cols), d))), tol=(1e-4, 1e-4)),
    Row("cumsum_rows", "x.cumsum(-1)",
        lambda s, d: (lambda x: x.cumsum(-1), (_randn((s.rows, s.cols), d),)), tol=SCAN),
    Row("cumsum_columns", "x.cumsum(0)",
        lambda s, d: (lambda x: x.cumsum(0), (_randn((s.rows, s.cols), d),)), tol=SCAN),
    Row("sum_middle", "x.sum(1), b x m x k",
        lambda s, d: (lambda x: x.sum(1), (_randn(s.three, d),)), tol=(1e-4, 1e-3)),
    Row("sum_rows_bf16", "x.sum(-1), bfloat16",
        lambda s, d: (lambda x: x.sum(-1), (_randn((s.rows, s.cols), d, torch.bfloat16),)),
        tol=(2e-2, 1e-1)),
    Row("argmax_rows", "x.argmax(-1)",
        lambda s, d: (lambda x: x.argmax(-1), (_randn((s.rows, s.cols), d),))),
    Row("argmax_columns", "x.argmax(0)",
        lambda s, d: (lambda x: x.argmax(0), (_randn((s.rows, s.cols), d),))),
]
