"""One process of a suite run (suite.py starts these; not meant to be run by hand).

    python -m inductor_cpp.bench.suite_worker --phase cold|warm --variants eager,inductor_cpp,...
        --workloads a,b --device cpu --out result.json [--quick] [--iters N] [--warmup N]

cold: per workload, eager first (the reference), then each compiler's first call (a cold
      compile: the suite gives this process empty cache directories), a correctness check
      against eager, and the variants timed interleaved (medians).
warm: one variant, in a fresh process on the caches the cold process filled: per workload the
      first call (a warm start) and peak memory: during that first call ("compile peak") and
      during --warmup further steps ("run peak"), each above the memory in use just before
      (CPU: VmHWM of /proc/self/status, reset through /proc/self/clear_refs; CUDA:
      torch.cuda.max_memory_allocated).
Results are written to --out after every workload, so a crash keeps what was measured.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import sys
from collections.abc import Callable
from typing import Any

import torch

from . import suite_breakdown, timing
from .micro_checks import compare, fp64_verdict
from .suite_train import Skipped
from .suite_workloads import Workload, build

EAGER, OURS, STOCK = "eager", "inductor_cpp", "inductor"


def log(message: str) -> None:
    print(f"[suite] {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------- memory

def _status_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


class PeakMemory:
    """Peak memory above the level at start(), in bytes (CPU: resident set; CUDA: allocated)."""

    def __init__(self, device: str):
        self.device = device
        self.base = 0

    def start(self) -> None:
        gc.collect()
        if self.device == "cuda":
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            self.base = torch.cuda.memory_allocated()
            return
        try:
            ctypes.CDLL("libc.so.6").malloc_trim(0)  # freed memory leaves the resident set
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")  # reset VmHWM to the current VmRSS
        except OSError:
            pass
        self.base = (_status_kib("VmRSS") or 0) * 1024

    def peak(self) -> int | None:
        if self.device == "cuda":
            torch.cuda.synchronize()
            return torch.cuda.max_memory_allocated() - self.base
        hwm = _status_kib("VmHWM")
        return None if hwm is None else max(hwm * 1024 - self.base, 0)


# ------------------------------------------------------------------------------- running

def _synced(fn: Callable[[], Any], device: str) -> Callable[[], Any]:
    """The step, waiting for the GPU at its end; under reduce-overhead each step also starts
    with torch.compiler.cudagraph_mark_step_begin() (stock's CUDA-graph trees ask for it in
    training loops; ours ignores it)."""
    if device != "cuda":
        return fn
    mark = COMPILE_MODE == "reduce-overhead"

    def call() -> Any:
        if mark:
            torch.compiler.cudagraph_mark_step_begin()
        out = fn()
        torch.cuda.synchronize()
        return out

    return call


def _fresh() -> None:
    torch._dynamo.reset()
    gc.collect()


def _compile_stats(backend: str, before: set[int]) -> dict[str, Any]:
    dyn = torch._dynamo.utils.counters
    stats: dict[str, Any] = {"dynamo_graphs": int(dyn["stats"].get("unique_graphs", 0)),
                             "graph_breaks": int(sum(dyn["graph_break"].values()))}
    if backend == OURS:
        import inductor_cpp

        graphs = [g.counters() for g in inductor_cpp.live_graphs() if id(g) not in before]
        stats.update(graphs=len(graphs),
                     ops_generated=sum(int(c["ops_generated"]) for c in graphs),
                     ops_fallback=sum(int(c["ops_fallback"]) for c in graphs),
                     kernels=sum(int(c.get("kernels", 0)) for c in graphs),
                     cache=sorted(str(c["cache"]) for c in graphs),
                     eager_graph_fallbacks=inductor_cpp.counters()["eager_graph_fallbacks"])
    return stats


def _before_compile() -> set[int]:
    import inductor_cpp

    torch._dynamo.utils.counters.clear()
    inductor_cpp.reset_counters()
    return {id(g) for g in inductor_cpp.live_graphs()}


# torch.compile's mode for both backends (--compile-mode), set once by main().
COMPILE_MODE: str | None = None


def _compiler(backend: str) -> Callable[[Any], Callable]:
    """fn -> what the variant calls: fn itself (eager) or torch.compile'd by the backend."""
    if backend == EAGER:
        return lambda fn: fn
    if backend == OURS:  # the function itself: works where the package is not pip-installed
        import inductor_cpp

        return lambda fn: torch.compile(fn, backend=inductor_cpp.backend, mode=COMPILE_MODE,
                                        dynamic=False)
    return lambda fn: torch.compile(fn, backend=backend, mode=COMPILE_MODE, dynamic=False)


def _new_graphs(backend: str, before: set[int]) -> list[Any]:
    if backend != OURS:
        return []
    import inductor_cpp

    return [g for g in inductor_cpp.live_graphs() if id(g) not in before]


def _check(w: Workload, out: list[torch.Tensor], ref: list[torch.Tensor],
           ref64: list[list[torch.Tensor]]) -> dict[str, Any]:
    """Every output against eager's; a miss gets fp64_verdict's second chance."""
    if len(out) != len(ref):
        return {"ok": False, "error": f"{len(out)} outputs, eager gives {len(ref)}"}
    worst: dict[str, Any] = {"ok": True, "max_abs_err": 0.0, "outputs": len(ref)}
    for i, (o, r) in enumerate(zip(out, ref)):
        c = compare(o, r, **w.tol)
        if not c["ok"] and "error" not in c:
            if not ref64:
                ref64.append(w.reference64())
            fp64_verdict(c, o, r, ref64[0][i].to(r.device), w.tol["atol"])
        worst["max_abs_err"] = max(worst["max_abs_err"], c.get("max_abs_err") or 0.0)
        worst["criterion"] = c["criterion"]
        if not c["ok"]:
            worst.update(ok=False, failed_output=i, detail=c)
            break
    return worst


def run_cold(w: Workload, variants: list[str], device: str, iters: int, warmup: int,
             breakdown: int = 0) -> dict:
    result: dict[str, Any] = {"description": w.description, "train": w.train,
                              "bytes_moved": w.bytes_moved, "autocast": w.autocast,
                              "variants": {}}
    graphs: dict[str, list[Any]] = {}
    ref: list[torch.Tensor] = []
    ref64: list[list[torch.Tensor]] = []
    fns: dict[str, Callable[[], Any]] = {}
    for backend in [EAGER] + [v for v in variants if v != EAGER]:
        v: dict[str, Any] = result["variants"].setdefault(backend, {})
        log(f"{w.name} [{device}]: {backend}, first call")
        before = _before_compile()
        try:
            step = _synced(w.bind(_compiler(backend)), device)
            v["first_call_s"], out = timing.time_once(step)
            out = [t.detach().clone() for t in out]
        except Exception as e:  # noqa: BLE001  (report it; the other variants still count)
            v["error"] = f"{type(e).__name__}: {e}"
            log(f"{w.name}: {backend} failed: {v['error'][:300]}")
            if backend == EAGER:
                return result
            continue
        if backend == EAGER:
            ref = out
        else:
            v["compile"] = _compile_stats(backend, before)
            graphs[backend] = _new_graphs(backend, before)
            v["check"] = _check(w, out, ref, ref64)
        fns[backend] = step
    log(f"{w.name} [{device}]: timing {', '.join(fns)} interleaved ({warmup} + {iters} rounds)")

    def failed(name: str, e: Exception) -> None:
        result["variants"][name]["error"] = f"{type(e).__name__}: {e}"

    for name, t in timing.time_rounds(fns, iters, warmup, failed).items():
        result["variants"][name]["timing"] = t.to_dict()
    for name, v in result["variants"].items():
        if breakdown and "timing" in v:
            log(f"{w.name} [{device}]: {name}, {breakdown} steps under torch.profiler")
            try:
                bytes_of = suite_breakdown.kernel_bytes(graphs.get(name, []))
                v["breakdown"] = suite_breakdown.profile_steps(
                    fns[name], breakdown, device, v["timing"]["median_ms"], bytes_of)
            except Exception as e:  # noqa: BLE001  (the timings still count)
                v["breakdown_error"] = f"{type(e).__name__}: {e}"
                log(f"{w.name}: {name} breakdown failed: {v['breakdown_error'][:300]}")
    return result


def run_warm(w: Workload, variant: str, device: str, steps: int) -> dict:
    memory = PeakMemory(device)
    result: dict[str, Any] = {}
    memory.start()
    try:
        step = _synced(w.bind(_compiler(variant)), device)
        result["first_call_s"], out = timing.time_once(step)
        result["compile_peak_bytes"] = memory.peak()
        del out  # the run peak then counts one step's outputs, like the compile peak
        memory.start()
        for _ in range(steps):
            step()
        result["run_peak_bytes"] = memory.peak()
    except Exception as e:  # noqa: BLE001
        result["error"] = f"{type(e).__name__}: {e}"
        log(f"{w.name}: {variant} (warm) failed: {result['error'][:300]}")
    return result


# ---------------------------------------------------------------------------------- main

def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m inductor_cpp.bench.suite_worker")
    p.add_argument("--phase", choices=["cold", "warm"], required=True)
    p.add_argument("--variants", required=True)
    p.add_argument("--workloads", required=True)
    p.add_argument("--device", default="cpu")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--reps", required=True, help='JSON: {"workload": [iters, warmup], ...}')
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--autocast", choices=["bf16"], default=None)
    p.add_argument("--compile-mode", default=None)
    p.add_argument("--breakdown", type=int, default=0, metavar="STEPS")
    p.add_argument("--out", required=True)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    global COMPILE_MODE
    args = parse_args(argv)
    COMPILE_MODE = args.compile_mode
    timing.set_threads(args.threads)
    import inductor_cpp  # noqa: F401  (registers nothing, but fails early if broken)

    variants = [v for v in args.variants.split(",") if v]
    out: dict[str, Any] = {"phase": args.phase, "device": args.device, "variants": variants,
                           "environment": timing.environment_info(), "workloads": {}}
    reps = json.loads(args.reps)
    for name in (n for n in args.workloads.split(",") if n):
        _fresh()
        iters, warmup = reps[name]
        try:
            w = build(name, args.device, args.quick, args.seed, args.autocast)
        except Skipped as e:  # a missing package
            w = None
            out["workloads"][name] = {"description": str(e), "skipped": str(e), "train": True,
                                      "variants": {}}
        if w is not None and args.phase == "cold":
            out["workloads"][name] = run_cold(w, variants, args.device, iters, warmup,
                                              args.breakdown)
        elif w is not None:
            out["workloads"][name] = run_warm(w, variants[0], args.device, max(warmup, 1))
        del w
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
