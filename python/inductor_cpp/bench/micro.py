"""The CPU micro-benchmark: `python -m inductor_cpp.bench micro`.

The kernels code generation is judged on (docs/benchmarks.md, shared BENCHMARKS.md), float32,
each run side by side in one process: eager, stock torch.compile(backend="inductor") and
torch.compile(backend="inductor_cpp"):

  pointwise  gelu(x*1.5+.25)*sigmoid(x) - tanh(x)      (R*C elements, flat)
  softmax    softmax(x, -1)                             (R x C)
  layernorm  layer_norm(x, (C,), w, b)                  (R x C)
  sum1       x.sum(-1)                                  (R x C)
  sum0       x.sum(0)                                   (R x C)
  resnet18   torchvision resnet18 inference, random weights, eval, no_grad  (batch x 3 x 224 x 224)

in two size classes, "cache" (1024x4096 = 2^22 floats by default) and "dram" (16384x16384 = 2^28
floats = 1 GiB per tensor, past the last-level cache); resnet18 runs once ("model" class).
Named in --only, not run by default: `transpose` (x.t() + y, R x C; reads and writes disagree
on the fastest dim: the tiled schedule of docs/passes.md) and single transcendental ops compiled alone (erf, exp, gelu,
gelu_tanh, sigmoid, tanh, silu; R*C elements, flat), the code generator's math against eager's
(docs/codegen/cpu.md "Math"), e.g. `--only erf,exp,gelu --size cache --cache-shape 384x1024`.
Per workload: a correctness check of each compiled variant against eager (rtol 1e-4,
atol 1e-5 like torch.testing.assert_close; 1e-3 for resnet18, as in the main job), first-call
time (compile + one run), median time over interleaved runs after warm-up, achieved GB/s
((bytes of inputs read once + outputs written once) / median) and its share of the machine's
copy bandwidth for the same size class (machine.py), GFLOP/s vs the matmul rate for resnet18,
and ratios vs eager and vs stock Inductor. A failing variant is reported, never fatal; the exit
code is 1 when an inductor_cpp variant is wrong or fails. The checks are in micro_checks.py, the
results and their report in micro_results.py, the machine's limits in machine.py.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F

from . import machine, timing
from .micro_checks import compare, fp64_verdict, reference64
from .micro_results import EAGER, OURS, STOCK, Case, Variant, geomeans, print_report

HELP = "pointwise/softmax/layernorm/sum/resnet18 micro suite: eager vs inductor_cpp vs Inductor"

SIZE_CLASSES = ("cache", "dram")
MODEL_CLASS = "model"
DEFAULT_SHAPES = {"cache": "1024x4096", "dram": "16384x16384"}
# (iters, warmup) per class when --iters / --warmup are not given: DRAM calls take ~1 s each
DEFAULT_REPS = {"cache": (20, 3), "dram": (10, 1), MODEL_CLASS: (10, 2)}
TIGHT_TOL = {"rtol": 1e-4, "atol": 1e-5}
RESNET_TOL = {"rtol": 1e-3, "atol": 1e-3}  # convolutions reassociate (same as the main job)


def log(message: str) -> None:
    print(f"[micro] {message}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------ workloads

def pointwise_chain(x):
    return F.gelu(x * 1.5 + 0.25) * torch.sigmoid(x) - torch.tanh(x)


def softmax_last(x):
    return torch.softmax(x, -1)


def layer_norm(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b)


def sum_last(x):
    return x.sum(-1)


def sum_first(x):
    return x.sum(0)


def transpose_add(x, y):
    return x.t() + y


@dataclass(frozen=True)
class Spec:
    """One workload: make(shape, args) returns (callable, inputs); memory-bound workloads are
    rated in GB/s, the model in GFLOP/s."""

    name: str
    label: str
    make: Callable[[tuple[int, int], argparse.Namespace], tuple[Callable, tuple]]
    memory_bound: bool = True
    tol: dict = field(default_factory=lambda: dict(TIGHT_TOL))
    in_default: bool = True  # False: runs only when --only names it


def _flat(fn):
    return lambda shape, args: (fn, (torch.randn(shape[0] * shape[1]),))


def _matrix(fn):
    return lambda shape, args: (fn, (torch.randn(*shape),))


def _transpose_add(shape, args):
    return transpose_add, (torch.randn(shape[1], shape[0]), torch.randn(*shape))


def _layer_norm(shape, args):
    return layer_norm, (torch.randn(*shape), torch.randn(shape[1]), torch.randn(shape[1]))


def _resnet18(shape, args):
    import torchvision

    model = torchvision.models.resnet18(weights=None).eval()
    return model, (torch.randn(args.batch, 3, args.image_size, args.image_size),)


def _python_function(op: Callable) -> Callable:
    """op called from a Python function: torch.compile of a builtin such as torch.erf has no
    frame for Dynamo to trace and would run eagerly."""
    def apply(x):
        return op(x)
    return apply


UNARY_OPS: dict[str, Callable] = {
    "erf": torch.erf, "exp": torch.exp, "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"), "sigmoid": torch.sigmoid,
    "tanh": torch.tanh, "silu": F.silu,
}

WORKLOADS: dict[str, Spec] = {s.name: s for s in [
    Spec("pointwise", "gelu(x*1.5+.25)*sigmoid(x)-tanh(x)", _flat(pointwise_chain)),
    Spec("softmax", "softmax(x, -1)", _matrix(softmax_last)),
    Spec("layernorm", "layer_norm(x, (C,), w, b)", _layer_norm),
    Spec("sum1", "x.sum(-1)", _matrix(sum_last)),
    Spec("sum0", "x.sum(0)", _matrix(sum_first)),
    Spec("resnet18", "resnet18 inference", _resnet18, memory_bound=False, tol=dict(RESNET_TOL)),
    Spec("transpose", "x.t() + y", _transpose_add, in_default=False),
] + [Spec(name, f"{name}(x)", _flat(_python_function(op)), in_default=False)
     for name, op in UNARY_OPS.items()]}


# -------------------------------------------------------------------------------- running

def _ours_graphs() -> set[int]:
    import inductor_cpp

    return {id(g) for g in inductor_cpp.live_graphs()}


def _ours_ops(before: set[int]) -> dict[str, int]:
    """Ops generated vs falling back to ATen in the graphs compiled since `before`."""
    import inductor_cpp

    graphs = [g.counters() for g in inductor_cpp.live_graphs() if id(g) not in before]
    return {"graphs": len(graphs),
            "ops_generated": sum(int(c.get("ops_generated", 0)) for c in graphs),
            "ops_fallback": sum(int(c.get("ops_fallback", 0)) for c in graphs)}


def _first_call(variant: Variant, fn: Callable, inputs: tuple) -> Any:
    """The first (compiling) call, timed; an exception is recorded, not raised."""
    before = _ours_graphs() if variant.name == OURS else set()
    try:
        variant.first_call_s, out = timing.time_once(lambda: fn(*inputs))
    except Exception as e:  # noqa: BLE001  (report and go on: the other variants still count)
        variant.error = f"{type(e).__name__}: {e}"
        log(f"{variant.name} failed: {variant.error[:200]}")
        return None
    if variant.name == OURS:
        variant.ops = _ours_ops(before)
    return out


def _time_interleaved(case: Case, fns: dict[str, Callable[[], Any]], iters: int,
                      warmup: int) -> None:
    """Round-robin over the variants (warm-up rounds, then timed rounds) so load from elsewhere
    hits them alike; a variant that raises is recorded as failed and dropped."""

    def failed(name: str, e: Exception) -> None:
        case.variants[name].error = f"{type(e).__name__}: {e}"
        log(f"{name} failed while timed: {case.variants[name].error[:200]}")

    for name, t in timing.time_rounds(fns, iters, warmup, failed).items():
        case.variants[name].timing = t


def _nbytes(tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


def _count_flops(fn: Callable, inputs: tuple) -> int | None:
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter:
        fn(*inputs)
    return counter.get_total_flops() or None


@torch.no_grad()  # inference: no autograd graph for resnet18's parameters
def run_case(spec: Spec, size_class: str, shape: tuple[int, int], args: argparse.Namespace,
             reps: tuple[int, int]) -> Case:
    torch._dynamo.reset()
    gc.collect()
    timing.seed_all(args.seed)
    fn, inputs = spec.make(shape, args)
    shape_text = "x".join(map(str, inputs[0].shape))
    case = Case(spec.name, size_class, shape_text, spec.label)
    eager = case.variants[EAGER] = Variant(EAGER)
    log(f"{spec.name} [{size_class} {shape_text}]: eager")
    ref = _first_call(eager, fn, inputs)
    if ref is None:
        return case
    if spec.memory_bound:
        case.bytes_moved = _nbytes(inputs) + _nbytes([ref])
    else:
        case.flops = _count_flops(fn, inputs)
    fns: dict[str, Callable[[], Any]] = {EAGER: lambda: fn(*inputs)}
    ref64 = None  # computed only if some output misses the tolerance
    for backend in _compilers(args):
        variant = case.variants[backend] = Variant(backend)
        log(f"{spec.name} [{size_class}]: torch.compile(backend={backend!r}), first call")
        compiled = torch.compile(fn, backend=backend, dynamic=False)
        out = _first_call(variant, compiled, inputs)
        if out is None:
            continue
        variant.check = compare(out, ref, **spec.tol)
        if not variant.check["ok"] and "error" not in variant.check:
            if ref64 is None:
                log(f"{spec.name} [{size_class}]: {backend} missed the tolerance; "
                    "comparing errors against float64")
                ref64 = reference64(fn, inputs)
            fp64_verdict(variant.check, out, ref, ref64, spec.tol["atol"])
        del out
        fns[backend] = lambda c=compiled: c(*inputs)
    del ref, ref64  # DRAM class: free them before timing
    iters, warmup = reps
    log(f"{spec.name} [{size_class}]: timing {', '.join(fns)} interleaved "
        f"({warmup} warm-up + {iters} timed rounds)")
    _time_interleaved(case, fns, iters, warmup)
    return case


def _compilers(args: argparse.Namespace) -> list[str]:
    return [OURS] if args.no_stock else [OURS, STOCK]


def _too_big_reason(shape: tuple[int, int]) -> str | None:
    """Why a size would not fit (None if it does): the eager pointwise chain holds a few
    temporaries, the outputs of three variants and the check add more, ~8 tensors in all."""
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None
    need = 8 * shape[0] * shape[1] * 4
    if need <= physical:
        return None
    return f"needs ~{need / 2**30:.1f} GiB, machine has {physical / 2**30:.1f} GiB"


# ------------------------------------------------------------------------------ arguments

def add_arguments(p: argparse.ArgumentParser) -> None:
    timing.add_timing_arguments(
        p, None, None,
        "timed rounds (default per class: " + ", ".join(
            f"{k} {v[0]}" for k, v in DEFAULT_REPS.items()) + ")",
        "untimed rounds after the first call (default per class: " + ", ".join(
            f"{k} {v[1]}" for k, v in DEFAULT_REPS.items()) + ")")
    p.add_argument("--size", choices=["cache", "dram", "both"], default="both",
                   help="size classes to run (resnet18 runs once, whichever is chosen)")
    p.add_argument("--only", default=None, metavar="NAME,NAME",
                   help=f"workloads to run, of: {','.join(WORKLOADS)} (default: all but the "
                        f"single ops {','.join(UNARY_OPS)})")
    p.add_argument("--no-stock", action="store_true", help="skip stock Inductor (saves minutes)")
    p.add_argument("--cache-shape", default=DEFAULT_SHAPES["cache"], metavar="RxC",
                   help="2-D shape of the cache class (pointwise uses R*C elements)")
    p.add_argument("--dram-shape", default=DEFAULT_SHAPES["dram"], metavar="RxC",
                   help="2-D shape of the DRAM class (pointwise uses R*C elements)")
    p.add_argument("--batch", type=int, default=8, help="resnet18 batch size")
    p.add_argument("--image-size", type=int, default=224, help="resnet18 input height/width")
    p.add_argument("--cold-cache", action="store_true",
                   help="compile into fresh temporary caches so first calls are cold compiles")
    machine.add_probe_arguments(p)
    p.add_argument("--json", metavar="PATH", default=None, help="write all results as JSON")


def parse_shape(text: str) -> tuple[int, int]:
    try:
        rows, cols = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise SystemExit(f"bad shape {text!r}: expected RxC, e.g. 1024x4096") from None
    if rows < 1 or cols < 1:
        raise SystemExit(f"bad shape {text!r}: sizes must be >= 1")
    return rows, cols


def _selected(args: argparse.Namespace) -> list[Spec]:
    if args.only is None:
        return [s for s in WORKLOADS.values() if s.in_default]
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown or not names:
        raise SystemExit(f"--only: unknown workload(s) {unknown}; choose from {list(WORKLOADS)}")
    return [WORKLOADS[n] for n in names]


def _reps(size_class: str, args: argparse.Namespace) -> tuple[int, int]:
    iters, warmup = DEFAULT_REPS[size_class]
    return (iters if args.iters is None else args.iters,
            warmup if args.warmup is None else args.warmup)


def _validate(args: argparse.Namespace) -> None:
    if args.iters is not None and args.iters < 1:
        raise SystemExit("--iters must be >= 1")
    if args.warmup is not None and args.warmup < 0:
        raise SystemExit("--warmup must be >= 0")
    if args.threads is not None and args.threads < 1:
        raise SystemExit("--threads must be >= 1")
    if args.batch < 1 or args.image_size < 32:
        raise SystemExit("--batch must be >= 1 and --image-size >= 32")


# ------------------------------------------------------------------------------------ main

def run_all(args: argparse.Namespace) -> list[Case]:
    specs = _selected(args)
    classes = list(SIZE_CLASSES) if args.size == "both" else [args.size]
    shapes = {"cache": parse_shape(args.cache_shape), "dram": parse_shape(args.dram_shape)}
    cases = []
    for size_class in classes:
        too_big = _too_big_reason(shapes[size_class])
        for spec in (s for s in specs if s.memory_bound):
            if too_big:
                cases.append(Case(spec.name, size_class, "x".join(map(str, shapes[size_class])),
                                  spec.label, skipped=too_big))
                continue
            cases.append(run_case(spec, size_class, shapes[size_class], args,
                                  _reps(size_class, args)))
    for spec in (s for s in specs if not s.memory_bound):
        cases.append(run_case(spec, MODEL_CLASS, (0, 0), args, _reps(MODEL_CLASS, args)))
    torch._dynamo.reset()
    return cases


def run(args: argparse.Namespace) -> int:
    _validate(args)
    _selected(args)  # reject a bad --only before the (slow) machine probe
    cold = timing.use_cold_caches("inductor_cpp_micro_") if args.cold_cache else None
    threads = timing.set_threads(args.threads)
    import inductor_cpp  # noqa: F401  (fail early if the package is broken)

    info = timing.environment_info()
    limits = machine.machine_limits(machine.probe_config(args, threads), args.remeasure, log=log)
    cases = run_all(args)
    print_report(cases, info, limits, {k: _reps(k, args) for k in DEFAULT_REPS},
                 args.cold_cache)
    ours = [c.variants[OURS] for c in cases if OURS in c.variants]
    ok = all(v.ok for v in ours) and all(c.variants[EAGER].ok for c in cases
                                         if EAGER in c.variants)
    print(f"\ninductor_cpp correctness: {'PASS' if ok else 'FAIL'}")
    if args.json:
        timing.write_json(args.json, {"environment": info, "config": vars(args),
                                      "machine": limits.to_dict(), "ok": ok,
                                      "geomeans": geomeans(cases),
                                      "cases": [c.to_dict() for c in cases]})
        print(f"results written to {args.json}")
    if cold is not None:
        cold.cleanup()
    return 0 if ok else 1
