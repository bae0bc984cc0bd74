"""The training workloads of issue 4, shared by tests/python/test_training.py and
`python -m inductor_cpp.bench train`: an MLP with SGD + momentum, a small CNN with BatchNorm and
max-pooling with Adam, and a 2-layer transformer encoder with AdamW. Beside them, for the
matrix kernels' training paths (not in MODELS, so not run by default): "encoder", a BERT-sized
encoder (d 768, 12 heads, GELU FFN 3072; attention forward and backward) with AdamW, and
"resnet18", torchvision's resnet18 in channels-last (convolutions forward and backward) with SGD.

A `Trainer` owns a model, its optimizer and a fixed batch, and runs whole training steps
(zero_grad, forward, loss, backward, optimizer step). Built with a backend, it compiles the
model AND the optimizer step (`torch.compile` over a function calling `opt.step()`), so the
forward graph, the backward graph and the optimizer graph all go through that backend.
Dropout is 0 everywhere (random streams differ between eager and compiled code).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Callable

import torch
from torch import nn

MODELS = ("mlp", "cnn", "transformer")
EXTRA_MODELS = ("encoder", "resnet18")


class _TransformerClassifier(nn.Module):
    def __init__(self, d_model: int = 64, heads: int = 4, ff: int = 128, layers: int = 2, classes: int = 10,
                 activation: str = "relu"):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model, heads, ff, dropout=0.0, activation=activation,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d_model, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(x).mean(dim=1))


def build_model(name: str, size: str = "test") -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    """(model, inputs, integer class targets). size "test" is small (fast tests); "bench" is
    the benchmark size (milliseconds per step on 2 cores)."""
    big = size == "bench"
    if name == "mlp":
        width, batch = (1024, 256) if big else (128, 32)
        model = nn.Sequential(nn.Linear(256, width), nn.GELU(), nn.Linear(width, width), nn.ReLU(),
                              nn.Linear(width, 10))
        x = torch.randn(batch, 256)
    elif name == "cnn":
        batch, side = (32, 32) if big else (8, 16)
        model = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))
        x = torch.randn(batch, 3, side, side)
    elif name == "transformer":
        batch, seq = (16, 64) if big else (4, 16)
        model = _TransformerClassifier()
        x = torch.randn(batch, seq, 64)
    elif name == "encoder":
        (d, heads, ff), batch, seq = ((768, 12, 3072), 8, 128) if big else ((64, 4, 128), 2, 16)
        model = _TransformerClassifier(d, heads, ff, activation="gelu")
        x = torch.randn(batch, seq, d)
    elif name == "resnet18":
        import torchvision  # only this model needs it

        batch, side = (8, 112) if big else (2, 32)
        model = torchvision.models.resnet18(weights=None, num_classes=10)
        model = model.to(memory_format=torch.channels_last)
        x = torch.randn(batch, 3, side, side).to(memory_format=torch.channels_last)
    else:
        raise ValueError(f"unknown training model {name!r} (known: {', '.join(MODELS + EXTRA_MODELS)})")
    return model, x, torch.randint(0, 10, (x.shape[0],))


def build_optimizer(name: str, params) -> torch.optim.Optimizer:
    if name == "mlp":
        return torch.optim.SGD(params, lr=0.05, momentum=0.9)
    if name == "resnet18":
        return torch.optim.SGD(params, lr=0.01)
    if name == "cnn":
        return torch.optim.Adam(params, lr=1e-3)
    return torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01)


@dataclass
class Trainer:
    model: nn.Module
    optimizer: torch.optim.Optimizer
    x: torch.Tensor
    target: torch.Tensor
    forward: Callable[[torch.Tensor], torch.Tensor]
    optimizer_step: Callable[[], None]
    autocast: torch.dtype | None = None

    def step(self) -> torch.Tensor:
        """One training step; returns the loss (detached)."""
        self.optimizer.zero_grad(set_to_none=True)
        if self.autocast is not None:
            with torch.autocast("cpu", dtype=self.autocast):
                loss = nn.functional.cross_entropy(self.forward(self.x), self.target)
        else:
            loss = nn.functional.cross_entropy(self.forward(self.x), self.target)
        loss.backward()
        self.optimizer_step()
        return loss.detach()


def make_trainer(name: str, model: nn.Module, x: torch.Tensor, target: torch.Tensor,
                 backend: str | None, autocast: torch.dtype | None = None,
                 options: dict | None = None) -> Trainer:
    """A Trainer over a deep copy of `model` (so several trainers start from one model);
    `backend` None trains eagerly, else model and optimizer step are torch.compile'd with it
    (and its `options`)."""
    model = copy.deepcopy(model).train()
    optimizer = build_optimizer(name, model.parameters())
    if backend is None:
        return Trainer(model, optimizer, x, target, model, optimizer.step, autocast)

    def optimizer_step() -> None:
        optimizer.step()

    return Trainer(model, optimizer, x, target, torch.compile(model, backend=backend, options=options),
                   torch.compile(optimizer_step, backend=backend, options=options), autocast)


def grad_errors(name: str, model: nn.Module, x: torch.Tensor, target: torch.Tensor,
                backend: str) -> dict[str, tuple[float, float]]:
    """Per parameter: (eager float32 error, compiled float32 error) of the first step's gradient,
    both measured against a float64 eager reference, as max |g - g64| / max |g64|."""
    grads = {}
    for label, run_backend, dtype in (("eager", None, torch.float32), ("compiled", backend, torch.float32),
                                      ("reference", None, torch.float64)):
        m = copy.deepcopy(model).to(dtype).train()
        fwd = m if run_backend is None else torch.compile(m, backend=run_backend)
        nn.functional.cross_entropy(fwd(x.to(dtype)), target).backward()
        grads[label] = {n: p.grad.double() for n, p in m.named_parameters()}
    out = {}
    for n, ref in grads["reference"].items():
        scale = ref.abs().max().item() or 1.0
        out[n] = ((grads["eager"][n] - ref).abs().max().item() / scale,
                  (grads["compiled"][n] - ref).abs().max().item() / scale)
    return out
