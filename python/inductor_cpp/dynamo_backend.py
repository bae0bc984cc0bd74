"""`inductor_cpp.backend`: what torch.compile calls.

    torch.compile(model, backend="inductor_cpp", mode=None, options={"strict": True})

Per call we build AOT autograd around three compilers (forward, backward, inference), with
torch's decompositions (decompositions.py) and the min-cut rematerialization partitioner. Each
compiler turns its ATen FX graph into a description (fx_import.py) and crosses into C++ once
(_C.compile_graph); the CompiledGraph it gets back runs the whole graph in C++.
"""

from __future__ import annotations

import collections
import json
import sys
import weakref
from typing import Any, Callable

import torch
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.partitioners import min_cut_rematerialization_partition

from . import _C, decompositions, fx_import, logs
from . import options as options_mod

# Compiled graphs alive in this process, for counters and tests; weak, so that
# torch.compiler.reset() (which drops Dynamo's references) frees them.
_live_graphs: "weakref.WeakSet[Any]" = weakref.WeakSet()


class StrictModeError(RuntimeError):
    """Raised in strict mode where we would otherwise fall back."""


def _environment() -> str:
    return json.dumps({"torch": torch.__version__, "python": sys.implementation.cache_tag,
                       "schema": fx_import.SCHEMA_VERSION})


def _run_eagerly(gm: torch.fx.GraphModule, kind: str, reason: str, opts: options_mod.Options) -> Callable:
    message = f"{kind} graph runs eagerly (not compiled): {reason}"
    if opts.strict:
        raise StrictModeError(f"inductor_cpp (strict): {message}")
    logs.warn(message)
    global eager_graph_fallbacks
    eager_graph_fallbacks += 1
    recent_eager_fallback_reasons.append(reason)

    def run(args: list[Any]) -> Any:
        return gm(*args)

    run._boxed_call = True  # type: ignore[attr-defined]
    return run


# Graphs handed back to run eagerly (inductor_cpp.counters()), and the latest reasons (bounded:
# a long-running process must not grow a list per graph).
eager_graph_fallbacks = 0
recent_eager_fallback_reasons: "collections.deque[str]" = collections.deque(maxlen=100)


def compile_aten_graph(gm: torch.fx.GraphModule, example_inputs: list[Any], kind: str,
                       opts: options_mod.Options) -> Callable:
    """Compile one ATen FX graph (forward, backward or inference) into a boxed callable."""
    try:
        description, constants = fx_import.describe(gm, example_inputs, kind)
    except fx_import.UnsupportedGraph as e:
        return _run_eagerly(gm, kind, str(e), opts)
    try:
        compiled = _C.compile_graph(json.dumps(description), constants,
                                    json.dumps(opts.for_compiler()), _environment())
    except _C.CompileError:
        raise
    except Exception as e:  # a compiler bug must not take the user's program down
        if opts.strict:
            raise
        return _run_eagerly(gm, kind, f"compile failed: {e}", opts)
    for artifact, message in compiled.logs():
        if artifact == "warning":
            logs.warn(message)
        else:
            logs.emit(artifact, message)
    if logs.enabled("output_code"):
        source = compiled.cpp_source or "// no generated kernels in this graph\n"
        logs.emit("output_code", f"graph {compiled.key}:\n{compiled.plan_text}\n{source}")
    _live_graphs.add(compiled)
    return _boxed(compiled)


def _boxed(compiled: Any) -> Callable:
    """The boxed calling convention AOT autograd looks for (`_boxed_call`): inputs arrive as
    one list, which the C++ side empties so inputs die as soon as the plan is done with them.
    A Python function rather than the C++ object itself, because wrappers on the way (Dynamo's
    disable()) copy attributes with functools.wraps, which sees only a function's __dict__."""

    def run(args: list[Any]) -> list[Any]:
        return compiled(args)

    run._boxed_call = True  # type: ignore[attr-defined]
    run.compiled_graph = compiled  # type: ignore[attr-defined]
    return run


def _compiler(kind: str, opts: options_mod.Options) -> Callable:
    def compile_fn(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable:
        return compile_aten_graph(gm, example_inputs, kind, opts)

    compile_fn.__name__ = f"inductor_cpp_{kind}_compiler"
    return compile_fn


def _device_type(example_inputs: list[Any]) -> str:
    """The device type of the graph's first tensor input ("cpu" when there is none)."""
    for x in example_inputs:
        if isinstance(x, torch.Tensor):
            return x.device.type
    return "cpu"


def backend(gm: torch.fx.GraphModule, example_inputs: list[Any], *, mode: str | None = None,
            options: dict[str, Any] | None = None) -> Callable:
    """The torch.compile backend (entry point `torch_dynamo_backends: inductor_cpp`)."""
    opts = options_mod.resolve(mode, options)
    aot = aot_autograd(
        fw_compiler=_compiler("forward", opts),
        bw_compiler=_compiler("backward", opts),
        inference_compiler=_compiler("inference", opts),
        decompositions=decompositions.decomposition_table(_device_type(example_inputs)),
        partition_fn=min_cut_rematerialization_partition,
        keep_inference_input_mutations=True,
    )
    return aot(gm, example_inputs)
