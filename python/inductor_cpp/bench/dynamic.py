"""Models under Dynamo's dynamic shapes: `python -m inductor_cpp.bench dynamic`.

Why: a model called with several input shapes compiles differently from one with a fixed
shape, and the cost moves between compile time, memory and speed. One compiled variant against
eager, in one process, over four input shapes a round; each round times eager and the variant
on all four shapes back to back, the order alternating. Variants:

  default   ours with dynamic=True: a static copy per shape, up to shape_specializations
  symbolic  ours with shape_specializations=0: every shape on the symbolic graph's plan
  stock     torch.compile(backend="inductor", dynamic=True): shape-generic kernels

Models: "encoder", the matrix bench's 4-layer d768 encoder (batch 8, sequence lengths 96, 112,
120, 128); "resnet", torchvision resnet18 in eval at 160^2, batches 3, 4, 5, 6. Every output is
checked against eager first; the resident memory after each new shape and the packed-weight
counters are reported too. One variant per process (the memory figures are the process's), so
compare variants with `bench ab --env ... ` or by running each.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import torch

from . import timing
from .matrix_cases import bert_encoder

HELP = "a model over four input shapes (dynamic=True): eager vs one compiled variant, memory"

VARIANTS = ("default", "symbolic", "stock")


def resident_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


def workload(which: str, small: bool) -> tuple[torch.nn.Module, list[torch.Tensor]]:
    """The model and its four inputs; small: tiny sizes of the same code (tests)."""
    torch.manual_seed(0)
    if which == "encoder":
        d, heads, ffn, layers, seqs = (32, 2, 64, 1, (6, 7, 8, 9)) if small else \
            (768, 12, 3072, 4, (96, 112, 120, 128))
        model = bert_encoder(8, seqs[-1], d, heads, ffn, layers)().fn
        return model, [torch.randn(2 if small else 8, s, d) for s in seqs]
    import torchvision

    image = 32 if small else 160
    model = torchvision.models.resnet18(weights=None).eval()
    return model, [torch.randn(b, 3, image, image) for b in (3, 4, 5, 6)]


def compiled(model: torch.nn.Module, variant: str):
    if variant == "stock":
        return torch.compile(model, backend="inductor", dynamic=True)
    options = {"shape_specializations": 0} if variant == "symbolic" else {}
    return torch.compile(model, backend="inductor_cpp", dynamic=True, options=options)


@torch.no_grad()
def measure(model, inputs: list[torch.Tensor], variant: str, rounds: int) -> dict[str, Any]:
    import inductor_cpp

    fn = compiled(model, variant)
    result: dict[str, Any] = {"variant": variant, "resident_mib": [], "first_calls_s": []}
    for x in inputs:
        seconds, out = timing.time_once(lambda: fn(x))
        torch.testing.assert_close(out, model(x), rtol=1e-3, atol=1e-3)
        result["first_calls_s"].append(seconds)
        result["resident_mib"].append(resident_mib())
    samples: dict[str, list[float]] = {"eager": [], variant: []}
    for r in range(rounds):
        order = [("eager", model), (variant, fn)]
        for name, f in order if r % 2 else reversed(order):
            samples[name].append(timing.time_once(lambda: [f(x) for x in inputs])[0])
    result["timing"] = {name: timing.summarize(s) for name, s in samples.items()}
    result["vs_eager"] = timing.speedup(result["timing"]["eager"].median_s,
                                        result["timing"][variant].median_s)
    graphs = [g.counters() for g in inductor_cpp.live_graphs() if g.counters()["calls"] > 0]
    result["weight_packs"] = sum(c["weight_packs"] for c in graphs)
    result["weight_shared"] = sum(c["weight_shared"] for c in graphs)
    return result


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", choices=["encoder", "resnet"], default="encoder")
    p.add_argument("--variant", choices=VARIANTS, default="default")
    p.add_argument("--rounds", type=int, default=7, help="timed rounds (four shapes each)")
    p.add_argument("--threads", type=int, default=2, help="torch intra-op threads")
    p.add_argument("--small", action="store_true", help="tiny sizes (tests)")
    p.add_argument("--json", metavar="PATH", default=None, help="write the results as JSON")


def run(args: argparse.Namespace) -> int:
    if args.rounds < 1:
        raise SystemExit("--rounds must be >= 1")
    timing.set_threads(args.threads)
    model, inputs = workload(args.model, args.small)
    result = measure(model, inputs, args.variant, args.rounds)
    shapes = ", ".join("x".join(map(str, x.shape)) for x in inputs)
    eager, ours = (result["timing"][n].median_s for n in ("eager", args.variant))
    print(f"{args.model} [{shapes}] {args.variant}, {args.threads} thread(s): eager "
          f"{1e3 * eager:.1f} ms, {args.variant} {1e3 * ours:.1f} ms (four shapes, median of "
          f"{args.rounds}), x{result['vs_eager']:.3f} eager")
    print("first calls s: " + ", ".join(f"{s:.2f}" for s in result["first_calls_s"])
          + "; resident MiB after each: " + ", ".join(f"{m:.0f}" for m in result["resident_mib"]))
    print(f"weight_packs {result['weight_packs']}, weight_shared {result['weight_shared']}")
    timing.write_json(args.json, {"environment": timing.environment_info(), "model": args.model,
                                  "shapes": shapes, **result})
    print(f"results written to {args.json}", file=sys.stderr)
    return 0
