"""resnet18's convolutions at one batch and image size, layer by layer, channels-last float32:
eager (oneDNN) against our library called directly, forward (our weight packed per call, as a
training step packs it: pack and convolution timed apart) and backward (dx and dw, as
aten.convolution_backward computes them in a training step; our dx of strided 3×3 filters is
left to ATen in compiled graphs but timed here). Median of interleaved rounds, ms per call.

Usage: python scripts/debug/conv_layers_probe.py [threads=16] [batch=16] [image=112] [rounds=15]
"""

from __future__ import annotations

import statistics
import sys
import time

import torch
import torch.nn.functional as F

from inductor_cpp import _C

args = [int(a) for a in sys.argv[1:]] + [16, 16, 112, 15][len(sys.argv) - 1:]
threads, batch, image, rounds = args[:4]
torch.set_num_threads(threads)
lib = _C.matrix

# (in channels, out channels, input map, kernel, stride, padding): resnet18's distinct layers.
stem_map, m = image // 2, image // 4
layers = [(3, 64, image, 7, 2, 3), (64, 64, m, 3, 1, 1), (64, 128, m, 3, 2, 1), (64, 128, m, 1, 2, 0),
          (128, 128, m // 2, 3, 1, 1), (128, 256, m // 2, 3, 2, 1), (128, 256, m // 2, 1, 2, 0),
          (256, 256, m // 4, 3, 1, 1), (256, 512, m // 4, 3, 2, 1), (256, 512, m // 4, 1, 2, 0),
          (512, 512, (m + 7) // 8, 3, 1, 1)]


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


print(f"threads {threads}, batch {batch}, image {image}: ms per call, median of {rounds} rounds")
print(f"{'layer':<26} {'eager fwd':>9} {'ours fwd':>9} {'(pack':>7} {'conv)':>7} {'eager bwd':>9} {'ours bwd':>9}")
for c, oc, hw, k, s, p in layers:
    x = torch.randn(batch, c, hw, hw).to(memory_format=torch.channels_last)
    w = torch.randn(oc, c, k, k).to(memory_format=torch.channels_last) * (2 / (c * k * k)) ** 0.5
    y = F.conv2d(x, w, stride=s, padding=p)
    dy = torch.randn_like(y)
    strided_dx = s > 1 and k > 1

    def eager_bwd():
        return torch.ops.aten.convolution_backward(dy, x, w, None, [s, s], [p, p], [1, 1], False, [0, 0], 1,
                                                   [c > 3, True, False])

    samples = {k_: [] for k_ in ("ef", "of", "pack", "conv", "eb", "ob")}
    for r in range(rounds + 2):
        ef, ye = timed(lambda: F.conv2d(x, w, stride=s, padding=p))
        of, (yo, pack_s, conv_s) = timed(lambda: lib.conv2d_f32(x, w, [s, s], [p, p], [1, 1], threads))
        eb, _ = timed(eager_bwd)
        ob, _ = timed(lambda: lib.conv2d_backward_f32(dy, x, w, [s, s], [p, p], [1, 1], threads,
                                                      input=c > 3, weight=True))
        if r == 0:
            err = (yo - ye).abs().max().item() / ye.abs().max().item()
            assert err < 1e-4, f"forward differs from eager: {err}"
        if r >= 2:
            for key, v in zip(samples, (ef, of, pack_s, conv_s, eb, ob)):
                samples[key].append(v * 1e3)
    med = {key: statistics.median(v) for key, v in samples.items()}
    name = f"{c}->{oc} {k}x{k}/{s} @{hw}" + (" (dx ATen)" if strided_dx else "")
    print(f"{name:<26} {med['ef']:9.3f} {med['of']:9.3f} {med['pack']:7.3f} {med['conv']:7.3f} "
          f"{med['eb']:9.3f} {med['ob']:9.3f}")
