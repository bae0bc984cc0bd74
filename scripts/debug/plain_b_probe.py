"""Few-row products times a plain B (torch.mm with a weight laid out [K, N], a Linear's input
gradient) under two or more settings, each setting in its own process, the settings alternating
over rounds: eager torch.mm, our GEMM called directly (_C.matrix.gemm_f32, B read as the plan
chooses: streamed in place or packed per call) and torch.compile(backend="inductor_cpp") in the
same process, µs per call (best of 3 batches of ~20 ms per process), the median over rounds per
setting. Each compiled output is checked against a float64 product first.

A setting is a list of environment assignments joined by ",,", e.g.
INDUCTOR_CPP_MATRIX_STREAM=0 (no streamed plain B: matrix/gemm_config.h "Streamed plain
B"), or empty for the defaults. docs/codegen/matrix.md "Streamed plain B".

Usage: python scripts/debug/plain_b_probe.py [threads=2] [rounds=3]
       [shapes=8x4096x4096,32x4096x4096,... (M x N x K)] [settings=INDUCTOR_CPP_MATRIX_STREAM=0;]
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

DEFAULT_SHAPES = ("8x4096x4096,16x4096x4096,32x4096x4096,64x4096x4096,128x4096x4096,"
                  "16x768x768,32x768x768,64x768x768,32x3072x768,32x768x3072")
VARIANTS = ("eager", "library", "compiled")


def worker(threads: int, shapes: list[str]) -> None:
    import torch
    import torch._dynamo

    from inductor_cpp import _C
    from matmul_threads_probe import per_call_us  # this folder is on sys.path when run

    torch.set_num_threads(threads)
    results = {}
    with torch.no_grad():
        for shape in shapes:
            m, n, k = map(int, shape.split("x"))
            a, b = torch.randn(m, k), torch.randn(k, n)
            torch._dynamo.reset()
            compiled = torch.compile(lambda a, b: torch.mm(a, b), backend="inductor_cpp",
                                     dynamic=False)
            want = torch.mm(a.double(), b.double())
            err = float((compiled(a, b).double() - want).abs().max() / want.abs().max())
            if err > 1e-5 * max(1.0, (k / 64) ** 0.5):
                raise SystemExit(f"{shape}: compiled differs from float64 by {err:.2e}")
            cases = {"eager": lambda: torch.mm(a, b),
                     "library": lambda: _C.matrix.gemm_f32(a, b, threads, None, False, None),
                     "compiled": lambda: compiled(a, b)}
            samples = {name: [] for name in cases}
            for _ in range(3):
                for name, fn in cases.items():
                    samples[name].append(per_call_us(fn))
            results[shape] = {name: min(v) for name, v in samples.items()}
    print("RESULT" + json.dumps(results), flush=True)


def run_setting(setting: str, threads: int, shapes: str) -> dict:
    env = dict(os.environ)
    for assignment in filter(None, setting.split(",,")):
        name, value = assignment.split("=", 1)
        env[name] = value
    done = subprocess.run([sys.executable, __file__, "--worker", str(threads), shapes], env=env,
                          capture_output=True, text=True)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT")]
    if not lines:
        raise SystemExit(f"setting {setting!r} failed:\n{done.stderr[-3000:]}")
    return json.loads(lines[-1][len("RESULT"):])


def main(argv: list[str]) -> None:
    threads = int(argv[0]) if argv else 2
    rounds = int(argv[1]) if len(argv) > 1 else 3
    shapes = argv[2] if len(argv) > 2 else DEFAULT_SHAPES
    settings = (argv[3] if len(argv) > 3 else "INDUCTOR_CPP_MATRIX_STREAM=0;").split(";")
    runs = {s: [] for s in settings}
    for _ in range(rounds):
        for s in settings:
            runs[s].append(run_setting(s, threads, shapes))
    print(f"{threads} threads, {rounds} rounds; per setting: eager / library / compiled µs, "
          "then library and compiled as x eager")
    for shape in shapes.split(","):
        row = f"{shape:14s}"
        for s in settings:
            med = {v: statistics.median(r[shape][v] for r in runs[s]) for v in VARIANTS}
            row += (f" | {med['eager']:8.0f} {med['library']:8.0f} {med['compiled']:8.0f} "
                    f"{med['eager'] / med['library']:5.2f}x {med['eager'] / med['compiled']:5.2f}x")
        print(row, flush=True)
    for i, s in enumerate(settings):
        print(f"setting {i}: {s or 'defaults'}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(int(sys.argv[2]), sys.argv[3].split(","))
    else:
        main(sys.argv[1:])
