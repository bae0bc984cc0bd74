"""Training step (forward, backward, AdamW) of a BERT-style encoder (nn.TransformerEncoder,
batch_first, GELU, dropout 0) side by side in one process: eager, stock Inductor, ours with
matrix_kernels on (attention forward and backward on our kernels, with the GEMMs) and off.
Prints the attention steps of our plans, the median step time of interleaved rounds and the
first-step losses against eager's.

Usage: python scripts/debug/attention_train_probe.py [threads=2] [batch=8] [seq=128] [layers=2] [rounds=7]
"""

from __future__ import annotations

import copy
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

import inductor_cpp  # noqa: F401  (registers the backend)
from train_rounds import first_steps, timed_rounds

threads, batch, seq, layers, rounds = (int(a) for a in (sys.argv[1:] + ["2", "8", "128", "2", "7"][len(sys.argv) - 1:]))
torch.set_num_threads(threads)
torch.manual_seed(0)
layer = nn.TransformerEncoderLayer(768, 12, 3072, dropout=0.0, activation="gelu", batch_first=True)
base = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
x = torch.randn(batch, seq, 768)
target = torch.randn(batch, seq, 768)
variants = {"eager": None, "stock": ("inductor", None), "ours mk=on": ("inductor_cpp", {"matrix_kernels": True}),
            "ours mk=off": ("inductor_cpp", {"matrix_kernels": False})}
steps, losses = {}, {}
for name, spec in variants.items():
    model = copy.deepcopy(base)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    run = model if spec is None else torch.compile(model, backend=spec[0], options=spec[1], dynamic=False)

    def step(run=run, opt=opt, model=model):
        opt.zero_grad(set_to_none=True)
        loss = F.mse_loss(run(x), target)
        loss.backward()
        opt.step()
        return loss.detach()
    losses[name] = first_steps(name, step, ['matrix::attention', 'matrix::attention_backward', '_scaled_dot_product_flash_attention_for_cpu_backward'])
    steps[name] = step
timed_rounds(steps, losses, rounds)
