"""Correctness checks of the micro benchmark: a compiled output against eager.

The criterion is torch.testing.assert_close's (|out - eager| <= atol + rtol |eager|, NaNs equal),
evaluated in chunks so that 1 GiB outputs need little extra memory. An output that misses it gets
a second chance against a float64 evaluation (fp64_verdict): summing in another order legitimately
differs from eager by rounding that grows with the reduction length, but a less accurate
summation should still fail.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import Any

import torch

CHECK_CHUNK = 1 << 24  # elements compared at a time, to bound the check's extra memory
FP64_ERROR_FACTOR = 3.0  # see fp64_verdict

def _chunks(a: torch.Tensor, b: torch.Tensor):
    a, b = a.detach().reshape(-1), b.detach().reshape(-1)
    for start in range(0, a.numel(), CHECK_CHUNK):
        yield a[start:start + CHECK_CHUNK], b[start:start + CHECK_CHUNK]


def max_abs_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    """max |a - b| in float64, NaN against NaN counting as equal and NaN against a number as
    infinitely wrong; chunked, so that 1 GiB tensors need little extra memory."""
    worst = 0.0
    for ac, bc in _chunks(a, b):
        ac, bc = ac.double(), bc.double()
        diff = torch.where(ac.isnan() & bc.isnan(), 0.0, (ac - bc).abs())
        if diff.numel():
            worst = max(worst, float(diff.nan_to_num(nan=math.inf).max()))
    return worst


def compare(out: Any, ref: torch.Tensor, rtol: float, atol: float) -> dict[str, Any]:
    """torch.testing.assert_close's criterion (|out - ref| <= atol + rtol |ref|, NaNs equal),
    evaluated in chunks."""
    result: dict[str, Any] = {"ok": False, "criterion": f"rtol={rtol:g} atol={atol:g}",
                              "max_abs_err": None, "mismatches": None}
    if not isinstance(out, torch.Tensor) or out.shape != ref.shape or out.dtype != ref.dtype:
        result["error"] = (f"got {type(out).__name__} {getattr(out, 'shape', '')} "
                           f"{getattr(out, 'dtype', '')}, expected {ref.shape} {ref.dtype}")
        return result
    mismatches = sum(int((~torch.isclose(ac, bc, rtol=rtol, atol=atol, equal_nan=True)).sum())
                     for ac, bc in _chunks(out, ref))
    result.update(ok=mismatches == 0, max_abs_err=max_abs_diff(out, ref), mismatches=mismatches)
    return result


def reference64(fn: Callable, inputs: tuple) -> torch.Tensor:
    """fn evaluated in float64 (a module on a float64 copy of itself)."""
    if isinstance(fn, torch.nn.Module):
        fn = copy.deepcopy(fn).double()
    with torch.no_grad():
        return fn(*(t.double() if t.is_floating_point() else t for t in inputs))


def fp64_verdict(check: dict[str, Any], out: torch.Tensor, ref: torch.Tensor,
                 ref64: torch.Tensor, atol: float) -> None:
    """Second chance for an output that missed the tolerance against eager: a reduction that
    sums in another order differs from eager by rounding that grows with the reduction length
    (not with the result, which may be near zero). Like the training protocol, it passes when
    its error against float64 is at most FP64_ERROR_FACTOR x eager float32's (or atol)."""
    err, eager_err = max_abs_diff(out, ref64), max_abs_diff(ref, ref64)
    ok = err <= max(FP64_ERROR_FACTOR * eager_err, atol)
    check.update(ok=ok, fp64_err=err, eager_fp64_err=eager_err,
                 criterion=check["criterion"] + f" or fp64 error <= {FP64_ERROR_FACTOR:g}x eager")
    check["passed_by"] = "fp64" if ok else None
