"""Report of the suite benchmark: the tables, the geometric means, the verdict and the chart.

Input is suite.py's result dictionary: results["devices"][device]["workloads"][name] =
{"description", "train", "variants": {variant: {"first_call_s", "timing", "check", "compile",
"error", "warm": {"first_call_s", "compile_peak_bytes", "run_peak_bytes", "error"}}}}.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from . import timing

EAGER, OURS, STOCK = "eager", "inductor_cpp", "inductor"
# A variant whose timed calls spread (interquartile range) by more than this share of their
# median is noisy: its row's ratio is flagged, not reported as a result.
NOISY = 0.10


def _median(v: dict[str, Any] | None) -> float | None:
    t = (v or {}).get("timing")
    return t["median_s"] if t else None


def _ratio(base: float | None, mine: float | None) -> float | None:
    return base / mine if base and mine else None


def _mib(n: int | None) -> str:
    return "-" if n is None else f"{n / 2**20:.0f}"


def _rows(results: dict[str, Any]):
    for device, d in results["devices"].items():
        for name, w in d["workloads"].items():
            yield device, name, w, w.get("variants", {})


def _correct(v: dict[str, Any] | None) -> str:
    if v is None:
        return "-"
    if v.get("error"):
        return "ERROR"
    check = v.get("check")
    if check is None:
        return "-"
    return ("yes (fp64)" if (check.get("detail") or {}).get("passed_by") == "fp64" else "yes") \
        if check["ok"] else "NO"


def _speed_cell(v: dict[str, Any] | None, eager_s: float | None) -> str:
    if v is None:
        return "skipped"
    mine = _median(v)
    if mine is None:
        return "failed"
    return f"{timing.format_ms(mine)} ({timing.format_ratio(_ratio(eager_s, mine))})"


def spread(v: dict[str, Any] | None) -> float | None:
    """Interquartile range of a variant's timed calls over their median (None under 4 calls)."""
    t = (v or {}).get("timing") or {}
    samples = t.get("samples_s") or []
    if len(samples) < 4 or not t.get("median_s"):
        return None
    q1, _, q3 = statistics.quantiles(samples, n=4)
    return (q3 - q1) / t["median_s"]


def _spread_cell(vs: dict[str, Any]) -> tuple[str, bool]:
    """"3% / 14%! / 5%" over the variants present, and whether any is noisy."""
    cells, noisy = [], False
    for variant in (EAGER, OURS, STOCK):
        if variant not in vs:
            continue
        s = spread(vs[variant])
        noisy |= s is not None and s > NOISY
        cells.append("-" if s is None else f"{s * 100:.0f}%" + ("!" if s > NOISY else ""))
    return " / ".join(cells), noisy


def speed_table(results: dict[str, Any]) -> str:
    rows = []
    for device, name, w, vs in _rows(results):
        if w.get("skipped"):
            rows.append([device, name, "train", w["skipped"]] + ["-"] * 6)
            continue
        eager_s = _median(vs.get(EAGER))
        ours, stock = vs.get(OURS), vs.get(STOCK)
        c = (ours or {}).get("compile", {})
        ops = f"{c['ops_generated']}/{c['ops_fallback']}" if "ops_generated" in c else "-"
        spreads, noisy = _spread_cell(vs)
        versus = timing.format_ratio(_ratio(_median(stock), _median(ours)))
        rows.append([device, name, "train" if w.get("train") else "infer",
                     timing.format_ms(eager_s) if eager_s else "failed",
                     _speed_cell(ours, eager_s), _speed_cell(stock, eager_s),
                     f"noisy ({versus})" if noisy else versus,
                     f"{_correct(ours)} / {_correct(stock)}", ops, spreads])
    headers = ["device", "workload", "mode", "eager ms", "inductor_cpp ms (x eager)",
               "inductor ms (x eager)", "ours vs stock", "correct ours / stock",
               "ops gen/fallback", "spread (IQR / median; ! > 10%)"]
    return timing.format_table(headers, rows)


def _pair(a: Any, b: Any) -> str:
    return f"{a} / {b}"


def compile_memory_table(results: dict[str, Any]) -> str:
    rows = []
    for device, name, _, vs in _rows(results):
        def first(variant: str, warm: bool) -> str:
            v = vs.get(variant)
            if v is None:
                return "-"
            return timing.format_s((v.get("warm", {}) if warm else v).get("first_call_s"))

        def peak(variant: str, key: str) -> str:
            return _mib((vs.get(variant) or {}).get("warm", {}).get(key))

        rows.append([device, name, _pair(first(OURS, False), first(STOCK, False)),
                     _pair(first(OURS, True), first(STOCK, True)),
                     f"{peak(EAGER, 'run_peak_bytes')} / {peak(OURS, 'run_peak_bytes')} / "
                     f"{peak(STOCK, 'run_peak_bytes')}",
                     _pair(peak(OURS, "compile_peak_bytes"), peak(STOCK, "compile_peak_bytes"))])
    headers = ["device", "workload", "first call cold s ours / stock",
               "warm s ours / stock", "run peak MiB eager / ours / stock",
               "compile peak MiB ours / stock"]
    return timing.format_table(headers, rows)


def _geomean(values: list[float]) -> float | None:
    values = [v for v in values if v and v > 0]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def geomeans(results: dict[str, Any]) -> dict[str, dict[str, float | None]]:
    out = {}
    for device, d in results["devices"].items():
        pairs = {"inductor_cpp vs eager": (EAGER, OURS), "inductor vs eager": (EAGER, STOCK),
                 "inductor_cpp vs inductor": (STOCK, OURS)}
        out[device] = {label: _geomean([_ratio(_median(w["variants"].get(base)),
                                               _median(w["variants"].get(mine)))
                                        for w in d["workloads"].values()])
                       for label, (base, mine) in pairs.items()}
    return out


def ours_ok(results: dict[str, Any]) -> bool:
    """Every workload eager ran: inductor_cpp ran, matched eager and started warm."""
    for _, _, _, vs in _rows(results):
        eager = vs.get(EAGER)
        if eager is None or eager.get("error"):
            continue
        ours = vs.get(OURS)
        if ours is None or ours.get("error") or not (ours.get("check") or {}).get("ok"):
            return False
        if (ours.get("warm") or {}).get("error"):
            return False
    return True


def report(results: dict[str, Any], threads: int) -> str:
    info = results["environment"]
    load = info.get("load_average_1m")
    smoke = (results.get("config") or {}).get("quick")
    lines = (["SMOKE RUN (--quick: tiny sizes, few rounds): it shows that everything runs; its "
              "timings are not results"] if smoke else [])
    lines += [f"inductor_cpp suite: torch {info['torch']}, {threads} thread(s) of "
             f"{info['cpu_count']} CPU(s), load {'-' if load is None else f'{load:.2f}'}; "
             f"variants {', '.join(results['variants'])}; medians of interleaved runs", "",
             speed_table(results), "", compile_memory_table(results), ""]
    for device, g in geomeans(results).items():
        lines.append(f"geomean speedup ({device}): " + ", ".join(
            f"{label} {timing.format_ratio(v)}" for label, v in g.items()))
    for device, d in results["devices"].items():
        for error in d.get("errors", []):
            lines.append(f"{device}: {error}")
        for name, w in d["workloads"].items():
            for variant, v in w.get("variants", {}).items():
                warm_error = v.get("warm", {}).get("error")
                for where, err in (("", v.get("error")), (" (warm)", warm_error)):
                    if err:
                        lines.append(f"{device} {name} {variant}{where}: {err[:300]}")
    return "\n".join(lines)


# One colour per backend in every chart (cold and warm first calls: the same hue).
COLORS = {OURS: "tab:blue", STOCK: "tab:orange", EAGER: "tab:gray"}


def _environment_line(results: dict[str, Any]) -> str:
    env = results.get("environment", {})
    parts = [env.get("date_utc") and f"{env['date_utc']} UTC", env.get("cpu_model"),
             env.get("gpu"), env.get("threads") and f"{env['threads']} thread(s)",
             env.get("torch") and f"torch {env['torch']}",
             f"commit {env['commit']}" if env.get("commit")
             else env.get("build_id") and f"build {env['build_id']}"]
    return " | ".join(str(p) for p in parts if p)


def chart(results: dict[str, Any], path: str) -> None:
    """Speedup over eager per workload (ours and stock) and first-call times, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels, speed, first, failed = [], {OURS: [], STOCK: []}, {}, []
    for device, name, _, vs in _rows(results):
        labels.append(f"{name}\n{device}" if len(results["devices"]) > 1 else name)
        eager_s = _median(vs.get(EAGER))
        for offset, variant in ((-0.2, OURS), (0.2, STOCK)):
            v = vs.get(variant) or {}
            speed[variant].append(_ratio(eager_s, _median(v)) or 0.0)
            if variant in vs and _median(v) is None:
                failed.append(len(labels) - 1 + offset)
            for phase, value in (("cold", v.get("first_call_s")),
                                 ("warm", v.get("warm", {}).get("first_call_s"))):
                first.setdefault(f"{variant} {phase}", []).append(value or 0.0)
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(max(8, 1.1 * len(labels)), 9.5))
    x = range(len(labels))
    width = 0.4
    ax1.bar([i - width / 2 for i in x], [v or 1e-3 for v in speed[OURS]], width,
            label="inductor_cpp", color=COLORS[OURS])
    if any(speed[STOCK]):
        ax1.bar([i + width / 2 for i in x], [v or 1e-3 for v in speed[STOCK]], width,
                label="stock Inductor", color=COLORS[STOCK])
    ax1.set_yscale("log", base=2)
    shown = [v for v in speed[OURS] + speed[STOCK] if v]
    ax1.set_ylim(min(shown + [1.0]) / 1.5, max(shown + [1.0]) * 1.5)
    for position in failed:
        ax1.text(position, 1.0, "failed", rotation=90, ha="center", va="bottom", fontsize=8)
    ax1.axhline(1.0, color="black", linewidth=1, linestyle="--", label="eager (1x)")
    ax1.set_ylabel("speedup over eager (x, log; higher is better)")
    ax1.set_xticks(list(x), labels, fontsize=8)
    ax1.legend()
    ax1.set_title("inductor_cpp suite: median time, eager / compiled")
    series = [(k, v) for k, v in first.items() if any(v)]
    bar = 0.8 / max(len(series), 1)
    for k, (label, values) in enumerate(series):
        variant, phase = label.rsplit(" ", 1)
        ax2.bar([i - 0.4 + bar * (k + 0.5) for i in x], values, bar, label=label,
                color=COLORS[variant], alpha=1.0 if phase == "cold" else 0.5)
    ax2.set_yscale("log")
    ax2.set_ylabel("first call, s (log; lower is better)")
    ax2.set_xticks(list(x), labels, fontsize=8)
    if series:
        ax2.legend(fontsize=8)
    ax2.set_title("compile: first call with empty caches (cold) and in a new process (warm)")
    fig.text(0.01, 0.005, _environment_line(results), fontsize=7, color="dimgray")
    fig.tight_layout(rect=(0, 0.02, 1, 1))
    fig.savefig(path, dpi=100)
    plt.close(fig)
