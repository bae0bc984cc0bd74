"""`python -m inductor_cpp.bench movement`: data movement, index and scan kernels side by side.

Each row of movement_cases.py (permutes, broadcasts, cat / stack, pads and slices, gathers,
embedding, index_put / scatter_add with duplicates, cumsum, middle-dim sums, argmax, bf16 /
fp16, prime sizes) runs eager, stock torch.compile(backend="inductor") and
torch.compile(backend="inductor_cpp") in one process, on `--device cpu` (at `--threads`) or
`cuda`: a check of each compiled variant against eager (integer results exactly), the median
time over interleaved rounds after warm-up (CUDA: event intervals, each call waited for), the
achieved GB/s (the row's bytes: inputs read once + output written once, or the selected
elements for gathers) and its share of a device copy of the same bytes measured in the same
run (`y.copy_(x)`, read + write), the ratios to eager and stock, and our graph's ops: generated
vs ATen fallbacks (what still needs a lowering).
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
from .movement_cases import ROWS, Row, Sizes

HELP = "data movement / index / scan kernels (permutes, gathers, scatters, cumsum, argmax): eager vs stock vs ours"

VARIANTS = ("eager", "inductor_cpp", "inductor")


def log(message: str) -> None:
    print(f"[movement] {message}", file=sys.stderr, flush=True)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--elements", type=int, default=None,
                   help="elements per main tensor (default: cpu 2^22, cuda 2^26)")
    p.add_argument("--only", default="", help="comma-separated rows (default: all): " +
                   ",".join(r.name for r in ROWS))
    p.add_argument("--no-stock", action="store_true", help="skip stock Inductor")
    timing.add_timing_arguments(p, None, None, "timed rounds (default: cpu 10, cuda 20)",
                                "untimed rounds after the first call (default 2)")
    p.add_argument("--json", metavar="PATH", default=None, help="write all results here")


def _ops_since(before: set[int]) -> dict[str, int]:
    import inductor_cpp

    graphs = [g.counters() for g in inductor_cpp.live_graphs() if id(g) not in before]
    return {"graphs": len(graphs),
            "generated": sum(int(c.get("ops_generated", 0)) for c in graphs),
            "fallback": sum(int(c.get("ops_fallback", 0)) for c in graphs)}


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _time(fns: dict[str, Callable[[], Any]], device: str, iters: int, warmup: int,
          errors: dict[str, str]) -> dict[str, float]:
    """Median ms per variant, round-robin; a variant that raises is dropped into `errors`."""
    samples: dict[str, list[float]] = {n: [] for n in fns}
    fns = dict(fns)
    for r in range(warmup + iters):
        for name in list(fns):
            try:
                if device == "cuda":
                    start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
                    start.record()
                    fns[name]()
                    end.record()
                    end.synchronize()
                    ms = start.elapsed_time(end)
                else:
                    ms = 1e3 * timing.time_once(fns[name])[0]
            except Exception as e:  # noqa: BLE001  (reported; the other variants still count)
                errors[name] = f"{type(e).__name__}: {e}"[:300]
                del fns[name], samples[name]
                continue
            if r >= warmup:
                samples[name].append(ms)
    return {n: statistics.median(s) for n, s in samples.items() if s}


_copy_gbs: dict[tuple[str, int], float] = {}


def copy_limit_gbs(device: str, nbytes: int, iters: int) -> float:
    """GB/s of y.copy_(x) moving `nbytes` (half read, half written), measured once per size."""
    key = (device, max(nbytes >> 20, 1))
    if key not in _copy_gbs:
        x = torch.empty(max(nbytes // 8, 1), device=device).normal_()
        y = torch.empty_like(x)
        ms = _time({"copy": lambda: y.copy_(x)}, device, max(iters, 10), 3, {})["copy"]
        _copy_gbs[key] = 2 * x.numel() * 4 / (ms * 1e-3) / 1e9
    return _copy_gbs[key]


def check(out: Any, expected: Any, tol: tuple[float, float]) -> tuple[bool, float]:
    """Whether `out` matches eager's (integers exactly), and the largest absolute difference."""
    if not isinstance(out, torch.Tensor) or out.shape != expected.shape or out.dtype != expected.dtype:
        return False, float("inf")
    if not expected.is_floating_point():
        return bool(torch.equal(out, expected)), float((out != expected).sum())
    diff = (out.float() - expected.float()).abs().max().item() if out.numel() else 0.0
    return torch.allclose(out.float(), expected.float(), rtol=tol[0], atol=tol[1]), diff


def run_row(row: Row, sizes: Sizes, args: argparse.Namespace) -> dict[str, Any]:
    import inductor_cpp

    torch.manual_seed(0)
    device = args.device
    fn, inputs = row.build(sizes, device)
    result: dict[str, Any] = {"row": row.name, "what": row.what, "errors": {}, "correct": {},
                              "max_abs_diff": {}, "first_call_s": {}}
    with torch.no_grad():
        expected = fn(*inputs)
        result["bytes"] = row.bytes(inputs, expected)
        fns: dict[str, Callable[[], Any]] = {"eager": lambda: fn(*inputs)}
        backends = ["inductor_cpp"] + ([] if args.no_stock else ["inductor"])
        for backend in backends:
            torch._dynamo.reset()
            before = {id(g) for g in inductor_cpp.live_graphs()}
            compiled = torch.compile(fn, backend=backend)
            try:
                seconds, out = timing.time_once(lambda: compiled(*inputs))
                _sync(device)
            except Exception as e:  # noqa: BLE001
                result["errors"][backend] = f"{type(e).__name__}: {e}"[:300]
                log(f"{row.name}: {backend} failed: {result['errors'][backend]}")
                continue
            result["first_call_s"][backend] = seconds
            result["correct"][backend], result["max_abs_diff"][backend] = check(out, expected, row.tol)
            if backend == "inductor_cpp":
                result["ops"] = _ops_since(before)
            fns[backend] = lambda c=compiled: c(*inputs)
        result["median_ms"] = _time(fns, device, args.iters, args.warmup, result["errors"])
    result["copy_gbs"] = copy_limit_gbs(device, result["bytes"], args.iters)
    result["gb_s"] = {k: result["bytes"] / (ms * 1e-3) / 1e9 for k, ms in result["median_ms"].items()}
    del fn, inputs, expected, fns
    gc.collect()
    if device == "cuda":
        torch.cuda.empty_cache()
    return result


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}x" if a and b else "-"


def report(results: list[dict[str, Any]], device: str) -> str:
    headers = ["row", "MB", "eager ms", "ours ms", "stock ms", "ours GB/s (% copy)",
               "stock GB/s (% copy)", "ours vs eager", "ours vs stock", "correct ours / stock",
               "ops gen / ATen"]
    lines = []
    for r in results:
        ms = r["median_ms"]
        cells = []
        for v in ("inductor_cpp", "inductor"):
            g = r["gb_s"].get(v)
            cells.append(f"{g:.1f} ({100 * g / r['copy_gbs']:.0f}%)" if g else "-")
        ok = [("yes" if r["correct"].get(v) else "NO") if v in r["correct"] else "-"
              for v in ("inductor_cpp", "inductor")]
        ops = r.get("ops")
        lines.append([r["row"], f"{r['bytes'] / 1e6:.0f}", timing.format_ms(ms.get("eager", 0) * 1e-3),
                      *(f"{ms[v]:.3f}" if v in ms else "-" for v in ("inductor_cpp", "inductor")),
                      *cells, _ratio(ms.get("eager"), ms.get("inductor_cpp")),
                      _ratio(ms.get("inductor"), ms.get("inductor_cpp")), " / ".join(ok),
                      f"{ops['generated']} / {ops['fallback']}" if ops else "-"])
    out = timing.format_table(headers, lines)
    ratios = [r["median_ms"]["inductor"] / r["median_ms"]["inductor_cpp"] for r in results
              if "inductor" in r["median_ms"] and "inductor_cpp" in r["median_ms"]]
    if ratios:
        geo = statistics.geometric_mean(ratios)
        below = [r["row"] for r in results if "inductor" in r["median_ms"] and "inductor_cpp" in r["median_ms"]
                 and r["median_ms"]["inductor"] / r["median_ms"]["inductor_cpp"] < 0.95]
        out += f"\n\ngeomean ours vs stock ({device}): {geo:.2f}x over {len(ratios)} rows; below 0.95x: " + \
               (", ".join(below) or "none")
    return out


def run(args: argparse.Namespace) -> int:
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: no CUDA device")
    threads = timing.set_threads(args.threads) if args.device == "cpu" else torch.get_num_threads()
    args.iters = args.iters or (20 if args.device == "cuda" else 10)
    args.warmup = args.warmup if args.warmup is not None else 2
    sizes = Sizes.for_elements(args.elements or (1 << (26 if args.device == "cuda" else 22)))
    chosen = set(filter(None, args.only.split(",")))
    unknown = chosen - {r.name for r in ROWS}
    if unknown:
        raise SystemExit(f"--only: unknown rows {sorted(unknown)}")
    results = []
    for row in ROWS:
        if chosen and row.name not in chosen:
            continue
        log(f"{row.name}: {row.what}")
        results.append(run_row(row, sizes, args))
    info = timing.environment_info()
    print(timing.report_header("movement benchmark", info, f", device {args.device}",
                               "when well above 0, other work shares the cores"))
    print(f"sizes: {sizes}; medians of {args.iters} interleaved rounds\n")
    print(report(results, args.device))
    wrong = [r["row"] for r in results if r["correct"].get("inductor_cpp") is False or
             "inductor_cpp" in r["errors"]]
    if wrong:
        print(f"\ninductor_cpp wrong or failing: {', '.join(wrong)}")
    if args.json:
        timing.write_json(args.json, {"environment": info, "device": args.device, "threads": threads,
                                      "sizes": sizes.__dict__, "rows": results})
    return 1 if wrong else 0
