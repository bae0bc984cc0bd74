"""Report of the CPU matrix benchmark (matrix.py runs the cases): the FMA and AMX peaks it is
rated against, the table, the geometric means and the warnings about a disturbed peak. Split
from the runner so each file reads on its own.
"""

from __future__ import annotations

import math
import sys
from typing import Any

from . import timing
from .matrix_cases import EAGER, FLOOR, LIBRARY, OURS, OURS_OFF, STOCK, TILE_OFF, Case

PEAK_REPS = 30  # short peak-loop runs; the best counts (see measure_peaks)


def log(message: str) -> None:
    print(f"[matrix] {message}", file=sys.stderr, flush=True)


def _check_cell(result: dict[str, Any]) -> str:
    if result.get("error"):
        return f"ERROR {result['error'][:60]}"
    check = result.get("check")
    if check is None:
        return "reference"
    if check["ok"]:
        return "PASS~fp64" if check.get("passed_by") == "fp64" else "PASS"
    return f"FAIL (max err {check.get('max_abs_err') or 0:.2g}, {check['criterion']})"


def results_table(cases: list[Case], peaks: dict[str, float | None]) -> str:
    headers = ["group", "case", "variant", "median ms", "GFLOP/s", "% peak", "% rnd peak", "x eager",
               "x stock", "first call s", "path", "check"]
    rows = []
    for case in cases:
        if case.skipped:
            rows.append([case.group, case.name, "-"] + [""] * 8 + [f"skipped: {case.skipped}"])
            continue
        for name, r in case.results.items():
            rate, peak = case.gflops(name), peaks.get(case.peak)
            share = f"{100 * rate / peak:.0f}%" if rate and peak else "-"
            paired = case.paired_peak_share(name)
            median = case.median_s(name)
            rows.append([case.group, case.name, name,
                         "-" if median is None else f"{median * 1e3:.4g}",
                         "-" if rate is None else f"{rate:.1f}", share,
                         "-" if paired is None else f"{100 * paired:.0f}%",
                         timing.format_ratio(case.ratio(EAGER, name)),
                         timing.format_ratio(case.ratio(STOCK, name)),
                         timing.format_s(r.get("first_call_s")), r.get("path", "-"),
                         _check_cell(r)])
    return timing.format_table(headers, rows)


def geomeans(cases: list[Case]) -> dict[str, dict[str, float | None]]:
    """Per group, the geometric mean over cases of each variant's speed-up over eager."""
    out: dict[str, dict[str, float | None]] = {}
    for group in dict.fromkeys(c.group for c in cases):
        out[group] = {}
        for name in (STOCK, OURS, OURS_OFF, TILE_OFF, LIBRARY, FLOOR):
            ratios = [r for c in cases if c.group == group for r in [c.ratio(EAGER, name)] if r]
            if ratios:
                out[group][name] = math.exp(sum(map(math.log, ratios)) / len(ratios))
    return out


def measure_peaks(threads: int) -> tuple[dict[str, float | None], dict[str, Any]]:
    """FMA (and AMX where usable) peaks at `threads` threads from _C.matrix, and the CPU's
    matrix features; None where they cannot be measured (an older _C without the bindings).
    Each peak is the best of PEAK_REPS short runs (~15-20 ms each): on a shared machine the
    best run is the one that had the cores to itself, which is what a peak means."""
    from .. import _C

    if not hasattr(_C, "matrix"):
        log("this inductor_cpp._C has no matrix bindings: % peak is not shown")
        return ({"fma": None, "amx": None},
                {"describe": "unknown (no _C.matrix)", "amx_usable": False})
    features = dict(_C.matrix.cpu_features())
    peaks: dict[str, float | None] = {
        "fma": _C.matrix.fma_peak_gflops(threads, iterations=4_000_000, reps=PEAK_REPS),
        "amx": None}
    if features["amx_usable"]:
        peaks["amx"] = _C.matrix.amx_peak_gflops(threads, iterations=1_000_000, reps=PEAK_REPS)
    return peaks, features


def best_peaks(before: dict[str, float | None],
               after: dict[str, float | None]) -> dict[str, float | None]:
    """The larger of two measurements of each peak (None stays None)."""
    return {k: max((v for v in (before[k], after.get(k)) if v is not None), default=None)
            for k in before}


def peak_warnings(cases: list[Case], peaks: dict[str, float | None]) -> list[str]:
    """Rows faster than the measured peak: the peak loop was disturbed (seen on a VM whose
    16-thread peak measured half of its usual value twice in one process)."""
    out = []
    for case in cases:
        peak = peaks.get(case.peak)
        for name in case.results:
            rate = case.gflops(name)
            if peak and rate and rate > 1.02 * peak:
                out.append(f"{case.name} / {name} ran at {100 * rate / peak:.0f}% of the "
                           f"{case.peak.upper()} peak: the peak is too low (a disturbed "
                           f"measurement: run again, or give --{case.peak}-peak)")
    return out


def print_report(cases: list[Case], info: dict[str, Any], peaks: dict[str, float | None],
                 features: dict[str, Any], measured: dict[str, dict[str, float | None]]) -> None:
    print(timing.report_header("matrix benchmark", info, "",
                               "the run's own threads count too; more than that: other work "
                               "shares the cores and the numbers are indicative"))
    print(f"CPU matrix features: {features.get('describe')}")
    def peak_text(kind: str, missing: str) -> str:
        if peaks.get(kind) is None:
            return missing
        before, after = measured["before"][kind], measured["after"][kind]
        if before is None or after is None:
            return f"{peaks[kind]:.1f} GFLOP/s (given)"
        given = "" if peaks[kind] == max(before, after) else "given; measured "
        return f"{peaks[kind]:.1f} GFLOP/s ({given}before {before:.1f}, after {after:.1f})"

    print(f"FMA peak (register-only JIT loop, best of {PEAK_REPS} short runs, the larger of "
          f"before and after the cases): {peak_text('fma', 'unavailable')}; AMX bf16 peak: "
          f"{peak_text('amx', 'not usable here')}")
    print(f"variants: {EAGER}; {STOCK} = torch.compile(backend='inductor'); {OURS} / {OURS_OFF} "
          f"= backend='inductor_cpp' with matrix_kernels on / off ({TILE_OFF}: on, without tile "
          "epilogues); library = our GEMM called "
          "directly, without Dynamo (_C.matrix.gemm_f32 with B packed once, gemm_bf16); compile floor (small shapes) = torch.compile(backend='eager'), Dynamo's "
          "per-call cost with no compiler. median of interleaved rounds; path: matmul/conv steps "
          "on our library")
    print()
    print(results_table(cases, peaks))
    for warning in peak_warnings(cases, peaks):
        print(f"warning: {warning}")
    print()
    for group, means in geomeans(cases).items():
        if not means:
            continue
        cells = ", ".join(f"{k} {timing.format_ratio(v)}" for k, v in means.items())
        print(f"geomean x vs eager [{group}]: {cells}")
