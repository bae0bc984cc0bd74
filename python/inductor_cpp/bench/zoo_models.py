"""torchvision classifiers set up for correctness checks (tests/python/test_model_zoo.py,
`python -m inductor_cpp.bench zoo`): 10 classes, no randomness in the forward, and activations
of a realistic size."""

from __future__ import annotations

import torch
import torch.nn as nn


def build_zoo_model(name: str, image: int) -> nn.Module:
    """torchvision's `name` with 10 classes for `image`² inputs, left in train mode:
    * dropout and stochastic depth at 0 (random streams differ between eager and compiled);
    * no all-zero weights (ViT zero-initializes its head: every output would be 0);
    * BatchNorm statistics of two random batches: with the initial ones (mean 0, variance 1)
      the activations of deep nets (googlenet, shufflenet) vanish and the logits are the last
      bias, which any compiler matches."""
    import torchvision  # only these checks need it

    kwargs = {"num_classes": 10, "weights": None}
    if name == "googlenet":
        kwargs.update(aux_logits=False, init_weights=True)
    if name.startswith("vit"):
        kwargs["image_size"] = image
    model = torchvision.models.get_model(name, **kwargs)
    norms = []
    for m in model.modules():
        if isinstance(m, nn.Dropout) or type(m).__name__ == "StochasticDepth":
            m.p = 0.0
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            m.momentum = None  # a cumulative average over the calibration batches
            norms.append(m)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() >= 2 and not p.any():
                p.normal_(0, 0.02)
        model.train()
        for _ in range(2):
            model(torch.randn(4, 3, image, image))
    for m in norms:
        m.momentum = 0.1
    return model
