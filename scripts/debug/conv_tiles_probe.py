"""Convolution tile modes on the library against oneDNN, one thread count: runs the C++
`matrix_bench` (tests/cpp) once per INDUCTOR_CPP_CONV_TILES mode (rows, span, and the default
choice) on its conv (batch 1) and conv32 (batch 32) layers, and times eager `F.conv2d` (oneDNN,
channels-last) on the same 3×3 layers in this process for reference.

Usage: python scripts/debug/conv_tiles_probe.py MATRIX_BENCH [threads=16] [modes=rows,span,default]
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

bench = sys.argv[1]
threads = int(sys.argv[2]) if len(sys.argv) > 2 else 16
modes = (sys.argv[3] if len(sys.argv) > 3 else "rows,span,default").split(",")

# (label as matrix_bench prints it, channels, map size): the 3×3 stride-1 layers of its table.
layers = [("r50 3x3 64 56x56", 64, 56), ("r50 3x3 128 28x28", 128, 28), ("r50 3x3 256 14x14", 256, 14),
          ("r50 3x3 512 7x7", 512, 7), ("r18@112 3x3 512 4x4", 512, 4)]

torch.set_num_threads(threads)
print(f"threads {threads}, {torch.backends.cpu.get_cpu_capability()}")
for batch in (1, 32):
    for label, c, hw in layers:
        x = torch.randn(batch, c, hw, hw).to(memory_format=torch.channels_last)
        w = torch.randn(c, c, 3, 3).to(memory_format=torch.channels_last)
        for _ in range(3):
            F.conv2d(x, w, padding=1)
        times = []
        for _ in range(15 if batch == 32 else 50):
            t0 = time.perf_counter()
            F.conv2d(x, w, padding=1)
            times.append(time.perf_counter() - t0)
        ms = statistics.median(times) * 1e3
        gflops = 2 * batch * hw * hw * c * c * 9 / (ms * 1e-3) * 1e-9
        print(f"eager  b{batch} {label:<22} {ms:8.3f} ms {gflops:8.1f} GFLOP/s")

for mode in modes:
    env = dict(os.environ)
    env.pop("INDUCTOR_CPP_CONV_TILES", None)
    if mode != "default":
        env["INDUCTOR_CPP_CONV_TILES"] = mode
    env["OMP_NUM_THREADS"] = str(threads)
    for group in ("conv", "conv32"):
        out = subprocess.run([bench, str(threads), group], env=env, capture_output=True, text=True).stdout
        for line in out.splitlines():
            m = re.match(r"conv\s+(b\d+ .+?)\s{2,}([\d.]+) ms\s+([\d.]+) GFLOP/s", line)
            if m and "3x3" in m.group(1):
                print(f"{mode:<7}{m.group(1):<26} {float(m.group(2)):8.3f} ms {float(m.group(3)):8.1f} GFLOP/s")
