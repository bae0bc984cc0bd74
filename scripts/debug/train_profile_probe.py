"""Profiler table of a compiled channels-last resnet18 training step (SGD): where the step's
time goes, by op and generated kernel (self CPU time over 3 steps after 3 warm-up steps).

Usage: python scripts/debug/train_profile_probe.py [threads=2] [batch=8] [image=112] [eager|on|off]
    [rows=22] [shapes=0]
(on / off: inductor_cpp with matrix_kernels on / off; rows: table rows; shapes=1 groups ATen ops
by input shape, which tells eager's convolutions apart layer by layer)
"""

from __future__ import annotations

import sys

import torch
import torch.nn.functional as F
import torchvision
from torch.profiler import ProfilerActivity, profile

import inductor_cpp  # noqa: F401  (registers the backend)

args = sys.argv[1:] + ["2", "8", "112", "on", "22", "0"][len(sys.argv) - 1:]
threads, batch, image, variant = int(args[0]), int(args[1]), int(args[2]), args[3]
rows, by_shape = int(args[4]), args[5] == "1"
torch.set_num_threads(threads)
torch.manual_seed(0)
model = torchvision.models.resnet18(weights=None).to(memory_format=torch.channels_last)
x = torch.randn(batch, 3, image, image).to(memory_format=torch.channels_last)
target = torch.randint(0, 1000, (batch,))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
run = model if variant == "eager" else torch.compile(
    model, backend="inductor_cpp", options={"matrix_kernels": variant == "on"}, dynamic=False)


def step():
    opt.zero_grad(set_to_none=True)
    F.cross_entropy(run(x), target).backward()
    opt.step()


for _ in range(3):
    step()
with profile(activities=[ProfilerActivity.CPU], record_shapes=by_shape) as prof:
    for _ in range(3):
        step()
print(prof.key_averages(group_by_input_shape=by_shape).table(
    sort_by="self_cpu_time_total", row_limit=rows, max_name_column_width=110, max_shapes_column_width=90))
