"""The GPU micro-benchmark: `python -m inductor_cpp.bench gpu`.

The same workloads as the CPU micro suite (micro.py), on CUDA, float32, side by side in one
process: eager, stock torch.compile(backend="inductor") (Triton) and
torch.compile(backend="inductor_cpp") (our NVPTX kernels, extern ATen calls for mm/conv):

  pointwise  gelu(x*1.5+.25)*sigmoid(x) - tanh(x)   (R*C elements, flat)
  softmax    softmax(x, -1)        layernorm  layer_norm(x, (C,), w, b)
  sum1       x.sum(-1)             sum0       x.sum(0)            (R x C, default 16384 x 8192:
                                                                    512 MiB per tensor)
  resnet18   torchvision resnet18 inference, random weights, eval, no_grad (batch x 3 x 224^2)

Times are medians of per-call CUDA-event intervals over interleaved rounds (after warm-up);
each call waits for the one before, so its host work (Dynamo's guards, the wrappers, the
launches) is inside the interval. A second table (--back-to-back K) times K calls in a row
between two events: the host work then overlaps the GPU work of the call before, as in a
training or serving loop, so it shows the device time per call; --profile adds the GPU kernel
time per call from torch.profiler.
Memory-bound workloads are rated in GB/s ((bytes read once + bytes written once) / median) and
as a share of the device's copy bandwidth measured in the same run (y.copy_(x) on tensors of
the same size: 2 x bytes / median). Each compiled variant is checked against eager (an error or
a mismatch is reported, never fatal). --json writes every number.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
from collections.abc import Callable
from typing import Any

import torch

from . import timing
from .micro import layer_norm, pointwise_chain, softmax_last, sum_first, sum_last

HELP = "GPU micro suite (CUDA): eager vs stock Inductor vs inductor_cpp, GB/s vs copy bandwidth"

VARIANTS = ("eager", "inductor", "inductor_cpp")
TOL = {"pointwise": (1e-4, 1e-5), "softmax": (1e-4, 1e-6), "layernorm": (1e-4, 1e-4),
       "sum1": (1e-4, 1e-3), "sum0": (1e-4, 1e-3), "resnet18": (1e-3, 1e-3)}


def log(message: str) -> None:
    print(f"[gpu] {message}", file=sys.stderr, flush=True)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--shape", default="16384x8192", help="R x C of the matrix workloads")
    p.add_argument("--only", default="", help="comma-separated workloads (default: all)")
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--batch", type=int, default=64, help="resnet18 batch")
    p.add_argument("--json", metavar="PATH", default=None, help="write the results here")
    p.add_argument("--back-to-back", type=int, default=10, metavar="K",
                   help="also time K calls in a row between two events (per call: K-th of the "
                        "interval; the host work of a call then overlaps the GPU work of the one "
                        "before, as in a loop); 0: skip")
    p.add_argument("--profile", type=int, default=0, metavar="N",
                   help="also print, per variant, the N kernels with the most GPU time "
                        "(torch.profiler over --iters calls): where a model's time goes")


def time_cuda(fns: dict[str, Callable[[], Any]], iters: int, warmup: int) -> dict[str, Any]:
    """Median ms per variant from CUDA events, round-robin; a raising variant is dropped with
    its error."""
    samples: dict[str, list[float]] = {n: [] for n in fns}
    errors: dict[str, str] = {}
    for r in range(warmup + iters):
        for name in list(fns):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            try:
                start.record()
                fns[name]()
                end.record()
                end.synchronize()
            except Exception as e:  # noqa: BLE001
                errors[name] = f"{type(e).__name__}: {e}"[:300]
                del fns[name]
                continue
            if r >= warmup:
                samples[name].append(start.elapsed_time(end))
    out: dict[str, Any] = {n: statistics.median(s) for n, s in samples.items() if s}
    out.update({n: None for n in errors})
    return {"median_ms": out, "errors": errors}


def time_back_to_back(fns: dict[str, Callable[[], Any]], calls: int, rounds: int) -> dict[str, float]:
    """Median over `rounds` of (CUDA-event interval around `calls` calls in a row) / `calls`:
    the device time per call once the launches run ahead of the GPU."""
    samples: dict[str, list[float]] = {n: [] for n in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            fn()  # the first of the round waits for nothing: keep it out of the interval
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(calls):
                fn()
            end.record()
            end.synchronize()
            samples[name].append(start.elapsed_time(end) / calls)
    return {n: statistics.median(s) for n, s in samples.items() if s}


def copy_bandwidth(nbytes: int, iters: int = 20) -> float:
    """GB/s of a device-to-device copy of `nbytes` (read + write counted)."""
    x = torch.empty(nbytes // 4, device="cuda")
    y = torch.empty_like(x)
    ms = time_cuda({"copy": lambda: y.copy_(x)}, iters, 3)["median_ms"]["copy"]
    return 2 * nbytes / (ms * 1e-3) / 1e9


def _ops_of_new_graphs(before: set[int]) -> dict[str, int]:
    import inductor_cpp

    graphs = [g.counters() for g in inductor_cpp.live_graphs() if id(g) not in before]
    return {"graphs": len(graphs),
            "ops_generated": sum(int(c.get("ops_generated", 0)) for c in graphs),
            "ops_fallback": sum(int(c.get("ops_fallback", 0)) for c in graphs)}


def make_case(name: str, rows: int, cols: int, batch: int) -> tuple[Callable, tuple]:
    dev = "cuda"
    if name == "pointwise":
        return pointwise_chain, (torch.randn(rows * cols, device=dev),)
    if name == "layernorm":
        return layer_norm, (torch.randn(rows, cols, device=dev), torch.randn(cols, device=dev),
                            torch.randn(cols, device=dev))
    if name == "resnet18":
        import torchvision

        model = torchvision.models.resnet18(weights=None).eval().to(dev)
        return model, (torch.randn(batch, 3, 224, 224, device=dev),)
    fn = {"softmax": softmax_last, "sum1": sum_last, "sum0": sum_first}[name]
    return fn, (torch.randn(rows, cols, device=dev),)


def run_case(name: str, rows: int, cols: int, args: argparse.Namespace) -> dict[str, Any]:
    import inductor_cpp

    torch.manual_seed(0)
    fn, inputs = make_case(name, rows, cols, args.batch)
    case: dict[str, Any] = {"workload": name, "errors": {}, "max_abs_diff": {}, "correct": {}}
    with torch.no_grad():
        expected = fn(*inputs)
        compiled = {"eager": fn}
        for backend in ("inductor", "inductor_cpp"):
            torch._dynamo.reset()
            before = {id(g) for g in inductor_cpp.live_graphs()}
            c = torch.compile(fn, backend=backend)
            try:
                out = c(*inputs)
                torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001
                case["errors"][backend] = f"{type(e).__name__}: {e}"[:300]
                log(f"{name}: {backend} failed: {case['errors'][backend]}")
                continue
            rtol, atol = TOL[name]
            case["max_abs_diff"][backend] = (out - expected).abs().max().item()
            case["correct"][backend] = torch.allclose(out, expected, rtol=rtol, atol=atol)
            if backend == "inductor_cpp":
                case["ops"] = _ops_of_new_graphs(before)
            compiled[backend] = c
        fns = {k: (lambda f=f: f(*inputs)) for k, f in compiled.items()}
        timed = time_cuda(fns, args.iters, args.warmup)
        if args.back_to_back:
            live = {k: f for k, f in fns.items() if k not in timed["errors"]}
            case["back_to_back_ms"] = time_back_to_back(live, args.back_to_back, max(3, args.iters // 4))
        if args.profile:
            case["profile"] = {k: profile_kernels(f, args.iters, args.profile) for k, f in fns.items()}
    case["median_ms"] = timed["median_ms"]
    case["errors"].update(timed["errors"])
    if name != "resnet18":
        out_bytes = expected.numel() * expected.element_size()
        case["bytes"] = sum(t.numel() * t.element_size() for t in inputs) + out_bytes
        case["gb_s"] = {k: (case["bytes"] / (ms * 1e-3) / 1e9 if ms else None)
                        for k, ms in case["median_ms"].items()}
        case["back_to_back_gb_s"] = {k: case["bytes"] / (ms * 1e-3) / 1e9
                                     for k, ms in case.get("back_to_back_ms", {}).items()}
    del fn, inputs, expected, compiled, fns
    gc.collect()
    torch.cuda.empty_cache()
    return case


def profile_kernels(fn: Callable[[], Any], iters: int, top: int) -> dict[str, Any]:
    """GPU time per kernel name over `iters` calls (torch.profiler): the `top` largest, the
    launch count and the total, all per call."""
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            fn()
        torch.cuda.synchronize()
    rows = [(e.device_time_total / iters / 1e3, e.count / iters, e.key)
            for e in prof.key_averages() if e.device_time_total > 0]
    rows.sort(reverse=True)
    return {"total_ms": sum(r[0] for r in rows), "launches": sum(r[1] for r in rows),
            "top": [{"ms": ms, "count": n, "kernel": k[:110]} for ms, n, k in rows[:top]]}


def print_back_to_back(results: dict[str, Any]) -> None:
    cases = [c for c in results["cases"] if c.get("back_to_back_ms")]
    if not cases:
        return
    bw = results["copy_gb_s"]
    print("\nback to back (calls in a row, device time per call; host work overlaps the GPU's):")
    print(f"{'workload':10} " + " ".join(f"{v + ' ms':>16}" for v in VARIANTS) + "  "
          + " ".join(f"{v + ' % copy':>20}" for v in VARIANTS) + "  ours / stock")
    for c in cases:
        ms = c["back_to_back_ms"]
        gb = c.get("back_to_back_gb_s", {})
        pct = " ".join(f"{100 * gb[v] / bw:19.1f}%" if v in gb else f"{'-':>20}" for v in VARIANTS)
        ratio = (ms["inductor"] / ms["inductor_cpp"]
                 if ms.get("inductor") and ms.get("inductor_cpp") else float("nan"))
        print(f"{c['workload']:10} " + " ".join(f"{ms.get(v, float('nan')):16.3f}" for v in VARIANTS)
              + f"  {pct}  {ratio:.2f}x")


def print_profiles(results: dict[str, Any]) -> None:
    for c in results["cases"]:
        for variant, prof in c.get("profile", {}).items():
            print(f"\n{c['workload']} / {variant}: GPU kernel time {prof['total_ms']:.3f} ms per call, "
                  f"{prof['launches']:.0f} launches per call")
            for r in prof["top"]:
                print(f"  {r['ms']:8.3f} ms  x{r['count']:<5.0f} {r['kernel']}")


def print_table(results: dict[str, Any]) -> None:
    bw = results["copy_gb_s"]
    print(f"device: {results['device']}; copy bandwidth {bw:.0f} GB/s (read+write), "
          f"shape {results['shape']}")
    header = f"{'workload':10} " + " ".join(f"{v + ' ms':>16}" for v in VARIANTS) + \
        "  " + " ".join(f"{v + ' GB/s (%copy)':>24}" for v in VARIANTS) + "  ours ok  ops gen/fb"
    print(header)
    for c in results["cases"]:
        ms = " ".join(f"{c['median_ms'].get(v) or float('nan'):16.3f}" for v in VARIANTS)
        gb = ""
        if "gb_s" in c:
            gb = " ".join(
                f"{(c['gb_s'].get(v) or float('nan')):14.0f} ({100 * (c['gb_s'].get(v) or float('nan')) / bw:5.1f}%)"
                for v in VARIANTS)
        else:
            gb = " ".join(f"{'-':>24}" for _ in VARIANTS)
        ops = c.get("ops", {})
        print(f"{c['workload']:10} {ms}  {gb}  {str(c['correct'].get('inductor_cpp', 'n/a')):7}"
              f"  {ops.get('ops_generated', '-')}/{ops.get('ops_fallback', '-')}")
        for v, e in c["errors"].items():
            print(f"    {v} error: {e}")


def run(args: argparse.Namespace) -> int:
    if not torch.cuda.is_available():
        log("no CUDA device")
        return 2
    import inductor_cpp  # noqa: F401  (registers the backend)

    rows, cols = (int(s) for s in args.shape.lower().split("x"))
    names = [n for n in args.only.split(",") if n] or list(TOL)
    results: dict[str, Any] = {"device": torch.cuda.get_device_name(), "shape": [rows, cols],
                               "copy_gb_s": copy_bandwidth(rows * cols * 4), "cases": []}
    log(f"copy bandwidth {results['copy_gb_s']:.0f} GB/s")
    for name in names:
        log(f"running {name}")
        results["cases"].append(run_case(name, rows, cols, args))
    print_table(results)
    print_back_to_back(results)
    print_profiles(results)
    if args.json:
        timing.write_json(args.json, results)
    bad = [c["workload"] for c in results["cases"]
           if c["errors"].get("inductor_cpp") or c["correct"].get("inductor_cpp") is False]
    return 1 if bad else 0

