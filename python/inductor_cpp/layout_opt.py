"""Channels-last layout for convolution graphs (an FX pass before lowering).

Convolutions want their activations channels-last (NHWC strides): oneDNN on CPU and cuDNN on
GPU both compute in NHWC, and given NCHW tensors they convert the input on the way in and the
output on the way out, at every convolution. Measured on resnet18 inference: on the H200, 54
cuDNN layout-conversion kernels took 0.82 of 2.55 ms of GPU time; on 2 CPU threads eager
resnet18 takes 128 ms NCHW and 107 ms NHWC. Stock Inductor makes the same choice
(`decide_layout_opt`).

The pass runs on inference graphs that hold a 2-D convolution:
  1. each convolution's input and weight are made channels-last by an explicit
     `aten.clone(memory_format=channels_last)` (a generated copy kernel; the weight's is small);
  2. tensor metadata is recomputed through the whole graph (FakeTensorProp), so every op after
     a convolution — batch norm, relu, the residual add — sees and produces channels-last
     tensors, as eager's ops do on channels-last inputs, and our kernels write that layout;
  3. every graph output whose strides changed gets a copy back to the layout the original
     graph gave it: the caller sees exactly eager's strides.
Where anything does not fit (an output whose layout cannot be restored by a clone, a shape
the metadata pass rejects), the graph is left as it was. Training graphs are left alone: the
forward's saved activations are the backward's inputs, whose layouts AOT autograd has already
fixed. `options={"layout_optimization": False}` turns the pass off.
"""

from __future__ import annotations

from typing import Any

import torch
from torch._guards import detect_fake_mode
from torch.fx.passes.fake_tensor_prop import FakeTensorProp

from . import fx_import, logs

aten = torch.ops.aten

CONVOLUTIONS = (aten.convolution.default,)


def _is_conv2d(node: torch.fx.Node) -> bool:
    if node.op != "call_function" or node.target not in CONVOLUTIONS:
        return False
    val = node.meta.get("val")
    weight = node.args[1]
    return (isinstance(val, torch.Tensor) and val.dim() == 4 and not val.is_complex()
            and isinstance(weight, torch.fx.Node) and isinstance(weight.meta.get("val"), torch.Tensor)
            and weight.meta["val"].dim() == 4)


def _is_channels_last(t: torch.Tensor) -> bool:
    return t.dim() == 4 and t.is_contiguous(memory_format=torch.channels_last)


def _layout_of(t: torch.Tensor) -> torch.memory_format | None:
    """The memory format a clone can give back to `t`'s strides exactly, or None."""
    if t.is_contiguous():
        return torch.contiguous_format
    if _is_channels_last(t):
        return torch.channels_last
    return None


def _make_channels_last(graph: torch.fx.Graph, node: torch.fx.Node, conv: torch.fx.Node,
                        cache: dict) -> torch.fx.Node:
    """`node` as a channels-last tensor: itself if it is one, else a copy made just before
    `conv`, its first convolution (graphs are in topological order), shared by later ones."""
    if node in cache:
        return cache[node]
    val = node.meta.get("val")
    if isinstance(val, torch.Tensor) and _is_channels_last(val):
        cache[node] = node
        return node
    with graph.inserting_before(conv):
        converted = graph.call_function(aten.clone.default, (node,),
                                        {"memory_format": torch.channels_last})
    cache[node] = converted
    return converted


def _outputs(graph: torch.fx.Graph) -> tuple[torch.fx.Node, list[Any]]:
    output = next(n for n in reversed(graph.nodes) if n.op == "output")
    values = output.args[0]
    return output, list(values) if isinstance(values, (list, tuple)) else [values]


def _propagate(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> None:
    fake_mode = detect_fake_mode(example_inputs)
    inputs = fx_import.placeholder_values(gm, example_inputs)
    if fake_mode is None:
        fake_mode = detect_fake_mode(inputs)
    if fake_mode is None:
        from torch._subclasses.fake_tensor import FakeTensorMode

        fake_mode = FakeTensorMode(allow_non_fake_inputs=True)
    with fake_mode:
        fakes = [fake_mode.from_tensor(x) if isinstance(x, torch.Tensor)
                 and not isinstance(x, torch._subclasses.fake_tensor.FakeTensor) else x
                 for x in inputs]
        FakeTensorProp(gm, mode=fake_mode).propagate_dont_convert_inputs(*fakes)


def channels_last(gm: torch.fx.GraphModule, example_inputs: list[Any], kind: str) -> bool:
    """Makes the convolutions of an inference graph channels-last (module docstring); returns
    whether the graph changed. On any trouble the graph is restored and False returned."""
    if kind != "inference":
        return False
    graph = gm.graph
    convs = [n for n in graph.nodes if _is_conv2d(n)]
    if not convs or all(_is_channels_last(n.args[0].meta["val"]) for n in convs
                        if isinstance(n.args[0], torch.fx.Node) and "val" in n.args[0].meta):
        return False
    output, outputs = _outputs(graph)
    wanted = {}
    for value in outputs:
        if isinstance(value, torch.fx.Node) and isinstance(value.meta.get("val"), torch.Tensor):
            layout = _layout_of(value.meta["val"])
            if layout is None and value.meta["val"].dim() == 4:
                return False  # an output layout a clone could not restore
            wanted[value] = (layout, tuple(value.meta["val"].stride()))
    saved_meta = {n: n.meta.get("val") for n in graph.nodes}
    original_output_args = output.args
    inserted: list[torch.fx.Node] = []
    try:
        cache: dict[torch.fx.Node, torch.fx.Node] = {}
        for conv in convs:
            x, w = conv.args[0], conv.args[1]
            new_x = _make_channels_last(graph, x, conv, cache)
            new_w = _make_channels_last(graph, w, conv, cache)
            inserted += [n for n in (new_x, new_w) if n not in (x, w) and n not in inserted]
            conv.args = (new_x, new_w, *conv.args[2:])
        graph.lint()
        gm.recompile()
        _propagate(gm, example_inputs)
        # Activations that follow a channels-last convolution are channels-last already now:
        # their copies are dropped (the metadata stays right: a clone keeps the layout).
        for node in list(inserted):
            if _is_channels_last(node.args[0].meta["val"]):
                node.replace_all_uses_with(node.args[0])
                graph.erase_node(node)
                inserted.remove(node)
        restored = []
        for value in outputs:
            if value not in wanted:
                restored.append(value)
                continue
            layout, stride = wanted[value]
            if tuple(value.meta["val"].stride()) == stride:
                restored.append(value)
                continue
            if layout is None:
                raise ValueError(f"output {value.name} changed layout and cannot be restored")
            with graph.inserting_before(output):
                back = graph.call_function(aten.clone.default, (value,), {"memory_format": layout})
            back.meta["val"] = value.meta["val"].clone(memory_format=layout)
            inserted.append(back)
            restored.append(back)
        output.args = (type(original_output_args[0])(restored)
                       if isinstance(original_output_args[0], (list, tuple)) else restored[0],)
        graph.lint()
        gm.recompile()
        logs.emit("perf", f"layout: {len(convs)} convolution(s) made channels-last, "
                          f"{len(inserted)} layout copies added")
        return True
    except Exception as e:  # noqa: BLE001  (an optimization: never fail the compile)
        for conv in convs:
            x, w = conv.args[0], conv.args[1]
            conv.args = (x.args[0] if x in inserted else x, w.args[0] if w in inserted else w,
                         *conv.args[2:])
        output.args = original_output_args
        for node in reversed(inserted):
            if not node.users:
                graph.erase_node(node)
        for node, val in saved_meta.items():
            if val is not None:
                node.meta["val"] = val
        graph.lint()
        gm.recompile()
        logs.emit("perf", f"layout: convolutions left as they are ({type(e).__name__}: {e})")
        return False
