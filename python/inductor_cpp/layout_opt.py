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
the metadata pass rejects), the graph is left as it was.

Training graphs, as stock Inductor does them: in a forward graph only the outputs the caller
sees (AOT autograd's first `num_forward` outputs: mutated inputs, user outputs) get their
layout back; the activations saved for the backward stay channels-last, and their strides are
reported to AOT autograd (`TracingContext.output_strides`), which re-strides the backward's
example inputs to match. The backward graph then takes its inputs' real layouts (placeholder
metadata from the example inputs), makes its `convolution_backward` operands channels-last and
gives every gradient eager's layout back; a backward whose inputs kept their layout (its
forward was left alone) is left alone too. Outside an AOT autograd compile that collects output
strides (no TracingContext), and on devices outside TRAINING_DEVICES, training graphs are left
alone ([decision 031](../../docs/decisions/031-channels-last-training-graphs.md)). resnet18
training on the H200: convolutions 4.08 -> 2.83 ms a step (stock's: 2.78).
`options={"layout_optimization": False}` turns the pass off.
"""

from __future__ import annotations

from typing import Any

import torch
from torch._guards import detect_fake_mode
from torch.fx.passes.fake_tensor_prop import FakeTensorProp

from . import fx_import, logs

aten = torch.ops.aten

# The operands a convolution (backward) reads as activations or filters: made channels-last;
# the graph is left alone when its activations already are.
CONV_OPERANDS = {aten.convolution.default: (0, 1), aten.convolution_backward.default: (0, 1, 2)}
CONV_ACTIVATIONS = {aten.convolution.default: (0,), aten.convolution_backward.default: (0, 1)}
# Device types whose training graphs the pass takes (2 CPU threads, training steps, eager /
# ours NCHW / ours channels-last, ms: resnet18 36.3 / 39.2 / 32.6, mobilenet_v3_small 20.2 /
# 14.3 / 10.2; H200: resnet18's convolutions 4.08 -> 2.83 ms a step).
TRAINING_DEVICES = {"cpu", "cuda"}


def _is_conv2d(node: torch.fx.Node) -> bool:
    if node.op != "call_function" or node.target not in CONV_OPERANDS:
        return False
    operands = [node.args[i] for i in CONV_OPERANDS[node.target]]
    return all(isinstance(a, torch.fx.Node) and isinstance(a.meta.get("val"), torch.Tensor)
               and a.meta["val"].dim() == 4 and not a.meta["val"].is_complex() for a in operands)


def _caller_outputs(kind: str, count: int, example_inputs: list[Any]) -> int | None:
    """How many leading outputs of the graph being compiled keep eager's layout: all of an
    inference or backward graph's; of a forward graph's, AOT autograd's `num_forward` (the
    rest are activations saved for the backward). None where training graphs are left alone
    (no AOT autograd compile collecting the forward's output strides)."""
    if kind != "inference" and any(
            isinstance(d, torch.SymInt) for x in example_inputs if isinstance(x, torch.Tensor)
            for d in (*x.shape, *x.stride())):
        return None  # symbolic sizes: AOT autograd takes concrete strides only
    if kind != "inference" and not any(
            isinstance(x, torch.Tensor) and x.device.type in TRAINING_DEVICES for x in example_inputs):
        return None
    if kind != "forward":
        return count
    context = torch._guards.TracingContext.try_get()
    if context is None or context.output_strides is None or context.fw_metadata is None:
        return None
    return min(count, int(context.fw_metadata.num_forward))


def report_output_strides(gm: torch.fx.GraphModule) -> None:
    """Tells AOT autograd the strides of the forward graph's outputs (after this pass), so it
    re-strides the backward's example inputs to the activations' real layout."""
    context = torch._guards.TracingContext.try_get()
    if context is None or context.output_strides is None:
        return
    _, outputs = _outputs(gm.graph)
    context.output_strides.extend(
        tuple(v.meta["val"].stride()) if isinstance(v, torch.fx.Node)
        and isinstance(v.meta.get("val"), torch.Tensor) else None for v in outputs)


def _take_input_layouts(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> bool:
    """A backward graph's placeholders take the strides of their example inputs (AOT autograd
    re-strided those of channels-last saved activations); returns whether any changed."""
    changed = False
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for node, x in zip(placeholders, example_inputs):
        val = node.meta.get("val")
        if (isinstance(val, torch.Tensor) and isinstance(x, torch.Tensor)
                and tuple(val.stride()) != tuple(x.stride())):
            node.meta["val"] = val.as_strided(val.shape, x.stride(), val.storage_offset())
            changed = True
    return changed


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
    """Makes the convolutions of a graph channels-last (module docstring); returns whether the
    graph changed. On any trouble the graph is restored and False returned."""
    graph = gm.graph
    output, outputs = _outputs(graph)
    keep = _caller_outputs(kind, len(outputs), example_inputs)
    if keep is None:
        return False
    saved_meta = {n: n.meta.get("val") for n in graph.nodes}
    inputs_changed = kind == "backward" and _take_input_layouts(gm, example_inputs)
    if kind == "backward" and not inputs_changed:
        return False  # its forward stayed as it was (symbolic sizes): so does the backward
    convs = [n for n in graph.nodes if _is_conv2d(n)]
    if not inputs_changed and all(_is_channels_last(n.args[i].meta["val"]) for n in convs
                                  for i in CONV_ACTIVATIONS[n.target]):
        return False
    wanted = {}
    for value in outputs[:keep]:
        if isinstance(value, torch.fx.Node) and isinstance(saved_meta.get(value), torch.Tensor):
            layout = _layout_of(saved_meta[value])
            if layout is None and saved_meta[value].dim() == 4:
                _restore_meta(saved_meta)
                return False  # an output layout a clone could not restore
            wanted[value] = (layout, tuple(saved_meta[value].stride()))
    original_args = {conv: conv.args for conv in convs}
    original_output_args = output.args
    inserted: list[torch.fx.Node] = []
    try:
        cache: dict[torch.fx.Node, torch.fx.Node] = {}
        for conv in convs:
            args = list(conv.args)
            for i in CONV_OPERANDS[conv.target]:
                args[i] = _make_channels_last(graph, args[i], conv, cache)
                if args[i] is not conv.args[i] and args[i] not in inserted:
                    inserted.append(args[i])
            conv.args = tuple(args)
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
            if value not in wanted:  # not a tensor, or an activation saved for the backward
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
        logs.emit("perf", f"layout ({kind}): {len(convs)} convolution(s) made channels-last, "
                          f"{len(inserted)} layout copies added")
        return True
    except Exception as e:  # noqa: BLE001  (an optimization: never fail the compile)
        for conv, args in original_args.items():
            conv.args = args
        output.args = original_output_args
        for node in reversed(inserted):
            if not node.users:
                graph.erase_node(node)
        _restore_meta(saved_meta)
        graph.lint()
        gm.recompile()
        logs.emit("perf", f"layout: convolutions left as they are ({type(e).__name__}: {e})")
        return False


def _restore_meta(saved_meta: dict) -> None:
    for node, val in saved_meta.items():
        if val is not None:
            node.meta["val"] = val
