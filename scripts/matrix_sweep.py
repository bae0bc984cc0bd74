"""\file matrix_sweep.py
Tuning aid for the float32 GEMM blocking (issue 7): our GEMM relative to eager's torch.mm
(MKL), measured in the same process, under several settings of the matrix library's tuning
environment variables (matrix/gemm_config.cpp: INDUCTOR_CPP_MATRIX_BLOCKING =
"mr,nr,kc,mc,nc", INDUCTOR_CPP_MATRIX_PACK_A, ...), one child process per setting (the
blocking is read once per process).

Why ratios: a shared VM's speed drifts by 5-15 % over minutes, more than the effects being
tuned. Each round times eager and ours back to back (order alternating), so both see the
same machine; the reported figure is the median over rounds of eager time / our time.

    python scripts/matrix_sweep.py --threads 2 --shapes 4096x4096x4096,1024x1024x1024 \
        default "INDUCTOR_CPP_MATRIX_BLOCKING=14,32,256,112,1024"

Shapes are MxNxK of torch.mm (B an input), LMxNxK of nn.Linear(K, N) on M rows (the
weight a parameter: our packed-weight cache applies), or RMxNxK of relu(addmm(bias, x, b))
(issue 7's addmm + bias + relu row). Each positional argument is one setting: "default" (no
variable set) or space-separated NAME=VALUE assignments. Output: one row per (setting, shape)
with the median ratio, its range, and both medians in ms.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def child(args: argparse.Namespace) -> None:
    import torch

    import inductor_cpp  # noqa: F401  (registers the backend)

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    rows = []
    for shape in args.shapes.split(","):
        kind = shape[0] if shape[0] in "LR" else ""
        m, n, k = (int(v) for v in shape[len(kind):].split("x"))
        a = torch.randn(m, k)
        eager = _workload(kind, n, k)
        with torch.no_grad():
            torch._dynamo.reset()
            ours = torch.compile(eager, backend="inductor_cpp", options={"matrix_kernels": True},
                                 dynamic=False)
            torch.testing.assert_close(ours(a), eager(a), rtol=1e-3, atol=1e-3 * k ** 0.5)
            calls = max(1, int(args.seconds_per_sample / max(_time(lambda: eager(a)), 1e-6)))
            ratios, t_eager, t_ours = [], [], []
            for r in range(args.rounds):
                order = [("eager", lambda: eager(a)), ("ours", lambda: ours(a))]
                if r % 2:
                    order.reverse()
                sample = {name: _time(fn, calls) for name, fn in order}
                ratios.append(sample["eager"] / sample["ours"])
                t_eager.append(sample["eager"])
                t_ours.append(sample["ours"])
        rows.append({"shape": shape, "ratio": statistics.median(ratios), "min": min(ratios),
                     "max": max(ratios), "eager_ms": 1e3 * statistics.median(t_eager),
                     "ours_ms": 1e3 * statistics.median(t_ours),
                     "gflops_ours": 2.0 * m * n * k / statistics.median(t_ours) / 1e9})
    print(json.dumps(rows))


def _workload(kind: str, n: int, k: int):
    """The eager function of one shape kind, on an [m, k] input: "" x @ b; "L" nn.Linear (weight
    reused call to call: our packed-weight cache applies); "R" relu(addmm(bias, x, b))."""
    import torch

    if kind == "L":
        return torch.nn.Linear(k, n)
    b, bias = torch.randn(k, n), torch.randn(n)
    if kind == "R":
        return lambda x: torch.relu(torch.addmm(bias, x, b))
    return lambda x: x @ b


def _time(fn, calls: int = 1) -> float:
    fn()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls


def parent(args: argparse.Namespace) -> int:
    print(f"threads {args.threads}, {args.rounds} rounds; x = eager time / our time "
          f"(median over rounds, [min, max])")
    failed = 0
    for setting in args.settings:
        env = dict(os.environ)
        if setting != "default":
            for assignment in setting.split():
                name, _, value = assignment.partition("=")
                env[name] = value
        cmd = [sys.executable, __file__, "--child", "--threads", str(args.threads), "--shapes",
               args.shapes, "--rounds", str(args.rounds), "--seconds-per-sample",
               str(args.seconds_per_sample)]
        done = subprocess.run(cmd, env=env, capture_output=True, text=True)
        lines = [line for line in done.stdout.splitlines() if line.startswith("[")]
        if done.returncode != 0 or not lines:
            print(f"{setting}: failed\n{done.stderr[-2000:]}")
            failed += 1
            continue
        for row in json.loads(lines[-1]):
            print(f"{setting:48s} {row['shape']:>16s}  x {row['ratio']:.3f} "
                  f"[{row['min']:.3f}, {row['max']:.3f}]  eager {row['eager_ms']:8.2f} ms  "
                  f"ours {row['ours_ms']:8.2f} ms  {row['gflops_ours']:7.1f} GFLOP/s",
                  flush=True)
    return 1 if failed else 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("settings", nargs="*", default=["default"])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--shapes", default="1024x1024x1024,4096x4096x4096")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--seconds-per-sample", type=float, default=0.05)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args)
        return 0
    return parent(args)


if __name__ == "__main__":
    sys.exit(main())
