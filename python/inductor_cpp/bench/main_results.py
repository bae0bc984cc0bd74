"""Results of the main job (main_job.py runs it) and their report: one Workload per job part,
one Variant per backend with its Checks against eager; the speed, correctness and compile
tables. Split from the runner so each file reads on its own.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any

from . import timing

OURS, STOCK, EAGER = "inductor_cpp", "inductor", "eager"


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
                         f"{s['cache_hits']}/{s['cache_misses']}"])
    headers = ["workload", "backend", "dynamo graphs", "graph breaks", "graphs compiled",
               "ops generated/fallback per graph (cache)", "eager graph fallbacks",
               "cache hits/misses"]
    return timing.format_table(headers, rows)


def print_report(workloads: list[Workload], info: dict[str, Any], args: argparse.Namespace) -> None:
    print(f"\ninductor_cpp main job: torch {info['torch']}, {info['threads']} thread(s) "
          f"of {info['cpu_count']} CPU(s), {args.iters} timed iters after {args.warmup} warm-up "
          f"(median), cache: {'cold (temporary)' if args.cold_cache else 'user cache'}")
    load = info["load_average_1m"]
    print(f"load average (1 min) before the job: {'-' if load is None else f'{load:.2f}'} "
          f"(when well above 0, other work shares the cores and timings are noisy)\n")
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
