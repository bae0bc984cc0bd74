"""Where a step's time goes: `python -m inductor_cpp.bench suite --breakdown`.

After the timed rounds, each variant runs a few more steps under torch.profiler (CPU, and CUDA
on the GPU; shapes recorded). Every piece of time is put into one category:

  generated   our generated kernels (ranges `inductor_cpp::kernel<N> (<ops>)`), stock Inductor's
              Triton kernels (`triton_*`; on the CPU its `cpp_fused_*` kernels, or, when they
              have no range of their own, the self time of its `## Call CompiledFxGraph` range,
              which then includes that wrapper's Python)
  gemm / conv / attention
              library calls: our `inductor_cpp::matrix::<op>` ranges by op, and ATen's matrix
              ops (mm, addmm, bmm, linear, convolution and its backward, scaled-dot-product
              attention and its kernels) wherever they run, for every variant
  aten        every other ATen op (in a compiled graph: its ATen fallbacks; outside: autograd's
              and the optimizer's ops, which every variant runs alike)
  other       device time of no category above (memcpy, memset, kernels outside any range)

On CUDA the categories are device (kernel) time: each kernel belongs to the CPU range that
launched it (torch.profiler links them through CUPTI's correlation id: FunctionEvent.kernels)
and through that range's parents to a category. `busy` is the union of all device intervals,
and host = median step (the timed rounds, no profiler) - busy: launch preparation, allocation,
Python, the autograd engine, synchronisation gaps. On the CPU there is no device: the categories
are the CPU self time of those ranges (all threads' ranges; an OpenMP region counts once, on
the thread that opened it), busy is their sum, and host is the rest of the step.

Per variant also: `cpu_ms` (the CPU self time per category, on CUDA too: what launching costs),
and the kernels by time (JSON: all of them; printed: the top 10; the label: our range name, a Triton or CUDA kernel name, or an ATen
op with its input shapes) with calls and ms per step and a rate: GB/s for our generated kernels
(bytes = every parameter's span, from the compiled graphs' kernel info, read once or written
once) and TFLOP/s for gemm / conv rows (FLOPs from the ATen ops' shapes: 2·M·N·K; a
convolution's 2·outputs·(C/groups)·kh·kw, per computed gradient in its backward). Our CPU matrix
kernels run no ATen op, so our CPU gemm / conv rows have no rate.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from . import kernels

CATEGORIES = ("generated", "gemm", "conv", "attention", "aten", "other")
GEMM_OPS = {"mm", "addmm", "bmm", "baddbmm", "_addmm_activation", "linear", "matmul",
            "_scaled_mm", "addbmm"}
CONV_OP = re.compile(r"(^|_)conv(olution|\d|_|$)")
OURS_PREFIX, MATRIX_PREFIX = "inductor_cpp::", "inductor_cpp::matrix::"
STOCK_PREFIXES = ("triton_", "cpp_fused", "## Call CompiledFxGraph")


def library_kind(op: str) -> str | None:
    """gemm / conv / attention for a matrix op name ("aten::addmm", "conv2d_backward", ...)."""
    op = op.removeprefix("aten::").split(".")[0]
    if op in GEMM_OPS:
        return "gemm"
    if CONV_OP.search(op):
        return "conv"
    return "attention" if "attention" in op else None


@dataclass
class Op:
    """One CPU range of the profile (a torch.profiler FunctionEvent, or a test's stand-in)."""

    name: str
    self_us: float
    parent: Op | None = None
    kernels: list[tuple[str, float]] = field(default_factory=list)  # (name, device us)
    shapes: list = field(default_factory=list)
    concrete: list = field(default_factory=list)

    def chain(self) -> Iterable[Op]:
        op: Op | None = self
        while op is not None:
            yield op
            op = op.parent


def _shape_label(op: Op) -> str:
    shapes = [s for s in op.shapes if s]
    return f"{op.name} {shapes}" if shapes else op.name


def classify(op: Op, kernel: str | None = None) -> tuple[str, str] | None:
    """(category, label) of `op`'s self time (kernel None) or of a device kernel it launched;
    None: host time (a range that is no computation: Python, autograd's engine, wrappers)."""
    library = None
    for o in op.chain():
        if o.name.startswith(MATRIX_PREFIX):
            return library_kind(o.name[len(MATRIX_PREFIX):].split(" ")[0]) or "other", o.name
        if o.name.startswith(OURS_PREFIX):
            return "generated", o.name
        if o.name.startswith("aten::") and library_kind(o.name):
            library = o  # the outermost one: aten::linear over aten::addmm
    if library is not None:
        return library_kind(library.name), _shape_label(library)
    if kernel is not None:
        if kernel.startswith("triton"):
            return "generated", kernel
        if kernel.startswith(("Memcpy", "Memset")):
            return "other", kernel.split(" (")[0]
        return ("aten" if any(o.name.startswith("aten::") for o in op.chain()) else "other"), kernel
    if op.name.startswith(STOCK_PREFIXES):
        return "generated", op.name
    return ("aten", op.name) if op.name.startswith("aten::") else None


# ------------------------------------------------------------------------------------ flops

def _prod(xs: Iterable[int]) -> int:
    return math.prod(int(x) for x in xs)


def op_flops(op: Op) -> float | None:
    """FLOPs of one ATen matrix op from its recorded shapes (None: no formula or no shapes)."""
    name, s, c = op.name.removeprefix("aten::"), op.shapes, op.concrete
    try:
        if name in ("mm", "bmm"):
            return 2.0 * _prod(s[0]) * s[1][-1]
        if name in ("addmm", "_addmm_activation", "baddbmm"):
            return 2.0 * _prod(s[1]) * s[2][-1]
        if name == "convolution":
            x, w, (stride, padding, dilation, transposed) = s[0], s[1], c[3:7]
            if transposed:
                return None
            spatial = [(x[2 + i] + 2 * padding[i] - dilation[i] * (w[2 + i] - 1) - 1)
                       // stride[i] + 1 for i in range(len(w) - 2)]
            return 2.0 * x[0] * w[0] * _prod(spatial) * _prod(w[1:])  # w[1] = C / groups
        if name == "convolution_backward":
            grads = sum(1 for m in c[10][:2] if m)
            return 2.0 * _prod(s[0]) * _prod(s[2][1:]) * grads
    except (IndexError, TypeError, ValueError):
        return None
    return None


# ------------------------------------------------------------------------------ kernel bytes

def _range_name(kernel: dict[str, Any], labels: list[str]) -> str:
    """runtime/bound_step.cpp profile_name_of, for a generated kernel."""
    ops: list[str] = []
    for n in kernel["graph_nodes"]:
        if not 0 <= n < len(labels) or "::" not in labels[n]:
            continue
        rest = labels[n][labels[n].index("::") + 2:]
        op = re.split(r"[. (]", rest, maxsplit=1)[0]
        if op not in ("view", "permute", "_unsafe_view", "expand") and op not in ", ".join(ops):
            ops.append(op)
    return OURS_PREFIX + kernel["name"] + (f" ({', '.join(ops)})" if ops else "")


def kernel_bytes(graphs: Iterable[Any]) -> dict[str, int | None]:
    """Our generated kernels' range names -> bytes one call moves (None where two graphs have
    a kernel of the same range name and different bytes)."""
    out: dict[str, int | None] = {}
    for g in graphs:
        info = g.debug_info()
        labels = json.loads(info.get("labels") or "[]")
        for k in json.loads(info.get("kernels") or "[]"):
            name, moved = _range_name(k, labels), sum(kernels.nbytes(p) for p in k["params"])
            out[name] = moved if out.get(name, moved) == moved else None
    return out


# ---------------------------------------------------------------------------------- profile

def ops_from_profile(prof: Any) -> tuple[list[Op], list[tuple[float, float]]]:
    """The CPU ranges (parents linked) and the device kernels' intervals (us) of a profile."""
    from torch.autograd import DeviceType

    ops: dict[int, Op] = {}
    events = [e for e in prof.events() if e.device_type == DeviceType.CPU]
    # Device kernels and copies only: a user annotation on the device timeline (stock
    # Inductor's "## Call CompiledFxGraph ..." range) spans kernels and would count them twice.
    intervals = [(e.time_range.start, e.time_range.end) for e in prof.events()
                 if e.device_type != DeviceType.CPU and not getattr(e, "is_user_annotation", False)
                 and not e.name.startswith("## ")]
    for e in events:
        ops[id(e)] = Op(e.name, float(e.self_cpu_time_total),
                        kernels=[(k.name, float(k.duration)) for k in e.kernels],
                        shapes=list(e.input_shapes or []),
                        concrete=list(getattr(e, "concrete_inputs", None) or []))
    for e in events:
        if e.cpu_parent is not None and id(e.cpu_parent) in ops:
            ops[id(e)].parent = ops[id(e.cpu_parent)]
    return list(ops.values()), intervals


def union_us(intervals: list[tuple[float, float]]) -> float:
    total, end = 0.0, -math.inf
    for a, b in sorted(intervals):
        if b > end:
            total += b - max(a, end)
            end = b
    return total


def summarize(ops: list[Op], intervals: list[tuple[float, float]], steps: int,
              step_ms: float | None, profiled_ms: float, device: bool,
              bytes_of: dict[str, int | None], top: int) -> dict[str, Any]:
    """The breakdown of `steps` profiled steps, per step (see the module docstring)."""
    cpu = dict.fromkeys(CATEGORIES, 0.0)
    dev = dict.fromkeys(CATEGORIES, 0.0)
    rows: dict[str, dict[str, Any]] = {}

    def add(category: str, label: str, us: float, calls: int) -> None:
        r = rows.setdefault(label, {"label": label, "category": category, "calls": 0, "us": 0.0})
        r["calls"] += calls
        r["us"] += us

    for op in ops:
        c = classify(op)
        if c is not None:
            cpu[c[0]] += op.self_us
            if not device:
                add(c[0], c[1], op.self_us, 1 if c[1].startswith(op.name) else 0)
        for kname, us in op.kernels:
            kc = classify(op, kname)
            if kc is not None:
                dev[kc[0]] += us
                add(kc[0], kc[1], us, 1)
    flops: dict[str, float] = {}
    for op in ops:
        f = op_flops(op) if op.name.startswith("aten::") else None
        c = classify(op) if f else None
        if c is not None:
            flops[c[1]] = flops.get(c[1], 0.0) + f
    if device:  # kernels no CPU range launched (not linked by the profiler) count as other
        dev["other"] += max(0.0, sum(b - a for a, b in intervals) - sum(dev.values()))
    per_step = 1e-3 / steps  # us over all steps -> ms per step
    categories = {k: v * per_step for k, v in (dev if device else cpu).items()}
    busy = union_us(intervals) * per_step if device else sum(categories.values())
    table = []
    for r in sorted(rows.values(), key=lambda r: -r["us"]):
        seconds = r["us"] * 1e-6
        moved, work = bytes_of.get(r["label"]), flops.get(r["label"])
        table.append({"label": r["label"], "category": r["category"],
                      "calls": r["calls"] / steps, "ms": r["us"] * per_step,
                      "gb_s": moved * r["calls"] / seconds / 1e9
                      if moved and r["category"] == "generated" and seconds else None,
                      "tflop_s": work / seconds / 1e12 if work and seconds else None})
    return {"steps": steps, "device": "cuda" if device else "cpu", "categories_ms": categories,
            "cpu_ms": {k: v * per_step for k, v in cpu.items()}, "busy_ms": busy,
            "step_ms": step_ms, "profiled_step_ms": profiled_ms,
            "host_ms": None if step_ms is None else step_ms - busy,
            "profiled_host_ms": profiled_ms - busy, "top": table[:top], "kernels": table}


def profile_steps(step: Callable[[], Any], steps: int, device: str, step_ms: float | None,
                  bytes_of: dict[str, int | None], top: int = 10) -> dict[str, Any]:
    """Runs `steps` calls of `step` (already warm, synchronising on CUDA) under torch.profiler
    and summarizes them."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with profile(activities=activities, record_shapes=True) as prof:
        start = time.perf_counter()
        for _ in range(steps):
            step()
        profiled_ms = (time.perf_counter() - start) * 1e3 / steps
    ops, intervals = ops_from_profile(prof)
    return summarize(ops, intervals, steps, step_ms, profiled_ms, device == "cuda", bytes_of, top)


# ----------------------------------------------------------------------------------- report

def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def report(name: str, description: str, breakdowns: dict[str, dict[str, Any]]) -> str:
    """A model's breakdown table (one row per variant), then each variant's top kernels."""
    from .timing import format_table

    rows = [[variant, _ms(b["step_ms"]), *(_ms(b["categories_ms"][c]) for c in CATEGORIES),
             _ms(b["busy_ms"]), _ms(b["host_ms"])] for variant, b in breakdowns.items()]
    where = next(iter(breakdowns.values()))["device"]
    headers = ["variant", "step ms", *(f"{c} ms" for c in CATEGORIES),
               "busy ms" if where == "cuda" else "sum ms", "host ms"]
    lines = [f"{name}: {description} ({'device' if where == 'cuda' else 'CPU self'} time "
             f"per step; host = step - busy)", format_table(headers, rows)]
    for variant, b in breakdowns.items():
        top = [[r["category"], f"{r['calls']:.0f}", _ms(r["ms"]),
                "-" if r["gb_s"] is None else f"{r['gb_s']:.0f} GB/s",
                "-" if r["tflop_s"] is None else f"{r['tflop_s']:.3g} TFLOP/s",
                r["label"][:100]] for r in b["top"]]
        lines += [f"  {variant}: top {len(top)} by time",
                  "  " + format_table(["category", "calls", "ms", "GB/s", "TFLOP/s", "kernel"],
                                      top).replace("\n", "\n  ")]
    return "\n".join(lines)
