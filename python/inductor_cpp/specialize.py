"""Graphs with symbolic sizes, compiled once per concrete shape (a bounded number of them).

After an input's shape changes, Dynamo recompiles with symbolic sizes ("automatic dynamic
shapes"): the ATen graph we receive has `s0` where the batch was. Our code generation needs
static sizes (inductor/lower declines symbolic ones), so such a graph compiles to a plan of ATen
calls only: correct for every shape, but with none of our kernels. This module keeps that plan
as the fallback and, the first time each combination of concrete input shapes arrives (up to
`shape_specializations` of them, default 8), re-traces the ATen graph on those shapes with
`make_fx` into a static graph and compiles that: a handful of batch sizes each get generated
kernels and matrix steps, and the disk cache serves them to the next process. Shapes beyond the
limit run the fallback plan, so a workload with unbounded distinct shapes (every sequence
length) stops compiling instead of compiling forever. Stock Inductor generates shape-generic
kernels instead; that is not written here yet.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import torch
from torch.fx.experimental.proxy_tensor import make_fx

from . import fx_import, logs


def has_symbolic_sizes(example_inputs: list[Any]) -> bool:
    """Whether the graph was traced with symbolic sizes (a SymInt input or a tensor input whose
    sizes or strides are symbolic)."""
    for x in example_inputs:
        if isinstance(x, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            return True
        if isinstance(x, torch.Tensor) and not all(
                isinstance(d, int) for d in (*x.shape, *x.stride(), x.storage_offset())):
            return True
    return False


def shape_key(args: list[Any]) -> tuple:
    """What a static graph is specialized on: every tensor's sizes, strides, storage offset,
    dtype and device, and the value of every number input (symbolic sizes arrive as ints)."""
    key: list[Any] = []
    for a in args:
        if isinstance(a, torch.Tensor):
            key.append((tuple(a.shape), a.stride(), a.storage_offset(), a.dtype, a.device,
                        a.requires_grad))
        elif isinstance(a, (bool, int, float)):
            key.append((type(a), a))
        else:
            key.append(type(a))
    return tuple(key)


class ShapeSpecializedGraph:
    """Runs the static graph compiled for the call's shapes, compiling it on first sight, or
    `fallback` (the symbolic graph's plan) past `limit` shapes or when specializing fails.
    Called with the inputs as one list; `boxed()` gives the function AOT autograd calls."""

    def __init__(self, gm: torch.fx.GraphModule, kind: str, limit: int, strict: bool,
                 fallback: Callable[[list[Any]], Any],
                 compile_static: Callable[[torch.fx.GraphModule, list[Any]], Callable],
                 decompositions: dict | None = None):
        """`decompositions`: applied when a static copy is re-traced (the table a static graph
        gets; the symbolic `gm` kept fused ATen kernels whole)."""
        self.gm, self.kind, self.limit, self.strict = gm, kind, limit, strict
        self.decompositions = decompositions or {}
        self.fallback = fallback
        self.compile_static = compile_static
        self.compiled_graph = getattr(fallback, "compiled_graph", None)
        self.specialized: dict[tuple, Callable[[list[Any]], Any]] = {}
        self._over_limit_warned = False
        self._lock = threading.Lock()

    def boxed(self) -> Callable[[list[Any]], Any]:
        """A plain function with `_boxed_call` (AOT autograd's convention: inputs as one list).
        Not the object itself: wrappers on the way (Dynamo's disable()) copy attributes with
        functools.wraps, which sees only a function's __dict__."""
        def run(args: list[Any]) -> Any:
            return self(args)

        run._boxed_call = True  # type: ignore[attr-defined]
        run.compiled_graph = self.compiled_graph  # type: ignore[attr-defined]
        run.specialized_graph = self  # type: ignore[attr-defined]
        return run

    def __call__(self, args: list[Any]) -> Any:
        fn = self.specialized.get(shape_key(args))
        if fn is None:
            fn = self._specialize(args)
        return fn(args)

    def _specialize(self, args: list[Any]) -> Callable[[list[Any]], Any]:
        key = shape_key(args)
        with self._lock:
            if key in self.specialized:
                return self.specialized[key]
            if len(self.specialized) >= self.limit:
                if not self._over_limit_warned:
                    self._over_limit_warned = True
                    logs.warn(f"{self.kind} graph with symbolic sizes: {self.limit} shapes compiled "
                              "(option shape_specializations); further shapes run its plan of "
                              "ATen calls")
                return self.fallback
            try:
                # The symbolic graph kept fused ATen kernels whole (decompositions.py); the
                # static copy decomposes them into ops our code generation fuses.
                static_gm = make_fx(self.gm, decomposition_table=self.decompositions,
                                    tracing_mode="fake")(*args)
                # Tensors: their fake values; numbers (the sizes, now constants): themselves.
                fn = self.compile_static(static_gm, fx_import.placeholder_values(static_gm, args))
            except Exception as e:  # noqa: BLE001 - the fallback plan is always correct
                if self.strict:
                    raise
                logs.warn(f"{self.kind} graph with symbolic sizes: could not specialize it to "
                          f"{_shapes_text(args)} ({type(e).__name__}: {e}); that shape runs its "
                          "plan of ATen calls")
                fn = self.fallback
            self.specialized[key] = fn
            return fn


def _shapes_text(args: list[Any]) -> str:
    return ", ".join(str(list(a.shape)) if isinstance(a, torch.Tensor) else repr(a) for a in args)
