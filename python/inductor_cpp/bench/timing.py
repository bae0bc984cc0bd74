"""Shared timing and reporting helpers for the inductor_cpp benchmarks.

Every benchmark should measure the same way so numbers are comparable across jobs: a fixed
thread count (torch.set_num_threads), warm-up calls, then the median of N timed calls; ratios
are always "baseline time / candidate time" (>1 means the candidate is faster). Also: the
arguments every timed subcommand shares, fresh compile caches, error metrics between tensors, a
plain-text table formatter, the report header and JSON output.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import torch

# ---------------------------------------------------------------------------------- setup

def set_threads(threads: int | None) -> int:
    """Pin torch's intra-op thread count (None keeps the current one); returns the count."""
    if threads is not None:
        if threads < 1:
            raise ValueError(f"thread count must be >= 1, got {threads}")
        torch.set_num_threads(threads)
    return torch.get_num_threads()


def add_timing_arguments(p: argparse.ArgumentParser, iters: int | None, warmup: int | None,
                         iters_help: str, warmup_help: str,
                         threads_help: str | None = None) -> None:
    """--threads, --iters, --warmup and --seed, as every timed subcommand takes them."""
    p.add_argument("--threads", type=int, default=None,
                   help=threads_help or "torch intra-op threads (default: torch.get_num_threads())")
    p.add_argument("--iters", type=int, default=iters, help=iters_help)
    p.add_argument("--warmup", type=int, default=warmup, help=warmup_help)
    p.add_argument("--seed", type=int, default=0)


def use_cold_caches(prefix: str) -> tempfile.TemporaryDirectory:
    """Point inductor_cpp's and stock Inductor's caches at a fresh temporary directory (so first
    calls are cold compiles); the caller cleans it up."""
    tmp = tempfile.TemporaryDirectory(prefix=prefix)
    os.environ["INDUCTOR_CPP_CACHE_DIR"] = os.path.join(tmp.name, "inductor_cpp")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(tmp.name, "torchinductor")
    return tmp


def seed_all(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)


def environment_info() -> dict[str, Any]:
    """What a reader needs to interpret the numbers (charts print it too)."""
    return {
        "torch": torch.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "processor": platform.processor() or platform.machine(),
        "cpu_model": cpu_model(),
        "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
        "cpu_count": os.cpu_count(),
        "threads": torch.get_num_threads(),
        "load_average_1m": load_average(),
        "commit": commit(),
        "build_id": build_id(),
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"),
    }


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def build_id() -> str | None:
    """The extension's build id (first 12 hex digits): names the sources where git cannot."""
    try:
        from inductor_cpp import _C

        return _C.build_id()[:12]
    except ImportError:
        return None


def commit() -> str | None:
    """The source tree's git commit (a `+` when it has changes), None outside a checkout."""
    import subprocess

    here = os.path.dirname(os.path.abspath(__file__))
    try:
        rev = subprocess.run(["git", "-C", here, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=10)
        if rev.returncode != 0:
            return None
        dirty = subprocess.run(["git", "-C", here, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
        return rev.stdout.strip() + ("+" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


def load_average() -> float | None:
    """The 1-minute load average: other work on the machine makes timings noisy."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


# --------------------------------------------------------------------------------- timing

@dataclass
class Timing:
    """Seconds per call over the timed (post-warm-up) calls."""

    median_s: float
    min_s: float
    max_s: float
    samples_s: list[float]

    @property
    def median_ms(self) -> float:
        return self.median_s * 1e3

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["median_ms"] = self.median_ms
        return d


def time_once(fn: Callable[[], Any]) -> tuple[float, Any]:
    """Seconds one call of fn takes, and its result."""
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def summarize(samples: Sequence[float]) -> Timing:
    if not samples:
        raise ValueError("no timing samples")
    return Timing(statistics.median(samples), min(samples), max(samples), list(samples))


def time_median(fn: Callable[[], Any], iters: int, warmup: int) -> Timing:
    """Call fn `warmup` times untimed, then `iters` times timed; the median and spread."""
    if iters < 1:
        raise ValueError(f"iters must be >= 1, got {iters}")
    for _ in range(warmup):
        fn()
    return summarize([time_once(fn)[0] for _ in range(iters)])


def time_interleaved(fns: Mapping[str, Callable[[], Any]], iters: int,
                     warmup: int) -> dict[str, Timing]:
    """time_median for several callables at once, calling them round-robin (warm-up rounds,
    then `iters` timed rounds), so that a burst of other load on the machine hits every
    candidate alike instead of skewing whichever happened to run during it."""
    if iters < 1:
        raise ValueError(f"iters must be >= 1, got {iters}")
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(iters):
        for name, fn in fns.items():
            samples[name].append(time_once(fn)[0])
    return {name: summarize(s) for name, s in samples.items()}


def time_rounds(fns: Mapping[str, Callable[[], Any]], iters: int, warmup: int,
                on_error: Callable[[str, Exception], None]) -> dict[str, Timing]:
    """Like time_interleaved, but a callable that raises is reported to on_error(name, exception)
    and dropped, and the others go on; returns the Timing of each survivor."""
    fns = dict(fns)
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for round_index in range(warmup + iters):
        for name in list(fns):
            try:
                seconds, _ = time_once(fns[name])
            except Exception as e:  # noqa: BLE001  (reported; the other variants still count)
                on_error(name, e)
                del fns[name], samples[name]
                continue
            if round_index >= warmup:
                samples[name].append(seconds)
    return {name: summarize(s) for name, s in samples.items()}


# --------------------------------------------------------------------------------- errors

def _flat(tensors: torch.Tensor | Iterable[torch.Tensor]) -> list[torch.Tensor]:
    if isinstance(tensors, torch.Tensor):
        return [tensors]
    return list(tensors)


def max_abs_diff(actual, expected) -> float:
    """Largest |actual - expected| over matching tensors (or lists of tensors)."""
    pairs = zip(_flat(actual), _flat(expected), strict=True)
    return max((float((a.detach().double() - e.detach().double()).abs().max()) for a, e in pairs),
               default=0.0)


def max_rel_diff(actual, expected, floor: float = 1e-12) -> float:
    """Largest relative difference over the tensors, each tensor's max |actual - expected|
    divided by its max |expected| (not elementwise: entries near zero would dominate)."""
    worst = 0.0
    for a, e in zip(_flat(actual), _flat(expected), strict=True):
        if a.numel() == 0:
            continue
        a, e = a.detach().double(), e.detach().double()
        scale = max(float(e.abs().max()), floor)
        worst = max(worst, float((a - e).abs().max()) / scale)
    return worst


def all_close(actual, expected, rtol: float, atol: float) -> bool:
    return all(torch.allclose(a.detach(), e.detach(), rtol=rtol, atol=atol)
               for a, e in zip(_flat(actual), _flat(expected), strict=True))


# ------------------------------------------------------------------------------ reporting

def speedup(baseline_s: float, candidate_s: float) -> float:
    """baseline / candidate: >1 means the candidate is faster."""
    return baseline_s / candidate_s if candidate_s > 0 else float("inf")


def format_ratio(ratio: float | None) -> str:
    return "-" if ratio is None else f"{ratio:.2f}x"


def format_ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:.2f}"


def format_s(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.2f}"


def load_text(load: float | None) -> str:
    return "-" if load is None else f"{load:.2f}"


def report_header(title: str, info: Mapping[str, Any], detail: str, after: str) -> str:
    """The first line of a report: what ran, torch, threads, and the load average before the run
    (from info) and now; `detail` goes after the title, `after` explains the load."""
    return (f"\ninductor_cpp {title}: torch {info['torch']}{detail}, {info['threads']} thread(s) "
            f"of {info['cpu_count']} CPU(s), load average (1 min) "
            f"{load_text(info['load_average_1m'])} before, {load_text(load_average())} "
            f"after ({after})")


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain-text table with a header rule, columns padded to their widest cell."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]

    def line(row: Sequence[str]) -> str:
        return " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()

    rule = "-+-".join("-" * w for w in widths)
    return "\n".join([line(cells[0]), rule] + [line(r) for r in cells[1:]])


def _json_default(obj: Any) -> Any:
    if isinstance(obj, Timing):
        return obj.to_dict()
    if isinstance(obj, torch.Tensor):
        return obj.tolist()
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    return str(obj)


def write_json(path: str, data: Any) -> None:
    """Write data as indented JSON (Timing, tensors and unknown objects converted)."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    with open(path, "w") as f:
        json.dump(data, f, indent=2, default=_json_default, allow_nan=True)
        f.write("\n")
