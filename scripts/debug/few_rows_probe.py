"""Compiled few-row products (nn.Linear: x · Wᵀ, and torch.mm with a reused plain B) under two or
more settings, each setting in its own process, the settings alternating over rounds; µs per
call (best of 7 batches per process), the median over rounds per setting, eager alongside.
A setting is a number, the value of INDUCTOR_CPP_MATRIX_FEW_ROWS (the most rows for which Wᵀ is
read in place by dot products; 1: the packed copy from two rows, checked by its fingerprint per
call; matrix/gemm.h `in_place_beats_packed_copy`), or environment assignments
`NAME=value[,NAME=value]` (e.g. INDUCTOR_CPP_MATRIX_SWAP_ROWS=0: no swapped products,
matrix/gemm_swapped.h). docs/codegen/matrix.md "Few rows on AVX-512", "Swapped few-row
products".

Usage: python scripts/debug/few_rows_probe.py [threads=2] [rounds=3] [rows=8,16,32]
       [shapes=768x768,3072x768,768x3072,4096x4096 (N x K)] [settings=32;1 (';'-separated)]
"""
from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import time


def worker(threads: int, rows: list[int], shapes: list[tuple[int, int]]) -> None:
    import torch
    import torch._dynamo

    torch.set_num_threads(threads)

    def per_call_us(fn, reps: int) -> float:
        best = float("inf")
        for _ in range(7):
            start = time.perf_counter()
            for _ in range(reps):
                fn()
            best = min(best, (time.perf_counter() - start) / reps)
        return best * 1e6

    def mm(a, b):
        return torch.mm(a, b)

    with torch.no_grad():
        for n, k in shapes:
            linear = torch.nn.Linear(k, n).eval()
            b = torch.randn(k, n)
            for m in rows:
                torch._dynamo.reset()
                x = torch.randn(m, k)
                c_linear = torch.compile(linear, backend="inductor_cpp", dynamic=False)
                c_mm = torch.compile(mm, backend="inductor_cpp", dynamic=False)
                tol = 1e-5 * max(1.0, (k / 64) ** 0.5)
                for got, want in ((c_linear(x), linear(x)), (c_mm(x, b), mm(x, b))):
                    torch.testing.assert_close(got, want, rtol=tol, atol=tol * float(want.abs().max()))
                reps = max(5, int(3e8 / (m * n * k)))
                times = {"eager Linear": per_call_us(lambda: linear(x), reps),
                         "ours Linear": per_call_us(lambda: c_linear(x), reps),
                         "eager mm": per_call_us(lambda: mm(x, b), reps),
                         "ours mm": per_call_us(lambda: c_mm(x, b), reps)}
                for name, us in times.items():
                    print(f"ROW\t{m}x{n}x{k}\t{name}\t{us:.1f}", flush=True)


def main() -> None:
    args = sys.argv[1:]
    threads = int(args[0]) if len(args) > 0 else 2
    rounds = int(args[1]) if len(args) > 1 else 3
    rows = args[2] if len(args) > 2 else "8,16,32"
    shapes = args[3] if len(args) > 3 else "768x768,3072x768,768x3072,4096x4096"
    settings = (args[4] if len(args) > 4 else "32;1").split(";")
    samples: dict[tuple[str, str, str], list[float]] = {}
    for r in range(rounds):
        for setting in settings:
            env = dict(os.environ)
            if "=" in setting:
                # a comma starts a new assignment only before NAME= (values may hold commas)
                env.update(pair.split("=", 1) for pair in re.split(r",(?=[A-Z_]+=)", setting))
            else:
                env["INDUCTOR_CPP_MATRIX_FEW_ROWS"] = setting
            out = subprocess.run([sys.executable, __file__, "--worker", str(threads), rows, shapes],
                                 env=env, capture_output=True, text=True)
            if out.returncode != 0:
                print(out.stderr[-3000:], file=sys.stderr)
                raise SystemExit(f"setting {setting}: worker failed")
            for line in out.stdout.splitlines():
                if line.startswith("ROW\t"):
                    _, shape, name, us = line.split("\t")
                    samples.setdefault((shape, name, setting), []).append(float(us))
            print(f"[few_rows_probe] round {r + 1}/{rounds}, setting {setting}: done", file=sys.stderr)
    print(f"threads {threads}, {rounds} rounds, median µs per call (eager: over every process)")
    shape_list = list(dict.fromkeys(k[0] for k in samples))
    header = ["shape M×N×K", "eager Linear"] + [f"Linear {s}" for s in settings] + ["eager mm"] + [
        f"mm {s}" for s in settings]
    print(" | ".join(header))
    for shape in shape_list:
        def med(name: str, setting: str | None) -> str:
            vals = ([v for s in settings for v in samples[(shape, name, s)]] if setting is None
                    else samples[(shape, name, setting)])
            return f"{statistics.median(vals):.1f}"
        cells = [shape, med("eager Linear", None)] + [med("ours Linear", s) for s in settings]
        cells += [med("eager mm", None)] + [med("ours mm", s) for s in settings]
        print(" | ".join(cells))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(int(sys.argv[2]), [int(v) for v in sys.argv[3].split(",")],
               [tuple(int(v) for v in s.split("x")) for s in sys.argv[4].split(",")])
    else:
        main()
