"""Correctness probe over torchvision models through backend="inductor_cpp" (default options).

Usage: python scripts/debug/model_zoo_probe.py [--threads N] [--image S] [--train] [NAME ...]

For each model (inductor_cpp.bench.zoo_models: small input, 10 classes, no dropout): eval under
inference_mode, contiguous and channels-last, at batch 2 and then 3 (Dynamo's second graph is
symbolic in the batch); with --train, the first training step's gradients against a float64
reference at batch 4 and --train-image (compiled error at most 3x the larger of two eager
float32 runs in different layouts, + 1e-5 of the gradient's scale). Prints a
line per check and the counters' fallbacks; exit code 1 when any check fails.
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
import traceback

import torch
import torch.nn as nn

import inductor_cpp
from inductor_cpp.bench.zoo_models import build_zoo_model

DEFAULT = ["resnet50", "mobilenet_v3_small", "efficientnet_b0", "densenet121", "squeezenet1_1",
           "shufflenet_v2_x0_5", "regnet_y_400mf", "convnext_tiny", "mnasnet0_5", "vgg11_bn",
           "resnext50_32x4d", "swin_t", "vit_b_32", "alexnet", "googlenet"]


def rel_err(a: torch.Tensor, b: torch.Tensor) -> float:
    return ((a.double() - b.double()).abs().max() / b.double().abs().max().clamp_min(1e-12)).item()


def check_eval(name: str, model: nn.Module, image: int, channels_last: bool) -> list[str]:
    fails = []
    m = copy.deepcopy(model).eval()
    if channels_last:
        m = m.to(memory_format=torch.channels_last)
    compiled = torch.compile(m, backend="inductor_cpp")
    for batch in (2, 3):
        x = torch.randn(batch, 3, image, image)
        if channels_last:
            x = x.to(memory_format=torch.channels_last)
        with torch.inference_mode():
            expected = m(x)
            t = time.perf_counter()
            actual = compiled(x)
            dt = time.perf_counter() - t
        err = rel_err(actual, expected)
        ok = err < 1e-3
        print(f"  eval cl={int(channels_last)} b{batch}: err {err:.2e} first call {dt:.1f}s {'ok' if ok else 'FAIL'}")
        if not ok:
            fails.append(f"{name} eval cl={channels_last} b{batch} err {err:.2e}")
    return fails


def check_train(name: str, model: nn.Module, image: int, channels_last: bool) -> list[str]:
    """First-step gradients of batch 4 against float64. Deep ReLU nets turn rounding into
    discontinuities (a pre-activation near 0 flips sign, BatchNorm over few samples amplifies
    it), so the float32 noise level is the larger of two eager runs in different layouts
    (different kernels), and ours may be 3x that."""
    x = torch.randn(4, 3, image, image)
    target = torch.randint(0, 10, (4,))
    grads = {}
    for label, backend, dtype in (("eager", None, torch.float32), ("eager_other_layout", None, torch.float32),
                                  ("ours", "inductor_cpp", torch.float32), ("ref", None, torch.float64)):
        m = copy.deepcopy(model).to(dtype).train()
        xx = x.to(dtype)
        if channels_last != (label == "eager_other_layout"):
            m, xx = m.to(memory_format=torch.channels_last), xx.to(memory_format=torch.channels_last)
        fwd = m if backend is None else torch.compile(m, backend=backend)
        nn.functional.cross_entropy(fwd(xx), target).backward()
        grads[label] = {n: p.grad.double() for n, p in m.named_parameters() if p.grad is not None}
    fails = []
    worst = (0.0, "")
    for n, ref in grads["ref"].items():
        scale = ref.abs().max().item() or 1.0
        e = max((grads[k][n] - ref).abs().max().item() / scale for k in ("eager", "eager_other_layout"))
        o = (grads["ours"][n] - ref).abs().max().item() / scale
        if o > 3 * e + 1e-5:
            fails.append(f"{name} train cl={channels_last} grad {n}: ours {o:.2e} eager {e:.2e}")
        worst = max(worst, (o / (3 * e + 1e-5), n))
    print(f"  train cl={int(channels_last)}: {len(grads['ref'])} grads, worst ratio {worst[0]:.2f} ({worst[1]}) "
          f"{'ok' if not fails else 'FAIL x%d' % len(fails)}")
    return fails


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*", default=DEFAULT)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--image", type=int, default=64)
    ap.add_argument("--train", action="store_true")
    ap.add_argument("--train-image", type=int, default=128)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    fails = []
    for name in args.names:
        print(name, flush=True)
        torch.manual_seed(0)
        try:
            model = build_zoo_model(name, args.image)
            before = dict(inductor_cpp.counters())
            for cl in (False, True):
                fails += check_eval(name, model, args.image, cl)
                if args.train:
                    fails += check_train(name, model, args.train_image, cl)
            after = inductor_cpp.counters()
            delta = {k: v - before.get(k, 0) for k, v in after.items()
                     if isinstance(v, (int, float)) and v != before.get(k, 0) and "fallback" in k}
            print(f"  fallback counters: {delta}")
        except Exception:
            traceback.print_exc()
            fails.append(f"{name}: raised")
        torch._dynamo.reset()
    print("\nFAILURES:" if fails else "\nall passed")
    for f in fails:
        print("  " + f)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
