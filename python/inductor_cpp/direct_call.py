"""Calling a compiled inference graph without AOT autograd's runtime wrappers, where they would
do nothing.

AOT autograd hands Dynamo its compiled function inside a stack of wrappers: one that replays
input mutations and regenerates outputs that alias inputs or intermediates, one that threads
effect tokens, one that deduplicates repeated inputs, one that prepends lifted parameters, one
that unpacks tensor subclasses, and a `disable()` around the lot. For an inference graph that
mutates no input, returns only fresh tensors, and takes exactly the inputs Dynamo passes, all
of them only pass the arguments through and turn grad mode off for the call (AOT also runs a
custom operator's first call under an aliasing check: graphs with custom operators keep it).
That costs 11-17 µs a call on the dev machine (a compiled 64³ `torch.mm`: eager 17 µs,
Dynamo's own floor about 65 µs, ours 93 µs through the wrappers and 76-82 µs without).
`backend()` then returns `direct(...)` instead: grad mode off, the graph called on the
argument list, its outputs returned as they are.

Whether the wrappers are idle is read inside the inference compiler, where AOT's
TracingContext holds the graph's ViewAndMutationMeta (`Slot.offer`); everything it does not
know is a reason to keep AOT's function. `INDUCTOR_CPP_DIRECT_INFERENCE=0` always keeps it
(A/B measurements, bisecting a suspected difference).
"""

from __future__ import annotations

from typing import Any, Callable

import torch
from torch.utils._python_dispatch import is_traceable_wrapper_subclass

from . import knobs, logs

# Inference graphs handed to Dynamo without AOT's wrappers / kept inside them
# (inductor_cpp.counters(): "direct_inference_graphs", "aot_wrapped_inference_graphs").
direct_graphs = 0
wrapped_graphs = 0


def enabled() -> bool:
    return knobs.get_bool("INDUCTOR_CPP_DIRECT_INFERENCE")


def _plain_inputs(example_inputs: list[Any]) -> bool:
    """Tensors that are not subclasses, and scalars: no list/tuple/dict input (Dynamo then
    flattens them behind a boxed wrapper with another calling convention)."""
    for x in example_inputs:
        if isinstance(x, (list, tuple, dict)):
            return False
        if isinstance(x, torch.Tensor) and is_traceable_wrapper_subclass(x):
            return False
    return True


def _output_values(gm: torch.fx.GraphModule) -> list[Any]:
    """The values the graph returns (its output node's arguments, flattened)."""
    import torch.utils._pytree as pytree

    output = next(node for node in reversed(gm.graph.nodes) if node.op == "output")
    return pytree.tree_leaves(output.args)


def _returns_subclass(gm: torch.fx.GraphModule) -> bool:
    """Whether Dynamo's graph returns a tensor subclass (built inside it from plain inputs:
    AOT's inference graph then returns its inner tensors, and AOT's wrapper rebuilds it)."""
    for value in _output_values(gm):
        example = value.meta.get("example_value") if isinstance(value, torch.fx.Node) else None
        if isinstance(example, torch.Tensor) and is_traceable_wrapper_subclass(example):
            return True
    return False


def _calls_custom_ops(gm: torch.fx.GraphModule) -> bool:
    """Whether the graph calls operators outside aten / prims: AOT's wrapper runs their first
    call under a check that their outputs do not alias their inputs
    (torch._functorch.config.check_custom_op_aliasing)."""
    for node in gm.graph.nodes:
        if node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload):
            if node.target.namespace not in ("aten", "prims"):
                return True
    return False


def _idle_wrappers_reason(gm: torch.fx.GraphModule, dynamo_input_count: int,
                          dynamo_output_count: int) -> str | None:
    """Why AOT's runtime wrappers would do work for the inference graph `gm` (None: they would
    not). Called from inside the inference compiler."""
    from torch._functorch import config as functorch_config
    from torch._functorch._aot_autograd.schemas import OutputType, SubclassCreationMeta

    context = torch._guards.TracingContext.try_get()
    meta = getattr(context, "fw_metadata", None)
    if meta is None:
        return "no AOT metadata (not compiled under Dynamo)"
    if getattr(context, "fakify_first_call", False):
        return "the first call returns fake outputs (DDPOptimizer)"
    if meta.tokens or getattr(meta, "num_graphsafe_rng_states", 0):
        return "effect tokens or RNG state"
    if functorch_config.functionalize_rng_ops:
        return "functionalized RNG"
    if any(i.mutates_data or i.mutates_metadata or i.mutates_storage_metadata
           or i.mutation_inductor_storage_resize for i in meta.input_info):
        return "an input is mutated"
    if meta.num_intermediate_bases or any(o.output_type != OutputType.non_alias
                                          for o in meta.output_info):
        return "an output aliases an input or another value"
    if meta.grad_enabled_mutation is not None:
        return "the graph changes grad mode"
    if any(isinstance(m, SubclassCreationMeta)
           for m in meta.subclass_inp_meta + meta.subclass_fw_graph_out_meta):
        return "a tensor subclass"
    placeholders = sum(1 for node in gm.graph.nodes if node.op == "placeholder")
    if placeholders != dynamo_input_count:
        return (f"{placeholders} graph inputs for Dynamo's {dynamo_input_count} "
                "(deduplicated or lifted)")
    outputs = len(_output_values(gm))
    if outputs != dynamo_output_count:
        return f"{outputs} graph outputs for Dynamo's {dynamo_output_count}"
    if functorch_config.check_custom_op_aliasing and _calls_custom_ops(gm):
        return "custom operators (AOT checks their aliasing on the first call)"
    return None


class Slot:
    """What one backend() call learns from its inference compiler: the boxed graph, when AOT's
    wrappers around it would be idle."""

    def __init__(self, gm: torch.fx.GraphModule, example_inputs: list[Any]):
        self.dynamo_input_count = len(example_inputs)
        self.usable = (enabled() and _plain_inputs(example_inputs)
                       and not torch._C._is_any_autocast_enabled() and not _returns_subclass(gm))
        self.dynamo_output_count = len(_output_values(gm)) if self.usable else -1
        self.boxed: Callable[[list[Any]], Any] | None = None
        self.dynamic_dims: list[tuple[int, set[int]]] = []
        self.reason: str | None = None if self.usable else "not applicable"

    def offer(self, gm: torch.fx.GraphModule, boxed: Callable[[list[Any]], Any]) -> None:
        """Called by the inference compiler with its graph and what it returns."""
        global direct_graphs, wrapped_graphs
        if self.usable:
            self.reason = _idle_wrappers_reason(gm, self.dynamo_input_count,
                                                self.dynamo_output_count)
        if self.reason is None:
            meta = torch._guards.TracingContext.get().fw_metadata
            self.dynamic_dims = [(i, set(o.dynamic_dims)) for i, o in enumerate(meta.output_info)
                                 if o.dynamic_dims]
        self.boxed = boxed if self.reason is None else None
        if self.boxed is not None:
            direct_graphs += 1
        else:
            wrapped_graphs += 1
            logs.emit("perf", f"inference graph keeps AOT autograd's runtime wrappers: "
                              f"{self.reason}")

    def choose(self, aot_compiled: Callable) -> Callable:
        """The callable for Dynamo: direct(...) where possible, else AOT's."""
        if self.boxed is None:
            return aot_compiled
        return direct(self.boxed, self.dynamic_dims)


def _mark_dynamic(outputs: list[Any], dynamic_dims: list[tuple[int, set[int]]]) -> list[Any]:
    """What AOT's wrapper does for outputs with symbolic sizes: record those dimensions on the
    tensor, so that a later compiled region taking it as an input treats them as dynamic."""
    for index, dims in dynamic_dims:
        t = outputs[index]
        if hasattr(t, "_dynamo_weak_dynamic_indices"):
            t._dynamo_weak_dynamic_indices |= dims
        else:
            t._dynamo_weak_dynamic_indices = dims.copy()
    return outputs


def direct(boxed: Callable[[list[Any]], Any],
           dynamic_dims: list[tuple[int, set[int]]] | None = None) -> Callable:
    """Dynamo's calling convention (positional inputs, a list of outputs) over a boxed graph,
    with grad mode off during the call as AOT's inference wrapper has it (an inference graph
    may take inputs that require grad: its ops must not record autograd history), and the
    outputs' symbolic dimensions marked (`dynamic_dims`: (output index, dims))."""
    set_grad_enabled = torch._C._set_grad_enabled
    is_grad_enabled = torch.is_grad_enabled

    def run(args: list[Any]) -> Any:
        if not is_grad_enabled():
            return boxed(args)
        set_grad_enabled(False)
        try:
            return boxed(args)
        finally:
            set_grad_enabled(True)

    if dynamic_dims:
        def call(*args: Any) -> Any:
            return _mark_dynamic(run(list(args)), dynamic_dims)
    else:
        def call(*args: Any) -> Any:
            return run(list(args))

    call.compiled_graph = getattr(boxed, "compiled_graph", None)  # type: ignore[attr-defined]
    return call
