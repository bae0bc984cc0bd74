"""The decomposition table handed to AOT autograd.

We start from torch's own core-ATen decompositions (torch maintains them; we do not re-type
them) and remove the ops that are better left whole:

* ops we lower directly in C++ (none yet: code generation is a later stage), and
* ops whose ATen kernel is a fused, hand-tuned kernel while our code generation cannot fuse
  their decomposition yet: splitting them would turn one fast ATen call into several.

Each removal is listed with its reason; code generation takes entries out of KEEP_AS_ATEN as
it learns to generate something faster than the ATen kernel.
"""

from __future__ import annotations

import functools

import torch
from torch._decomp import core_aten_decompositions

aten = torch.ops.aten

# op packet -> why we keep it whole (all overloads of the packet are kept).
KEEP_AS_ATEN: dict[object, str] = {
    aten.native_layer_norm: "fused ATen kernel; no generated kernel yet",
    aten.native_layer_norm_backward: "fused ATen kernel; no generated kernel yet",
    aten.native_group_norm: "fused ATen kernel; no generated kernel yet",
    aten.native_group_norm_backward: "fused ATen kernel; no generated kernel yet",
    aten._softmax: "fused ATen kernel; no generated kernel yet",
    aten._log_softmax: "fused ATen kernel; no generated kernel yet",
    aten._softmax_backward_data: "fused ATen kernel; no generated kernel yet",
    aten._log_softmax_backward_data: "fused ATen kernel; no generated kernel yet",
    aten.native_batch_norm_backward: "fused ATen kernel; no generated kernel yet",
    aten._native_batch_norm_legit: "fused ATen kernel; no generated kernel yet",
    aten._native_batch_norm_legit_no_training: "fused ATen kernel; no generated kernel yet",
    aten._native_batch_norm_legit_functional: "fused ATen kernel; no generated kernel yet",
    aten.gelu: "one ATen kernel; no generated kernel yet",
    aten.gelu_backward: "one ATen kernel; no generated kernel yet",
    aten.silu: "one ATen kernel; no generated kernel yet",
    aten.silu_backward: "one ATen kernel; no generated kernel yet",
    aten.hardtanh_backward: "one ATen kernel; no generated kernel yet",
    aten.threshold_backward: "one ATen kernel; no generated kernel yet",
    aten.mse_loss: "one ATen kernel; no generated kernel yet",
    aten.mse_loss_backward: "one ATen kernel; no generated kernel yet",
    aten.nll_loss_forward: "one ATen kernel; no generated kernel yet",
    aten.nll_loss_backward: "one ATen kernel; no generated kernel yet",
    aten.addmm: "extern matmul: BLAS call with the bias folded in",
    aten.linalg_vector_norm: "one ATen kernel; no generated kernel yet",
    aten.linspace: "the decomposition rounds differently from ATen for integer dtypes (off by one)",
    aten.logspace: "the decomposition rounds differently from ATen for integer dtypes",
}


@functools.lru_cache(maxsize=1)
def decomposition_table() -> dict:
    table = dict(core_aten_decompositions())
    kept = set()
    for packet in KEEP_AS_ATEN:
        kept.update(getattr(packet, o) for o in packet.overloads())
    return {op: fn for op, fn in table.items() if op not in kept}
