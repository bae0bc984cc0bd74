"""The decomposition table handed to AOT autograd.

We start from torch's own core-ATen decompositions (torch maintains them; we do not re-type
them) and remove the ops that are better left whole:

* ops we lower directly in C++ (gelu, silu and a few backward ops: one node instead of several),
* ops whose ATen kernel is better than their decomposition (addmm's BLAS call with the bias
  folded in; linspace/logspace, whose decomposition rounds differently), and
* where we do not generate code (devices outside CODEGEN_DEVICES, and graphs with symbolic
  sizes, whose own plan is ATen calls: specialize.py), fused ATen kernels such as softmax and
  layer_norm: there, splitting them would turn one fast call into several. A symbolic graph's
  static copies are re-traced with the full table (`decomposition_table(device)`), so they
  get the decomposed ops our code generation fuses.

Each removal is listed with its reason; code generation takes entries out of KEEP_AS_ATEN as
it learns to generate something faster than the ATen kernel.
"""

from __future__ import annotations

import functools

import torch
from torch._decomp import core_aten_decompositions, get_decompositions

from . import knobs

aten = torch.ops.aten

# op packet -> why we keep it whole on every device (all overloads of the packet are kept).
KEEP_AS_ATEN: dict[object, str] = {
    aten.gelu: "lowered directly (one node instead of its decomposition)",
    aten.gelu_backward: "lowered directly",
    aten.silu: "lowered directly",
    aten.silu_backward: "lowered directly",
    aten.hardtanh_backward: "lowered directly",
    aten.threshold_backward: "lowered directly",
    aten.addmm: "extern matmul: BLAS call with the bias folded in",
    aten._scaled_dot_product_flash_attention_for_cpu: "fused attention: our matrix attention "
    "step in inference graphs (inductor/lower/library_attention.cpp), ATen's kernel elsewhere; torch 2.11's "
    "decomposition of it gives wrong input-projection gradients in training (seen on a 2-layer "
    "transformer encoder: off by up to 0.27 where eager matches a numerical gradient)",
    aten.linspace: "the decomposition rounds differently from ATen for integer dtypes (off by one)",
    aten.logspace: "the decomposition rounds differently from ATen for integer dtypes",
}

# Kept whole only on devices we do not generate code for (today: everything but the CPU): there
# the fused ATen kernel beats running its decomposition op by op. On the CPU they decompose
# into ops we lower, and fusion turns them back into one or two kernels.
KEEP_AS_ATEN_WITHOUT_CODEGEN: dict[object, str] = {
    aten.native_layer_norm: "fused ATen kernel",
    aten.native_layer_norm_backward: "fused ATen kernel",
    aten.native_group_norm: "fused ATen kernel",
    aten.native_group_norm_backward: "fused ATen kernel",
    aten._softmax: "fused ATen kernel",
    aten._log_softmax: "fused ATen kernel",
    aten._softmax_backward_data: "fused ATen kernel",
    aten._log_softmax_backward_data: "fused ATen kernel",
    aten.native_batch_norm_backward: "fused ATen kernel",
    aten._native_batch_norm_legit: "fused ATen kernel",
    aten._native_batch_norm_legit_no_training: "fused ATen kernel",
    aten._native_batch_norm_legit_functional: "fused ATen kernel",
    aten.mse_loss: "one ATen kernel",
    aten.mse_loss_backward: "one ATen kernel",
    aten.nll_loss_forward: "one ATen kernel",
    aten.nll_loss_backward: "one ATen kernel",
    aten.linalg_vector_norm: "one ATen kernel",
}

# Device types we generate code for ("cuda": the NVPTX emitter, docs/gpu.md; switched off with
# INDUCTOR_CPP_GPU_CODEGEN=0, which the C++ side honours too).
CODEGEN_DEVICES = frozenset(
    {"cpu", "cuda"} if knobs.get_bool("INDUCTOR_CPP_GPU_CODEGEN") else {"cpu"})

# Decompositions torch registers but leaves out of its core-ATen set (these are core ATen ops),
# which we want on code-generation devices: their pieces lower and fuse back into one or two
# kernels (softmax: max, exp-sum and normalize in one loop nest per row).
EXTRA_FOR_CODEGEN = (
    aten._softmax,
    aten._log_softmax,
    aten.native_layer_norm,
    aten.native_group_norm,
    aten._native_batch_norm_legit,
    aten._native_batch_norm_legit_no_training,
    aten._native_batch_norm_legit_functional,
    aten.linalg_vector_norm,
)


def _embedding_dense_backward_by_index_add(grad_output, indices, num_weights: int, padding_idx: int,
                                           scale_grad_by_freq: bool):
    """CUDA: the embedding's weight gradient as `zeros.index_add(0, indices, grad rows)`.

    torch's decomposition ends in `_unsafe_index_put(zeros, [indices], grad, accumulate=True)`,
    which we leave to ATen; on CUDA that sorts the indices first (`indexing_backward_kernel`:
    0.49 ms per BERT step, issue 40). ATen's CUDA `index_add` adds the rows with atomics, as
    stock Inductor's generated scatter does, and switches to the sorted, deterministic path
    itself under `torch.use_deterministic_algorithms(True)`.
    """
    if scale_grad_by_freq:
        return _DECOMPOSED_EMBEDDING_BACKWARD(grad_output, indices, num_weights, padding_idx,
                                              scale_grad_by_freq)
    result_dtype = grad_output.dtype
    compute_dtype = torch.float32 if result_dtype in (torch.float16, torch.bfloat16) else result_dtype
    row_shape = grad_output.shape[indices.ndim:]
    rows = grad_output.to(compute_dtype).reshape((-1,) + tuple(row_shape))
    flat = indices.reshape(-1).to(torch.long)
    keep = (flat != padding_idx).reshape((-1,) + (1,) * len(row_shape))
    rows = torch.where(keep, rows, torch.zeros((), dtype=compute_dtype, device=rows.device))
    zeros = torch.zeros((num_weights,) + tuple(row_shape), dtype=compute_dtype, device=rows.device)
    return aten.index_add(zeros, 0, flat, rows).to(result_dtype)


_DECOMPOSED_EMBEDDING_BACKWARD = core_aten_decompositions()[aten.embedding_dense_backward.default]


def _convolution_bias_peeled(input, weight, bias, stride, padding, dilation, transposed: bool,
                             output_padding, groups: int):
    """CUDA: a convolution's bias added by generated code, not by cuDNN.

    Given the bias, cuDNN runs a second kernel over the output to add it (convnext_tiny's
    depthwise convolutions on the H200: 0.63 ms a step against 0.55 without); as a pointwise
    add it fuses into the kernel that reads the output next (convnext's layer norm). Stock
    Inductor peels it off the same way on GPUs."""
    if bias is None:
        return NotImplemented
    out = aten.convolution(input, weight, None, stride, padding, dilation, transposed,
                           output_padding, groups)
    return out + bias.view([1, -1] + [1] * (out.dim() - 2))


def _convolution_backward_bias_by_sum(grad_output, input, weight, bias_sizes, stride, padding,
                                      dilation, transposed: bool, output_padding, groups: int,
                                      output_mask):
    """CUDA: the bias gradient as a sum over all dims but the channels, which fuses with the
    other reductions of the output gradient; cuDNN computes it in kernels of its own (~0.4 ms
    of a convnext_tiny training step on the H200). Stock Inductor does the same."""
    if not output_mask[2]:
        return NotImplemented
    grad_bias = aten.sum(grad_output, [0] + list(range(2, grad_output.dim())))
    grad_input, grad_weight, _ = aten.convolution_backward(
        grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
        output_padding, groups, [output_mask[0], output_mask[1], False])
    return grad_input, grad_weight, grad_bias


# Device type -> {op overload: our decomposition}, replacing torch's there.
DEVICE_DECOMPOSITIONS: dict[str, dict] = {
    "cuda": {aten.embedding_dense_backward.default: _embedding_dense_backward_by_index_add,
             aten.convolution.default: _convolution_bias_peeled,
             aten.convolution_backward.default: _convolution_backward_bias_by_sum},
}
# Device type -> {op packet: why it stays whole there}.
KEEP_AS_ATEN_ON_DEVICE: dict[str, dict] = {
    "cuda": {aten.index_add: "ATen's CUDA kernel adds rows with atomics; its decomposition is an "
             "accumulating index_put, which ATen runs by sorting the indices"},
}


@functools.lru_cache(maxsize=None)
def decomposition_table(device_type: str = "cpu", generated: bool = True) -> dict:
    """torch's core-ATen decompositions minus what we keep whole on `device_type`.
    `generated` False: the graph runs as ATen calls whatever the device (symbolic sizes), so
    the fused kernels stay whole."""
    table = dict(core_aten_decompositions())
    keep = dict(KEEP_AS_ATEN)
    if generated and device_type in CODEGEN_DEVICES:
        table.update(get_decompositions(list(EXTRA_FOR_CODEGEN)))
        table.update(DEVICE_DECOMPOSITIONS.get(device_type, {}))
        keep.update(KEEP_AS_ATEN_ON_DEVICE.get(device_type, {}))
    else:
        keep.update(KEEP_AS_ATEN_WITHOUT_CODEGEN)
    kept = set()
    for packet in keep:
        kept.update(getattr(packet, o) for o in packet.overloads())
    return {op: fn for op, fn in table.items() if op not in kept}
