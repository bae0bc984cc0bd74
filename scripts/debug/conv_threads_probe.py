"""One convolution layer on our library at several thread counts, called back to back (ms per
call, median of 30): tells a threading or per-call cost apart from the kernels' speed.

Usage: python scripts/debug/conv_threads_probe.py C OC MAP K STRIDE PAD [batch=16] [threads=1,2,4,8,16]
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

from inductor_cpp import _C

c, oc, hw, k, s, p = (int(a) for a in sys.argv[1:7])
batch = int(sys.argv[7]) if len(sys.argv) > 7 else 16
counts = [int(t) for t in (sys.argv[8] if len(sys.argv) > 8 else "1,2,4,8,16").split(",")]
x = torch.randn(batch, c, hw, hw).to(memory_format=torch.channels_last)
w = torch.randn(oc, c, k, k).to(memory_format=torch.channels_last)
print(f"{c}->{oc} {k}x{k}/{s} pad {p} @{hw} batch {batch}: ms per call (median of 30, back to back)")
for t in counts:
    torch.set_num_threads(t)
    rows = {"eager": [], "ours": [], "pack": [], "conv": []}
    for _ in range(35):
        t0 = time.perf_counter()
        F.conv2d(x, w, stride=s, padding=p)
        rows["eager"].append(time.perf_counter() - t0)
    for _ in range(35):
        t0 = time.perf_counter()
        _, pack_s, conv_s = _C.matrix.conv2d_f32(x, w, [s, s], [p, p], [1, 1], t)
        rows["ours"].append(time.perf_counter() - t0)
        rows["pack"].append(pack_s)
        rows["conv"].append(conv_s)
    print(f"threads {t:2}: " + "  ".join(f"{n} {statistics.median(v[5:]) * 1e3:.3f}" for n, v in rows.items()))
