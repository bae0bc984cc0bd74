"""Passes over AOT autograd's joint forward+backward graph, before the min-cut partitioner
splits it (`partition` below is the partition_fn dynamo_backend.py hands to aot_autograd).

The partitioner decides what the forward saves for the backward from the joint graph's data
flow, so an op that only copies a value hides from it that two tensors are equal. Dropout with
p=0 in training mode is `aten::clone(x)`: the partitioner then saves both `relu(h)` (the
backward's matmul reads its clone) and `h` (to recompute `relu(h)` for threshold_backward),
twice the memory eager saves. In a functional graph a plain clone is the identity, so its uses
can read its input instead (stock Inductor removes such no-op clones too).
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


def partition(joint_module: torch.fx.GraphModule, joint_inputs, **kwargs):
    """min_cut_rematerialization_partition after the joint-graph passes above."""
    if remove_noop_clones(joint_module.graph):
        joint_module.graph.lint()
        joint_module.recompile()
    return min_cut_rematerialization_partition(joint_module, joint_inputs, **kwargs)
