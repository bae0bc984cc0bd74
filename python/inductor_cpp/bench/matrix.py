"""The CPU matrix benchmark (issue 7): `python -m inductor_cpp.bench matrix`.

Eager torch.mm/addmm/conv vs stock torch.compile(backend="inductor") vs ours
(backend="inductor_cpp", options={"matrix_kernels": True}: float32 matmuls on our xbyak GEMM;
"ours mk=off" is the same backend with ATen matmuls), one process, one thread count. Groups
(--rows):

  gemm    float32 mm, 1024^3 and 4096^3 (targets: >= 80% of the FMA peak at 2 threads, >= 70%
          at 16, >= 0.9x eager)
  addmm   relu(addmm(bias, a, b)) and relu(Linear(x)) at 1024^3 (target >= 1.1x eager)
  small   skinny and small shapes as nn.Linear (weight a parameter, reused call to call) and as
          plain mm: M in {1, 8, 32} x (N, K) in {768x768, 3072x768, 768x3072, 4096x4096} (mm:
          768x768 and 4096x4096), and 64^3 / 128^3 / 256^3 (target >= 1.0x eager)
  tile    a matmul followed by what the GEMM's epilogue ops cannot express (Linear then
          leaky_relu * gate (per feature); mm then z/2 + y^2), M x N x K in {32x3072x768,
          1024x3072x768, 256^3}: ours with the consumer as a tile kernel inside the GEMM and, as
          "ours tile=off", as a kernel of its own after it
  conv    resnet50 layers, channels-last, batch 1 and 32, conv alone and relu(conv+bias+residual)
  conv_bwd  convolution backward at batch 8, channels-last: aten.convolution_backward of one
          gradient (dx or dw) of resnet's layers (3x3 64 @56, 3x3 256 @14, 1x1 256->64 @56,
          1x1/2 64->128 @56, 3x3/2 64->128 @56; dw of the 7x7/2 stem), with "library" our
          conv_backward called directly
  attention  F.scaled_dot_product_attention on BERT-style packed q/k/v views, 12 heads of 64:
          batch 8 x seq 128 (also causal) and 1 x 1024; and ATen's flash attention backward
          called on its own (what a training backward graph runs) at 8 x 128 (also causal) and
          2 x 512; "ours mk=off" runs ATen's kernels inside our plan
  amx     bf16 2048^3 mm (eager, stock, ours, and the library's gemm_bf16 called directly), as %
          of the measured AMX peak; bf16 Linear layers (32, 128, 256 rows) and the encoder below
          in bf16 at batch 1 x 32 and 1 x 128, stock and ours compiled with freezing (ours runs
          frozen bf16 Linear layers of up to 256 rows on AMX); skipped with a line where AMX is
          not usable
  models  resnet18 (batch 8, 224^2) and a 4-layer BERT-style encoder (d 768, 12 heads, ffn 3072,
          batch 8 x seq 128; plain Linear/SDPA/LayerNorm/GELU layers), eval, no_grad; ours
          with matrix_kernels off and on

--shapes replaces the groups with products of given shapes (mm, Linear or relu(addmm), e.g.
`--shapes 4096x4096x4096,L8x768x768,R1024x1024x1024`): with `bench ab`, GEMM tuning knobs
(blocking, few rows, streamed plain B) as same-process ratios to eager.

gemm, addmm and small also time "library": our float32 GEMM called directly, without Dynamo or
a plan, with B packed once as a compiled graph's packed-weight cache keeps it (a one-row product
reads B in place, as there): the kernels' speed apart from torch.compile's per-call cost.

Protocol (docs/benchmarks.md): every case starts from torch._dynamo.reset() and compiles with
dynamic=False under no_grad. The first call of each variant is timed (for compiled variants:
Dynamo + compile + one run). Then warm-up and timed rounds call every variant in turn, the
order rotating per round, so a burst of load from elsewhere hits them alike; one sample is the
mean of a batch of calls sized to ~5 ms (small shapes take microseconds), and the report is the
median sample. Every output is checked against eager's: |out - eager| <= tol |eager| +
tol max|eager| with tol growing with the reduction length K (float32 summation error grows
like sqrt(K)); a miss gets micro's second chance against float64 (error at most 3x eager's).
GFLOP/s count 2 M N K per matmul (the epilogue is not counted); % peak is against the FMA peak
(register-only JIT loop, _C.matrix.fma_peak_gflops) measured in the same process at the same
thread count, or the AMX peak for the bf16 row (the best of many short runs before and after
the cases). "% rnd peak" divides each timed round's rate by the FMA peak measured right after
that round and takes the median: on a VM whose clock moves within a run (this dev machine's
2-thread peak reads 374-480 GFLOP/s in one run), it compares the kernel with the hardware at
the same moment. The 1-minute load average is printed: on a shared machine the numbers are
indicative.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import math
import sys
from collections.abc import Callable
from typing import Any

import torch

from . import timing
from .matrix_cases import (EAGER, FLOOR, OURS, OURS_OFF, STOCK, TILE_OFF, Case, Workload,
                           build_cases)
from .matrix_report import best_peaks, geomeans, measure_peaks, print_report
from .micro import _count_flops
from .micro_checks import compare, fp64_verdict, reference64

HELP = "GEMM/addmm/skinny/conv/AMX/model matrix benchmark: eager vs Inductor vs inductor_cpp"

GROUPS = ("gemm", "addmm", "small", "tile", "conv", "conv_bwd", "attention", "amx", "models")
SAMPLE_TARGET_S = 0.005  # one timing sample: a batch of calls lasting about this long
MAX_CALLS_PER_SAMPLE = 200
MODEL_TOL = 1e-3  # resnet18 / transformer: rtol and atol, as the micro suite's resnet18
BF16_MODEL_TOL = 5e-2  # bf16 encoder: rtol and atol / max|eager| (8-bit roundings, 4 layers)


def log(message: str) -> None:
    print(f"[matrix] {message}", file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------- running

def _matmul_path(plan_texts: list[str]) -> str:
    """'lib a/b': of the b matmul/conv steps in the plans, a run on our matrix library."""
    ours = aten = 0
    for text in plan_texts:
        for line in text.splitlines():
            if "matrix::" in line:
                ours += 1
            elif any(f"aten::{op}(" in line for op in ("mm", "addmm", "bmm", "convolution",
                                                       "convolution_backward", "linear",
                                                       "baddbmm", "addmv", "mv")):
                aten += 1
    return f"lib {ours}/{ours + aten}"


def _compiled_variants(case: Case, args: argparse.Namespace) -> dict[str, tuple[str, dict]]:
    """variant name -> (backend, options)."""
    out: dict[str, tuple[str, dict]] = {}
    frozen = {"freezing": True} if case.freezing else {}
    if not args.no_stock:
        out[STOCK] = ("inductor", dict(frozen))
    out[OURS] = ("inductor_cpp", {"matrix_kernels": True, **frozen})
    if case.ours_off or args.mk_off:
        out[OURS_OFF] = ("inductor_cpp", {"matrix_kernels": False, **frozen})
    if case.group == "small":
        out[FLOOR] = ("eager", {})
    if case.group == "tile":
        out[TILE_OFF] = ("inductor_cpp", {"matrix_kernels": True, "matrix_tile_epilogues": False})
    return out


def _tolerance(work: Workload) -> tuple[float, float]:
    """(rtol, atol-as-a-fraction-of-max|eager|) for the case's reduction length K."""
    if work.compare_as_float:  # bf16 outputs: rounding to 8 bits dominates
        return (1e-2, 1e-2) if work.k is not None else (BF16_MODEL_TOL, BF16_MODEL_TOL)
    if work.k is None:
        return MODEL_TOL, MODEL_TOL
    tol = 1e-5 * max(1.0, math.sqrt(work.k / 64))
    return tol, tol


def _check(out: Any, ref: Any, work: Workload, ref64: list) -> dict[str, Any]:
    if isinstance(ref, (tuple, list)):  # several outputs (a backward's gradients): each checked
        if not isinstance(out, (tuple, list)) or len(out) != len(ref):
            return {"ok": False, "error": f"got {type(out).__name__}, expected {len(ref)} outputs"}
        parts = [_check(o, r, dataclasses.replace(work, fn=lambda *a, i=i: work.fn(*a)[i]), [])
                 for i, (o, r) in enumerate(zip(out, ref))]
        merged = dict(next((p for p in parts if not p["ok"]), parts[0]))
        merged["ok"] = all(p["ok"] for p in parts)
        errors = [p["max_abs_err"] for p in parts if p.get("max_abs_err") is not None]
        merged["max_abs_err"] = max(errors) if errors else None
        merged["mismatches"] = sum(p.get("mismatches") or 0 for p in parts)
        return merged
    rtol, atol_frac = _tolerance(work)
    if isinstance(out, torch.Tensor) and work.compare_as_float:
        out, ref = out.float(), ref.float()
    scale = float(ref.detach().abs().max()) if ref.numel() else 0.0
    atol = MODEL_TOL if work.k is None and not work.compare_as_float else atol_frac * scale
    check = compare(out, ref, rtol=rtol, atol=atol)
    if not check["ok"] and "error" not in check and not work.compare_as_float:
        if not ref64:
            ref64.append(reference64(work.fn, work.inputs))
        fp64_verdict(check, out, ref, ref64[0], atol)
    return check


def _first_call(case: Case, name: str, call: Callable[[], Any]) -> Any:
    """Times the first (compiling) call; records an exception instead of raising."""
    import inductor_cpp

    before = {id(g) for g in inductor_cpp.live_graphs()}
    try:
        seconds, out = timing.time_once(call)
    except Exception as e:  # noqa: BLE001  (report it; the other variants still count)
        case.results[name] = {"error": f"{type(e).__name__}: {e}"}
        log(f"{case.name}: {name} failed: {str(e)[:200]}")
        return None
    case.results[name] = {"first_call_s": seconds, "error": None}
    if name in (OURS, OURS_OFF, TILE_OFF):
        plans = [g.plan_text for g in inductor_cpp.live_graphs() if id(g) not in before]
        case.results[name]["graphs"] = len(plans)
        case.results[name]["path"] = _matmul_path(plans)
    return out


def _calls_per_sample(call: Callable[[], Any]) -> int:
    seconds = min(timing.time_once(call)[0] for _ in range(3))  # min: a stalled call misleads
    return max(1, min(MAX_CALLS_PER_SAMPLE, round(SAMPLE_TARGET_S / max(seconds, 1e-9))))


def _repeat(fn: Callable[[], Any], times: int) -> None:
    for _ in range(times):
        fn()  # each result is dropped before the next call, as in a real loop


def _time_rounds(case: Case, calls: dict[str, Callable[[], Any]], iters: int,
                 warmup: int, round_peak: Callable[[], float] | None = None) -> None:
    """Warm-up then timed rounds; each round calls every variant once (a batch of calls), in
    an order rotated by one per round. A variant that raises is recorded and dropped.
    `round_peak`, when given, is measured after each timed round (Case.round_peaks)."""
    batch = _calls_per_sample(calls[EAGER])
    names = list(calls)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for round_index in range(warmup + iters):
        shift = round_index % len(names)
        if round_peak is not None and round_index > warmup:
            _rewarm(calls[names[shift]] if names[shift] in calls else calls[EAGER], batch)
        for name in names[shift:] + names[:shift]:
            if name not in calls:
                continue
            fn = calls[name]
            try:
                seconds, _ = timing.time_once(lambda: _repeat(fn, batch))
            except Exception as e:  # noqa: BLE001
                case.results[name]["error"] = f"{type(e).__name__}: {e}"
                log(f"{case.name}: {name} failed while timed: {str(e)[:200]}")
                del calls[name]
                continue
            if round_index >= warmup:
                samples[name].append(seconds / batch)
        if round_peak is not None and round_index >= warmup:
            case.round_peaks.append(round_peak())
    for name, s in samples.items():
        if s and name in calls:
            case.results[name]["timing"] = timing.summarize(s)
            case.results[name]["calls_per_sample"] = batch
            case.results[name]["round_s"] = s


REWARM_S = 0.05  # untimed work between a round peak's pause and the next timed round


def _rewarm(fn: Callable[[], Any], batch: int) -> None:
    """Untimed calls of `fn` for about REWARM_S after the round peak's pause (_round_peak): on
    this dev machine a core idle for 0.3 s runs the next 1024^3 GEMM at about half speed (13-17
    against 6-7 ms), so without this the round's first variant, whichever it is, paid for the
    pause."""
    import time

    start = time.perf_counter()
    while True:
        _repeat(fn, batch)
        if time.perf_counter() - start >= REWARM_S:
            return


@torch.no_grad()
def run_case(case: Case, args: argparse.Namespace) -> None:
    torch._dynamo.reset()
    gc.collect()
    timing.seed_all(args.seed)
    try:
        work = case.make()
    except Exception as e:  # noqa: BLE001  (e.g. no torchvision: the other cases still run)
        case.skipped = f"could not build the workload: {type(e).__name__}: {e}"
        log(f"{case.name}: {case.skipped}")
        return
    fn, inputs = work.fn, work.inputs
    case.flops = work.flops if work.flops is not None else _count_flops(fn, inputs)
    iters, warmup = case.reps
    iters = args.iters if args.iters is not None else iters
    warmup = args.warmup if args.warmup is not None else warmup
    log(f"{case.name}: eager")
    ref = _first_call(case, EAGER, lambda: fn(*inputs))
    if ref is None:
        return
    calls: dict[str, Callable[[], Any]] = {EAGER: lambda: fn(*inputs)}
    ref64: list = []
    compiled_specs = _compiled_variants(case, args)
    for name in [*compiled_specs, *work.extra]:
        if name in compiled_specs:
            backend, options = compiled_specs[name]
            log(f"{case.name}: {name} ({backend}) first call")
            compiled = torch.compile(fn, backend=backend, dynamic=False,
                                     options=options or None)
            call = lambda c=compiled: c(*inputs)  # noqa: E731
        else:
            call = work.extra[name]
        out = _first_call(case, name, call)
        if out is None:
            continue
        case.results[name]["check"] = _check(out, ref, work, ref64)
        calls[name] = call
        del out
    del ref, ref64
    log(f"{case.name}: timing {', '.join(calls)} ({warmup} warm-up + {iters} timed rounds)")
    case.results[EAGER]["load_average_1m"] = timing.load_average()
    _time_rounds(case, calls, iters, warmup, _round_peak(case, args.threads_used))


ROUND_PEAK_PAUSE_S = 0.3  # longer than MKL's and OpenMP's spin-waits after a parallel region


def _round_peak(case: Case, threads: int) -> Callable[[], float] | None:
    """The FMA peak at this moment (best of 3 runs of ~5 ms) for FMA-bound cases, else None.
    It waits ROUND_PEAK_PAUSE_S first: the round's last GEMM leaves its worker threads
    spinning for a while (MKL's KMP_BLOCKTIME is 200 ms), and a peak loop sharing the cores
    with them reads half the peak (seen at 16 threads on the GPU host: 1380 vs 2780 GFLOP/s)."""
    import time

    from inductor_cpp import _C

    if case.peak != "fma" or not hasattr(_C, "matrix"):
        return None

    def measure() -> float:
        time.sleep(ROUND_PEAK_PAUSE_S)
        return _C.matrix.fma_peak_gflops(threads, iterations=1_000_000, reps=3)

    return measure


def variant_ok(result: dict[str, Any]) -> bool:
    return result.get("error") is None and (result.get("check") or {"ok": True})["ok"]


# ------------------------------------------------------------------------------- command

def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--threads", type=int, default=None,
                   help="torch intra-op threads (default: torch.get_num_threads())")
    p.add_argument("--rows", default=",".join(GROUPS), metavar="GROUP,GROUP",
                   help=f"groups to run, of: {','.join(GROUPS)}")
    p.add_argument("--shapes", default=None, metavar="[L|R]MxNxK,...",
                   help="run these products instead of the groups: MxNxK torch.mm, LMxNxK "
                        "nn.Linear(K, N) on M rows, RMxNxK relu(addmm(bias, x, b))")
    p.add_argument("--iters", type=int, default=None,
                   help="timed rounds for every case (default per case: 15; 4096^3 and conv "
                        "batch 32: 4; models: 5; amx: 10)")
    p.add_argument("--warmup", type=int, default=None,
                   help="untimed rounds after the first call (default per case: 1-3)")
    p.add_argument("--no-stock", action="store_true", help="skip stock Inductor")
    p.add_argument("--mk-off", action="store_true",
                   help="also run inductor_cpp with matrix_kernels off on every case (models "
                        "always do)")
    p.add_argument("--smoke", action="store_true",
                   help="tiny shapes (the CI test): every group's code path in seconds")
    p.add_argument("--fma-peak", type=float, default=None, metavar="GFLOPS",
                   help="use this FMA peak for %% peak instead of the measured one")
    p.add_argument("--amx-peak", type=float, default=None, metavar="GFLOPS",
                   help="use this AMX bf16 peak for %% peak instead of the measured one")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", metavar="PATH", default=None, help="write all results as JSON")


def _parse_groups(text: str) -> list[str]:
    groups = [g.strip() for g in text.split(",") if g.strip()]
    unknown = [g for g in groups if g not in GROUPS]
    if unknown or not groups:
        raise SystemExit(f"--rows: unknown group(s) {unknown}; choose from {list(GROUPS)}")
    return groups


def run(args: argparse.Namespace) -> int:
    args.groups = _parse_groups(args.rows)
    if args.iters is not None and args.iters < 1:
        raise SystemExit("--iters must be >= 1")
    if args.warmup is not None and args.warmup < 0:
        raise SystemExit("--warmup must be >= 0")
    args.threads_used = timing.set_threads(args.threads)
    import inductor_cpp  # noqa: F401  (fail early if the package is broken)

    info = timing.environment_info()
    log(f"measuring the FMA peak at {args.threads_used} thread(s)")
    peaks, features = measure_peaks(args.threads_used)
    cases = build_cases(args, bool(features.get("amx_usable")),
                        f"features: {features.get('describe')}")
    for case in cases:
        if not case.skipped:
            run_case(case, args)
    torch._dynamo.reset()
    log("measuring the peaks again (the larger of the two counts)")
    peaks_after, _ = measure_peaks(args.threads_used)
    measured = {"before": peaks, "after": peaks_after}
    peaks = best_peaks(peaks, peaks_after)
    for kind in ("fma", "amx"):
        given = getattr(args, f"{kind}_peak")
        if given is not None:
            peaks[kind] = given
    print_report(cases, info, peaks, features, measured)
    ours = [r for c in cases for n, r in c.results.items() if n in (OURS, OURS_OFF, TILE_OFF)]
    ok = all(variant_ok(r) for r in ours) and all(variant_ok(c.results[EAGER]) for c in cases
                                                  if EAGER in c.results)
    print(f"\ninductor_cpp correctness: {'PASS' if ok else 'FAIL'}")
    if args.json:
        config = {k: v for k, v in vars(args).items() if k != "func"}
        timing.write_json(args.json, {"environment": info, "config": config, "peaks": peaks,
                                      "peaks_measured": measured, "cpu_features": features,
                                      "ok": ok,
                                      "geomeans": geomeans(cases),
                                      "cases": [c.to_dict() for c in cases]})
        print(f"results written to {args.json}")
    return 0 if ok else 1
