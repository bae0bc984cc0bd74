"""ATen FX GraphModule -> graph description (schema: docs/graph_schema.md).

The description is plain JSON-able data: node ops by full schema name, tagged arguments,
tensor metadata from `node.meta["val"]`, the user's source line per node. Tensors are never
serialized: constants (get_attr) travel beside the description as a list.

Anything the C++ side cannot run yet raises UnsupportedGraph with the reason and the node, and
the backend runs that graph eagerly instead (or raises, in strict mode).
"""

from __future__ import annotations

import math
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


def placeholder_values(gm: torch.fx.GraphModule, inputs: list[Any]) -> list[Any]:
    """Each placeholder's recorded value (`meta["val"]`: a fake tensor, a SymInt), else the
    input passed for it (numbers often carry no recorded value)."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    return [n.meta.get("val", x) for n, x in zip(placeholders, inputs)]


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


# Python functions on sizes that Dynamo leaves in graphs with dynamic shapes, and the
# "sym::" op each becomes (runtime/scalar_ops.h evaluates them with Python's semantics).
SCALAR_FUNCTIONS: dict[Any, str] = {
    operator.add: "sym::add", operator.sub: "sym::sub", operator.mul: "sym::mul",
    operator.floordiv: "sym::floordiv", operator.mod: "sym::mod", operator.truediv: "sym::truediv",
    operator.pow: "sym::pow", operator.neg: "sym::neg", operator.eq: "sym::eq",
    operator.ne: "sym::ne", operator.lt: "sym::lt", operator.le: "sym::le", operator.gt: "sym::gt",
    operator.ge: "sym::ge", operator.and_: "sym::and", operator.or_: "sym::or",
    torch.sym_not: "sym::not", torch.sym_max: "sym::max", torch.sym_min: "sym::min",
    torch.sym_float: "sym::float", torch.sym_int: "sym::int", torch.sym_ite: "sym::ite",
    math.trunc: "sym::int",
}


def _is_symbolic(x: Any) -> bool:
    return isinstance(x, (torch.SymInt, torch.SymFloat, torch.SymBool))


def _dim(x: Any) -> int | str:
    """A size as the description writes it: an int, or a symbolic expression's text."""
    if isinstance(x, torch.SymInt):
        constant = x.node.maybe_as_int()
        return constant if constant is not None else str(x.node.expr)
    return int(x)


def tensor_meta(t: torch.Tensor, node: torch.fx.Node | None) -> dict[str, Any]:
    if t.layout != torch.strided:
        raise UnsupportedGraph(f"{t.layout} tensors are not supported", node)
    return {
        "sizes": [_dim(s) for s in t.shape],
        "strides": [_dim(s) for s in t.stride()],
        "offset": _dim(t.storage_offset()),
        "dtype": str(t.dtype).removeprefix("torch."),
        "device": str(t.device),
        "requires_grad": bool(t.requires_grad),
    }


# Ops whose fake (meta) outputs have another dtype than the real kernel returns: output index
# -> the argument whose dtype the real output has. Our plan trusts the metadata, so a wrong
# dtype would make the next kernel read the buffer as the wrong type. torch 2.11's
# `_batch_norm_with_update_functional` claims float32 updated running statistics for float16
# and bfloat16 inputs, while the CPU and CUDA kernels return them in the running stats' dtype.
_REAL_OUTPUT_DTYPES: dict[Any, dict[int, int]] = {
    torch.ops.aten._batch_norm_with_update_functional.default: {4: 3, 5: 4},
}


def _output_metas(node: torch.fx.Node) -> list[dict[str, Any] | None]:
    val = node.meta.get("val")
    if isinstance(val, torch.Tensor):
        return [tensor_meta(val, node)]
    if isinstance(val, (tuple, list)):
        metas = [tensor_meta(v, node) if isinstance(v, torch.Tensor) else None for v in val]
        for out, arg in _REAL_OUTPUT_DTYPES.get(node.target, {}).items():
            source = node.args[arg] if arg < len(node.args) else None
            source_val = source.meta.get("val") if isinstance(source, torch.fx.Node) else None
            if metas[out] is not None and isinstance(source_val, torch.Tensor):
                metas[out]["dtype"] = str(source_val.dtype).removeprefix("torch.")
        return metas
    return [None]  # a number (a size, in dynamic-shape graphs), None, or unknown


def _target_name(target: Any) -> str:
    return getattr(target, "__name__", None) or str(target)


def _number_input(kind: str, val: Any) -> dict[str, Any]:
    if _is_symbolic(val):
        return {"scalar": kind, "expr": str(val.node.expr)}
    return {"scalar": kind}


class _Importer:
    def __init__(self, gm: torch.fx.GraphModule):
        self.gm = gm
        self.refs: dict[torch.fx.Node, dict[str, Any]] = {}
        self.inputs: list[Any] = []
        self.constants: list[torch.Tensor] = []
        self.constant_metas: list[dict[str, Any]] = []
        self.nodes: list[dict[str, Any]] = []
        self.outputs: list[Any] = []
        self.non_tensor_attrs: set[torch.fx.Node] = set()

    def arg(self, a: Any, node: torch.fx.Node) -> Any:
        if isinstance(a, torch.fx.Node):
            if a in self.non_tensor_attrs:
                raise UnsupportedGraph(f"{_target_name(node.target)} takes a submodule or other non-tensor attribute", node)
            if a not in self.refs:
                raise UnsupportedGraph(f"argument {a.name} has no value", node)
            return self.refs[a]
        if a is None:
            return None
        if isinstance(a, bool):
            return {"bool": a}
        if isinstance(a, int):
            if not -(2**63) <= a < 2**63:
                raise UnsupportedGraph(f"integer literal {a} does not fit in int64", node)
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
            raise UnsupportedGraph("a symbolic number that is not a graph value", node)
        raise UnsupportedGraph(f"argument of type {type(a).__name__} is not supported", node)

    def placeholder(self, node: torch.fx.Node, example: Any) -> None:
        val = node.meta.get("val", example)
        if isinstance(val, torch.Tensor):
            self.inputs.append(tensor_meta(val, node))
        elif isinstance(val, (bool, torch.SymBool)):
            self.inputs.append(_number_input("bool", val))
        elif isinstance(val, (int, torch.SymInt)):
            self.inputs.append(_number_input("int", val))
        elif isinstance(val, (float, torch.SymFloat)):
            self.inputs.append(_number_input("float", val))
        else:
            self.inputs.append(None)
        self.refs[node] = {"in": len(self.inputs) - 1}

    def get_attr(self, node: torch.fx.Node) -> None:
        value: Any = self.gm
        for part in str(node.target).split("."):
            value = getattr(value, part)
        if not isinstance(value, torch.Tensor):
            # A submodule of a higher-order op (cond, while_loop, ...): reported at the op that
            # uses it, which has a source line to show.
            self.non_tensor_attrs.add(node)
            return
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
        if target in SCALAR_FUNCTIONS:
            op = SCALAR_FUNCTIONS[target]
        elif isinstance(target, torch._ops.OpOverload):
            op = op_name(target)
        else:
            raise UnsupportedGraph(f"call to {_target_name(target)} (not an ATen operator) is not supported", node)
        entry = {
            "op": op,
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
