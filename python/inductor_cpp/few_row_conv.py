"""CPU convolutions with few output positions as matrix products that read the filter in place
(an FX pass before lowering).

A convolution whose output has at most MAX_ROWS positions (batch x height x width) is a GEMM
of that few rows against the whole filter: reading the filter dominates. The matrix library's
convolution packs the filter first, and in a training step (weights change every step) it
packs it on every call; resnet18's last stage on 64x64 images (a 2x2 map, 512 x 512 x 3 x 3
filters, 9.4 MB each) spent 1.9 ms per convolution there on 2 threads, where eager's took 0.8.
A Linear layer on that few rows reads its weight in place instead (docs/matrix/in_graphs.md
"few rows"), so such a convolution becomes one:

    im2col(x) -> [N*L, C*KH*KW] rows  x  weight.view(O, C*KH*KW).t()  (+ bias)  -> [N, OH, OW, O]

returned as the NCHW tensor with channels-last strides the convolution gives in our
channels-last graphs. Measured on 2 threads of the development machine, the filter updated
between calls: 512 -> 512 channels, 3x3, 2x2 map, batch 4: 1.37 -> 0.46 ms; at 4x4 (64 rows)
the convolution kernel is faster (0.53 vs 0.62 ms), hence the bound.

Their backward (`convolution_backward` in a training step's backward graph) likewise: dw =
dyᵀ · im2col rows, dx = col2im(dy · filter), db = column sums of dy, so neither graph copies
the filter to channels-last any more (resnet18's backward cloned each 9.4 MB filter per step).

Only in training graphs (forward and backward): in an inference graph the filter does not
change between calls, the convolution's packed copy is reused, and the batch norm after it is
absorbed into the convolution, which a matrix product over rows would lose. Only float32 CPU
convolutions (not transposed, one group, 2-D) whose filter is contiguous (OIHW) and at least
MIN_FILTER_BYTES, with static sizes, and only where the matrix kernels are on. The rows are
gathered by ATen's im2col (an ATen call: under strict="all", which forbids those, nothing is
rewritten).
"""

from __future__ import annotations

import operator
from typing import Any

import torch
from torch._guards import detect_fake_mode

from . import fx_rewrite

aten = torch.ops.aten

MAX_ROWS = 32  # output positions: the matrix library's few-row bound for Linear layers
MIN_FILTER_BYTES = 1 << 20  # smaller filters: packing is cheap, nothing to win
rewritten_total = 0  # convolutions rewritten in this process (tests read it)


_val = fx_rewrite.value


def _contiguous_filter(w: Any) -> Any:
    """The filter node in OIHW order: w itself, or what layout_opt's channels-last clone of it
    copies (the clone is then left to dead-code elimination)."""
    val = _val(w)
    if val is not None and val.is_contiguous():
        return w
    if (isinstance(w, torch.fx.Node) and w.op == "call_function" and w.target is aten.clone.default
            and isinstance(w.args[0], torch.fx.Node)):
        source = _val(w.args[0])
        if source is not None and source.is_contiguous() and source.shape == val.shape:
            return w.args[0]
    return None


def _wanted(node: torch.fx.Node) -> bool:
    """A qualifying convolution, or convolution_backward (whose output positions are its
    gradient's)."""
    if node.op != "call_function":
        return False
    if node.target is aten.convolution.default:
        x, w, out = _val(node.args[0]), _val(node.args[1]), _val(node)
        filter_node, transposed, groups = node.args[1], node.args[6], node.args[8]
    elif node.target is aten.convolution_backward.default:
        out, x, w = (_val(a) for a in node.args[:3])
        filter_node, transposed, groups = node.args[2], node.args[7], node.args[9]
    else:
        return False
    if x is None or w is None or out is None or transposed or groups != 1 or x.dim() != 4:
        return False
    if x.device.type != "cpu" or x.dtype != torch.float32 or w.dtype != torch.float32:
        return False
    if not all(type(d) is int for d in (*x.shape, *w.shape, *out.shape)):
        return False  # symbolic sizes: comparing them would add guards (specialize.py's copies qualify)
    n, _, oh, ow = out.shape
    return (n * oh * ow <= MAX_ROWS and _contiguous_filter(filter_node) is not None
            and w.numel() * w.element_size() >= MIN_FILTER_BYTES)


def _with_strides_of(original: torch.Tensor, result: torch.fx.Node, add: Any) -> torch.fx.Node:
    """`result`, cloned to `original`'s memory format when its strides differ."""
    if result.meta["val"].stride() == original.stride():
        return result
    fmt = torch.contiguous_format if original.is_contiguous() else torch.channels_last
    return add(aten.clone.default, (result,), memory_format=fmt)


def _rewrite_backward(graph: torch.fx.Graph, node: torch.fx.Node, add: Any) -> None:
    """convolution_backward of a few-row convolution: with dy as rows [N*L, O] and x as im2col
    rows [N*L, C*KH*KW], dw = dyᵀ · rows, dx = col2im(dy · W) (the filter read in place, as
    [O, C*KH*KW]), db = the column sums of dy."""
    grad, x, w = node.args[:3]
    stride, padding, dilation = node.args[4], node.args[5], node.args[6]
    mask = node.args[10]
    w = _contiguous_filter(w)
    n, o, oh, ow = _val(grad).shape
    _, c, h, wd = _val(x).shape
    kh, kw = _val(w).shape[2:]
    rows, ckk = n * oh * ow, c * kh * kw
    outputs: list[torch.fx.Node | None] = [None, None, None]
    with graph.inserting_before(node):
        dy = add(aten.permute.default, (grad, [0, 2, 3, 1]))
        dy = add(aten.clone.default, (dy,), memory_format=torch.contiguous_format)
        dy = add(aten.view.default, (dy, [rows, o]))
        if mask[0]:
            weight = add(aten.view.default, (w, [o, ckk]))
            dcols = add(aten.mm.default, (dy, weight))
            dcols = add(aten.view.default, (dcols, [n, oh * ow, ckk]))
            dcols = add(aten.permute.default, (dcols, [0, 2, 1]))
            dx = add(aten.col2im.default, (dcols, [h, wd], [kh, kw], list(dilation), list(padding),
                                          list(stride)))
            outputs[0] = dx
        if mask[1]:
            cols = add(aten.im2col.default, (x, [kh, kw], list(dilation), list(padding), list(stride)))
            cols = add(aten.permute.default, (cols, [0, 2, 1]))
            cols = add(aten.clone.default, (cols,), memory_format=torch.contiguous_format)
            cols = add(aten.view.default, (cols, [rows, ckk]))
            dw = add(aten.mm.default, (add(aten.permute.default, (dy, [1, 0])), cols))
            outputs[1] = add(aten.view.default, (dw, [o, c, kh, kw]))
        if mask[2]:
            outputs[2] = add(aten.sum.dim_IntList, (dy, [0]))
    originals = node.meta["val"]
    for user in list(node.users):
        if user.op != "call_function" or user.target is not operator.getitem:
            raise AssertionError(f"unexpected user of convolution_backward: {user}")
        i = user.args[1]
        with graph.inserting_before(user):
            replacement = _with_strides_of(originals[i], outputs[i], add)
        user.replace_all_uses_with(replacement)
        graph.erase_node(user)
    graph.erase_node(node)


def rewrite_few_row_convolutions(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> int:
    """Rewrites gm's qualifying convolutions (module docstring) in place; returns how many."""
    fake_mode = detect_fake_mode(example_inputs)
    graph = gm.graph
    count = 0
    for node in list(graph.nodes):
        if not _wanted(node):
            continue

        add = fx_rewrite.node_adder(graph, fake_mode, node)
        if node.target is aten.convolution_backward.default:
            _rewrite_backward(graph, node, add)
            count += 1
            continue
        x, w, bias, stride, padding, dilation = node.args[:6]
        w = _contiguous_filter(w)
        n, _, oh, ow = _val(node).shape
        o, c, kh, kw = _val(w).shape
        with graph.inserting_before(node):
            cols = add(aten.im2col.default, (x, [kh, kw], list(dilation), list(padding), list(stride)))
            rows = add(aten.permute.default, (cols, [0, 2, 1]))
            rows = add(aten.clone.default, (rows,), memory_format=torch.contiguous_format)
            rows = add(aten.view.default, (rows, [n * oh * ow, c * kh * kw]))
            weight = add(aten.view.default, (w, [o, c * kh * kw]))
            weight = add(aten.permute.default, (weight, [1, 0]))
            if bias is None:
                product = add(aten.mm.default, (rows, weight))
            else:
                product = add(aten.addmm.default, (bias, rows, weight))
            result = add(aten.view.default, (product, [n, oh, ow, o]))
            result = add(aten.permute.default, (result, [0, 3, 1, 2]))
            result = _with_strides_of(_val(node), result, add)
        node.replace_all_uses_with(result)
        graph.erase_node(node)
        count += 1
    global rewritten_total
    rewritten_total += count
    fx_rewrite.finish(gm, count, f"few_row_conv: {count} convolution(s) of at most {MAX_ROWS} "
                                 "output positions as matrix products reading the filter in place")
    return count
