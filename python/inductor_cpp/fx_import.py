"""ATen FX GraphModule -> graph description (schema: docs/graph_schema.md).

The description is plain JSON-able data: node ops by full schema name, tagged arguments,
tensor metadata from `node.meta["val"]`, the user's source line per node. Tensors are never
serialized: constants (get_attr) travel beside the description as a list.

Anything the C++ side cannot run yet raises UnsupportedGraph with the reason and the node, and
the backend runs that graph eagerly instead (or raises, in strict mode).
"""

from __future__ import annotations

import operator
import re
from typing import Any

import torch
import torch.fx

SCHEMA_VERSION = 1


class UnsupportedGraph(Exception):
    """This graph cannot be compiled; `reason` says why, `source` where the user wrote it."""

    def __init__(self, reason: str, node: torch.fx.Node | None = None):
        self.reason = reason
        self.source = source_of(node) if node is not None else ""
        where = f" ({self.source})" if self.source else ""
        super().__init__(f"{reason}{where}")


_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<fn>\S+)\n\s*(?P<code>[^\n]*)')


def source_of(node: torch.fx.Node) -> str:
    """'model.py:12 in forward: x = self.fc(x)' from the innermost frame of the node's trace."""
    trace = node.meta.get("stack_trace") or ""
    frames = list(_FRAME.finditer(trace))
    if not frames:
        return ""
    f = frames[-1]
    return f"{f['file']}:{f['line']} in {f['fn']}: {f['code'].strip()}"


def op_name(target: torch._ops.OpOverload) -> str:
    schema = target._schema
    return schema.name + (f".{schema.overload_name}" if schema.overload_name else "")


def _is_symbolic(x: Any) -> bool:
    return isinstance(x, (torch.SymInt, torch.SymFloat, torch.SymBool))


def tensor_meta(t: torch.Tensor, node: torch.fx.Node | None) -> dict[str, Any]:
    if t.layout != torch.strided:
        raise UnsupportedGraph(f"{t.layout} tensors are not supported", node)
    sizes, strides, offset = list(t.shape), list(t.stride()), t.storage_offset()
    if any(_is_symbolic(s) for s in (*sizes, *strides, offset)):
        raise UnsupportedGraph("symbolic sizes (dynamic shapes) are not supported yet", node)
    return {
        "sizes": [int(s) for s in sizes],
        "strides": [int(s) for s in strides],
        "offset": int(offset),
        "dtype": str(t.dtype).removeprefix("torch."),
        "device": str(t.device),
        "requires_grad": bool(t.requires_grad),
    }


def _output_metas(node: torch.fx.Node) -> list[dict[str, Any] | None]:
    val = node.meta.get("val")
    if isinstance(val, torch.Tensor):
        return [tensor_meta(val, node)]
    if isinstance(val, (tuple, list)):
        return [tensor_meta(v, node) if isinstance(v, torch.Tensor) else None for v in val]
    if _is_symbolic(val):
        raise UnsupportedGraph("symbolic sizes (dynamic shapes) are not supported yet", node)
    return [None]


class _Importer:
    def __init__(self, gm: torch.fx.GraphModule):
        self.gm = gm
        self.refs: dict[torch.fx.Node, dict[str, Any]] = {}
        self.inputs: list[Any] = []
        self.constants: list[torch.Tensor] = []
        self.constant_metas: list[dict[str, Any]] = []
        self.nodes: list[dict[str, Any]] = []
        self.outputs: list[Any] = []
        self.symbolic_input: torch.fx.Node | None = None

    def arg(self, a: Any, node: torch.fx.Node) -> Any:
        if isinstance(a, torch.fx.Node):
            if a not in self.refs:
                raise UnsupportedGraph(f"argument {a.name} has no value", node)
            return self.refs[a]
        if a is None:
            return None
        if isinstance(a, bool):
            return {"bool": a}
        if isinstance(a, int):
            return {"int": a}
        if isinstance(a, float):
            return {"float": a if a == a and abs(a) != float("inf") else str(a)}
        if isinstance(a, str):
            return {"str": a}
        if isinstance(a, torch.dtype):
            return {"dtype": str(a).removeprefix("torch.")}
        if isinstance(a, torch.device):
            return {"device": str(a)}
        if isinstance(a, torch.layout):
            return {"layout": str(a).removeprefix("torch.")}
        if isinstance(a, torch.memory_format):
            return {"memory_format": str(a).removeprefix("torch.")}
        if isinstance(a, (list, tuple)):
            return {"list": [self.arg(x, node) for x in a]}
        if _is_symbolic(a):
            raise UnsupportedGraph("symbolic sizes (dynamic shapes) are not supported yet", node)
        raise UnsupportedGraph(f"argument of type {type(a).__name__} is not supported", node)

    def placeholder(self, node: torch.fx.Node, example: Any) -> None:
        val = node.meta.get("val", example)
        symbolic_tensor = isinstance(val, torch.Tensor) and any(
            _is_symbolic(s) for s in (*val.shape, *val.stride(), val.storage_offset()))
        if isinstance(val, torch.Tensor) and not symbolic_tensor:
            self.inputs.append(tensor_meta(val, node))
        elif _is_symbolic(val) or symbolic_tensor:
            # Reported at the first op that uses sizes, which has a source line to show.
            self.symbolic_input = self.symbolic_input or node
            self.inputs.append(None)
        else:
            self.inputs.append(None)
        self.refs[node] = {"in": len(self.inputs) - 1}

    def get_attr(self, node: torch.fx.Node) -> None:
        value: Any = self.gm
        for part in str(node.target).split("."):
            value = getattr(value, part)
        if not isinstance(value, torch.Tensor):
            raise UnsupportedGraph(f"get_attr of a {type(value).__name__} is not supported", node)
        self.constants.append(value)
        self.constant_metas.append(tensor_meta(value, node))
        self.refs[node] = {"const": len(self.constants) - 1}

    def call_function(self, node: torch.fx.Node) -> None:
        target = node.target
        if target is operator.getitem:
            parent, index = node.args
            ref = self.refs.get(parent)
            nested = isinstance(parent, torch.fx.Node) and parent.target is operator.getitem
            if not isinstance(index, int) or ref is None or "val" not in ref or nested:
                raise UnsupportedGraph("getitem on something other than an op's outputs", node)
            self.refs[node] = {"val": [ref["val"][0], index]}
            return
        if not isinstance(target, torch._ops.OpOverload):
            name = getattr(target, "__name__", str(target))
            if self.symbolic_input is not None:
                raise UnsupportedGraph(f"symbolic sizes (dynamic shapes) are not supported yet: {name}", node)
            raise UnsupportedGraph(f"call to {name} (not an ATen operator) is not supported", node)
        if self.symbolic_input is not None:
            raise UnsupportedGraph(f"symbolic sizes (dynamic shapes) are not supported yet: {op_name(target)}", node)
        entry = {
            "op": op_name(target),
            "args": [self.arg(a, node) for a in node.args],
            "kwargs": {k: self.arg(v, node) for k, v in node.kwargs.items()},
            "outputs": _output_metas(node),
        }
        source = source_of(node)
        if source:
            entry["source"] = source
        self.nodes.append(entry)
        self.refs[node] = {"val": [len(self.nodes) - 1, 0]}

    def output(self, node: torch.fx.Node) -> None:
        results = node.args[0]
        if not isinstance(results, (tuple, list)):
            results = (results,)
        for r in results:
            value = self.arg(r, node)
            if isinstance(value, dict) and "list" in value:
                raise UnsupportedGraph("a list-valued graph output is not supported", node)
            self.outputs.append(value)


def describe(gm: torch.fx.GraphModule, example_inputs: list[Any], kind: str) -> tuple[dict[str, Any], list[torch.Tensor]]:
    """The graph description of an ATen FX graph, and its constant tensors."""
    imp = _Importer(gm)
    placeholders = 0
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            example = example_inputs[placeholders] if placeholders < len(example_inputs) else None
            imp.placeholder(node, example)
            placeholders += 1
        elif node.op == "get_attr":
            imp.get_attr(node)
        elif node.op == "call_function":
            imp.call_function(node)
        elif node.op == "output":
            if imp.symbolic_input is not None:
                raise UnsupportedGraph("symbolic sizes (dynamic shapes) are not supported yet", imp.symbolic_input)
            imp.output(node)
        else:
            raise UnsupportedGraph(f"FX node kind {node.op} is not supported", node)
    description = {
        "schema": "inductor_cpp.graph",
        "version": SCHEMA_VERSION,
        "kind": kind,
        "inputs": imp.inputs,
        "constants": imp.constant_metas,
        "nodes": imp.nodes,
        "outputs": imp.outputs,
    }
    return description, imp.constants
