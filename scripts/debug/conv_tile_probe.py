"""Direct-convolution register tiles against oneDNN: each setting of
INDUCTOR_CPP_MATRIX_CONV_TILE (read once per process) in its own process, the settings
alternating over rounds; per process, eager `F.conv2d` and our kernel (`_C.matrix.conv2d_f32`,
its conv part, the weight packed in the call but not timed) called back to back, medians.

Usage: python scripts/debug/conv_tile_probe.py [batch=32] [threads=16] [rounds=2] [settings=default,6;2]
Settings are "mr;panels" (";" since "," separates them), "default" the built-in tile.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys

LAYERS = [(64, 64, 56, 3, 1, 1), (128, 128, 28, 3, 1, 1), (256, 256, 14, 3, 1, 1),
          (512, 512, 7, 3, 1, 1), (64, 128, 56, 3, 2, 1)]

CHILD = r"""
import statistics, sys, time, torch, torch.nn.functional as F
from inductor_cpp import _C
batch, threads = int(sys.argv[1]), int(sys.argv[2])
torch.set_num_threads(threads)
for spec in sys.argv[3:]:
    c, oc, hw, k, s, p = (int(v) for v in spec.split(":"))
    x = torch.randn(batch, c, hw, hw).to(memory_format=torch.channels_last)
    w = torch.randn(oc, c, k, k).to(memory_format=torch.channels_last)
    calls = max(8, int(0.4 / max(1e-4, 2.0 * batch * c * oc * k * k * (hw // s) ** 2 / 1e12)))
    eager, ours = [], []
    for _ in range(calls + 3):
        t0 = time.perf_counter(); F.conv2d(x, w, stride=s, padding=p)
        eager.append(time.perf_counter() - t0)
        ours.append(_C.matrix.conv2d_f32(x, w, [s, s], [p, p], [1, 1], threads)[2])
    print(spec, statistics.median(eager[3:]) * 1e3, statistics.median(ours[3:]) * 1e3, flush=True)
"""


def main() -> None:
    batch = int(sys.argv[1]) if len(sys.argv) > 1 else 32
    threads = int(sys.argv[2]) if len(sys.argv) > 2 else 16
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    settings = (sys.argv[4] if len(sys.argv) > 4 else "default,6;2").split(",")
    specs = [":".join(map(str, layer)) for layer in LAYERS]
    ratios: dict[tuple[str, str], list[float]] = {}
    for r in range(rounds):
        for setting in settings[r % len(settings):] + settings[:r % len(settings)]:
            env = dict(os.environ)
            env.pop("INDUCTOR_CPP_MATRIX_CONV_TILE", None)
            if setting != "default":
                env["INDUCTOR_CPP_MATRIX_CONV_TILE"] = setting.replace(";", ",")
            out = subprocess.run([sys.executable, "-c", CHILD, str(batch), str(threads), *specs],
                                 env=env, capture_output=True, text=True, check=True).stdout
            for line in out.splitlines():
                spec, eager_ms, ours_ms = line.split()
                ratios.setdefault((spec, setting), []).append(float(eager_ms) / float(ours_ms))
                print(f"round {r} {setting:8} {spec:16} eager {float(eager_ms):8.3f} ms  "
                      f"ours {float(ours_ms):8.3f} ms  {float(eager_ms) / float(ours_ms):.3f}x",
                      flush=True)
    print(f"\nbatch {batch}, {threads} threads: eager / ours (kernel), per round")
    for spec in specs:
        print(spec, "  ".join(f"{s}: " + "/".join(f"{v:.3f}" for v in ratios[(spec, s)])
                              + f" (median {statistics.median(ratios[(spec, s)]):.3f})"
                              for s in settings))


if __name__ == "__main__":
    main()
