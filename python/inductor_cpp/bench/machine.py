"""The machine's limits: `python -m inductor_cpp.bench machine [--remeasure]`.

Achieved GB/s means little without the machine's own ceiling, so this probe measures, with
torch at the benchmark's thread count:

  * copy bandwidth, DRAM class: dst.copy_(src) on two large float32 tensors (1 GiB each by
    default, past the last-level cache); bytes moved = 2 x size (read + write);
  * copy bandwidth, cache class: the same on 16 MiB tensors (the micro suite's cache size);
  * STREAM-triad-like bandwidth: torch.add(b, c, alpha=s, out=a) on DRAM-sized tensors;
    bytes = 3 x size (two reads, one write);
  * matmul rate: float32 GFLOP/s of a square matmul (the ceiling for compute-bound work).

Each is the median of several runs after a warm-up. The result is cached as JSON under
~/.cache/inductor_cpp/machine/<cpu model>-<cores>cpus-<threads>t.json (directory overridable with
INDUCTOR_CPP_MACHINE_DIR) and reused while its probe sizes match, since a 1 GiB probe costs
seconds; --remeasure redoes it (e.g. after the machine changed).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import time
from dataclasses import asdict, dataclass
from typing import Any

import torch

from .. import knobs
from . import timing

HELP = "measure (or show the cached) copy/triad bandwidth and matmul rate of this machine"

FORMAT_VERSION = 1
FLOAT_BYTES = 4
DEFAULT_DRAM_BYTES = 1 << 30  # per tensor
DEFAULT_CACHE_BYTES = 1 << 24  # per tensor: 2^22 float32, like the micro suite's cache class
DEFAULT_MATMUL_N = 2048


@dataclass
class ProbeConfig:
    """What is measured; a cached result is reused only for the same config."""

    threads: int
    dram_bytes: int = DEFAULT_DRAM_BYTES
    cache_bytes: int = DEFAULT_CACHE_BYTES
    matmul_n: int = DEFAULT_MATMUL_N
    reps: int = 5


@dataclass
class MachineLimits:
    """Measured ceilings, in GB/s (1e9 bytes per second) and GFLOP/s."""

    host: str
    threads: int
    torch: str
    copy_dram_gbs: float
    copy_cache_gbs: float
    triad_dram_gbs: float
    matmul_gflops: float
    config: dict[str, Any]
    measured_at: str
    format_version: int = FORMAT_VERSION

    def copy_gbs(self, size_class: str) -> float:
        """Copy bandwidth to compare a workload of that size class against."""
        return self.copy_cache_gbs if size_class == "cache" else self.copy_dram_gbs

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# ---------------------------------------------------------------------------- measurement

def _median_s(fn, reps: int) -> float:
    return timing.time_median(fn, iters=reps, warmup=1).median_s


def measure_copy_gbs(nbytes: int, reps: int) -> float:
    numel = max(nbytes // FLOAT_BYTES, 1)
    src = torch.rand(numel)
    dst = torch.empty_like(src)
    seconds = _median_s(lambda: dst.copy_(src), reps)
    return 2 * numel * FLOAT_BYTES / seconds / 1e9


def measure_triad_gbs(nbytes: int, reps: int) -> float:
    numel = max(nbytes // FLOAT_BYTES, 1)
    b, c = torch.rand(numel), torch.rand(numel)
    a = torch.empty_like(b)
    seconds = _median_s(lambda: torch.add(b, c, alpha=3.0, out=a), reps)
    return 3 * numel * FLOAT_BYTES / seconds / 1e9


def measure_matmul_gflops(n: int, reps: int) -> float:
    a, b = torch.rand(n, n), torch.rand(n, n)
    out = torch.empty(n, n)
    seconds = _median_s(lambda: torch.mm(a, b, out=out), reps)
    return 2 * n**3 / seconds / 1e9


def measure(config: ProbeConfig) -> MachineLimits:
    """Run every probe at the config's thread count (restored afterwards)."""
    previous = torch.get_num_threads()
    timing.set_threads(config.threads)
    try:
        copy_dram = measure_copy_gbs(config.dram_bytes, config.reps)
        triad = measure_triad_gbs(config.dram_bytes, config.reps)
        # the small copy runs many more times: one call is only microseconds
        copy_cache = measure_copy_gbs(config.cache_bytes, config.reps * 20)
        matmul = measure_matmul_gflops(config.matmul_n, config.reps)
    finally:
        torch.set_num_threads(previous)
    return MachineLimits(host=socket.gethostname(), threads=config.threads,
                         torch=torch.__version__, copy_dram_gbs=copy_dram,
                         copy_cache_gbs=copy_cache, triad_dram_gbs=triad,
                         matmul_gflops=matmul, config=asdict(config),
                         measured_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"))


# ---------------------------------------------------------------------------------- cache

def cache_dir() -> str:
    override = knobs.raw("INDUCTOR_CPP_MACHINE_DIR")
    if override:
        return os.path.abspath(override)
    return os.path.join(os.path.expanduser("~"), ".cache", "inductor_cpp", "machine")


def cache_path(threads: int) -> str:
    """Keyed by the CPU model and core count, not the host name: a host name moves to other
    hardware (cloud machines, containers) and the limits with it would go stale."""
    from .timing import cpu_model

    model = re.sub(r"[^A-Za-z0-9]+", "_", cpu_model()).strip("_") or "cpu"
    return os.path.join(cache_dir(), f"{model}-{os.cpu_count()}cpus-{threads}t.json")


def _load_cached(path: str, config: ProbeConfig) -> MachineLimits | None:
    """The cached result, if present, readable and measured with the same config."""
    try:
        with open(path) as f:
            data = json.load(f)
        limits = MachineLimits(**data)
    except (OSError, ValueError, TypeError):
        return None
    if limits.format_version != FORMAT_VERSION or limits.config != asdict(config):
        return None
    return limits


def _store(path: str, limits: MachineLimits) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(limits.to_dict(), f, indent=2)
        f.write("\n")
    os.replace(tmp, path)  # atomic: a concurrent reader sees the old or the new file


def machine_limits(config: ProbeConfig, remeasure: bool = False,
                   log=lambda message: None) -> MachineLimits:
    """The cached limits for this host and thread count, measured (and cached) if missing,
    stale (other probe sizes) or when remeasure is set."""
    path = cache_path(config.threads)
    if not remeasure:
        cached = _load_cached(path, config)
        if cached is not None:
            log(f"machine limits from {path} (measured {cached.measured_at}; "
                f"--remeasure to redo)")
            return cached
    log(f"measuring machine limits ({config.dram_bytes / 2**30:.2f} GiB copy/triad, "
        f"{config.threads} thread(s))")
    limits = measure(config)
    try:
        _store(path, limits)
    except OSError as e:  # a read-only home still gets the numbers, just not cached
        log(f"could not cache machine limits at {path}: {e}")
    return limits


def describe(limits: MachineLimits) -> str:
    return (f"machine {limits.host}, {limits.threads} thread(s): copy {limits.copy_dram_gbs:.1f} "
            f"GB/s (DRAM, {limits.config['dram_bytes'] / 2**20:.0f} MiB), "
            f"{limits.copy_cache_gbs:.1f} GB/s (cache, "
            f"{limits.config['cache_bytes'] / 2**20:.0f} MiB); triad "
            f"{limits.triad_dram_gbs:.1f} GB/s; matmul {limits.matmul_gflops:.1f} GFLOP/s")


# ---------------------------------------------------------------------------- subcommand

def add_probe_arguments(p: argparse.ArgumentParser) -> None:
    """The probe's flags (shared with the micro benchmark)."""
    p.add_argument("--remeasure", action="store_true",
                   help="measure the machine limits again instead of using the cached ones")
    p.add_argument("--probe-mib", type=int, default=DEFAULT_DRAM_BYTES >> 20,
                   help="size of each DRAM-class probe tensor, MiB")


def probe_config(args: argparse.Namespace, threads: int) -> ProbeConfig:
    if args.probe_mib < 1:
        raise SystemExit("--probe-mib must be >= 1")
    return ProbeConfig(threads=threads, dram_bytes=args.probe_mib << 20)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--threads", type=int, default=None,
                   help="torch intra-op threads (default: torch.get_num_threads())")
    add_probe_arguments(p)
    p.add_argument("--json", metavar="PATH", default=None, help="also write the limits here")


def run(args: argparse.Namespace) -> int:
    threads = timing.set_threads(args.threads)
    limits = machine_limits(probe_config(args, threads), args.remeasure,
                            log=lambda m: print(f"[machine] {m}", flush=True))
    print(describe(limits))
    print(f"cached at {cache_path(threads)}")
    if args.json:
        timing.write_json(args.json, limits.to_dict())
    return 0
