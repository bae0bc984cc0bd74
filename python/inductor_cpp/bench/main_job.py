"""The main job: `python -m inductor_cpp.bench main`.

Two workloads that together exercise inference and training through torch.compile, each run
eagerly, with backend="inductor_cpp" and (unless --no-stock) with stock Inductor:

  * resnet18 inference: torchvision resnet18 (random init, eval, no_grad) on a seeded batch;
  * MLP training step: a 3-layer MLP + cross-entropy, forward and backward compiled, the SGD
    (momentum) step eager; every variant starts from the same weights and sees the same data.

Compiled results are checked against eager (inductor_cpp's check decides the exit code; stock
Inductor's is reported only). Times are medians after warm-up at a fixed thread count, the
variants of a workload called round-robin so that load from elsewhere on the machine hits them
alike; the first (compiling) call is timed separately. Why: this is the job that tells whether
the backend is correct on real models and how it compares with eager and stock Inductor.
"""

from __future__ import annotations

import argparse
import copy
import gc
import itertools
import sys
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from . import timing
from .main_results import EAGER, OURS, STOCK, Check, Variant, Workload, print_report

HELP = "resnet18 inference + MLP training step: eager vs inductor_cpp vs stock Inductor"

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


# ------------------------------------------------------------------- compile bookkeeping

def _fresh_dynamo() -> None:
    """Forget earlier workloads' compilations (their graphs are freed)."""
    torch._dynamo.reset()
    gc.collect()


def _start_compile_stats() -> set[int]:
    """Zero the counters before one backend compiles; returns the ids of inductor_cpp graphs
    already alive (to tell the new ones apart afterwards)."""
    import inductor_cpp

    torch._dynamo.utils.counters.clear()
    inductor_cpp.reset_counters()
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
        graphs = [{"key": g.key, **g.counters()} for g in inductor_cpp.live_graphs()
                  if id(g) not in old_graphs]
        # largest first, for a stable order (the live set is unordered)
        stats["graphs"] = sorted(graphs, key=lambda g: (-g["ops_generated"] - g["ops_fallback"],
                                                        g["key"]))
        stats["eager_fallback_reasons"] = list(dynamo_backend.recent_eager_fallback_reasons)
        stats["cache_hits"] = stats["counters"]["cache_hits"]
        stats["cache_misses"] = stats["counters"]["cache_misses"]
    else:  # stock Inductor's FX graph cache
        stats["cache_hits"] = int(dyn["inductor"].get("fxgraph_cache_hit", 0))
        stats["cache_misses"] = int(dyn["inductor"].get("fxgraph_cache_miss", 0))
    return stats


def _compilers(args: argparse.Namespace) -> list[str]:
    return [OURS] if args.no_stock else [OURS, STOCK]


def _run_variant(variant: Variant, body: Callable[[], Any]) -> Any:
    """body(), recording an exception as the variant's error instead of aborting the job."""
    try:
        return body()
    except Exception as e:  # noqa: BLE001  (report and go on: the other variants still count)
        variant.error = f"{type(e).__name__}: {e}"
        log(f"{variant.name} failed: {variant.error}")
        return None


def _first_call(variant: Variant, backend: str, fn: Callable[[], Any]) -> Any:
    """Time the first (compiling) call of fn and record the compile statistics."""
    old = _start_compile_stats()
    variant.first_call_s, out = timing.time_once(fn)
    if backend != EAGER:
        variant.compile_stats = _compile_stats(backend, old)
    return out


class _VariantFailed(Exception):
    def __init__(self, name: str):
        super().__init__(name)
        self.name = name


def _guarded(name: str, fn: Callable[[], Any]) -> Callable[[], Any]:
    """fn, with any exception it raises tagged with the variant's name."""

    def call() -> Any:
        try:
            return fn()
        except Exception as e:
            raise _VariantFailed(name) from e

    return call


def _time_variants(work: Workload, fns: dict[str, Callable[[], Any]],
                   args: argparse.Namespace) -> None:
    """Steady-state timing of every variant that got through its first call, interleaved.
    A variant that fails here is recorded as failed and the others are timed again."""
    fns = dict(fns)
    while fns:
        try:
            timings = timing.time_interleaved({n: _guarded(n, f) for n, f in fns.items()},
                                              args.iters, args.warmup)
        except _VariantFailed as failed:
            cause = failed.__cause__
            work.variants[failed.name].error = f"{type(cause).__name__}: {cause}"
            log(f"{failed.name} failed while timed: {work.variants[failed.name].error}")
            del fns[failed.name]
            continue
        for name, t in timings.items():
            work.variants[name].timing = t
        return


def _tolerance_text(tol: dict[str, float]) -> str:
    return f"allclose rtol={tol['rtol']:g} atol={tol['atol']:g}"


# ------------------------------------------------------------------------ resnet18 inference

def _resnet_setup(args: argparse.Namespace) -> tuple[nn.Module, torch.Tensor]:
    import torchvision

    timing.seed_all(args.seed)
    model = torchvision.models.resnet18(weights=None).eval()
    x = torch.randn(args.batch, 3, 224, 224)
    return model, x


def _check_outputs(variant: Variant, out: torch.Tensor, ref: torch.Tensor, tol: dict) -> None:
    variant.checks.append(Check("max abs err", timing.max_abs_diff(out, ref),
                                _tolerance_text(tol), timing.all_close(out, ref, **tol)))


def run_resnet(args: argparse.Namespace) -> Workload:
    _fresh_dynamo()
    model, x = _resnet_setup(args)
    work = Workload("resnet18 inference",
                    f"torchvision resnet18, batch {args.batch}x3x224x224, eval, no_grad")
    with torch.no_grad():
        work.variants[EAGER] = Variant(EAGER)
        log("resnet18: eager")
        ref = _first_call(work.variants[EAGER], EAGER, lambda: model(x))
        fns: dict[str, Callable[[], Any]] = {EAGER: lambda: model(x)}
        for backend in _compilers(args):
            variant = work.variants[backend] = Variant(backend)
            fn = _run_variant(variant,
                              lambda b=backend, v=variant: _resnet_compile(model, x, ref, b, v))
            if fn is not None:
                fns[backend] = fn
        log(f"resnet18: timing {', '.join(fns)} interleaved")
        _time_variants(work, fns, args)
    return work


def _resnet_compile(model: nn.Module, x: torch.Tensor, ref: torch.Tensor, backend: str,
                    variant: Variant) -> Callable[[], Any]:
    log(f"resnet18: torch.compile(backend={backend!r}), first call")
    compiled = torch.compile(model, backend=backend)
    out = _first_call(variant, backend, lambda: compiled(x))
    _check_outputs(variant, out, ref, RESNET_TOL)
    return lambda: compiled(x)


# ------------------------------------------------------------------------ MLP training step

class MLPWithLoss(nn.Module):
    """Linear/ReLU stack whose forward returns the cross-entropy loss, so that torch.compile
    on it compiles forward and backward (loss included)."""

    def __init__(self, dims: tuple[int, ...]):
        super().__init__()
        layers: list[nn.Module] = []
        for i, (d_in, d_out) in enumerate(itertools.pairwise(dims)):
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


class Trainer:
    """One variant's training run: its own copy of the model and optimizer, the shared batches
    in order, one SGD step per step() call; the optimizer step is eager for every variant."""

    def __init__(self, base: nn.Module, backend: str, batches: list):
        self.model = copy.deepcopy(base)
        compiled = backend != EAGER
        self.forward = torch.compile(self.model, backend=backend) if compiled else self.model
        self.opt = torch.optim.SGD(self.model.parameters(), lr=MLP_LR, momentum=MLP_MOMENTUM)
        # cycled: should another variant fail while timed, the survivors are timed again
        self.batches = itertools.cycle(batches)
        self.losses: list[float] = []

    def step(self) -> None:
        x, y = next(self.batches)
        self.opt.zero_grad(set_to_none=True)
        loss = self.forward(x, y)
        loss.backward()
        self.opt.step()
        self.losses.append(float(loss.detach()))

    def params(self) -> list[torch.Tensor]:
        return [p.detach() for p in self.model.parameters()]


def _check_train(variant: Variant, run: Trainer, ref: Trainer) -> None:
    tol = _tolerance_text(TRAIN_TOL)
    losses, ref_losses = torch.tensor(run.losses), torch.tensor(ref.losses)
    params, ref_params = run.params(), ref.params()
    params_close = timing.all_close(params, ref_params, **TRAIN_TOL)
    variant.checks += [
        Check("loss curve max rel diff", timing.max_rel_diff(losses, ref_losses), tol,
              timing.all_close(losses, ref_losses, **TRAIN_TOL)),
        Check("final params max rel diff", timing.max_rel_diff(params, ref_params), tol,
              params_close),
        Check("final params max abs diff", timing.max_abs_diff(params, ref_params), tol,
              params_close),
    ]


def run_mlp(args: argparse.Namespace) -> Workload:
    _fresh_dynamo()
    steps = 1 + args.warmup + args.iters
    timing.seed_all(args.seed)
    base = MLPWithLoss(MLP_DIMS)
    batches = _mlp_batches(args, steps)
    work = Workload("MLP train step",
                    f"MLP {'-'.join(map(str, MLP_DIMS))} + ReLU, batch {args.mlp_batch}, "
                    f"cross-entropy, SGD(lr={MLP_LR:g}, momentum={MLP_MOMENTUM:g}), {steps} steps")
    trainers: dict[str, Trainer] = {}
    for backend in [EAGER, *_compilers(args)]:
        variant = work.variants[backend] = Variant(backend)
        log(f"MLP training: {backend}, first step")
        trainer = _run_variant(variant,
                               lambda b=backend, v=variant: _mlp_first_step(base, b, batches, v))
        if trainer is not None:
            trainers[backend] = trainer
    log(f"MLP training: timing {', '.join(trainers)} interleaved")
    _time_variants(work, {name: t.step for name, t in trainers.items()}, args)
    for name, trainer in trainers.items():
        if name != EAGER and EAGER in trainers and work.variants[name].error is None:
            _check_train(work.variants[name], trainer, trainers[EAGER])
    work.extra["losses"] = {name: t.losses for name, t in trainers.items()}
    return work


def _mlp_first_step(base: nn.Module, backend: str, batches: list, variant: Variant) -> Trainer:
    trainer = Trainer(base, backend, batches)
    _first_call(variant, backend, trainer.step)
    return trainer


# ------------------------------------------------------------------------------------ main

def _validate(args: argparse.Namespace) -> None:
    for name in ("iters", "batch", "mlp_batch"):
        if getattr(args, name) < 1:
            raise SystemExit(f"--{name.replace('_', '-')} must be >= 1")
    if args.threads is not None and args.threads < 1:
        raise SystemExit("--threads must be >= 1")
    if args.warmup < 0:
        raise SystemExit("--warmup must be >= 0")


def run(args: argparse.Namespace) -> int:
    _validate(args)
    cold = timing.use_cold_caches("inductor_cpp_bench_") if args.cold_cache else None
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
