"""The cases of `python -m inductor_cpp.bench matrix` (matrix.py runs them, matrix_report.py
reports them): what each workload computes, its inputs, FLOP count and the variants it is
compiled with. Split from the runner so each file reads on its own.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F

from . import timing

# Variant names (columns of the report).
EAGER, STOCK, OURS, OURS_OFF, LIBRARY = "eager", "inductor", "ours mk=on", "ours mk=off", "library"
# matrix_kernels on, tile epilogues off: the consumer a kernel of its own ("tile" rows).
TILE_OFF = "ours tile=off"
# torch.compile(backend="eager"): Dynamo's own per-call cost (guards, frame) with no compiler at
# all, the fastest any compiled variant of a microsecond shape can be.
FLOOR = "compile floor"

# ------------------------------------------------------------------------------- cases

@dataclass
class Workload:
    """What one case runs: fn(*inputs) in eager, compiled by each backend."""

    fn: Callable
    inputs: tuple
    flops: float | None  # None: counted with torch.utils.flop_counter
    k: int | None = None  # reduction length (tolerance); None: model tolerance
    extra: dict[str, Callable[[], Any]] = field(default_factory=dict)  # e.g. the library call
    compare_as_float: bool = False  # outputs of other dtypes (bf16 eager vs fp32 library)


@dataclass
class Case:
    group: str
    name: str
    make: Callable[[], Workload]
    reps: tuple[int, int]  # (timed rounds, warm-up rounds) by default
    peak: str = "fma"  # which measured peak "% peak" refers to
    ours_off: bool = False  # also run inductor_cpp with matrix_kernels off
    freezing: bool = False  # compile stock and ours with options={"freezing": True}
    skipped: str | None = None
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    flops: float | None = None
    # The peak measured right after each timed round (a few short register-only runs): on a
    # machine whose clock moves within a run, a round's rates divided by its own peak say how
    # close to the hardware the kernel ran at that moment (paired_peak_share).
    round_peaks: list[float] = field(default_factory=list)

    def median_s(self, variant: str) -> float | None:
        t = self.results.get(variant, {}).get("timing")
        return t.median_s if t is not None else None

    def ratio(self, baseline: str, variant: str) -> float | None:
        base, mine = self.median_s(baseline), self.median_s(variant)
        return timing.speedup(base, mine) if base and mine else None

    def gflops(self, variant: str) -> float | None:
        seconds = self.median_s(variant)
        return self.flops / seconds / 1e9 if seconds and self.flops else None

    def paired_peak_share(self, variant: str) -> float | None:
        """Median over timed rounds of (the variant's GFLOP/s in the round) / (the peak measured
        right after that round); None without round peaks."""
        seconds = self.results.get(variant, {}).get("round_s") or []
        if not self.flops or not self.round_peaks or len(seconds) != len(self.round_peaks):
            return None
        shares = sorted(self.flops / s / 1e9 / p for s, p in zip(seconds, self.round_peaks) if s and p)
        return shares[len(shares) // 2] if shares else None

    def to_dict(self) -> dict[str, Any]:
        out = {"group": self.group, "name": self.name, "peak": self.peak, "flops": self.flops,
               "skipped": self.skipped, "round_peaks": self.round_peaks, "variants": {}}
        for name, r in self.results.items():
            out["variants"][name] = {**r, "gflops": self.gflops(name),
                                     "peak_share_paired": self.paired_peak_share(name),
                                     "vs_eager": self.ratio(EAGER, name),
                                     "vs_stock": self.ratio(STOCK, name)}
        return out


def _mm(a, b):
    return torch.mm(a, b)


def _addmm_relu(bias, a, b):
    return torch.relu(torch.addmm(bias, a, b))


class _LinearRelu(torch.nn.Module):
    def __init__(self, k: int, n: int):
        super().__init__()
        self.linear = torch.nn.Linear(k, n)

    def forward(self, x):
        return torch.relu(self.linear(x))


def _library_f32(a: torch.Tensor, b: torch.Tensor, threads: int,
                 bias: torch.Tensor | None = None, relu: bool = False) -> dict[str, Callable]:
    """The "library" variant: our float32 GEMM called directly (_C.matrix.gemm_f32), without
    Dynamo or a plan, with B packed once as a compiled graph's packed-weight cache keeps it
    (a one-row product reads B in place there too). {} with an older _C."""
    from .. import _C

    if not hasattr(_C, "matrix") or not hasattr(_C.matrix, "gemm_f32"):
        return {}
    packed = _C.matrix.pack_b_f32(b) if a.shape[0] > 1 else None
    return {LIBRARY: lambda: _C.matrix.gemm_f32(a, b, threads, bias, relu, packed)}


def _gemm(m: int, n: int, k: int, threads: int) -> Callable[[], Workload]:
    def make() -> Workload:
        a, b = torch.randn(m, k), torch.randn(k, n)
        return Workload(_mm, (a, b), 2.0 * m * n * k, k, extra=_library_f32(a, b, threads))
    return make


def _addmm(m: int, n: int, k: int, threads: int) -> Callable[[], Workload]:
    def make() -> Workload:
        bias, a, b = torch.randn(n), torch.randn(m, k), torch.randn(k, n)
        return Workload(_addmm_relu, (bias, a, b), 2.0 * m * n * k, k,
                        extra=_library_f32(a, b, threads, bias, relu=True))
    return make


def _linear(m: int, n: int, k: int, threads: int, relu: bool = False) -> Callable[[], Workload]:
    def make() -> Workload:
        module = (_LinearRelu(k, n) if relu else torch.nn.Linear(k, n)).eval()
        x = torch.randn(m, k)
        linear = module.linear if relu else module
        extra = _library_f32(x, linear.weight.detach().t(), threads, linear.bias.detach(), relu)
        return Workload(module, (x,), 2.0 * m * n * k, k, extra=extra)
    return make


class _LinearLeakyGate(torch.nn.Module):
    """Linear, then what the GEMM's epilogue ops cannot express: leaky ReLU times a learned
    per-feature gate (a tile kernel)."""

    def __init__(self, k: int, n: int):
        super().__init__()
        self.linear = torch.nn.Linear(k, n)
        self.gate = torch.nn.Parameter(torch.randn(n))

    def forward(self, x):
        return F.leaky_relu(self.linear(x), 0.1) * self.gate


def _mm_mix(a, b, y):
    return torch.mm(a, b) * 0.5 + y * y


def _tile(m: int, n: int, k: int, linear: bool) -> Callable[[], Workload]:
    def make() -> Workload:
        if linear:
            return Workload(_LinearLeakyGate(k, n).eval(), (torch.randn(m, k),), 2.0 * m * n * k, k)
        return Workload(_mm_mix, (torch.randn(m, k), torch.randn(k, n), torch.randn(m, n)),
                        2.0 * m * n * k, k)
    return make


def _conv(batch: int, c: int, hw: int, oc: int, kernel: int, stride: int, pad: int,
          fused: bool) -> Callable[[], Workload]:
    def make() -> Workload:
        cl = torch.channels_last
        x = torch.randn(batch, c, hw, hw).to(memory_format=cl)
        w = torch.randn(oc, c, kernel, kernel).to(memory_format=cl) / math.sqrt(c * kernel**2)
        out_hw = (hw + 2 * pad - kernel) // stride + 1
        flops = 2.0 * batch * out_hw * out_hw * oc * c * kernel * kernel
        if not fused:
            return Workload(lambda x, w: F.conv2d(x, w, None, stride, pad), (x, w), flops,
                            c * kernel * kernel)
        bias = torch.randn(oc)
        residual = torch.randn(batch, oc, out_hw, out_hw).to(memory_format=cl)
        return Workload(lambda x, w, b, r: torch.relu(F.conv2d(x, w, b, stride, pad) + r),
                        (x, w, bias, residual), flops, c * kernel * kernel)
    return make


def _conv_backward(batch: int, c: int, hw: int, oc: int, kernel: int, stride: int, pad: int,
                   grad: str, threads: int) -> Callable[[], Workload]:
    """One gradient of a channels-last convolution, aten.convolution_backward called on its own
    (grad "input" or "weight"): what a backward graph runs per convolution."""
    def make() -> Workload:
        from .. import _C

        cl = torch.channels_last
        x = torch.randn(batch, c, hw, hw).to(memory_format=cl)
        w = (torch.randn(oc, c, kernel, kernel) / math.sqrt(c * kernel**2)).to(memory_format=cl)
        out_hw = (hw + 2 * pad - kernel) // stride + 1
        dy = torch.randn(batch, oc, out_hw, out_hw).to(memory_format=cl)
        flops = 2.0 * batch * out_hw * out_hw * oc * c * kernel * kernel
        want_input = grad == "input"
        mask = [want_input, not want_input, False]
        index = 0 if want_input else 1

        def fn(dy, x, w):
            return torch.ops.aten.convolution_backward(
                dy, x, w, None, [stride, stride], [pad, pad], [1, 1], False, [0, 0], 1, mask)[index]
        extra = {}
        if hasattr(_C, "matrix") and hasattr(_C.matrix, "conv2d_backward_f32"):
            extra[LIBRARY] = lambda: _C.matrix.conv2d_backward_f32(  # noqa: E731
                dy, x, w, [stride, stride], [pad, pad], [1, 1], threads, input=want_input,
                weight=not want_input)[index]
        k = oc * kernel * kernel if want_input else batch * out_hw * out_hw
        return Workload(fn, (dy, x, w), flops, k, extra=extra)
    return make


def _amx(n: int, threads: int) -> Callable[[], Workload]:
    def make() -> Workload:
        from .. import _C

        a, b = torch.randn(n, n).bfloat16(), torch.randn(n, n).bfloat16()
        library = lambda: _C.matrix.gemm_bf16(a, b, threads)  # noqa: E731
        return Workload(_mm, (a, b), 2.0 * n**3, n, extra={LIBRARY: library},
                        compare_as_float=True)
    return make


def _bf16_linear(m: int, n: int, k: int) -> Callable[[], Workload]:
    """nn.Linear in bfloat16 (a bf16 model's layer): frozen, ours runs it on AMX up to 256 rows."""
    def make() -> Workload:
        module = torch.nn.Linear(k, n).bfloat16().eval()
        return Workload(module, (torch.randn(m, k).bfloat16(),), 2.0 * m * n * k, k,
                        compare_as_float=True)
    return make


def _bf16_encoder(batch: int, seq: int) -> Callable[[], Workload]:
    """The encoder of the models group (d 768, 4 layers) in bfloat16."""
    def make() -> Workload:
        work = bert_encoder(batch, seq, 768, 12, 3072, 4)()
        return Workload(work.fn.bfloat16(), tuple(x.bfloat16() for x in work.inputs), work.flops,
                        None, compare_as_float=True)
    return make


def _attention(batch: int, seq: int, heads: int, head_dim: int, causal: bool) -> Callable[[], Workload]:
    """F.scaled_dot_product_attention on q, k, v viewed out of one packed [batch, seq, 3, heads,
    head_dim] projection, as a BERT layer has them; the output back as [batch, seq, d]."""
    def make() -> Workload:
        def fn(qkv):
            q, k, v = qkv.permute(2, 0, 3, 1, 4)
            out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
            return out.transpose(1, 2).reshape(batch, seq, heads * head_dim)
        flops = 4.0 * batch * heads * seq * seq * head_dim * (0.5 if causal else 1.0)
        return Workload(fn, (torch.randn(batch, seq, 3, heads, head_dim),), flops, k=seq)
    return make


def _attention_backward(batch: int, seq: int, heads: int, head_dim: int,
                        causal: bool) -> Callable[[], Workload]:
    """ATen's flash attention backward called on its own, as a training backward graph runs it:
    q, k, v viewed out of one packed projection, the forward's output and logsumexp, a random
    output gradient; the gradients of q, k and v."""
    def make() -> Workload:
        qkv = torch.randn(batch, seq, 3, heads, head_dim)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)
        out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, causal)[:2]

        def fn(grad_out, qkv, out, lse):
            q, k, v = qkv.permute(2, 0, 3, 1, 4)
            return torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward(
                grad_out, q, k, v, out, lse, 0.0, causal)
        # five products of batch·heads·seq²·head_dim multiply-adds (q·kᵀ, dO·vᵀ, and the three
        # gradients)
        flops = 10.0 * batch * heads * seq * seq * head_dim * (0.5 if causal else 1.0)
        return Workload(fn, (torch.randn_like(out), qkv, out, lse), flops, k=seq)
    return make


def _resnet18(batch: int, image: int) -> Callable[[], Workload]:
    def make() -> Workload:
        import torchvision

        model = torchvision.models.resnet18(weights=None).eval()
        return Workload(model, (torch.randn(batch, 3, image, image),), None)
    return make


class _BertLayer(torch.nn.Module):
    """A BERT encoder layer (post-norm, GELU FFN) from plain ops, as Hugging Face's BERT is.
    nn.TransformerEncoderLayer in eval + no_grad would take its fused fast path (one
    _transformer_encoder_layer_fwd op), which no matmul kernel of a backend ever sees."""

    def __init__(self, d: int, heads: int, ffn: int):
        super().__init__()
        self.heads = heads
        self.qkv, self.out = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.up, self.down = torch.nn.Linear(d, ffn), torch.nn.Linear(ffn, d)
        self.norm1, self.norm2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)

    def forward(self, x):
        b, s, d = x.shape
        qkv = self.qkv(x).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        attn = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2])
        x = self.norm1(x + self.out(attn.transpose(1, 2).reshape(b, s, d)))
        return self.norm2(x + self.down(F.gelu(self.up(x))))


def bert_encoder(batch: int, seq: int, d: int, heads: int, ffn: int, layers: int):
    def make() -> Workload:
        model = torch.nn.Sequential(*[_BertLayer(d, heads, ffn) for _ in range(layers)]).eval()
        # per token and layer: q, k, v, out projections 4 d^2, FFN 2 d ffn, attention 2 seq d
        # multiply-adds
        flops = 2.0 * batch * seq * layers * (4 * d * d + 2 * d * ffn + 2 * seq * d)
        return Workload(model, (torch.randn(batch, seq, d),), flops)
    return make


SHAPE_KINDS = {"": ("mm", _gemm), "L": ("Linear", _linear), "R": ("relu(addmm)", _addmm)}


def shape_cases(text: str, threads: int) -> list[Case]:
    """The cases --shapes names, in the group "shapes": MxNxK is torch.mm (B an input),
    LMxNxK nn.Linear(K, N) on M rows (the weight a parameter: the packed-weight cache applies),
    RMxNxK relu(addmm(bias, x, b))."""
    cases = []
    for shape in (s.strip() for s in text.split(",") if s.strip()):
        kind = shape[0].upper() if shape[0].upper() in "LR" else ""
        try:
            m, n, k = (int(v) for v in shape[len(kind):].lower().split("x"))
        except ValueError:
            raise SystemExit(f"--shapes: bad shape {shape!r}: expected [L|R]MxNxK") from None
        label, make = SHAPE_KINDS[kind]
        reps = (4, 1) if m * n * k >= 4096**3 else (15, 2)
        cases.append(Case("shapes", f"{label} {m}x{n}x{k}", make(m, n, k, threads), reps))
    return cases


def build_cases(args: argparse.Namespace, amx_usable: bool, amx_why: str) -> list[Case]:
    """The cases of the selected groups, or those --shapes names; --smoke swaps in tiny shapes
    with the same code."""
    smoke, t = args.smoke, args.threads_used
    if args.shapes:
        return shape_cases(args.shapes, t)
    cases: list[Case] = []
    gemm_sizes = [64] if smoke else [1024, 4096]
    for s in gemm_sizes:
        reps = (4, 1) if s >= 4096 else (15, 2)
        cases.append(Case("gemm", f"mm {s}^3", _gemm(s, s, s, t), reps))
    s = 48 if smoke else 1024
    cases.append(Case("addmm", f"relu(addmm) {s}^3", _addmm(s, s, s, t), (15, 2)))
    cases.append(Case("addmm", f"relu(Linear) {s}^3", _linear(s, s, s, t, relu=True), (15, 2)))
    ms = [1, 8] if smoke else [1, 8, 32]
    linear_nk = [(24, 40)] if smoke else [(768, 768), (3072, 768), (768, 3072), (4096, 4096)]
    mm_nk = [(24, 40)] if smoke else [(768, 768), (4096, 4096)]
    for n, k in linear_nk:
        for m in ms:
            cases.append(Case("small", f"Linear {m}x{n}x{k}", _linear(m, n, k, t), (15, 3)))
    for n, k in mm_nk:
        for m in ms:
            cases.append(Case("small", f"mm {m}x{n}x{k}", _gemm(m, n, k, t), (15, 3)))
    for s in [16] if smoke else [64, 128, 256]:
        cases.append(Case("small", f"Linear {s}^3", _linear(s, s, s, t), (15, 3)))
        cases.append(Case("small", f"mm {s}^3", _gemm(s, s, s, t), (15, 3)))
    tile_shapes = [(8, 24, 40)] if smoke else [(32, 3072, 768), (1024, 3072, 768), (256, 256, 256)]
    for m, n, k in tile_shapes:
        cases.append(Case("tile", f"Linear {m}x{n}x{k} +leaky*gate", _tile(m, n, k, True), (15, 3)))
        cases.append(Case("tile", f"mm {m}x{n}x{k} +z/2+y^2", _tile(m, n, k, False), (15, 3)))
    layers = ([("3x3 8->16 @10", 8, 10, 16, 3, 1, 1)] if smoke else
              [("3x3 64->64 @56", 64, 56, 64, 3, 1, 1), ("1x1 64->256 @56", 64, 56, 256, 1, 1, 0),
               ("3x3 256->256 @14", 256, 14, 256, 3, 1, 1),
               ("7x7/2 3->64 @224", 3, 224, 64, 7, 2, 3)])
    for batch in [1, 2] if smoke else [1, 32]:
        for label, c, hw, oc, kernel, stride, pad in layers:
            for fused in (False, True):
                name = f"conv b{batch} {label}" + (" +b+res+relu" if fused else "")
                cases.append(Case("conv", name, _conv(batch, c, hw, oc, kernel, stride, pad, fused),
                                  (4, 1) if batch >= 32 else (15, 2)))
    # Convolution backward: resnet's layers at batch 8 (a training batch), each gradient alone.
    backward = ([("3x3 8->16 @10", 8, 10, 16, 3, 1, 1, "input"), ("3x3/2 8->16 @10", 8, 10, 16, 3, 2, 1, "weight")]
                if smoke else
                [(label, *geometry, grad)
                 for label, *geometry in [("3x3 64->64 @56", 64, 56, 64, 3, 1, 1),
                                          ("3x3 256->256 @14", 256, 14, 256, 3, 1, 1),
                                          ("1x1 256->64 @56", 256, 56, 64, 1, 1, 0),
                                          ("1x1/2 64->128 @56", 64, 56, 128, 1, 2, 0)]
                 for grad in ("input", "weight")]
                + [("3x3/2 64->128 @56", 64, 56, 128, 3, 2, 1, grad) for grad in ("input", "weight")]
                + [("7x7/2 3->64 @224", 3, 224, 64, 7, 2, 3, "weight")])
    batch = 2 if smoke else 8
    for label, c, hw, oc, kernel, stride, pad, grad in backward:
        name = f"conv_bwd b{batch} {label} d{'x' if grad == 'input' else 'w'}"
        cases.append(Case("conv_bwd", name,
                          _conv_backward(batch, c, hw, oc, kernel, stride, pad, grad, t), (7, 1)))
    n = 64 if smoke else 2048
    amx_cases = [Case("amx", f"bf16 mm {n}^3", _amx(n, t), (10, 2), peak="amx")]
    # Frozen bf16 models (stock and ours with freezing): ours runs Linear layers of up to 256
    # rows on AMX (runtime/matmul_bf16_step.h), over that and the stock's on oneDNN.
    for m, n_out, k in [(8, 24, 40)] if smoke else [(32, 768, 768), (128, 3072, 768),
                                                    (256, 768, 3072)]:
        amx_cases.append(Case("amx", f"bf16 Linear {m}x{n_out}x{k} frozen",
                              _bf16_linear(m, n_out, k), (15, 3), peak="amx", freezing=True))
    for batch, seq in [] if smoke else [(1, 32), (1, 128)]:
        amx_cases.append(Case("amx", f"bf16 encoder 4L d768 b{batch}x{seq} frozen",
                              _bf16_encoder(batch, seq), (9, 2), peak="amx", freezing=True))
    for amx in amx_cases:
        amx.skipped = None if amx_usable else f"no usable AMX bf16 on this CPU ({amx_why})"
    cases.extend(amx_cases)
    for batch, seq, causal in [(2, 16, False)] if smoke else [(8, 128, False), (8, 128, True),
                                                                (1, 1024, False)]:
        head_dim = 8 if smoke else 64
        name = f"sdpa b{batch}x{seq} h12 d{head_dim}{' causal' if causal else ''}"
        cases.append(Case("attention", name, _attention(batch, seq, 12, head_dim, causal), (11, 2),
                          ours_off=True))
    for batch, seq, causal in [(2, 16, False)] if smoke else [(8, 128, False), (8, 128, True),
                                                                (2, 512, False)]:
        head_dim = 8 if smoke else 64
        name = f"sdpa backward b{batch}x{seq} h12 d{head_dim}{' causal' if causal else ''}"
        cases.append(Case("attention", name, _attention_backward(batch, seq, 12, head_dim, causal),
                          (9, 2), ours_off=True))
    if smoke:
        cases.append(Case("models", "resnet18 b1 32^2", _resnet18(1, 32), (2, 1), ours_off=True))
        cases.append(Case("models", "encoder 1L d32 b2x8", bert_encoder(2, 8, 32, 2, 64, 1),
                          (2, 1), ours_off=True))
    else:
        cases.append(Case("models", "resnet18 b8 224^2", _resnet18(8, 224), (5, 1), ours_off=True))
        cases.append(Case("models", "encoder 4L d768 b8x128",
                          bert_encoder(8, 128, 768, 12, 3072, 4), (5, 1), ours_off=True))
        # One sequence: 128-row Linear layers, where reading the weights is most of the cost
        # (matrix/gemm_swapped.h).
        cases.append(Case("models", "encoder 4L d768 b1x128",
                          bert_encoder(1, 128, 768, 12, 3072, 4), (15, 2), ours_off=True))
    return [c for c in cases if c.group in args.groups]
