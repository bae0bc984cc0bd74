"""A/B runs in alternating processes: `python -m inductor_cpp.bench ab --env SETTING ... -- CMD`.

Why: many knobs (INDUCTOR_CPP_MATRIX_BLOCKING, ..._FEW_ROWS, ..._CONV_TILE, the GPU tuning, a
thread count) are read once per process, so comparing two settings takes two processes; and a
shared machine's speed drifts by 5-15 % over minutes, more than the effects being tuned. So
this runs any other bench subcommand once per setting and round, in fresh processes, the
settings alternating (round r starts at setting r mod n), and reports each timing of the
subcommand's JSON as the median over rounds per setting, side by side with its ratio to the
first setting. Each process still times eager (and stock Inductor) beside ours, so the ratios
to eager inside one process stay the steadiest figure.

A setting is `--env "NAME=VALUE [NAME=VALUE...]"` (assignments separated by spaces or ";",
values may hold commas) or `--env default`; every name any setting assigns is removed from the
environment first, so "default" really runs the built-in values. `--threads 1,2,4` adds one
setting per thread count (passed as the subcommand's --threads), crossed with the --env ones.
Timings are the JSON's numbers under a key median_s / median_ms / back_to_back_ms, named by
their path (list items by their name, workload, model, ... fields), in ms.

    python -m inductor_cpp.bench ab --env default --env INDUCTOR_CPP_MATRIX_FEW_ROWS=1 \\
        --rounds 3 -- matrix --shapes L8x768x768,32x4096x4096 --no-stock --threads 2
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any

from . import timing

HELP = ("run a bench subcommand under several settings (environment, threads) in alternating "
        "processes; per-setting medians side by side")

# keys whose numbers are timings, and their unit's factor to ms
TIME_KEYS = {"median_s": 1e3, "median_ms": 1.0, "back_to_back_ms": 1.0}
SKIP_KEYS = {"environment", "config", "machine", "samples_s", "round_s", "peaks_measured"}
NAME_KEYS = ("group", "name", "workload", "size_class", "model", "case", "graph", "kernel")
PROCESS_TIMEOUT_S = 3600


def log(message: str) -> None:
    print(f"[ab] {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Setting:
    """One column: environment assignments and extra arguments of the subcommand."""

    env: tuple[tuple[str, str], ...] = ()
    args: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        parts = [f"{k}={v}" for k, v in self.env] + list(self.args)
        return " ".join(parts) or "default"


def parse_env(text: str) -> tuple[tuple[str, str], ...]:
    """"default" -> (); "A=1 B=2,3" or "A=1;B=2,3" -> (("A", "1"), ("B", "2,3"))."""
    if text.strip() in ("", "default"):
        return ()
    pairs = []
    for item in filter(None, re.split(r"[;\s]+", text.strip())):
        name, sep, value = item.partition("=")
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise SystemExit(f"--env: {item!r} is not NAME=VALUE")
        pairs.append((name, value))
    return tuple(pairs)


def settings_of(args: argparse.Namespace) -> list[Setting]:
    envs = [parse_env(e) for e in args.env] or [()]
    threads = ([("--threads", t.strip()) for t in args.thread_counts.split(",")]
               if args.thread_counts else [()])
    out = [Setting(env, tuple(extra)) for env, extra in itertools.product(envs, threads)]
    if len(set(out)) != len(out):
        raise SystemExit("ab: two settings are the same")
    if len(out) < 2:
        log("one setting only: its medians over rounds, nothing to compare")
    return out


def environment(setting: Setting, settings: list[Setting]) -> dict[str, str]:
    env = dict(os.environ)
    for s in settings:
        for name, _ in s.env:
            env.pop(name, None)
    env.update(setting.env)
    return env


# ------------------------------------------------------------------------------- metrics

def _item_name(item: Any, index: int) -> str:
    if isinstance(item, dict):
        parts = [str(item[k]) for k in NAME_KEYS if isinstance(item.get(k), (str, int))]
        if parts:
            return " ".join(parts)
    return str(index)


def metrics(data: Any, path: str = "") -> dict[str, float]:
    """Every timing in a subcommand's JSON: {path: ms}."""
    out: dict[str, float] = {}
    if isinstance(data, list):
        for i, item in enumerate(data):
            out.update(metrics(item, f"{path}[{_item_name(item, i)}]"))
    elif isinstance(data, dict):
        for key, value in data.items():
            if key in SKIP_KEYS or (key == "median_ms" and "median_s" in data):
                continue
            where = f"{path}.{key}" if path else key
            if key in TIME_KEYS:
                out.update(_numbers(value, where, TIME_KEYS[key]))
            else:
                out.update(metrics(value, where))
    return out


def _numbers(value: Any, path: str, scale: float) -> dict[str, float]:
    """A timing, or a dict of them (e.g. median_ms per variant), in ms."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return {path: value * scale}
    if isinstance(value, dict):
        return {k: v for name, x in value.items() for k, v in _numbers(x, f"{path}.{name}",
                                                                      scale).items()}
    return {}


# -------------------------------------------------------------------------------- running

def run_process(command: list[str], env: dict[str, str], out_json: str) -> tuple[int, str]:
    """One subcommand process: its exit code and the tail of its output."""
    try:
        done = subprocess.run([sys.executable, "-m", "inductor_cpp.bench", *command,
                               "--json", out_json], env=env, capture_output=True, text=True,
                              timeout=PROCESS_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return -1, "timeout"
    return done.returncode, (done.stdout + done.stderr)[-3000:]


def run_rounds(command: list[str], settings: list[Setting], rounds: int,
               scratch: str) -> tuple[list[dict[str, Any]], dict[str, dict[str, list[float]]]]:
    """Every setting once per round, the order rotated by one each round."""
    processes: list[dict[str, Any]] = []
    samples: dict[str, dict[str, list[float]]] = {}
    for r in range(rounds):
        shift = r % len(settings)
        for setting in settings[shift:] + settings[:shift]:
            out_json = os.path.join(scratch, f"round{r}-{settings.index(setting)}.json")
            start = time.perf_counter()
            rc, tail = run_process(command + list(setting.args), environment(setting, settings),
                                   out_json)
            seconds = time.perf_counter() - start
            processes.append({"round": r, "setting": setting.label, "rc": rc, "seconds": seconds})
            log(f"round {r + 1}/{rounds}, {setting.label}: exit {rc}, {seconds:.0f} s")
            if rc != 0:
                log(f"{setting.label}: the subcommand failed; its output ends with:\n{tail}")
            if not os.path.exists(out_json):
                continue
            with open(out_json) as f:
                for path, ms in metrics(json.load(f)).items():
                    samples.setdefault(path, {}).setdefault(setting.label, []).append(ms)
    return processes, samples


def summarize(samples: dict[str, dict[str, list[float]]],
              labels: list[str]) -> dict[str, dict[str, Any]]:
    """Per metric and setting: the samples, their median and the ratio first setting / this."""
    out: dict[str, dict[str, Any]] = {}
    for path, per_setting in samples.items():
        medians = {label: statistics.median(v) for label, v in per_setting.items()}
        base = medians.get(labels[0])
        out[path] = {label: {"samples_ms": per_setting[label], "median_ms": m,
                             "vs_first": timing.speedup(base, m) if base else None}
                     for label, m in medians.items()}
    return out


def short_name(path: str) -> str:
    """A timing's path for the table: "cases[sum0 cache].variants.eager.timing.median_s" ->
    "cases[sum0 cache] eager" (the JSON keeps the whole path)."""
    for unit in (".timing.median_s", ".timing.median_ms", ".median_s", ".median_ms"):
        path = path.replace(unit, "")
    return path.replace(".variants.", " ")


def table(summary: dict[str, dict[str, Any]], labels: list[str]) -> str:
    headers = ["timing (ms)"] + [f"[{i}]" for i in range(len(labels))]
    rows = []
    for path, per_setting in summary.items():
        cells = []
        for i, label in enumerate(labels):
            entry = per_setting.get(label)
            if entry is None:
                cells.append("-")
                continue
            ratio = "" if i == 0 else f" ({timing.format_ratio(entry['vs_first'])})"
            cells.append(f"{entry['median_ms']:.4g}{ratio}")
        rows.append([short_name(path)] + cells)
    legend = "\n".join(f"[{i}] {label}" for i, label in enumerate(labels))
    return (f"{legend}\nmedian over rounds; (x): setting [0]'s time / this one's (>1: faster)\n"
            + timing.format_table(headers, rows))


# ---------------------------------------------------------------------------- subcommand

def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--env", action="append", default=[], metavar="SETTING",
                   help='one setting: "NAME=VALUE [NAME=VALUE...]" or "default" (repeat it per '
                        'setting)')
    p.add_argument("--threads", dest="thread_counts", default=None, metavar="N,N",
                   help="one setting per thread count (the subcommand's --threads)")
    p.add_argument("--rounds", type=int, default=3, help="processes per setting")
    p.add_argument("--json", metavar="PATH", default=None, help="write all results as JSON")
    p.add_argument("command", nargs=argparse.REMAINDER,
                   help="-- then the subcommand and its arguments (without --json)")


def result_name(args: argparse.Namespace) -> tuple[str, str | None]:
    """("ab-<subcommand>", the thread counts) for the default JSON path."""
    command = [c for c in args.command if c != "--"]
    threads = args.thread_counts
    if threads is None and "--threads" in command[:-1]:
        threads = command[command.index("--threads") + 1]
    return (f"ab-{command[0]}" if command else "ab"), threads


def run(args: argparse.Namespace) -> int:
    command = args.command[1:] if args.command[:1] == ["--"] else list(args.command)
    if not command or command[0] == "ab":
        raise SystemExit("ab: give the subcommand to run after --, e.g. -- micro --only sum0")
    if "--json" in command:
        raise SystemExit("ab: leave --json out of the subcommand (ab gives each process its own)")
    if args.rounds < 1:
        raise SystemExit("--rounds must be >= 1")
    settings = settings_of(args)
    labels = [s.label for s in settings]
    with tempfile.TemporaryDirectory(prefix="inductor_cpp_ab_") as scratch:
        processes, samples = run_rounds(command, settings, args.rounds, scratch)
    summary = summarize(samples, labels)
    print(f"ab: {' '.join(command)}; {args.rounds} round(s) of {len(settings)} processes")
    print(table(summary, labels) if summary else "no timings in the subcommand's JSON")
    failed = [p for p in processes if p["rc"] != 0]
    timing.write_json(args.json, {"command": command, "settings": labels, "rounds": args.rounds,
                                  "environment": timing.environment_info(),
                                  "processes": processes, "timings": summary})
    print(f"results written to {args.json}")
    return 1 if failed or not summary else 0
