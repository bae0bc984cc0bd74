"""Training step of a channels-last torchvision resnet18 (SGD, cross-entropy), side by side in
one process: eager, stock Inductor, ours with matrix_kernels on (convolutions forward and
backward on our kernels) and off. Prints the median step time of interleaved rounds and the
first-step losses against eager's.

Usage: python scripts/debug/conv_backward_train_probe.py [threads=2] [batch=8] [image=112] [rounds=7]
"""

from __future__ import annotations

import copy
import sys

import torch
import torch.nn.functional as F
import torchvision

import inductor_cpp  # noqa: F401  (registers the backend)
from train_rounds import first_steps, timed_rounds

threads, batch, image, rounds = (int(a) for a in (sys.argv[1:] + ["2", "8", "112", "7"][len(sys.argv) - 1:]))
torch.set_num_threads(threads)
torch.manual_seed(0)
base = torchvision.models.resnet18(weights=None).to(memory_format=torch.channels_last)
x = torch.randn(batch, 3, image, image).to(memory_format=torch.channels_last)
target = torch.randint(0, 1000, (batch,))
variants = {"eager": None, "stock": ("inductor", None), "ours mk=on": ("inductor_cpp", {"matrix_kernels": True}),
            "ours mk=off": ("inductor_cpp", {"matrix_kernels": False})}
steps, losses = {}, {}
for name, spec in variants.items():
    model = copy.deepcopy(base)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    run = model if spec is None else torch.compile(model, backend=spec[0], options=spec[1], dynamic=False)

    def step(run=run, opt=opt):
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(run(x), target)
        loss.backward()
        opt.step()
        return loss.detach()
    losses[name] = first_steps(name, step, ['matrix::conv2d', 'matrix::conv2d_backward', 'aten::convolution_backward'])
    steps[name] = step
timed_rounds(steps, losses, rounds)
