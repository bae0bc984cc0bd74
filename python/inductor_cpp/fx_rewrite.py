"""What the FX passes that rewrite a graph before it is described share (pad_mm.py,
few_row_conv.py): new nodes whose metadata comes from running them on fake tensors, and the
end of a rewrite (lint, recompile, one `perf` log line)."""

from __future__ import annotations

from typing import Any, Callable

import torch

from . import logs

# Metadata a replacement node takes from the node it replaces (source lines in logs and errors).
_CARRIED = ("stack_trace", "nn_module_stack", "source_fn_stack")


def value(node: Any) -> torch.Tensor | None:
    """The tensor a node's metadata holds (its fake value), else None."""
    v = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    return v if isinstance(v, torch.Tensor) else None


def node_adder(graph: torch.fx.Graph, fake_mode: Any,
               origin: torch.fx.Node) -> Callable[..., torch.fx.Node]:
    """add(target, args, **kwargs): a call_function node at the graph's insertion point, its
    "val" computed on the arguments' fake values (under `fake_mode` when there is one), its
    source metadata copied from `origin`."""

    def add(target: Any, args: tuple[Any, ...], **kwargs: Any) -> torch.fx.Node:
        new = graph.call_function(target, args, kwargs)
        vals = [(value(a) if isinstance(a, torch.fx.Node) else a) for a in args]
        if fake_mode is not None:
            with fake_mode:
                new.meta["val"] = target(*vals, **kwargs)
        else:
            new.meta["val"] = target(*vals, **kwargs)
        for key in _CARRIED:
            if key in origin.meta:
                new.meta[key] = origin.meta[key]
        return new

    return add


def finish(gm: torch.fx.GraphModule, count: int, message: str) -> None:
    """After `count` rewrites (none: nothing to do): checks and recompiles the graph and logs
    `message` under `perf`."""
    if count:
        gm.graph.lint()
        gm.recompile()
        logs.emit("perf", message)
