"""Passes over AOT autograd's joint forward+backward graph, before the min-cut partitioner
splits it (`partition` below is the partition_fn dynamo_backend.py hands to aot_autograd).

The partitioner decides what the forward saves for the backward from the joint graph's data
flow, so an op that only copies a value hides from it that two tensors are equal. Dropout with
p=0 in training mode is `aten::clone(x)`: the partitioner then saves both `relu(h)` (the
backward's matmul reads its clone) and `h` (to recompute `relu(h)` for threshold_backward),
twice the memory eager saves. In a functional graph a plain clone is the identity, so its uses
can read its input instead (stock Inductor removes such no-op clones too).

A tied embedding (BERT's and GPT-2's word embedding is also their output projection) gets its
gradient as `matmul grad + index_add(zeros, 0, ids, rows)` on CUDA (decompositions.py): the
index_add can add its rows into the matmul's gradient directly, which saves a zero fill and an
add over the whole table (0.14 ms per GPT-2 step on the H200).
"""

from __future__ import annotations

import torch
from torch._functorch.partitioners import min_cut_rematerialization_partition

aten = torch.ops.aten


def _is_noop_clone(node: torch.fx.Node) -> bool:
    if node.op != "call_function" or node.target is not aten.clone.default:
        return False
    source = node.args[0]
    if not isinstance(source, torch.fx.Node) or source.op == "placeholder":
        return False  # a clone of an input protects the caller's tensor from later mutation
    fmt = node.kwargs.get("memory_format")
    if fmt not in (None, torch.preserve_format):
        return False  # changes the layout
    if any(user.op == "output" for user in node.users):
        return False  # an output must not alias another value
    # A value some op mutates is not a functional value (copy_ into inputs only, in AOT graphs).
    return not any(getattr(user.target, "_schema", None) is not None and user.target._schema.is_mutable
                   for user in source.users)


def remove_noop_clones(graph: torch.fx.Graph) -> int:
    """Replaces the uses of every plain clone by its input; returns how many it removed."""
    removed = 0
    for node in list(graph.nodes):
        if _is_noop_clone(node):
            node.replace_all_uses_with(node.args[0])
            graph.erase_node(node)
            removed += 1
    return removed


def _is_zero_fill(node: object) -> bool:
    return (isinstance(node, torch.fx.Node) and node.op == "call_function" and
            node.target in (aten.full.default, aten.zeros.default) and len(node.users) == 1 and
            (node.target is aten.zeros.default or node.args[1] == 0))


def _same_tensor_type(a: torch.fx.Node, b: torch.fx.Node) -> bool:
    va, vb = a.meta.get("val"), b.meta.get("val")
    return (isinstance(va, torch.Tensor) and isinstance(vb, torch.Tensor) and va.shape == vb.shape
            and va.dtype == vb.dtype and va.device == vb.device)


def fold_index_add_into_sum(graph: torch.fx.Graph) -> int:
    """`add(index_add(zeros, d, i, s), x)` -> `index_add(x, d, i, s)` where x has the sum's
    shape and dtype and the zeros and the index_add have no other use; returns how many."""
    folded = 0
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target is not aten.add.Tensor or node.kwargs:
            continue
        for scatter, other in ((node.args[0], node.args[1]), (node.args[1], node.args[0])):
            if not (isinstance(scatter, torch.fx.Node) and isinstance(other, torch.fx.Node) and
                    scatter.op == "call_function" and scatter.target is aten.index_add.default and
                    not scatter.kwargs and len(scatter.args) == 4 and len(scatter.users) == 1 and
                    _is_zero_fill(scatter.args[0]) and _same_tensor_type(node, other) and
                    _same_tensor_type(node, scatter)):
                continue
            zeros = scatter.args[0]
            with graph.inserting_before(node):
                fused = graph.call_function(aten.index_add.default, (other, *scatter.args[1:]))
            fused.meta.update(node.meta)
            node.replace_all_uses_with(fused)
            graph.erase_node(node)
            graph.erase_node(scatter)
            graph.erase_node(zeros)
            folded += 1
            break
    return folded


def partition(joint_module: torch.fx.GraphModule, joint_inputs, **kwargs):
    """min_cut_rematerialization_partition after the joint-graph passes above."""
    changed = remove_noop_clones(joint_module.graph)
    changed += fold_index_add_into_sum(joint_module.graph)
    if changed:
        joint_module.graph.lint()
        joint_module.recompile()
    return min_cut_rematerialization_partition(joint_module, joint_inputs, **kwargs)
