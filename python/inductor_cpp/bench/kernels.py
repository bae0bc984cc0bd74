"""Kernel microbenchmark: `python -m inductor_cpp.bench kernels <cache key | debug dir>`.

Runs each generated kernel of one compiled graph alone, on random inputs of the layouts the
compiler recorded, and rates it against the machine's measured limits (machine.py, measured
once per host and thread count, then cached):

  * time: median of --iters calls after --warmup calls, timed in C++ around the bare kernel
    call (no allocation, no plan, no Python), with num_threads = the benchmark's thread count;
  * bytes: every parameter's storage span (sizes and strides) times its element size, each
    counted once (inputs read once, outputs written once); GB/s = bytes / median, and its
    share of the copy bandwidth of the matching size class (cache class when the bytes fit
    in twice the cache probe, else DRAM);
  * flops: the compiler's estimate (inductor/kernel_info.h: math nodes per statement times the
    iterations of its loops; loads, casts and index arithmetic do not count); GFLOP/s and its
    share of the measured float32 matmul rate.

Inputs: floating parameters standard normal, integer parameters zero (always in range where
they index something), bool random. The target is a cache key (or a unique prefix of one, in
the cache root `python -m inductor_cpp.cache info` shows), or a directory written by
INDUCTOR_CPP_DEBUG_DIR: one graph's subdirectory, or the root (every graph in it).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from . import machine, timing

HELP = ("run each generated kernel of a compiled graph alone: median time, GB/s and GFLOP/s "
        "vs the machine's limits")

KEY_PREFIX = re.compile(r"^[0-9a-f]{6,64}$")


@dataclass
class GraphKernels:
    """Where one graph's kernels are: kernels.json's list and the library to load."""

    label: str  # cache key or debug subdirectory name
    directory: str
    kernels: list[dict[str, Any]]
    library: str


@dataclass
class KernelResult:
    graph: str
    name: str
    nodes: list[int]
    params: int
    bytes: int
    flops: int
    median_s: float | None = None
    min_s: float | None = None
    gbs: float | None = None
    copy_share: float | None = None  # of the machine's copy bandwidth, size class below
    size_class: str = ""
    gflops: float | None = None
    matmul_share: float | None = None
    error: str | None = None
    samples_s: list[float] = field(default_factory=list, repr=False)


def log(message: str) -> None:
    print(f"[kernels] {message}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------- locating

def _read_kernels(directory: str) -> list[dict[str, Any]]:
    path = os.path.join(directory, "kernels.json")
    if not os.path.exists(path):
        raise SystemExit(f"{directory} has no kernels.json (written by an older inductor_cpp, or "
                         "not a compiled graph): compile the graph again")
    with open(path) as f:
        return json.load(f)


def _compile_from_debug_dir(directory: str) -> str:
    """kernels.so rebuilt from the dump's kernels.cpp with its recorded compiler command (the
    cache entry it came from is gone), in a temporary directory."""
    with open(os.path.join(directory, "compile_command.txt")) as f:
        command = next((line for line in f if line.strip() and not line.startswith("#")), "")
    include = re.search(r"-I(\S+)", command)
    if not command or not include:
        raise SystemExit(f"{directory}: no kernels.so and no usable compile_command.txt")
    build = tempfile.mkdtemp(prefix="inductor_cpp-bench-")
    for name in ("kernels.cpp", "ic_runtime.h"):
        shutil.copyfile(os.path.join(directory, name), os.path.join(build, name))
    words = [w.replace(include.group(1), build) for w in shlex.split(command)]
    log(f"{directory}: no kernels.so; compiling kernels.cpp: {' '.join(words)}")
    subprocess.run(words, check=True)
    return os.path.join(build, "kernels.so")


def _from_debug_dir(directory: str) -> GraphKernels:
    kernels = _read_kernels(directory)
    library = os.path.join(directory, "kernels.so")
    if kernels and not os.path.exists(library):
        library = _compile_from_debug_dir(directory)
    return GraphKernels(os.path.basename(os.path.normpath(directory)), directory, kernels, library)


def _cache_root() -> str:
    from .. import _C

    return _C.cache_root()


def _from_cache(prefix: str) -> GraphKernels:
    shard = os.path.join(_cache_root(), prefix[:2])
    matches = sorted(e for e in (os.listdir(shard) if os.path.isdir(shard) else [])
                     if e.startswith(prefix))
    if not matches:
        raise SystemExit(f"no cache entry with key {prefix}... in {_cache_root()}")
    if len(matches) > 1:
        raise SystemExit(f"key prefix {prefix} is ambiguous: {', '.join(matches)}")
    directory = os.path.join(shard, matches[0])
    return GraphKernels(matches[0], directory, _read_kernels(directory),
                        os.path.join(directory, "kernels.so"))


def locate(target: str) -> list[GraphKernels]:
    """The graphs a target names: a debug subdirectory, a debug root, or a cache key."""
    if os.path.isdir(target):
        if os.path.exists(os.path.join(target, "kernels.json")):
            return [_from_debug_dir(target)]
        subdirs = sorted(d for d in os.listdir(target)
                         if os.path.exists(os.path.join(target, d, "kernels.json")))
        if not subdirs:
            raise SystemExit(f"{target}: neither a graph's debug directory nor a debug root")
        return [_from_debug_dir(os.path.join(target, d)) for d in subdirs]
    if KEY_PREFIX.match(target):
        return [_from_cache(target)]
    raise SystemExit(f"{target!r} is neither a directory nor a cache key (6-64 hex digits)")


# -------------------------------------------------------------------------------- running

def span(sizes: list[int], strides: list[int]) -> int:
    """Elements of storage a layout reaches (0 for an empty tensor)."""
    if any(s == 0 for s in sizes):
        return 0
    return 1 + sum((s - 1) * abs(st) for s, st in zip(sizes, strides))


def make_argument(param: dict[str, Any], generator: torch.Generator) -> torch.Tensor:
    """A tensor with the parameter's layout: floats normal, integers zero, bools random."""
    dtype = getattr(torch, param["dtype"])
    n = span(param["sizes"], param["strides"])
    if dtype.is_floating_point:
        base = torch.randn(n, generator=generator).to(dtype)
    elif dtype == torch.bool:
        base = torch.randint(0, 2, (n,), generator=generator).bool()
    else:
        base = torch.zeros(n, dtype=dtype)
    return torch.as_strided(base, param["sizes"], param["strides"])


def nbytes(param: dict[str, Any]) -> int:
    return span(param["sizes"], param["strides"]) * getattr(torch, param["dtype"]).itemsize


def bench_kernel(library: Any, graph: str, kernel: dict[str, Any], threads: int, iters: int,
                 warmup: int, seed: int) -> KernelResult:
    params = kernel["params"]
    result = KernelResult(graph, kernel["name"], list(kernel["graph_nodes"]), len(params),
                          sum(nbytes(p) for p in params), int(kernel["flops"]))
    generator = torch.Generator().manual_seed(seed)
    args = [make_argument(p, generator) for p in params]
    try:
        samples = library.time(kernel["name"], args, threads, warmup, iters)
    except Exception as e:  # noqa: BLE001  (report it, go on with the other kernels)
        result.error = f"{type(e).__name__}: {e}"
        return result
    t = timing.summarize(samples)
    result.median_s, result.min_s, result.samples_s = t.median_s, t.min_s, samples
    if t.median_s > 0:
        result.gbs = result.bytes / t.median_s / 1e9
        result.gflops = result.flops / t.median_s / 1e9
    return result


def rate(results: list[KernelResult], limits: machine.MachineLimits | None) -> None:
    """Shares of the machine's copy bandwidth and matmul rate."""
    if limits is None:
        return
    for r in results:
        if r.gbs is None:
            continue
        r.size_class = "cache" if r.bytes <= 2 * limits.config["cache_bytes"] else "dram"
        r.copy_share = r.gbs / limits.copy_gbs(r.size_class)
        r.matmul_share = r.gflops / limits.matmul_gflops if limits.matmul_gflops else None


def run_kernels(target: str, threads: int, iters: int, warmup: int,
                seed: int = 0) -> list[KernelResult]:
    """Every kernel of the graphs `target` names, timed alone (no rating)."""
    from .. import _C

    results = []
    for graph in locate(target):
        if not graph.kernels:
            log(f"{graph.label}: no generated kernels")
            continue
        library = _C.KernelLibrary(graph.library)
        for kernel in graph.kernels:
            log(f"{graph.label}: {kernel['name']} ({len(kernel['params'])} params)")
            results.append(bench_kernel(library, graph.label, kernel, threads, iters, warmup,
                                        seed))
    return results


# ------------------------------------------------------------------------------ reporting

def _size(n: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def _pct(share: float | None) -> str:
    return "-" if share is None else f"{100 * share:.0f}%"


def _graph_label(label: str) -> str:
    """A cache key shortened to 12 digits; a debug subdirectory name as it is."""
    return label[:12] if len(label) == 64 and KEY_PREFIX.match(label) else label


def _us(seconds: float) -> str:
    us = seconds * 1e6
    return f"{us:.2f}" if us < 10 else f"{us:.1f}" if us < 1000 else f"{us:.0f}"


def table(results: list[KernelResult]) -> str:
    rows = []
    for r in results:
        if r.error:
            rows.append([_graph_label(r.graph), r.name, len(r.nodes), r.params, _size(r.bytes),
                         "error", r.error[:60], "", "", ""])
            continue
        rows.append([_graph_label(r.graph), r.name, len(r.nodes), r.params, _size(r.bytes),
                     _us(r.median_s), f"{r.gbs:.2f}",
                     f"{_pct(r.copy_share)} ({r.size_class or '-'})", f"{r.gflops:.2f}",
                     _pct(r.matmul_share)])
    headers = ["graph", "kernel", "nodes", "params", "bytes", "median us", "GB/s",
               "of copy (class)", "GFLOP/s", "of matmul"]
    return timing.format_table(headers, rows)


# ---------------------------------------------------------------------------- subcommand

def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("target", help="cache key (or a unique prefix, 6+ hex digits), or a debug "
                                  "directory (INDUCTOR_CPP_DEBUG_DIR or one graph's subdirectory)")
    timing.add_timing_arguments(p, 50, 5, "timed calls per kernel",
                                "untimed calls per kernel first",
                                "threads for the kernels and torch (default: "
                                "torch.get_num_threads())")
    p.add_argument("--no-limits", action="store_true",
                   help="do not rate against the machine's limits (skips the probe)")
    machine.add_probe_arguments(p)
    p.add_argument("--json", metavar="PATH", default=None, help="also write the results here")


def run(args: argparse.Namespace) -> int:
    if args.iters < 1 or args.warmup < 0:
        raise SystemExit("--iters must be >= 1 and --warmup >= 0")
    threads = timing.set_threads(args.threads)
    results = run_kernels(args.target, threads, args.iters, args.warmup, args.seed)
    limits = None if args.no_limits else machine.machine_limits(
        machine.probe_config(args, threads), args.remeasure, log=log)
    rate(results, limits)
    print(f"kernels of {args.target}: {len(results)} kernel(s), {threads} thread(s), median of "
          f"{args.iters} calls after {args.warmup} warm-up")
    if limits is not None:
        print(machine.describe(limits))
    print(table(results) if results else "no generated kernels")
    if args.json:
        timing.write_json(args.json, {"target": args.target, "threads": threads,
                                      "machine": limits.to_dict() if limits else None,
                                      "kernels": [asdict(r) for r in results]})
        print(f"results written to {args.json}")
    return 1 if any(r.error for r in results) else 0
