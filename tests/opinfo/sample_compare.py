"""Copying, describing and comparing OpInfo samples and results, for the harness (harness.py).

* clone_tree: an exact copy of a sample (same sizes, strides, offsets and storage sharing over
  cloned storages), so eager and compiled runs see the same inputs and neither sees the other's
  mutations.
* describe / describe_sample: a compact text of a sample's arguments for the reports.
* compare: outputs (or inputs after the call) against eager's, raising Mismatch with the path
  of the first difference; max_error, for the harness' float64 second chance.
* alias_map: which input each output shares its storage with (aliasing notes).
"""

from __future__ import annotations

import math
from typing import Any, Iterable

import torch
import torch.utils._pytree as pytree


def _exact_clone(t: torch.Tensor, memo: dict) -> torch.Tensor:
    """A copy with the same sizes, strides and storage offset over a cloned storage (inputs that
    share a storage keep sharing one), so views and overlapping strides stay what they were."""
    if type(t) is not torch.Tensor and not isinstance(t, torch.nn.Parameter):
        return t.clone()
    if t.layout != torch.strided or t.is_conj() or t.is_neg():
        return t.clone()
    storage = t.untyped_storage()
    key = (storage.data_ptr(), storage.nbytes(), t.device)
    if key not in memo:
        memo[key] = storage.clone()
    out = torch.empty(0, dtype=t.dtype, device=t.device)
    out.set_(memo[key], t.storage_offset(), t.size(), t.stride())
    return out


def clone_tree(tree: Any) -> Any:
    memo: dict = {}
    return pytree.tree_map(lambda x: _exact_clone(x, memo) if isinstance(x, torch.Tensor) else x, tree)


_DTYPE_SHORT = {torch.float32: "f32", torch.float64: "f64", torch.int64: "i64",
                torch.int32: "i32", torch.bool: "b8", torch.int16: "i16", torch.int8: "i8",
                torch.uint8: "u8", torch.float16: "f16", torch.bfloat16: "bf16"}


def describe(x: Any, depth: int = 0) -> str:
    """Compact description of a sample argument: f32[2,3]{strides 1,2}, [..], scalars."""
    if isinstance(x, torch.Tensor):
        s = f"{_DTYPE_SHORT.get(x.dtype, str(x.dtype).removeprefix('torch.'))}{list(x.shape)}"
        if x.layout != torch.strided:
            return s + f"<{x.layout}>"
        if x.numel() > 1 and not x.is_contiguous():
            s += "{strides " + ",".join(map(str, x.stride())) + "}"
        if x.storage_offset():
            s += f"@{x.storage_offset()}"
        if x.dim() == 0 or (x.numel() <= 4 and x.dtype != torch.bool):
            try:
                s += "=" + str(x.tolist()).replace(" ", "")
            except Exception:
                pass
        return s
    if isinstance(x, (list, tuple)):
        if depth > 2 or len(x) > 12:
            return f"{type(x).__name__}(len {len(x)})"
        inner = ",".join(describe(i, depth + 1) for i in x)
        return f"[{inner}]" if isinstance(x, list) else f"({inner})"
    if isinstance(x, dict):
        return "{" + ",".join(f"{k}={describe(v, depth + 1)}" for k, v in x.items()) + "}"
    if callable(x) and hasattr(x, "__name__"):
        return x.__name__
    r = repr(x)
    return r if len(r) <= 60 else r[:57] + "..."


def describe_sample(sample) -> str:
    parts = [describe(sample.input)] + [describe(a) for a in sample.args]
    parts += [f"{k}={describe(v)}" for k, v in sample.kwargs.items()]
    s = "(" + ", ".join(parts) + ")"
    if getattr(sample, "name", ""):
        s += f" [{sample.name}]"
    return s if len(s) <= 400 else s[:397] + "..."



class Mismatch(AssertionError):
    pass


def compare(actual: Any, expected: Any, path: str, floating: bool, metadata_only: bool,
            rtol: float, atol: float) -> None:
    """Raises Mismatch at the first difference of `actual` from eager's `expected` (tensors by
    dtype, shape and layout, then values unless `metadata_only`, within rtol / atol when
    `floating`; containers element by element; other values with ==)."""
    if isinstance(expected, torch.Tensor):
        if not isinstance(actual, torch.Tensor):
            raise Mismatch(f"{path}: expected a Tensor, got {type(actual).__name__}")
        if actual.dtype != expected.dtype:
            raise Mismatch(f"{path}: dtype {actual.dtype} != eager {expected.dtype}")
        if actual.shape != expected.shape:
            raise Mismatch(f"{path}: shape {list(actual.shape)} != eager {list(expected.shape)}")
        if actual.layout != expected.layout:
            raise Mismatch(f"{path}: layout {actual.layout} != eager {expected.layout}")
        if metadata_only:
            return
        tol = {"rtol": rtol, "atol": atol} if floating else {}
        try:
            torch.testing.assert_close(actual, expected, equal_nan=True, check_dtype=True,
                                       check_device=True, **tol)
        except AssertionError as e:
            first = str(e).strip().splitlines()
            raise Mismatch(f"{path}: values differ: " + " ".join(first[:4])) from None
        return
    if isinstance(expected, (tuple, list)) and not isinstance(expected, torch.Size):
        if not isinstance(actual, (tuple, list)) or len(actual) != len(expected):
            raise Mismatch(f"{path}: expected {type(expected).__name__} of {len(expected)}, got "
                           f"{describe(actual)}")
        for i, (a, e) in enumerate(zip(actual, expected)):
            compare(a, e, f"{path}[{i}]", floating, metadata_only, rtol, atol)
        return
    if isinstance(expected, dict):
        if not isinstance(actual, dict) or set(actual) != set(expected):
            raise Mismatch(f"{path}: expected a dict with keys {sorted(expected)}, got "
                           f"{describe(actual)}")
        for k in expected:
            compare(actual[k], expected[k], f"{path}[{k!r}]", floating, metadata_only, rtol, atol)
        return
    if isinstance(expected, float) and isinstance(actual, float):
        if math.isnan(expected) and math.isnan(actual):
            return
        if floating and math.isclose(actual, expected, rel_tol=rtol, abs_tol=atol):
            return
    if metadata_only and isinstance(expected, (int, float, bool)):
        return
    if type(actual) is not type(expected) and not (isinstance(expected, (int, float))
                                                   and isinstance(actual, (int, float))):
        raise Mismatch(f"{path}: {type(actual).__name__} {actual!r} != eager "
                       f"{type(expected).__name__} {expected!r}")
    if actual != expected:
        raise Mismatch(f"{path}: {actual!r} != eager {expected!r}")


def drop_outputs(outputs: Any, skip: Iterable[int]) -> Any:
    """The outputs without those at the positions in `skip` (uninitialized ones)."""
    if not skip or not isinstance(outputs, (tuple, list)):
        return outputs
    return [x for i, x in enumerate(outputs) if i not in skip]


def max_error(x: torch.Tensor, ref: torch.Tensor) -> float | None:
    """The largest |x - ref| where ref is finite; None when the non-finite values differ."""
    x, ref = x.double(), ref.double()
    finite = torch.isfinite(ref)
    if not torch.equal(x[~finite].nan_to_num(nan=0.5), ref[~finite].nan_to_num(nan=0.5)):
        return None
    if not finite.any():
        return 0.0
    diff = (x[finite] - ref[finite]).abs()
    return float(diff.max()) if not diff.isnan().any() else math.inf



def _storages(tree: Any) -> list[int | None]:
    out = []
    for x in pytree.tree_leaves(tree):
        if isinstance(x, torch.Tensor) and x.layout == torch.strided and x.untyped_storage().nbytes():
            out.append(x.untyped_storage().data_ptr())
        else:
            out.append(None)
    return out


def alias_map(inputs: Any, outputs: Any) -> list[int | None]:
    """For each output leaf, the index of the input leaf whose storage it shares (or None)."""
    ins = _storages(inputs)
    result = []
    for ptr in _storages(outputs):
        result.append(ins.index(ptr) if ptr is not None and ptr in ins else None)
    return result

