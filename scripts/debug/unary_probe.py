"""Elementwise transcendental ops compiled alone against eager (the CPU code generator's math,
docs/codegen/cpu.md "Math: Sleef, and why").

  python scripts/debug/unary_probe.py [threads=2] [elements=393216]

Each op is compiled on its own (a one-kernel graph); a sample is the mean of 40 calls, the
printed time the median of 11 rounds that alternate every variant. Microseconds per call,
torch.compile's fixed cost (~20 µs here) included."""
import statistics
import sys
import time

import torch
import torch.nn.functional as F

OPS = {
    "erf": torch.erf,
    "exp": torch.exp,
    "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "silu": F.silu,
}


def main(threads: int, elements: int) -> None:
    torch.set_num_threads(threads)
    x = torch.randn(elements)
    cases = {}
    for name, op in OPS.items():
        compiled = torch.compile(lambda x, op=op: op(x), backend="inductor_cpp")
        compiled(x)
        cases[(name, "eager")] = lambda op=op: op(x)
        cases[(name, "ours")] = lambda compiled=compiled: compiled(x)
    samples = {key: [] for key in cases}
    for _ in range(11):
        for key, fn in cases.items():
            fn()
            start = time.perf_counter()
            for _ in range(40):
                fn()
            samples[key].append((time.perf_counter() - start) / 40 * 1e6)
    for name in OPS:
        eager = statistics.median(samples[(name, "eager")])
        ours = statistics.median(samples[(name, "ours")])
        print(f"{name:10s} eager {eager:8.1f} us  ours {ours:8.1f} us  ours x eager {eager / ours:.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2, int(sys.argv[2]) if len(sys.argv) > 2 else 393216)
