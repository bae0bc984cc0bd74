"""Host (CPU) cost of a training step, per variant (docs/gpu.md "Host cost").

    python -m inductor_cpp.bench.host_cost MODEL VARIANT [--steps N] [--device cuda|cpu]
        [--quick] [--spy out.txt --spy-seconds 6]

MODEL is a `bench suite --mode train` workload (deit_tiny_train, ...), VARIANT eager,
inductor_cpp or inductor. Prints the median synced step (forward + backward) and the
launch-only times: how long the forward call and backward() take to return, without a sync.
On CUDA, launch-only close to the synced step means the step is bound by the host: faster
kernels will not move it. --spy attaches py-spy (`--native`, 50 Hz; $PY_SPY names the binary)
for further steps and writes its raw stacks to the file.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time

import torch

from . import suite_train


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(prog="python -m inductor_cpp.bench.host_cost")
    p.add_argument("model")
    p.add_argument("variant", choices=["eager", "inductor_cpp", "inductor"])
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--device", default="cuda")
    p.add_argument("--quick", action="store_true", help="the suite's tiny sizes")
    p.add_argument("--spy", default=None)
    p.add_argument("--spy-seconds", type=float, default=6.0)
    args = p.parse_args(argv)
    sync = torch.cuda.synchronize if args.device == "cuda" else (lambda: None)
    torch.manual_seed(0)
    w = suite_train.build_train(args.model, args.device, args.quick, None)
    model = w.fn.to(args.device)
    inputs = tuple(t.to(args.device) for t in w.inputs)
    run = model if args.variant == "eager" else torch.compile(model, backend=args.variant)
    params = list(model.parameters())

    def step(times: list | None = None) -> None:
        for prm in params:
            prm.grad = None
        t0 = time.perf_counter()
        loss = run(*inputs)
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        sync()
        if times is not None:
            times.append(((t1 - t0) * 1e3, (t2 - t1) * 1e3, (time.perf_counter() - t0) * 1e3))

    for _ in range(5):
        step()
    timed: list = []
    for _ in range(args.steps):
        step(timed)
    result = {k: statistics.median(t[i] for t in timed)
              for i, k in enumerate(("forward_launch_ms", "backward_launch_ms", "step_ms"))}
    print(f"{args.model} {args.variant}: synced fwd+bwd {result['step_ms']:.2f} ms; launch-only "
          f"fwd {result['forward_launch_ms']:.2f} ms bwd {result['backward_launch_ms']:.2f} ms",
          flush=True)
    if args.spy:
        spy = subprocess.Popen([os.environ.get("PY_SPY", "py-spy"), "record", "--native", "--threads",
                                "--pid", str(os.getpid()), "-d", str(int(args.spy_seconds)),
                                "-r", "50", "-f", "raw", "-o", args.spy])
        time.sleep(1.0)
        end = time.time() + args.spy_seconds + 1
        while time.time() < end:
            step()
        spy.wait()
    return result


if __name__ == "__main__":
    main()
