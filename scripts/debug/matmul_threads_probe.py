"""Where a compiled matmul loses time against our GEMM called directly, and how many threads a
small product wants (issue 7, the host's 16-thread rows).

  python scripts/debug/matmul_threads_probe.py addmm [threads=16] [n=1024]
      relu(addmm): eager, compiled (matrix_kernels on) with and without AOT's wrappers, the
      compiled graph called directly, _C.matrix.gemm_f32 with B packed per call and pre-packed,
      in alternating rounds of ~5 ms and ~20 ms batches: what Dynamo, our runtime and B's
      packing each add to the GEMM.
  python scripts/debug/matmul_threads_probe.py small [threads=16] [counts=1,2,4,8,threads]
      the small rows of `bench matrix`: eager at `threads` against _C.matrix.gemm_f32 at each
      of `counts` threads (B pre-packed as a compiled Linear keeps it).
  python scripts/debug/matmul_threads_probe.py scaling [threads=16] [n=2048]
      the register-only FMA peak and an n³ GEMM (eager, library) at 1, threads/2 and threads
      threads: whether the machine's vCPUs are whole cores or hyper-thread siblings.

Medians over alternating rounds, microseconds per call."""
import statistics
import sys
import time

import torch

from inductor_cpp import _C


def per_call_us(fn, budget_s=0.02):
    fn()
    start = time.perf_counter()
    fn()
    once = max(time.perf_counter() - start, 1e-7)
    calls = max(1, min(2000, int(budget_s / once)))
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls * 1e6


def rounds(cases, count, budget_s=0.02):
    samples = {name: [] for name in cases}
    for _ in range(count):
        for name, fn in cases.items():
            samples[name].append(per_call_us(fn, budget_s))
    return {name: statistics.median(v) for name, v in samples.items()}


def addmm(threads, n):
    """Where the compiled relu(addmm) spends its time beyond the library call: Dynamo + AOT's
    wrappers (compiled vs graph), our runtime around the GEMM (graph vs library with B packed
    per call), B's packing (library per call vs pre-packed), the packed-B cache's per-call
    fingerprint of B (compiled vs compiled with freezing, which trusts the version counter)."""
    bias, a, b = torch.randn(n), torch.randn(n, n), torch.randn(n, n)
    opts = {"matrix_kernels": True}

    def f(bias, a, b):
        return torch.relu(torch.addmm(bias, a, b))

    import os

    import inductor_cpp

    cf = torch.compile(f, backend="inductor_cpp", options=opts)
    cf(bias, a, b)
    (graph,) = inductor_cpp.live_graphs()
    os.environ["INDUCTOR_CPP_DIRECT_INFERENCE"] = "0"
    cf_aot = torch.compile(lambda bias, a, b: f(bias, a, b), backend="inductor_cpp",
                           options=opts)
    cf_aot(bias, a, b)
    del os.environ["INDUCTOR_CPP_DIRECT_INFERENCE"]
    cf_frozen = torch.compile(lambda bias, a, b: f(bias, a, b), backend="inductor_cpp",
                              options={**opts, "freezing": True})
    cf_frozen(bias, a, b)
    packed = _C.matrix.pack_b_f32(b)
    cases = {
        "eager relu(addmm)": lambda: f(bias, a, b),
        "compiled (direct call)": lambda: cf(bias, a, b),
        "compiled (AOT wrappers)": lambda: cf_aot(bias, a, b),
        "compiled, freezing": lambda: cf_frozen(bias, a, b),
        "graph called directly": lambda: graph([bias, a, b]),
        "library, B per call": lambda: _C.matrix.gemm_f32(a, b, threads, bias, True, None),
        "library, B pre-packed": lambda: _C.matrix.gemm_f32(a, b, threads, bias, True, packed),
        "eager mm": lambda: torch.mm(a, b),
    }
    for budget in (0.005, 0.02):
        print(f"batches of ~{budget * 1e3:.0f} ms, median of 9 rounds:")
        for name, us in rounds(cases, 9, budget).items():
            print(f"  {name:26s} {us:10.1f} us")


def small(threads, counts):
    shapes = [(m, n, k) for n, k in [(768, 768), (3072, 768), (768, 3072), (4096, 4096)]
              for m in (1, 8, 32)] + [(s, s, s) for s in (64, 128, 256)]
    print(f"{'m x n x k':18s} {'eager':>8s} " + " ".join(f"{'t=' + str(t):>8s}" for t in counts))
    for m, n, k in shapes:
        a, b = torch.randn(m, k), torch.randn(k, n)
        packed = _C.matrix.pack_b_f32(b) if m > 1 else None
        cases = {"eager": lambda: torch.mm(a, b)}
        for t in counts:
            cases[t] = (lambda t=t: _C.matrix.gemm_f32(a, b, t, None, False, packed))
        us = rounds(cases, 7)
        print(f"{m}x{n}x{k}".ljust(18) + f" {us['eager']:8.1f} " +
              " ".join(f"{us[t]:8.1f}" for t in counts))


def scaling(threads, n):
    a, b = torch.randn(n, n), torch.randn(n, n)
    packed = _C.matrix.pack_b_f32(b)
    print(f"{'threads':>8s} {'FMA peak':>10s} {'eager':>10s} {'library':>10s}  (GFLOP/s)")
    for t in sorted({1, threads // 2, threads}):
        torch.set_num_threads(t)
        peak = _C.matrix.fma_peak_gflops(t, iterations=4_000_000, reps=3)
        us = rounds({"eager": lambda: torch.mm(a, b),
                     "library": lambda t=t: _C.matrix.gemm_f32(a, b, t, None, False, packed)}, 5)
        flop = 2.0 * n**3
        print(f"{t:8d} {peak:10.0f} {flop / us['eager'] / 1e3:10.0f} "
              f"{flop / us['library'] / 1e3:10.0f}")


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "addmm"
    threads = int(sys.argv[2]) if len(sys.argv) > 2 else 16
    torch.set_num_threads(threads)
    with torch.no_grad():
        if mode == "addmm":
            addmm(threads, int(sys.argv[3]) if len(sys.argv) > 3 else 1024)
        elif mode == "scaling":
            scaling(threads, int(sys.argv[3]) if len(sys.argv) > 3 else 2048)
        else:
            counts = (sorted({int(c) for c in sys.argv[3].split(",")}) if len(sys.argv) > 3
                      else sorted({1, 2, 4, 8, threads}))
            small(threads, counts)
