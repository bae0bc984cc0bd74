"""Small GEMMs on our library (B pre-packed, as a compiled graph's packed-weight cache keeps it)
against eager `torch.mm`, back to back in one process, µs per call (best of 3 × 3,000 calls):
the kernels' and the binding's cost with no Dynamo around them.

Usage: python scripts/debug/small_gemm_probe.py [threads=16] [shapes=64x64x64,128x128x128,8x768x768]
(shapes M x N x K)
"""

from __future__ import annotations

import sys
import time

import torch

from inductor_cpp import _C

threads = int(sys.argv[1]) if len(sys.argv) > 1 else 16
shapes = [tuple(int(v) for v in s.split("x"))
          for s in (sys.argv[2] if len(sys.argv) > 2 else "8x8x8,64x64x64,128x128x128,8x768x768").split(",")]
torch.set_num_threads(threads)
for m, n, k in shapes:
    a, b = torch.randn(m, k), torch.randn(k, n)
    packed = _C.matrix.pack_b_f32(b)
    variants = {"eager": lambda: torch.mm(a, b),
                "library": lambda: _C.matrix.gemm_f32(a, b, threads, None, False, packed)}
    best: dict[str, float] = {}
    for _ in range(3):
        for name, fn in variants.items():
            for _ in range(300):
                fn()
            start = time.perf_counter()
            for _ in range(3000):
                fn()
            best[name] = min(best.get(name, 1e9), (time.perf_counter() - start) / 3000 * 1e6)
    print(f"{m}x{n}x{k} threads {threads}: " + "  ".join(f"{n_} {v:.2f} us" for n_, v in best.items()),
          flush=True)
