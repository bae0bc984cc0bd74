"""Results of the micro benchmark and their report: one Case per workload and size, one Variant
per backend; the table, the geometric means and the printed header."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from . import machine, timing

OURS, STOCK, EAGER = "inductor_cpp", "inductor", "eager"


@dataclass
class Variant:
    """One backend's run of one case."""

    name: str
    first_call_s: float | None = None
    timing: timing.Timing | None = None
    check: dict[str, Any] | None = None  # micro_checks.compare's result (None: eager)
    error: str | None = None
    ops: dict[str, int] | None = None  # inductor_cpp: ops generated / falling back to ATen

    @property
    def ok(self) -> bool:
        return self.error is None and (self.check is None or self.check["ok"])

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "ok": self.ok}


@dataclass
class Case:
    """One workload at one size: its variants and the derived rates."""

    workload: str
    size_class: str
    shape: str
    computes: str = ""
    bytes_moved: int | None = None
    flops: int | None = None
    variants: dict[str, Variant] = field(default_factory=dict)
    skipped: str | None = None

    def median(self, name: str) -> float | None:
        v = self.variants.get(name)
        return v.timing.median_s if v is not None and v.timing is not None else None

    def rate(self, name: str) -> float | None:
        """GB/s (memory-bound) or GFLOP/s (model) at the median time."""
        seconds, amount = self.median(name), self.bytes_moved or self.flops
        return amount / seconds / 1e9 if seconds and amount else None

    def ratio(self, baseline: str, name: str) -> float | None:
        base, mine = self.median(baseline), self.median(name)
        return timing.speedup(base, mine) if base and mine else None

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k != "variants"}
        out["variants"] = {}
        for name, v in self.variants.items():
            out["variants"][name] = {**v.to_dict(), "rate": self.rate(name),
                                     "vs_eager": self.ratio(EAGER, name),
                                     "vs_stock": self.ratio(STOCK, name)}
        return out


# ------------------------------------------------------------------------------ reporting

def _rate_cells(case: Case, name: str, limits: machine.MachineLimits | None) -> tuple[str, str]:
    rate = case.rate(name)
    if rate is None:
        return "-", "-"
    if case.bytes_moved:
        peak, unit = (limits.copy_gbs(case.size_class) if limits else None), "GB/s"
    else:
        peak, unit = (limits.matmul_gflops if limits else None), "GFLOP/s"
    return f"{rate:.1f} {unit}", f"{100 * rate / peak:.0f}%" if peak else "-"


def _check_cell(v: Variant) -> str:
    if v.error is not None:
        return f"ERROR {v.error[:60]}"
    if v.check is None:
        return "reference"
    if v.check["ok"] and v.check.get("passed_by") == "fp64":
        return (f"PASS~fp64 (err {v.check['fp64_err']:.2g} vs eager "
                f"{v.check['eager_fp64_err']:.2g})")
    if v.check["ok"]:
        return "PASS"
    if v.check.get("error"):
        return f"FAIL {v.check['error'][:60]}"
    text = f"FAIL (max err {v.check['max_abs_err']:.2g}, {v.check['mismatches']} bad"
    if "fp64_err" in v.check:
        text += f"; fp64 err {v.check['fp64_err']:.2g} vs eager {v.check['eager_fp64_err']:.2g}"
    return text + ")"


def _ms_cell(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:.4g}"


def _ops_cell(v: Variant) -> str:
    return "-" if v.ops is None else f"{v.ops['ops_generated']}/{v.ops['ops_fallback']}"


def results_table(cases: list[Case], limits: machine.MachineLimits | None) -> str:
    headers = ["workload", "size", "shape", "backend", "median ms", "rate", "% machine",
               "x vs eager", "x vs stock", "first call s", "ops gen/fallback", "check"]
    rows = []
    for case in cases:
        if case.skipped:
            rows.append([case.workload, case.size_class, case.shape, "-", "skipped: "
                         + case.skipped] + [""] * 7)
            continue
        for name, v in case.variants.items():
            rate, share = _rate_cells(case, name, limits)
            rows.append([case.workload, case.size_class, case.shape, name,
                         _ms_cell(case.median(name)), rate, share,
                         timing.format_ratio(case.ratio(EAGER, name)),
                         timing.format_ratio(case.ratio(STOCK, name)),
                         timing.format_s(v.first_call_s), _ops_cell(v), _check_cell(v)])
    return timing.format_table(headers, rows)


def geomeans(cases: list[Case]) -> dict[str, dict[str, float | None]]:
    """Per size class, the geometric mean of each ratio over the cases that have it."""
    pairs = {"inductor_cpp vs eager": (EAGER, OURS), "inductor_cpp vs stock": (STOCK, OURS),
             "stock vs eager": (EAGER, STOCK)}
    out: dict[str, dict[str, float | None]] = {}
    for size_class in dict.fromkeys(c.size_class for c in cases):
        out[size_class] = {}
        for label, (base, name) in pairs.items():
            ratios = [r for c in cases if c.size_class == size_class
                      for r in [c.ratio(base, name)] if r]
            out[size_class][label] = (math.exp(sum(map(math.log, ratios)) / len(ratios))
                                      if ratios else None)
    return out


def print_report(cases: list[Case], info: dict[str, Any], limits: machine.MachineLimits | None,
                 reps: dict[str, tuple[int, int]], cold_cache: bool) -> None:
    """The header (threads, load, rounds, machine limits), the table and the geomeans; reps
    maps each size class to its (timed, warm-up) round counts."""

    print(timing.report_header("micro benchmark", info, ", float32",
                               "when well above 0, other work shares the cores")
          + f", compile caches: {'cold (temporary)' if cold_cache else 'the user cache'}")
    classes = dict.fromkeys(c.size_class for c in cases)
    rounds = ", ".join(f"{k} {reps[k][1]}+{reps[k][0]}" for k in classes)
    print(f"warm-up+timed rounds (variants interleaved, median): {rounds}")
    if limits is not None:
        print(machine.describe(limits))
    print("rate: (input bytes + output bytes) / median; % machine: of the copy bandwidth of "
          "the same size class (GFLOP/s: of the matmul rate)\n")
    print(results_table(cases, limits))
    print()
    for size_class, means in geomeans(cases).items():
        cells = ", ".join(f"{k} {timing.format_ratio(v)}" for k, v in means.items())
        print(f"geomean [{size_class}]: {cells}")
