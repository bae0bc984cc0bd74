"""The workloads of `python -m inductor_cpp.bench suite`, built the same way in every process.

Micro workloads are micro.py's (pointwise chain, softmax, layernorm, sum(-1), sum(0)) at its
cache size class on the CPU, 8192x8192 on CUDA; models are resnet18 inference, an MLP training step, and a small transformer
encoder in inference and in training. A training step is forward + loss + backward with the
loss inside the compiled module (so forward and backward graphs are both compiled), no
optimizer step (weights stay fixed, so every call does the same work); its outputs are the
loss and every parameter's gradient. Everything is built from a seed, so the processes of one
suite run (cold compile, warm compile, memory) see the same weights and inputs.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from . import micro

TIGHT_TOL = {"rtol": 1e-4, "atol": 1e-5}
MODEL_TOL = {"rtol": 1e-3, "atol": 1e-3}  # convolutions and long matmuls reassociate
TRAIN_TOL = {"rtol": 1e-3, "atol": 1e-4}

MICRO = ("pointwise", "softmax", "layernorm", "sum1", "sum0")
MODELS = ("resnet18", "mlp_train", "transformer", "transformer_train")
ALL = MICRO + MODELS  # --mode infer (the default): the suite as it was before --mode
TRAIN_MODELS = tuple(f"{m}_train" for m in ("resnet18", "resnet50", "mobilenet_v3_small",
                                           "convnext_tiny", "deit_tiny", "bert", "gpt2"))
# --mode models: the inference model suite of issues 41 and 51 (suite_models.py).
INFER_MODELS = ("resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0",
                "regnet_y_400mf", "densenet121", "convnext_tiny", "shufflenet_v2_x1_0", "vit_b_16",
                "deit_tiny", "mixer_s16", "bert4", "distilbert", "gpt2_4", "t5_small2")
KNOWN = ALL + TRAIN_MODELS + INFER_MODELS[1:]


@dataclass
class Workload:
    """One workload on one device: the eager callable (a function or module), its inputs, and
    how to run one step of it."""

    name: str
    description: str
    fn: Callable
    inputs: tuple
    train: bool = False
    tol: dict = field(default_factory=lambda: dict(TIGHT_TOL))
    bytes_moved: int | None = None  # micro: inputs read once + outputs written once
    autocast: str | None = None  # "bf16": training forward + loss under torch.autocast

    def parameters(self, module: nn.Module | None = None) -> list[torch.Tensor]:
        module = self.fn if module is None else module
        return list(module.parameters()) if isinstance(module, nn.Module) else []

    def step(self, fn: Callable, module: nn.Module | None = None) -> list[torch.Tensor]:
        """One call of `fn` (this workload's fn, or a compiled version of it): the outputs;
        for training, the loss then every parameter's gradient (of `module`, default fn's)."""
        if not self.train:
            with torch.no_grad():
                out = fn(*self.inputs)
            return _flat(out)
        params = self.parameters(module)
        for p in params:
            p.grad = None
        if self.autocast:
            with torch.autocast(self.inputs[0].device.type, dtype=torch.bfloat16):
                loss = fn(*self.inputs)
        else:
            loss = fn(*self.inputs)
        loss.backward()
        return [loss.detach()] + [p.grad for p in params]

    def bind(self, compile_fn: Callable[[Any], Callable]) -> Callable[[], list[torch.Tensor]]:
        """A step function of this workload, its fn compiled by `compile_fn` (identity for
        eager); here every variant shares fn (no step changes it)."""
        fn = compile_fn(self.fn)
        return lambda: self.step(fn)

    def reference64(self) -> list[torch.Tensor]:
        """The same step in float64 (on a float64 copy), for a second-chance accuracy check."""
        fn = copy.deepcopy(self.fn).double() if isinstance(self.fn, nn.Module) else self.fn
        inputs = tuple(t.double() if t.is_floating_point() else t for t in self.inputs)
        twin = Workload(self.name, self.description, fn, inputs, self.train, self.tol,
                        autocast=self.autocast)
        return twin.step(fn)


def _flat(out: Any) -> list[torch.Tensor]:
    if isinstance(out, (list, tuple)):
        return [t for x in out for t in _flat(x)]
    return [out]


def _nbytes(tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


# ------------------------------------------------------------------------------- builders

class _WithLoss(nn.Module):
    """A model whose forward returns a scalar loss, so one compiled module covers the loss."""

    def __init__(self, model: nn.Module, loss: Callable):
        super().__init__()
        self.model, self.loss = model, loss

    def forward(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return self.loss(self.model(x), target)


def _mlp(dims: tuple[int, ...]) -> nn.Module:
    layers: list[nn.Module] = []
    for i, (d_in, d_out) in enumerate(itertools.pairwise(dims)):
        layers.append(nn.Linear(d_in, d_out))
        if i < len(dims) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def _encoder(d_model: int, heads: int, layers: int) -> nn.Module:
    layer = nn.TransformerEncoderLayer(d_model, heads, dim_feedforward=4 * d_model, dropout=0.0,
                                       batch_first=True)
    return nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)


def _sizes(quick: bool, device: str) -> dict[str, Any]:
    """matrix (rows, cols); resnet (batch, image); mlp (dims, batch); encoder (d_model, heads,
    layers, batch, sequence). CUDA sizes follow BENCHMARKS.md's GPU anchors (8192x8192 =
    256 MiB per tensor, resnet18 batch 64): the CPU's would only measure launch overhead."""
    if quick:
        return {"matrix": (64, 256), "resnet": (1, 64), "mlp": ((32, 64, 64, 10), 8),
                "encoder": (32, 2, 1, 2, 16)}
    if device == "cuda":
        return {"matrix": (8192, 8192), "resnet": (64, 224), "mlp": ((512, 1024, 1024, 10), 1024),
                "encoder": (512, 8, 2, 32, 256)}
    return {"matrix": micro.parse_shape(micro.DEFAULT_SHAPES["cache"]), "resnet": (8, 224),
            "mlp": ((512, 1024, 1024, 10), 64), "encoder": (256, 4, 2, 8, 128)}


def _micro(name: str, rows: int, cols: int) -> Workload:
    spec = micro.WORKLOADS[name]
    fn, inputs = spec.make((rows, cols), None)
    with torch.no_grad():
        out = fn(*inputs)
    return Workload(name, f"{spec.label} [{rows}x{cols}]", fn, inputs,
                    bytes_moved=_nbytes(inputs) + _nbytes(_flat(out)))


def build(name: str, device: str, quick: bool, seed: int = 0,
          autocast: str | None = None) -> Workload:
    """Workload `name` on `device`, from `seed` (the same in every process); training
    workloads run forward + loss under `autocast` ("bf16") when given. A name of
    suite_train.TRAIN_MODELS raises suite_train.Skipped when its package is missing."""
    torch.manual_seed(seed)
    sizes = _sizes(quick, device)
    if name in TRAIN_MODELS:
        from .suite_train import build_train

        return _to(build_train(name, device, quick, autocast), device)
    if name in INFER_MODELS[1:]:
        from .suite_models import build_model

        return _to(build_model(name, device, quick), device)
    if name in MICRO:
        w = _micro(name, *sizes["matrix"])
    elif name == "resnet18":
        import torchvision

        batch, image = sizes["resnet"]
        w = Workload(name, f"resnet18 inference, batch {batch}x3x{image}x{image}",
                     torchvision.models.resnet18(weights=None).eval(),
                     (torch.randn(batch, 3, image, image),), tol=dict(MODEL_TOL))
    elif name == "mlp_train":
        dims, batch = sizes["mlp"]
        w = Workload(name, f"MLP {'-'.join(map(str, dims))} train step, batch {batch}",
                     _WithLoss(_mlp(dims), F.cross_entropy),
                     (torch.randn(batch, dims[0]), torch.randint(0, dims[-1], (batch,))),
                     train=True, tol=dict(TRAIN_TOL))
    elif name in ("transformer", "transformer_train"):
        d, heads, layers, batch, seq = sizes["encoder"]
        train = name == "transformer_train"
        label = (f"transformer encoder d{d} h{heads} x{layers}, batch {batch}x{seq}, "
                 f"{'train step' if train else 'inference'}")
        x = torch.randn(batch, seq, d)
        if train:
            w = Workload(name, label, _WithLoss(_encoder(d, heads, layers), F.mse_loss),
                         (x, torch.randn(batch, seq, d)), train=True, tol=dict(TRAIN_TOL))
        else:
            w = Workload(name, label, _encoder(d, heads, layers).eval(), (x,),
                         tol=dict(MODEL_TOL))
    else:
        raise ValueError(f"unknown workload {name!r}; known: {', '.join(KNOWN)}")
    w.autocast = autocast if w.train else None
    return _to(w, device)


def _to(w: Workload, device: str) -> Workload:
    if device == "cpu":
        return w
    if isinstance(w.fn, nn.Module):
        w.fn = w.fn.to(device)
    w.inputs = tuple(t.to(device) for t in w.inputs)
    return w
