"""The training models of `python -m inductor_cpp.bench suite --mode train` (issue 40).

resnet18, resnet50, mobilenet_v3_small and convnext_tiny (torchvision), DeiT-tiny (timm), a
4-layer BERT encoder with its masked-LM head and a 4-layer GPT-2 with its LM head (transformers,
from a config), all float32 with random weights and dropout (and stochastic depth) 0.

A step is zero_grad, forward + loss (the compiled module returns the loss, so forward and
backward graphs are compiled), backward, then an SGD step (momentum 0.9) OUTSIDE the compiled
module, in eager PyTorch, alike for every variant. Each variant trains its own copy of the
model from the same initial weights; the check compares the first step's loss and gradients
with eager's (what the optimizer step then does is the same eager code for everyone).

`autocast` (`--autocast bf16`) wraps forward + loss in torch.autocast(device, bfloat16).

Sizes: on CUDA the realistic ones (CNNs and DeiT batch 32 at 224x224; BERT / GPT-2 hidden 768,
12 heads, batch 8, sequence 128); on the CPU small ones (a 2-core machine should finish a run);
with --quick tiny ones (fewer layers too) for tests. A model whose package is missing is a
"skipped: needs <package>" row (suite_worker); DeiT-tiny falls back to torchvision's
VisionTransformer with DeiT-tiny's dimensions when timm is missing, and says so in its row.
"""

from __future__ import annotations

import copy
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from .suite_workloads import TRAIN_MODELS, TRAIN_TOL, Workload, _WithLoss

# Deep models reassociate long reductions (BatchNorm / LayerNorm statistics, 768-3072-long dot
# products over 4-50 layers): 10x TRAIN_TOL's rtol; a miss still gets the fp64 second chance.
DEEP_TRAIN_TOL = {"rtol": 1e-2, "atol": 1e-4}
# bfloat16 autocast: eager and compiled round at different points (8-bit mantissa).
BF16_TOL = {"rtol": 5e-2, "atol": 1e-2}
LR, MOMENTUM = 1e-4, 0.9

CNNS = ("resnet18", "resnet50", "mobilenet_v3_small", "convnext_tiny")
NEEDS = {"bert_train": "transformers", "gpt2_train": "transformers"}


class Skipped(Exception):
    """A model that cannot be built here (its package is missing)."""


@dataclass
class TrainStepWorkload(Workload):
    """A Workload whose steps also run an optimizer step outside the compiled module; every
    bind() trains its own copy of the model."""

    def bind(self, compile_fn: Callable[[nn.Module], Callable]) -> Callable[[], list[torch.Tensor]]:
        model = copy.deepcopy(self.fn)
        optimizer = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
        fn = compile_fn(model)

        def step() -> list[torch.Tensor]:
            out = self.step(fn, model)  # loss, then the gradients (zeroed before: set to None)
            optimizer.step()
            return out

        return step


class _LanguageModelLoss(nn.Module):
    """A transformers model trained on its own input ids (masked-LM / causal-LM loss)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=ids, labels=labels).loss


def _sizes(quick: bool, device: str) -> dict[str, Any]:
    """image (batch, side, classes); vit (batch, side, depth); text (batch, seq, layers, hidden,
    heads, vocab)."""
    if quick:
        return {"image": (2, 64, 10), "vit": (2, 32, 2), "text": (2, 16, 2, 64, 2, 1000)}
    if device == "cuda":
        return {"image": (32, 224, 1000), "vit": (32, 224, 12), "text": (8, 128, 4, 768, 12, None)}
    return {"image": (4, 64, 10), "vit": (4, 64, 12), "text": (2, 64, 4, 256, 4, 8000)}


def _no_dropout(model: nn.Module) -> nn.Module:
    for m in model.modules():
        if isinstance(m, nn.Dropout):
            m.p = 0.0
    return model


def _cnn(name: str, classes: int) -> nn.Module:
    import torchvision

    kwargs: dict[str, Any] = {"weights": None, "num_classes": classes}
    if name == "mobilenet_v3_small":
        kwargs["dropout"] = 0.0
    if name == "convnext_tiny":
        kwargs["stochastic_depth_prob"] = 0.0
    return getattr(torchvision.models, name)(**kwargs)


def _deit(side: int, depth: int, classes: int) -> tuple[nn.Module, str]:
    if importlib.util.find_spec("timm") is not None:
        import timm

        model = timm.create_model("deit_tiny_patch16_224", pretrained=False, num_classes=classes,
                                  img_size=side, depth=depth, drop_rate=0.0, drop_path_rate=0.0)
        return model, "timm deit_tiny_patch16_224"
    import torchvision  # DeiT-tiny's architecture is ViT-Ti/16: dim 192, 3 heads, MLP 768

    model = torchvision.models.VisionTransformer(side, 16, depth, 3, 192, 768, dropout=0.0,
                                                 attention_dropout=0.0, num_classes=classes)
    return model, "STAND-IN (timm missing): torchvision VisionTransformer, DeiT-tiny dims"


def _language_model(name: str, layers: int, hidden: int, heads: int,
                    vocab: int | None) -> nn.Module:
    import transformers

    if name == "bert":
        config = transformers.BertConfig(
            vocab_size=vocab or 30522, hidden_size=hidden, num_hidden_layers=layers,
            num_attention_heads=heads, intermediate_size=4 * hidden, hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0)
        return transformers.BertForMaskedLM(config)
    config = transformers.GPT2Config(vocab_size=vocab or 50257, n_embd=hidden, n_layer=layers,
                                     n_head=heads, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    return transformers.GPT2LMHeadModel(config)


def build_train(name: str, device: str, quick: bool, autocast: str | None) -> Workload:
    """Training workload `name` (one of TRAIN_MODELS) on `device`; raises Skipped when its
    package is missing. The caller seeds the generator."""
    need = NEEDS.get(name)
    if need and importlib.util.find_spec(need) is None:
        raise Skipped(f"skipped: needs {need}")
    sizes = _sizes(quick, device)
    base = name.removesuffix("_train")
    tol = dict(TRAIN_TOL if quick else DEEP_TRAIN_TOL)
    if base in CNNS:
        batch, side, classes = sizes["image"]
        model, what = _cnn(base, classes), f"torchvision {base}"
        inputs = (torch.randn(batch, 3, side, side), torch.randint(0, classes, (batch,)))
        shape = f"batch {batch}x3x{side}x{side}"
    elif base == "deit_tiny":
        batch, side, depth = sizes["vit"]
        classes = sizes["image"][2]
        model, what = _deit(side, depth, classes)
        inputs = (torch.randn(batch, 3, side, side), torch.randint(0, classes, (batch,)))
        shape = f"depth {depth}, batch {batch}x3x{side}x{side}"
    elif base in ("bert", "gpt2"):
        batch, seq, layers, hidden, heads, vocab = sizes["text"]
        model = _language_model(base, layers, hidden, heads, vocab)
        what = f"transformers {type(model).__name__} {layers} layers, hidden {hidden}"
        ids = torch.randint(0, model.config.vocab_size, (batch, seq))
        inputs, shape = (ids, ids.clone()), f"batch {batch}x{seq}"
    else:
        raise ValueError(f"unknown training model {name!r}; known: {', '.join(TRAIN_MODELS)}")
    wrapped = (_LanguageModelLoss(model) if base in ("bert", "gpt2")
               else _WithLoss(model, F.cross_entropy))
    if autocast:
        tol = dict(BF16_TOL)
    description = (f"{what}, {shape}, train step (+SGD outside)"
                   + (f", autocast {autocast}" if autocast else ""))
    return TrainStepWorkload(name, description, _no_dropout(wrapped).train(), inputs, train=True,
                             tol=tol, autocast=autocast)
