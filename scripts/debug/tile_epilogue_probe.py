"""What a tile epilogue (docs/codegen/matrix.md "Tile epilogues") saves: an mm followed by a
consumer the GEMM's epilogue ops cannot express, compiled with matrix_kernels on, with the
consumer as a tile kernel inside the GEMM ("tile") and as a kernel of its own after it ("off").

  python scripts/debug/tile_epilogue_probe.py [threads=2] [shapes=8192x1024x32,4096x3072x64,...]
  python scripts/debug/tile_epilogue_probe.py conv [threads=2]
      channels-last convolutions (MobileNetV3-like 1x1 and 3x3 layers, batch 8) followed by
      hardswish or leaky_relu

Per shape (M x N x K) and consumer, the median ms of alternating rounds (the order flips every
round), and off / tile (> 1: the tile epilogue is faster). Outputs are checked against eager."""
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

CONSUMERS_ALL = {
    "leaky_relu(z)": lambda x, w, g, y: F.leaky_relu(x @ w, 0.1),
    "z*g (g per column)": lambda x, w, g, y: (x @ w) * g,
    "z*g+y": lambda x, w, g, y: (x @ w) * g + y,
    "z/2+y*y": lambda x, w, g, y: (x @ w) * 0.5 + y * y,
    "leaky(z)*sigmoid(g)": lambda x, w, g, y: F.leaky_relu(x @ w, 0.1) * torch.sigmoid(g),
    "exp(z/100)+1": lambda x, w, g, y: torch.exp((x @ w) * 0.01) + 1,
}
# INDUCTOR_CPP_PROBE_CONSUMERS="name,name": a subset.
CONSUMERS = {k: v for k, v in CONSUMERS_ALL.items()
             if k in os.environ.get("INDUCTOR_CPP_PROBE_CONSUMERS", k).split(",")}


def ms_per_call(fn, args, calls=20):
    for _ in range(3):
        fn(*args)
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def compare(label, fn, args):
    """Prints tile against separate kernel for fn(*args), checked against eager."""
    torch._dynamo.reset()
    options = {"matrix_kernels": True}
    variants = {"tile": torch.compile(fn, backend="inductor_cpp", dynamic=False, options=options),
                "off": torch.compile(fn, backend="inductor_cpp", dynamic=False,
                                     options={**options, "matrix_tile_epilogues": False})}
    with torch.no_grad():
        expected = fn(*args)
        for v in variants.values():
            torch.testing.assert_close(v(*args), expected, rtol=1e-3, atol=1e-3)
        samples = {v: [] for v in variants}
        for r in range(4):
            for v in (["tile", "off"] if r % 2 == 0 else ["off", "tile"]):
                samples[v].append(ms_per_call(variants[v], args))
    med = {v: statistics.median(s) for v, s in samples.items()}
    print(f"{label:40s} tile {med['tile']:8.2f}  off {med['off']:8.2f}  "
          f"off/tile {med['off'] / med['tile']:.3f}", flush=True)


def conv_main(threads):
    torch.set_num_threads(threads)
    print(f"{threads} thread(s); ms per call, median of 4 alternating rounds of 20 calls")
    cl = torch.channels_last
    for batch, c, hw, oc, k in [(8, 16, 56, 64, 1), (8, 64, 56, 64, 3), (8, 96, 14, 576, 1),
                                (8, 160, 7, 960, 1)]:
        x = torch.randn(batch, c, hw, hw).contiguous(memory_format=cl)
        w, b = torch.randn(oc, c, k, k).contiguous(memory_format=cl), torch.randn(oc)
        for name, act in [("hardswish", F.hardswish), ("leaky_relu", lambda t: F.leaky_relu(t, 0.1))]:
            fn = lambda x, w, b, act=act, k=k: act(F.conv2d(x, w, b, padding=k // 2))  # noqa: E731
            compare(f"conv b{batch} {k}x{k} {c}->{oc} @{hw} +{name}", fn, (x, w, b))


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "conv":
        return conv_main(int(sys.argv[2]) if len(sys.argv) > 2 else 2)
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    shapes = sys.argv[2] if len(sys.argv) > 2 else "8192x1024x32,4096x3072x64,1024x3072x768"
    torch.set_num_threads(threads)
    print(f"{threads} thread(s); ms per call, median of 4 alternating rounds of 20 calls")
    for shape in shapes.split(","):
        m, n, k = map(int, shape.split("x"))
        args = (torch.randn(m, k), torch.randn(k, n), torch.randn(n), torch.randn(m, n))
        for name, fn in CONSUMERS.items():
            compare(f"{m}x{n}x{k} {name}", fn, args)

if __name__ == "__main__":
    main()
