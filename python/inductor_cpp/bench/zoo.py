"""Correctness over torchvision models: `python -m inductor_cpp.bench zoo [NAME ...] [--train]`.

Why: tests/python/test_model_zoo.py runs two models in CI; this runs any torchvision classifier
(default: 15 of them) through backend="inductor_cpp" with the default options, to find the
model and layer where a change breaks. Per model (zoo_models.build_zoo_model: 10 classes, no
dropout, calibrated BatchNorm), contiguous and channels-last:

  * eval under inference_mode at batch 2 and then 3 (Dynamo's second graph is symbolic in the
    batch): max |ours - eager| / max |eager| below 1e-3, and the first call's time;
  * with --train, the first training step's gradients at batch 4 and --train-image against a
    float64 reference. Deep ReLU + BatchNorm nets turn rounding into discontinuities, so the
    float32 noise level is the larger error of two eager runs in different layouts (different
    kernels) and ours may be 3x that, + 1e-5 of the gradient's scale.

Prints a line per check and the fallback counters that moved; the exit code is 1 when a check
fails.
"""

from __future__ import annotations

import argparse
import copy
import sys
import traceback
from typing import Any

import torch
from torch import nn

from . import timing
from .zoo_models import build_zoo_model

HELP = ("torchvision models through inductor_cpp: eval (two layouts, two batches) and --train "
        "gradients")

DEFAULT_MODELS = ["resnet50", "mobilenet_v3_small", "efficientnet_b0", "densenet121",
                  "squeezenet1_1", "shufflenet_v2_x0_5", "regnet_y_400mf", "convnext_tiny",
                  "mnasnet0_5", "vgg11_bn", "resnext50_32x4d", "swin_t", "vit_b_32", "alexnet",
                  "googlenet"]
EVAL_TOL = 1e-3


def rel_err(a: torch.Tensor, b: torch.Tensor) -> float:
    return ((a.double() - b.double()).abs().max() / b.double().abs().max().clamp_min(1e-12)).item()


def _layout(t, channels_last: bool):
    return t.to(memory_format=torch.channels_last) if channels_last else t


def check_eval(model: nn.Module, image: int, channels_last: bool) -> list[dict[str, Any]]:
    m = _layout(copy.deepcopy(model).eval(), channels_last)
    compiled = torch.compile(m, backend="inductor_cpp")
    checks = []
    for batch in (2, 3):
        x = _layout(torch.randn(batch, 3, image, image), channels_last)
        with torch.inference_mode():
            expected = m(x)
            seconds, actual = timing.time_once(lambda: compiled(x))
        err = rel_err(actual, expected)
        checks.append({"check": f"eval cl={int(channels_last)} b{batch}", "err": err,
                       "first_call_s": seconds, "ok": err < EVAL_TOL})
    return checks


def check_train(model: nn.Module, image: int, channels_last: bool) -> dict[str, Any]:
    """First-step gradients of batch 4: ours against float64, within 3x eager's noise."""
    x, target = torch.randn(4, 3, image, image), torch.randint(0, 10, (4,))
    grads = {}
    for label, backend, dtype in (("eager", None, torch.float32),
                                  ("eager_other_layout", None, torch.float32),
                                  ("ours", "inductor_cpp", torch.float32),
                                  ("ref", None, torch.float64)):
        cl = channels_last != (label == "eager_other_layout")
        m = _layout(copy.deepcopy(model).to(dtype).train(), cl)
        fwd = m if backend is None else torch.compile(m, backend=backend)
        nn.functional.cross_entropy(fwd(_layout(x.to(dtype), cl)), target).backward()
        grads[label] = {n: p.grad.double() for n, p in m.named_parameters() if p.grad is not None}
    bad, worst = [], (0.0, "")
    for n, ref in grads["ref"].items():
        scale = ref.abs().max().item() or 1.0
        eager = max((grads[k][n] - ref).abs().max().item() / scale
                    for k in ("eager", "eager_other_layout"))
        ours = (grads["ours"][n] - ref).abs().max().item() / scale
        if ours > 3 * eager + 1e-5:
            bad.append(f"grad {n}: ours {ours:.2e} eager {eager:.2e}")
        worst = max(worst, (ours / (3 * eager + 1e-5), n))
    return {"check": f"train cl={int(channels_last)}", "grads": len(grads["ref"]),
            "worst_ratio": worst[0], "worst_param": worst[1], "bad": bad, "ok": not bad}


def check_model(name: str, args: argparse.Namespace) -> dict[str, Any]:
    torch.manual_seed(args.seed)
    result: dict[str, Any] = {"model": name, "checks": []}
    try:
        model = build_zoo_model(name, args.image)
        before = dict(inductor_cpp_counters())
        for cl in (False, True):
            result["checks"] += check_eval(model, args.image, cl)
            if args.train:
                result["checks"].append(check_train(model, args.train_image, cl))
        after = inductor_cpp_counters()
        result["fallback_counters"] = {k: v - before.get(k, 0) for k, v in after.items()
                                       if isinstance(v, (int, float)) and "fallback" in k
                                       and v != before.get(k, 0)}
    except Exception:  # noqa: BLE001  (reported; the other models still run)
        result["error"] = traceback.format_exc()
    torch._dynamo.reset()
    result["ok"] = "error" not in result and all(c["ok"] for c in result["checks"])
    return result


def inductor_cpp_counters() -> dict[str, Any]:
    import inductor_cpp

    return inductor_cpp.counters()


def print_model(r: dict[str, Any]) -> None:
    print(r["model"], flush=True)
    for c in r["checks"]:
        if "err" in c:
            print(f"  {c['check']}: err {c['err']:.2e} first call {c['first_call_s']:.1f}s "
                  f"{'ok' if c['ok'] else 'FAIL'}")
        else:
            print(f"  {c['check']}: {c['grads']} grads, worst ratio {c['worst_ratio']:.2f} "
                  f"({c['worst_param']}) {'ok' if c['ok'] else 'FAIL x%d' % len(c['bad'])}")
            for line in c["bad"]:
                print(f"    {line}")
    if "error" in r:
        print(f"  raised:\n{r['error']}")
    else:
        print(f"  fallback counters: {r['fallback_counters']}", flush=True)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("names", nargs="*", default=DEFAULT_MODELS, metavar="NAME",
                   help="torchvision model names")
    p.add_argument("--threads", type=int, default=2, help="torch intra-op threads")
    p.add_argument("--image", type=int, default=64, help="input height/width for eval")
    p.add_argument("--train", action="store_true", help="also check first-step gradients")
    p.add_argument("--train-image", type=int, default=128, help="input height/width for --train")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", metavar="PATH", default=None, help="write all results as JSON")


def run(args: argparse.Namespace) -> int:
    timing.set_threads(args.threads)
    results = []
    for name in args.names:
        results.append(check_model(name, args))
        print_model(results[-1])
    failed = [r["model"] for r in results if not r["ok"]]
    print(f"\nFAILED: {', '.join(failed)}" if failed else "\nall passed")
    timing.write_json(args.json, {"environment": timing.environment_info(), "ok": not failed,
                                  "models": results})
    print(f"results written to {args.json}", file=sys.stderr)
    return 1 if failed else 0
