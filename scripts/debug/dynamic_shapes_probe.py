"""Models under Dynamo's dynamic shapes: eager against one compiled variant, in one process,
over four input shapes a round (each round times eager and the variant back to back, the
order alternating). Variants: `default` (ours, dynamic=True: a static copy per shape, up to
shape_specializations), `symbolic` (ours with shape_specializations=0: every shape on the
symbolic graph's plan of ATen calls and matrix steps), `stock` (torch.compile(backend=
"inductor", dynamic=True): shape-generic kernels). Also prints resident memory after each new
shape and the packed-weight counters. docs/benchmarks.md "Dynamic shapes".

Usage: python scripts/debug/dynamic_shapes_probe.py encoder|resnet default|symbolic|stock
       [rounds=7] [threads=2]
  encoder: the bench's 4-layer d768 encoder (batch 8, sequence lengths 96, 112, 120, 128)
  resnet:  torchvision resnet18, eval, 160² images, batches 3, 4, 5, 6
"""
from __future__ import annotations

import statistics
import sys
import time

import torch

import inductor_cpp
from inductor_cpp.bench.matrix_cases import _encoder


def resident_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


def workload(which: str) -> tuple[torch.nn.Module, list[torch.Tensor]]:
    torch.manual_seed(0)
    if which == "encoder":
        model = _encoder(8, 128, 768, 12, 3072, 4)().fn
        return model, [torch.randn(8, s, 768) for s in (96, 112, 120, 128)]
    import torchvision

    model = torchvision.models.resnet18(weights=None).eval()
    return model, [torch.randn(b, 3, 160, 160) for b in (3, 4, 5, 6)]


def compiled(model: torch.nn.Module, variant: str):
    if variant == "stock":
        return torch.compile(model, backend="inductor", dynamic=True)
    options = {"shape_specializations": 0} if variant == "symbolic" else {}
    return torch.compile(model, backend="inductor_cpp", dynamic=True, options=options)


def main() -> None:
    which, variant = sys.argv[1], sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 7
    torch.set_num_threads(int(sys.argv[4]) if len(sys.argv) > 4 else 2)
    model, inputs = workload(which)
    fn = compiled(model, variant)
    times: dict[str, list[float]] = {"eager": [], variant: []}
    with torch.no_grad():
        for i, x in enumerate(inputs):
            torch.testing.assert_close(fn(x), model(x), rtol=1e-3, atol=1e-3)
            print(f"after shape {i + 1}: resident {resident_mb():.0f} MB", flush=True)
        for r in range(rounds):
            order = [("eager", model), (variant, fn)]
            for name, f in order if r % 2 else reversed(order):
                start = time.perf_counter()
                for x in inputs:
                    f(x)
                times[name].append(time.perf_counter() - start)
    graphs = [g.counters() for g in inductor_cpp.live_graphs() if g.counters()["calls"] > 0]
    if graphs:
        print("weight_packs", sum(c["weight_packs"] for c in graphs),
              "weight_shared", sum(c["weight_shared"] for c in graphs))
    eager, ours = statistics.median(times["eager"]), statistics.median(times[variant])
    print(f"{which} {variant}: eager {1e3 * eager:.1f} ms, {variant} {1e3 * ours:.1f} ms "
          f"(four shapes), x{eager / ours:.3f} eager ({time.strftime('%H:%M UTC', time.gmtime())})")


if __name__ == "__main__":
    main()
