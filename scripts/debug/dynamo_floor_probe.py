"""Per-call cost of torch.compile around a tiny matmul: eager, Dynamo alone (a backend that
returns a bare torch.mm lambda, and backend="eager"), and ours with / without matrix kernels.
What a compiled small shape can never beat (docs/benchmarks.md, "the kernels against the
compile floor"). Usage: python scripts/debug/dynamo_floor_probe.py [size=64] [threads=2]"""
import sys
import time

import torch

import inductor_cpp  # noqa: F401

size = int(sys.argv[1]) if len(sys.argv) > 1 else 64
torch.set_num_threads(int(sys.argv[2]) if len(sys.argv) > 2 else 2)
a, b = torch.randn(size, size), torch.randn(size, size)


def f(a, b):
    return torch.mm(a, b)


def per_call_us(fn, calls=3000):
    for _ in range(200):
        fn()
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls)
    return best * 1e6


def bare_mm_backend(gm, example_inputs):  # Dynamo's guards and frame, nothing else
    return lambda a, b: (torch.mm(a, b),)


with torch.no_grad():
    print(f"mm {size}^3 eager: {per_call_us(lambda: f(a, b)):.1f} us")
    for name, backend, options in [("bare-lambda backend", bare_mm_backend, None),
                                   ("backend=eager", "eager", None),
                                   ("ours, matrix_kernels", "inductor_cpp", {"matrix_kernels": True}),
                                   ("ours, ATen mm", "inductor_cpp", {"matrix_kernels": False})]:
        torch._dynamo.reset()
        kwargs = {"options": options} if options else {}
        compiled = torch.compile(f, backend=backend, dynamic=False, **kwargs)
        compiled(a, b)
        print(f"mm {size}^3 {name}: {per_call_us(lambda: compiled(a, b)):.1f} us")
