"""The main job: `python -m inductor_cpp.bench main`.

Two workloads that together exercise inference and training through torch.compile, each run
eagerly, with backend="inductor_cpp" and (unless --no-stock) with stock Inductor:

  * resnet18 inference: torchvision resnet18 (random init, eval, no_grad) on a seeded batch;
  * MLP training step: a 3-layer MLP + cross-entropy, forward and backward compiled, the SGD
    (momentum) step eager; every variant starts from the same weights and sees the same data.

Compiled results are checked against eager (inductor_cpp's check decides the exit code; stock
Inductor's is reported only). Times are medians after warm-up at a fixed thread count; the
first (compiling) call is timed separately. Why: this is the job that tells whether the backend
is correct on real models and how it compares with eager and stock Inductor.
"""

from __future__ import annotations

import argparse
import copy
import gc
import os
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch.nn.functional as F
from torch import nn

from . import timing

HELP = "resnet18 inference + MLP training step: eager vs inductor_cpp vs stock Inductor"

OURS, STOCK, EAGER = "inductor_cpp", "inductor", "eager"

# Tolerances against eager. inductor_cpp runs ATen ops (after decompositions), so it should
# stay within these; a failure of OURS makes the exit code non-zero.
RESNET_TOL = {"rtol": 1e-3, "atol": 1e-3}
TRAIN_TOL = {"rtol": 1e-4, "atol": 1e-5}

MLP_DIMS = (512, 1024, 1024, 10)
MLP_LR, MLP_MOMENTUM = 0.01, 0.9


def log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------ arguments

def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--threads", type=int, default=None,
                   help="torch intra-op threads (default: torch.get_num_threads())")
    p.add_argument("--iters", type=int, default=10, help="timed iterations per variant")
    p.add_argument("--warmup", type=int, default=2,
                   help="untimed iterations after the first (compiling) call")
    p.add_argument("--batch", type=int, default=8, help="resnet18 batch size")
    p.add_argument("--mlp-batch", type=int, default=64, help="MLP training batch size")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-stock", action="store_true", help="skip stock Inductor (saves minutes)")
    p.add_argument("--cold-cache", action="store_true",
                   help="compile into fresh temporary caches (inductor_cpp and stock Inductor) "
                        "so first-call times are cold-compile times")
    p.add_argument("--json", metavar="PATH", default=None, help="write all results as JSON")


# -------------------------------------------------------------------------------- results

@dataclass
class Check:
    """One comparison against eager."""

    metric: str
    value: float
    tolerance: str
    ok: bool


@dataclass
class Variant:
    """One way of running a workload (eager or one compiler)."""

    name: str
    first_call_s: float | None = None
    timing: timing.Timing | None = None
    checks: list[Check] = field(default_factory=list)
    error: str | None = None
    compile_stats: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None and all(c.ok for c in self.checks)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "first_call_s": self.first_call_s, "timing": self.timing,
                "checks": [c.__dict__ for c in self.checks], "error": self.error,
                "ok": self.ok, "compile_stats": self.compile_stats}


@dataclass
class Workload:
    name: str
    description: str
    variants: dict[str, Variant] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description,
                "variants": {k: v.to_dict() for k, v in self.variants.items()}, **self.extra}


# ------------------------------------------------------------------- compile bookkeeping

def _fresh_compile_state() -> set[int]:
    """Forget earlier compilations so each backend compiles from scratch; returns the ids of
    inductor_cpp graphs still alive (to tell the new ones apart afterwards)."""
    import inductor_cpp

    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    inductor_cpp.reset_counters()
    gc.collect()
    return {id(g) for g in inductor_cpp.live_graphs()}


def _compile_stats(backend: str, old_graphs: set[int]) -> dict[str, Any]:
    """Dynamo graph/break counts, and for inductor_cpp its counters and per-graph op counts."""
    import inductor_cpp
    from inductor_cpp import dynamo_backend

    dyn = torch._dynamo.utils.counters
    stats: dict[str, Any] = {
        "dynamo_graphs": int(dyn["stats"].get("unique_graphs", 0)),
        "graph_breaks": int(sum(dyn["graph_break"].values())),
        "graph_break_reasons": sorted(dyn["graph_break"].keys()),
    }
    if backend == OURS:
        stats["counters"] = inductor_cpp.counters()
        stats["graphs"] = [{"key": g.key, **g.counters()} for g in inductor_cpp.live_graphs()
                           if id(g) not in old_graphs]
        stats["eager_fallback_reasons"] = list(dynamo_backend.eager_graph_fallbacks)
    return stats


def _compilers(args: argparse.Namespace) -> list[str]:
    return [OURS] if args.no_stock else [OURS, STOCK]


def _run_variant(name: str, body: Callable[[Variant], None]) -> Variant:
    """Run body(variant), recording an exception as the variant's error instead of aborting."""
    variant = Variant(name)
    try:
        body(variant)
    except Exception as e:  # report and go on: other variants still tell something
        variant.error = f"{type(e).__name__}: {e}"
        log(f"{name} failed: {variant.error}")
    return variant


# ------------------------------------------------------------------------ resnet18 inference

def _resnet_setup(args: argparse.Namespace) -> tuple[nn.Module, torch.Tensor]:
    import torchvision

    timing.seed_all(args.seed)
    model = torchvision.models.resnet18(weights=None).eval()
    x = torch.randn(args.batch, 3, 224, 224)
    return model, x


def _time_inference(fn: Callable[[], torch.Tensor], variant: Variant,
                    args: argparse.Namespace) -> torch.Tensor:
    variant.first_call_s, out = timing.time_once(fn)
    variant.timing = timing.time_median(fn, args.iters, args.warmup)
    return out


def _check_outputs(variant: Variant, out: torch.Tensor, ref: torch.Tensor, tol: dict) -> None:
    tol_text = f"allclose rtol={tol['rtol']:g} atol={tol['atol']:g}"
    variant.checks.append(Check("max abs err", timing.max_abs_diff(out, ref), tol_text,
                                timing.all_close(out, ref, **tol)))


def run_resnet(args: argparse.Namespace) -> Workload:
    model, x = _resnet_setup(args)
    work = Workload("resnet18 inference",
                    f"torchvision resnet18, batch {args.batch}x3x224x224, eval, no_grad")
    with torch.no_grad():
        ref: dict[str, torch.Tensor] = {}

        def eager(v: Variant) -> None:
            log("resnet18: eager")
            ref["out"] = _time_inference(lambda: model(x), v, args)

        work.variants[EAGER] = _run_variant(EAGER, eager)
        for backend in _compilers(args):
            work.variants[backend] = _run_variant(
                backend, lambda v, b=backend: _resnet_compiled(model, x, ref["out"], b, v, args))
    return work


def _resnet_compiled(model: nn.Module, x: torch.Tensor, ref: torch.Tensor, backend: str,
                     variant: Variant, args: argparse.Namespace) -> None:
    log(f"resnet18: torch.compile(backend={backend!r})")
    old = _fresh_compile_state()
    compiled = torch.compile(model, backend=backend)
    out = _time_inference(lambda: compiled(x), variant, args)
    _check_outputs(variant, out, ref, RESNET_TOL)
    variant.compile_stats = _compile_stats(backend, old)


# ------------------------------------------------------------------------ MLP training step

class MLPWithLoss(nn.Module):
    """Linear/ReLU stack whose forward returns the cross-entropy loss, so that torch.compile
    on it compiles forward and backward (loss included)."""

    def __init__(self, dims: tuple[int, ...]):
        super().__init__()
        layers: list[nn.Module] = []
        for i, (d_in, d_out) in enumerate(zip(dims[:-1], dims[1:])):
            layers.append(nn.Linear(d_in, d_out))
            if i < len(dims) - 2:
                layers.append(nn.ReLU())
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(self.net(x), y)


def _mlp_batches(args: argparse.Namespace, steps: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(args.seed + 1)
    return [(torch.randn(args.mlp_batch, MLP_DIMS[0], generator=g),
             torch.randint(0, MLP_DIMS[-1], (args.mlp_batch,), generator=g))
            for _ in range(steps)]


@dataclass
class TrainRun:
    losses: list[float]
    step_s: list[float]
    params: list[torch.Tensor]


def _train(model: nn.Module, forward: Callable, batches: list) -> TrainRun:
    """One SGD step per batch; the optimizer step is eager for every variant."""
    opt = torch.optim.SGD(model.parameters(), lr=MLP_LR, momentum=MLP_MOMENTUM)
    losses, step_s = [], []

    def step(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        opt.zero_grad(set_to_none=True)
        loss = forward(x, y)
        loss.backward()
        opt.step()
        return loss

    for x, y in batches:
        seconds, loss = timing.time_once(lambda: step(x, y))
        step_s.append(seconds)
        losses.append(float(loss.detach()))
    return TrainRun(losses, step_s, [p.detach().clone() for p in model.parameters()])


def _record_train(variant: Variant, run: TrainRun, args: argparse.Namespace) -> None:
    variant.first_call_s = run.step_s[0]
    variant.timing = timing.summarize(run.step_s[1 + args.warmup:])


def _check_train(variant: Variant, run: TrainRun, ref: TrainRun) -> None:
    tol_text = f"allclose rtol={TRAIN_TOL['rtol']:g} atol={TRAIN_TOL['atol']:g}"
    losses, ref_losses = torch.tensor(run.losses), torch.tensor(ref.losses)
    variant.checks.append(Check("loss curve max rel diff", timing.max_rel_diff(losses, ref_losses),
                                tol_text, timing.all_close(losses, ref_losses, **TRAIN_TOL)))
    variant.checks.append(Check("final params max rel diff",
                                timing.max_rel_diff(run.params, ref.params), tol_text,
                                timing.all_close(run.params, ref.params, **TRAIN_TOL)))
    variant.checks.append(Check("final params max abs diff",
                                timing.max_abs_diff(run.params, ref.params), tol_text,
                                timing.all_close(run.params, ref.params, **TRAIN_TOL)))


def run_mlp(args: argparse.Namespace) -> Workload:
    steps = 1 + args.warmup + args.iters
    timing.seed_all(args.seed)
    base = MLPWithLoss(MLP_DIMS)
    batches = _mlp_batches(args, steps)
    dims = "-".join(map(str, MLP_DIMS))
    work = Workload("MLP train step",
                    f"MLP {dims} + ReLU, batch {args.mlp_batch}, cross-entropy, "
                    f"SGD(lr={MLP_LR:g}, momentum={MLP_MOMENTUM:g}), {steps} steps")
    runs: dict[str, TrainRun] = {}

    def eager(v: Variant) -> None:
        log("MLP training: eager")
        model = copy.deepcopy(base)
        runs[EAGER] = _train(model, model, batches)
        _record_train(v, runs[EAGER], args)

    work.variants[EAGER] = _run_variant(EAGER, eager)
    for backend in _compilers(args):
        def compiled(v: Variant, b: str = backend) -> None:
            log(f"MLP training: torch.compile(backend={b!r})")
            old = _fresh_compile_state()
            model = copy.deepcopy(base)
            runs[b] = _train(model, torch.compile(model, backend=b), batches)
            _record_train(v, runs[b], args)
            _check_train(v, runs[b], runs[EAGER])
            v.compile_stats = _compile_stats(b, old)

        work.variants[backend] = _run_variant(backend, compiled)
    work.extra["losses"] = {name: run.losses for name, run in runs.items()}
    return work


# ------------------------------------------------------------------------------- reporting

def _speed_cell(work: Workload, name: str) -> str:
    v, eager = work.variants.get(name), work.variants.get(EAGER)
    if v is None:
        return "skipped"
    if v.timing is None:
        return "failed"
    ratio = timing.speedup(eager.timing.median_s, v.timing.median_s) if eager.timing else None
    return f"{timing.format_ms(v.timing.median_s)} ({timing.format_ratio(ratio)})"


def _first_call_cell(work: Workload, name: str) -> str:
    v = work.variants.get(name)
    return "skipped" if v is None else timing.format_s(v.first_call_s)


def _correct_cell(work: Workload) -> str:
    parts = []
    for name in (OURS, STOCK):
        v = work.variants.get(name)
        if v is not None:
            parts.append(f"{name}: {'yes' if v.ok else 'NO'}")
    return ", ".join(parts)


def summary_table(workloads: list[Workload]) -> str:
    headers = ["workload", "eager ms", "inductor_cpp ms (x vs eager)",
               "stock inductor ms (x vs eager)", "first-call s ours", "first-call s stock",
               "correct?"]
    rows = [[w.name, timing.format_ms(w.variants[EAGER].timing.median_s)
             if w.variants[EAGER].timing else "failed",
             _speed_cell(w, OURS), _speed_cell(w, STOCK),
             _first_call_cell(w, OURS), _first_call_cell(w, STOCK), _correct_cell(w)]
            for w in workloads]
    return timing.format_table(headers, rows)


def checks_table(workloads: list[Workload]) -> str:
    rows = []
    for w in workloads:
        for name, v in w.variants.items():
            if v.error:
                rows.append([w.name, name, "error", v.error[:80], "-", "NO"])
            for c in v.checks:
                rows.append([w.name, name, c.metric, f"{c.value:.3g}", c.tolerance,
                             "yes" if c.ok else "NO"])
    return timing.format_table(["workload", "backend", "check", "value", "tolerance", "ok"], rows)


def compile_table(workloads: list[Workload]) -> str:
    rows = []
    for w in workloads:
        for name, v in w.variants.items():
            s = v.compile_stats
            if not s:
                continue
            c = s.get("counters", {})
            graphs = s.get("graphs", [])
            ops = "; ".join(f"{g['ops_generated']}/{g['ops_fallback']} ({g['cache']})"
                            for g in graphs) or "-"
            rows.append([w.name, name, s["dynamo_graphs"], s["graph_breaks"],
                         c.get("graphs_compiled", "-"), ops, c.get("eager_graph_fallbacks", "-"),
                         f"{c['cache_hits']}/{c['cache_misses']}" if c else "-"])
    headers = ["workload", "backend", "dynamo graphs", "graph breaks", "graphs compiled",
               "ops generated/fallback per graph (cache)", "eager graph fallbacks",
               "cache hits/misses"]
    return timing.format_table(headers, rows)


def print_report(workloads: list[Workload], info: dict[str, Any], args: argparse.Namespace) -> None:
    print(f"\ninductor_cpp main job: torch {info['torch']}, {info['threads']} thread(s) "
          f"of {info['cpu_count']} CPU(s), {args.iters} timed iters after {args.warmup} warm-up "
          f"(median), cache: {'cold (temporary)' if args.cold_cache else 'user cache'}")
    print(f"load average (1 min) before the job: {info['load_average_1m']} "
          f"(well above 0: other work shares the cores and timings are noisy)\n")
    print(summary_table(workloads))
    print("\nCorrectness against eager:\n")
    print(checks_table(workloads))
    print("\nCompilation:\n")
    print(compile_table(workloads))
    for w in workloads:
        for name, v in w.variants.items():
            for reason in v.compile_stats.get("graph_break_reasons", []):
                print(f"  graph break ({w.name}, {name}): {reason}")
            for reason in v.compile_stats.get("eager_fallback_reasons", []):
                print(f"  eager fallback ({w.name}, {name}): {reason}")


# ------------------------------------------------------------------------------------ main

def _use_cold_caches() -> tempfile.TemporaryDirectory:
    tmp = tempfile.TemporaryDirectory(prefix="inductor_cpp_bench_")
    os.environ["INDUCTOR_CPP_CACHE_DIR"] = os.path.join(tmp.name, "inductor_cpp")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(tmp.name, "torchinductor")
    return tmp


def _validate(args: argparse.Namespace) -> None:
    for name in ("iters", "batch", "mlp_batch"):
        if getattr(args, name) < 1:
            raise SystemExit(f"--{name.replace('_', '-')} must be >= 1")
    if args.warmup < 0:
        raise SystemExit("--warmup must be >= 0")


def run(args: argparse.Namespace) -> int:
    _validate(args)
    cold = _use_cold_caches() if args.cold_cache else None
    timing.set_threads(args.threads)
    import inductor_cpp  # noqa: F401  (fail early if the package is broken)

    info = timing.environment_info()
    workloads = [run_resnet(args), run_mlp(args)]
    print_report(workloads, info, args)
    ok = all(w.variants[OURS].ok for w in workloads) and all(
        w.variants[EAGER].error is None for w in workloads)
    print(f"\ninductor_cpp correctness: {'PASS' if ok else 'FAIL'}")
    if args.json:
        timing.write_json(args.json, {"environment": info, "config": vars(args), "ok": ok,
                                      "workloads": [w.to_dict() for w in workloads]})
        print(f"results written to {args.json}")
    if cold is not None:
        cold.cleanup()
    return 0 if ok else 1
