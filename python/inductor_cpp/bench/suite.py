"""The suite benchmark: `python -m inductor_cpp.bench suite`.

Micro workloads (micro.py's, cache size class) and models (resnet18 inference, an MLP training
step, a transformer encoder in inference and training; suite_workloads.py) under eager, stock
Inductor and inductor_cpp, on the CPU and, where present, CUDA, in one run. Per device it runs
fresh processes (suite_worker.py) sharing one new pair of cache directories:

  1. cold:  every variant, per workload: first call (a cold compile: empty caches), check
            against eager, then all variants timed interleaved (medians);
  2. warm:  one process per variant on the filled caches: first call (a warm start: what a
            user's second run pays) and peak memory (compile peak in the first call, run peak
            in the steps after it; docs/observability.md says how each is measured).

It prints a speed table (ratios vs eager and vs stock Inductor, correctness) and a compile /
memory table, writes everything as JSON and draws a PNG chart (suite_report.py). Exit status 1
when an inductor_cpp result is wrong or fails. `--quick` (tiny sizes, no stock Inductor) is
for tests; the default run takes about 10 minutes on a 2-core machine, most of it stock
Inductor's compiles.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import json
import sys
import tempfile
from typing import Any

import torch

from . import suite_breakdown, suite_report, timing
from .suite_workloads import ALL, INFER_MODELS, KNOWN, MICRO, TRAIN_MODELS

HELP = ("micro workloads + models (inference and training), eager vs stock Inductor vs "
        "inductor_cpp: speed, correctness, cold/warm compile, peak memory; JSON + PNG")

EAGER, OURS, STOCK = "eager", "inductor_cpp", "inductor"
DEFAULT_REPS = {"micro": (20, 3), "model": (10, 2), "train": (20, 3)}  # (iters, warmup)
MODES = {"infer": ALL, "train": TRAIN_MODELS, "models": INFER_MODELS, "all": ALL + TRAIN_MODELS}
BREAKDOWN_STEPS = {"quick": 2, "cpu": 3, "cuda": 5}  # profiled steps per variant
WORKER_TIMEOUT_S = 3600


def log(message: str) -> None:
    print(f"[suite] {message}", file=sys.stderr, flush=True)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mode", choices=list(MODES), default="infer",
                   help="infer: the micro workloads and small models (the suite as it was, two "
                        "small training rows included); train: the training models of issue 40 "
                        f"({','.join(TRAIN_MODELS)}); models: 16 inference models of issues "
                        f"41 and 51 ({','.join(INFER_MODELS)}); all: infer and train")
    p.add_argument("--only", default=None, metavar="NAME,NAME",
                   help=f"workloads to run (any mode's), of: {','.join(KNOWN)}")
    p.add_argument("--breakdown", action=argparse.BooleanOptionalAction, default=None,
                   help="per workload and variant, a few more steps under torch.profiler: time "
                        "in generated kernels / gemm / conv / attention / ATen / host, and the "
                        "top kernels (default: on with --mode train --device cuda)")
    p.add_argument("--autocast", choices=["bf16"], default=None,
                   help="training steps run forward + loss under torch.autocast(bfloat16)")
    p.add_argument("--no-warm", action="store_true",
                   help="skip the warm-start / peak-memory processes (one per variant)")
    p.add_argument("--device", choices=["cpu", "cuda", "all"], default="all",
                   help="all: the CPU, and CUDA when torch sees a GPU")
    p.add_argument("--quick", action="store_true",
                   help="tiny sizes and no stock Inductor (for tests and smoke runs)")
    p.add_argument("--compile-mode", default=None,
                   choices=["default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"],
                   help="torch.compile's mode for both backends (reduce-overhead: CUDA graphs)")
    p.add_argument("--no-stock", action="store_true", help="skip stock Inductor")
    p.add_argument("--threads", type=int, default=None,
                   help="torch intra-op threads (default: torch.get_num_threads())")
    p.add_argument("--iters", type=int, default=None,
                   help="timed rounds (default: micro 20, models 10)")
    p.add_argument("--warmup", type=int, default=None,
                   help="untimed rounds after the first call (default: micro 3, models 2); "
                        "also the steps of the run-peak memory measurement")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", metavar="PATH", default=None,
                   help="results as JSON (default: bench/results/suite-<host>-<threads>t.json)")
    p.add_argument("--png", metavar="PATH", default=None,
                   help="chart of speedups and compile times (default: the JSON path with .png; "
                        "'' for none)")


def _selected(args: argparse.Namespace) -> list[str]:
    if args.only is None:
        return list(MODES[args.mode])
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in KNOWN]
    if unknown or not names:
        raise SystemExit(f"--only: unknown workload(s) {unknown}; choose from "
                         f"{list(KNOWN)}")
    return names


def _devices(choice: str) -> list[str]:
    has_cuda = torch.cuda.is_available()
    if choice == "cuda" and not has_cuda:
        raise SystemExit("--device cuda: torch sees no GPU")
    if choice == "all":
        return ["cpu"] + (["cuda"] if has_cuda else [])
    return [choice]


def _reps(name: str, args: argparse.Namespace) -> tuple[int, int]:
    kind = "micro" if name in MICRO else "train" if name in TRAIN_MODELS else "model"
    iters, warmup = DEFAULT_REPS[kind]
    if args.quick:
        iters, warmup = 3, 1
    return (args.iters if args.iters is not None else iters,
            args.warmup if args.warmup is not None else warmup)


def _worker(phase: str, variants: list[str], names: list[str], device: str,
            args: argparse.Namespace, env: dict[str, str], scratch: str) -> dict[str, Any]:
    """Runs one worker process; its results (possibly partial), plus "error" if it failed."""
    out = os.path.join(scratch, f"{phase}-{'-'.join(variants)}-{device}.json")
    reps = {name: _reps(name, args) for name in names}
    command = [sys.executable, "-m", "inductor_cpp.bench.suite_worker", "--phase", phase,
               "--variants", ",".join(variants), "--workloads", ",".join(names),
               "--reps", json.dumps(reps), "--device", device, "--seed", str(args.seed),
               "--out", out]
    if args.quick:
        command.append("--quick")
    if args.threads is not None:
        command += ["--threads", str(args.threads)]
    if args.autocast:
        command += ["--autocast", args.autocast]
    if args.compile_mode:
        command += ["--compile-mode", args.compile_mode]
    if phase == "cold" and _breakdown(args, device):
        steps = BREAKDOWN_STEPS["quick" if args.quick else device]
        command += ["--breakdown", str(steps)]
    log(f"{device}: {phase} process for {', '.join(variants)} ({len(names)} workloads)")
    try:
        rc: Any = subprocess.run(command, env=env, timeout=WORKER_TIMEOUT_S).returncode
    except subprocess.TimeoutExpired:
        rc = "timeout"
    result: dict[str, Any] = {"workloads": {}}
    if os.path.exists(out):
        with open(out) as f:
            result = json.load(f)
    if rc != 0:
        result["error"] = f"{phase} process for {', '.join(variants)} exited with {rc}"
        log(f"{device}: {result['error']}")
    return result


def _breakdown(args: argparse.Namespace, device: str) -> bool:
    if args.breakdown is not None:
        return args.breakdown
    return args.mode == "train" and device == "cuda"


def run_device(device: str, names: list[str], variants: list[str],
               args: argparse.Namespace) -> dict[str, Any]:
    """The cold process, then one warm process per variant, on a fresh pair of caches."""
    caches = tempfile.mkdtemp(prefix=f"inductor_cpp_suite_{device}_")
    env = dict(os.environ, INDUCTOR_CPP_CACHE_DIR=os.path.join(caches, "inductor_cpp"),
               TORCHINDUCTOR_CACHE_DIR=os.path.join(caches, "torchinductor"))
    env.pop("INDUCTOR_CPP_DEBUG_DIR", None)
    try:
        cold = _worker("cold", variants, names, device, args, env, caches)
        errors = [cold.pop("error")] if "error" in cold else []
        for variant in [] if args.no_warm else variants:
            warm = _worker("warm", [variant], names, device, args, env, caches)
            if "error" in warm:
                errors.append(warm["error"])
            for name, w in warm.get("workloads", {}).items():
                if "skipped" in w:
                    continue
                entry = cold["workloads"].setdefault(name, {"variants": {}})
                entry["variants"].setdefault(variant, {})["warm"] = w
    finally:
        shutil.rmtree(caches, ignore_errors=True)
    return {"environment": cold.get("environment"), "workloads": cold["workloads"],
            "errors": errors}


def run(args: argparse.Namespace) -> int:
    names = _selected(args)
    variants = [EAGER, OURS] + ([] if args.no_stock or args.quick else [STOCK])
    threads = timing.set_threads(args.threads)
    info = timing.environment_info()
    results = {"environment": info, "config": vars(args), "variants": variants, "devices": {}}
    for device in _devices(args.device):
        results["devices"][device] = run_device(device, names, variants, args)
    ok = suite_report.ours_ok(results)
    results["ok"] = ok
    results["geomeans"] = suite_report.geomeans(results)
    print(suite_report.report(results, threads))
    for device, d in results["devices"].items():
        for name, w in d["workloads"].items():
            found = {v: r["breakdown"] for v, r in w.get("variants", {}).items() if "breakdown" in r}
            if found:
                print(f"\n[{device}] " + suite_breakdown.report(name, w["description"], found))
    print(f"\ninductor_cpp correctness: {'PASS' if ok else 'FAIL'}")
    if args.json:
        timing.write_json(args.json, results)
        print(f"results written to {args.json}")
    png = os.path.splitext(args.json)[0] + ".png" if args.png is None and args.json else args.png
    if png:
        try:
            suite_report.chart(results, png)
            print(f"chart written to {png}")
        except ImportError as e:
            print(f"no chart: {e}")
    return 0 if ok else 1
