"""One convolution layer compiled with matrix kernels against eager and the library call, back
to back (ms per call, median of 30), then the compiled call's profile: tells a per-call cost of
the compiled step (allocation, copies, Dynamo) apart from the kernel.

Usage: python scripts/debug/conv_compiled_probe.py C OC MAP K STRIDE PAD [batch=32] [threads=16]
"""

from __future__ import annotations

import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

import inductor_cpp
from inductor_cpp import _C

c, oc, hw, k, s, p = (int(a) for a in sys.argv[1:7])
batch = int(sys.argv[7]) if len(sys.argv) > 7 else 32
threads = int(sys.argv[8]) if len(sys.argv) > 8 else 16
torch.set_num_threads(threads)
x = torch.randn(batch, c, hw, hw).to(memory_format=torch.channels_last)
w = torch.randn(oc, c, k, k).to(memory_format=torch.channels_last)
f = lambda x, w: F.conv2d(x, w, stride=s, padding=p)  # noqa: E731
compiled = torch.compile(f, backend="inductor_cpp", dynamic=False, options={"matrix_kernels": True})
variants = {"eager": lambda: f(x, w), "ours": lambda: compiled(x, w),
            "library": lambda: _C.matrix.conv2d_f32(x, w, [s, s], [p, p], [1, 1], threads)}
with torch.no_grad():
    for _ in range(3):
        compiled(x, w)
    for name, fn in variants.items():
        times = []
        for _ in range(35):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        print(f"{name:8} {statistics.median(times[5:]) * 1e3:.3f} ms")
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(10):
            compiled(x, w)
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12, max_name_column_width=80))
