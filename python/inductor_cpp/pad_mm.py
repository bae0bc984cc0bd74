"""Half-precision matrix products on CUDA padded to aligned sizes (an FX pass before lowering).

cuBLAS runs float16 / bfloat16 GEMMs on tensor cores at full speed only when every leading
dimension is a multiple of 8 elements (16 bytes). GPT-2's vocabulary, 50257 words, is not: its
output projection and the two matrix products of its backward ran at 93-136 TFLOP/s on the
H200 under bf16 autocast (0.85 ms for the [1024, 768] x [768, 50257] product) where stock
Inductor, which pads (its `pad_mm` pass), reached 650-730 TFLOP/s on [.., 50264].

Padding has its price: copies of the operands (our pad kernels ran at ~600 GB/s on these
rows) and a sliced result that the next kernels read at a stride. Measured on the H200 (bf16
autocast training steps, device time): GPT-2's odd vocabulary, where cuBLAS ran at 87-137
TFLOP/s, gained 1.0 ms a step (4.21 -> 3.19 ms) with padding; BERT's 30522, an even size at
161-240 TFLOP/s, lost 0.3 ms (2.82 -> 3.12 ms). So only products with an odd size are padded.

For `mm(a, b)` and `addmm(bias, a, b)` whose operands are float16 / bfloat16 on a CUDA device,
with M x K x N of at least MIN_WORK multiply-adds and M, K or N odd: the
operands are zero-padded (`constant_pad_nd`, a generated copy kernel) so that all three are
multiples of 8, the product is taken at the padded size, and the result is sliced back to
[M, N] (a view; later kernels read it in place; a graph output, such as a weight gradient, is
copied to eager's contiguous strides). Zeros added along K add nothing to the products; rows
and columns added along M and N are cut off.
"""

from __future__ import annotations

from typing import Any

import torch
from torch._guards import detect_fake_mode

from . import fx_rewrite

aten = torch.ops.aten

ALIGN = 8  # elements: 16 bytes of float16 / bfloat16
MIN_WORK = 1 << 28  # M*K*N below which padding copies cost more than they save
HALF_TYPES = (torch.float16, torch.bfloat16)
padded_total = 0  # matrix products padded in this process (tests read it)


def _pad_to(n: int) -> int:
    return -n % ALIGN


_val = fx_rewrite.value


def _wanted(node: torch.fx.Node, device_types: tuple[str, ...]) -> tuple[int, int, int] | None:
    """(M, K, N) of a matrix product worth padding, else None."""
    if node.op != "call_function" or node.kwargs:
        return None
    bias = None
    if node.target is aten.mm.default and len(node.args) == 2:
        a, b = node.args
    elif node.target is aten.addmm.default and len(node.args) == 3:
        bias, a, b = node.args
    else:
        return None
    va, vb, out = _val(a), _val(b), _val(node)
    if va is None or vb is None or out is None or va.dim() != 2 or vb.dim() != 2:
        return None
    if bias is not None and (_val(bias) is None or tuple(_val(bias).shape) not in
                             ((vb.shape[1],), (1, vb.shape[1]), (va.shape[0], vb.shape[1]))):
        return None  # a bias that broadcasts otherwise: left alone
    if va.dtype not in HALF_TYPES or vb.dtype != va.dtype or va.device.type not in device_types:
        return None
    if any(not isinstance(s, int) for s in (*va.shape, *vb.shape)):
        return None  # symbolic sizes: padding would need guards
    (m, k), n = va.shape, vb.shape[1]
    if m * k * n < MIN_WORK or not (m % 2 or k % 2 or n % 2):
        return None  # small, or every size even (see the module docstring)
    return m, k, n


def pad_matrix_products(gm: torch.fx.GraphModule, example_inputs: list[Any],
                        device_types: tuple[str, ...] = ("cuda",)) -> int:
    """Pads the half-precision matrix products of gm's graph (module docstring) in place;
    returns how many. The metadata of the new nodes comes from running them on fake tensors."""
    fake_mode = detect_fake_mode(example_inputs)
    graph = gm.graph
    padded = 0
    for node in list(graph.nodes):
        sizes = _wanted(node, device_types)
        if sizes is None:
            continue
        m, k, n = sizes
        pm, pk, pn = _pad_to(m), _pad_to(k), _pad_to(n)

        add = fx_rewrite.node_adder(graph, fake_mode, node)

        with graph.inserting_before(node):
            if node.target is aten.mm.default:
                a, b = node.args
                bias = None
            else:
                bias, a, b = node.args
            # constant_pad_nd's pad list runs from the last dim: [left, right] per dim.
            if pm or pk:
                a = add(aten.constant_pad_nd.default, (a, [0, pk, 0, pm], 0.0))
            if pk or pn:
                b = add(aten.constant_pad_nd.default, (b, [0, pn, 0, pk], 0.0))
            if bias is None:
                product = add(aten.mm.default, (a, b))
            else:
                # [N] or [1, N]: padded along N; [M, N]: along both.
                full = tuple(_val(bias).shape) == (m, n) and m != 1
                if pn or (full and pm):
                    pads = [0, pn] + ([0, pm] if full else [])
                    bias = add(aten.constant_pad_nd.default, (bias, pads, 0.0))
                product = add(aten.addmm.default, (bias, a, b))
            result = product
            if pm:
                result = add(aten.slice.Tensor, (result, 0, 0, m))
            if pn:
                result = add(aten.slice.Tensor, (result, 1, 0, n))
            if any(user.op == "output" for user in node.users):
                # the caller sees eager's (contiguous) strides: one copy, far less than the
                # unaligned product costs (a [50257, 768] weight gradient: 77 MB in ~40 us)
                result = add(aten.clone.default, (result,))
        node.replace_all_uses_with(result)
        graph.erase_node(node)
        padded += 1
    global padded_total
    padded_total += padded
    fx_rewrite.finish(gm, padded, f"pad_mm: {padded} half-precision matrix product(s) padded "
                                  f"to multiples of {ALIGN}")
    return padded
