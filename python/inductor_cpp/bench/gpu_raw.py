"""Launch-shape probe of our NVPTX reduction kernels: `python -m inductor_cpp.bench gpu_raw`.

Why: `bench gpu` says how fast our kernel is; this says what another launch shape, cache hint
or instruction order would make of it, without changing the emitter. It compiles
layer_norm(x, (C,), w, b), x.sum(-1) and x.sum(0) (16384 x 8192 float32, as `bench gpu`) with
stock Inductor and with inductor_cpp, takes our graph's single kernel (its PTX, through the
driver's JIT or assembled by Triton's ptxas) and launches it directly through the driver API
(ctypes on libcuda) in variants: --shapes adds other grids (the kernels grid-stride over rows,
so any grid is correct) and occupancy capped with unused dynamic shared memory; PTX rewrites
(gpu_ptx.py) move loads ahead of stores, make them ld.global.nc, or add cache hints by buffer;
--ptx-dir launches PTX files another emitter build wrote (file_variants). Every variant (stock,
ours through torch.compile, ours raw) is timed in one process, interleaved, as K calls back to
back between two CUDA events (median over rounds, ms per call), stock and ours also on a second,
separately allocated input (x2: other physical pages). Each raw variant's output is checked
against eager before it is timed (a wrong one is reported and dropped). --profile-calls N only
calls stock and ours N times inside an NVTX range "probe", for `ncu --nvtx --nvtx-include
probe/`. docs/codegen/nvptx.md has what it found.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import subprocess
import types
from collections.abc import Callable
from functools import cache

import torch

from . import timing
from .gpu_micro import time_back_to_back
from .gpu_ptx import ptx_variants
from .micro import layer_norm, sum_first, sum_last

HELP = "our GPU reduction kernels launched raw: other grids, occupancy, PTX rewrites vs stock"

WORKLOADS = {"layernorm": layer_norm, "sum1": sum_last, "sum0": sum_first}
ATTR_NUM_REGS, ATTR_STATIC_SHARED, ATTR_MAX_DYNAMIC_SHARED = 4, 1, 8
SM_SHARED_BYTES = 227 * 1024  # usable shared memory per SM on sm_90 (per-block opt-in limit)


@cache
def libcuda() -> ctypes.CDLL:
    lib = ctypes.CDLL("libcuda.so.1")
    lib.cuModuleLoadData.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
    lib.cuModuleGetFunction.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p,
                                        ctypes.c_char_p]
    lib.cuFuncGetAttribute.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_int,
                                       ctypes.c_void_p]
    lib.cuFuncSetAttribute.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
    lib.cuOccupancyMaxActiveBlocksPerMultiprocessor.argtypes = [
        ctypes.POINTER(ctypes.c_int), ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
    lib.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [
        ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    return lib


def check(result: int, what: str) -> None:
    if result != 0:
        raise RuntimeError(f"{what}: CUresult {result}")


class RawKernel:
    """One kernel of a module image (PTX text or cubin bytes) loaded through the driver."""

    def __init__(self, image: bytes, name: str):
        self.module = ctypes.c_void_p()
        buffer = ctypes.create_string_buffer(image)  # NUL-terminated, as PTX needs
        check(libcuda().cuModuleLoadData(ctypes.byref(self.module), buffer), "cuModuleLoadData")
        self.fn = ctypes.c_void_p()
        check(libcuda().cuModuleGetFunction(ctypes.byref(self.fn), self.module, name.encode()),
              f"cuModuleGetFunction({name})")
        # lets the occupancy queries count large shared sizes
        check(libcuda().cuFuncSetAttribute(self.fn, ATTR_MAX_DYNAMIC_SHARED,
                                           SM_SHARED_BYTES - self.attr(ATTR_STATIC_SHARED)),
              "cuFuncSetAttribute")

    def attr(self, which: int) -> int:
        v = ctypes.c_int()
        check(libcuda().cuFuncGetAttribute(ctypes.byref(v), which, self.fn), "cuFuncGetAttribute")
        return v.value

    def occupancy(self, block: int, dynamic_shared: int) -> int:
        v = ctypes.c_int()
        check(libcuda().cuOccupancyMaxActiveBlocksPerMultiprocessor(
            ctypes.byref(v), self.fn, block, dynamic_shared), "occupancy")
        return v.value

    def launcher(self, grid: int, block: int, dynamic_shared: int, pointers: list[int]):
        """A no-argument function launching the kernel on the current stream."""
        values = [ctypes.c_void_p(p) for p in pointers]
        params = (ctypes.c_void_p * len(values))(*[ctypes.addressof(v) for v in values])
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)

        def launch(values=values, params=params):
            check(libcuda().cuLaunchKernel(self.fn, grid, 1, 1, block, 1, 1, dynamic_shared,
                                           stream, params, None), "cuLaunchKernel")
        return launch


def fresh_function(fn: Callable, tag: str) -> Callable:
    """A copy of `fn` with its own code object, so each backend's Dynamo cache is separate."""
    code = fn.__code__.replace(co_name=f"{fn.__name__}_{tag}")
    return types.FunctionType(code, fn.__globals__, code.co_name)


def kernel_of(graph) -> dict | None:
    """Our graph's single kernel: name, launch, PTX and its parameters (graph input index, or
    None for the output); None when the graph is not one GPU kernel of graph inputs."""
    plan = json.loads(graph.plan_json)
    steps = [s for s in plan.get("steps", []) if "gpu" in s]
    if len(steps) != 1:
        return None
    sig = re.search(r"kernel (\w+)\((.*?)\) \{", graph.debug_info()["schedule_text"])
    params = []
    for p in sig.group(2).split(","):
        name, mode = p.strip().lstrip("%").split(":")[0], p.strip().split()[-1]
        numbered = re.fullmatch(r"in(\d+)", name)
        if mode == "in" and not numbered:
            print(f"  input parameter {name} is not a graph input: {sig.group(0)}")
            return None
        params.append((name, int(numbered.group(1)) if mode == "in" else None))
    ptx = graph.cpp_source[graph.cpp_source.index("// ---- PTX"):]
    return {"name": sig.group(1), "kind": plan.get("library_kind"), "gpu": steps[0]["gpu"],
            "params": params, "ptx": ptx[ptx.index("\n") + 1:].encode()}


def ptxas_cubin(ptx: bytes, tag: str) -> bytes | None:
    """The PTX assembled by Triton's ptxas (the one stock Inductor uses), or None."""
    try:
        import triton
    except ImportError:
        return None
    ptxas = os.path.join(os.path.dirname(triton.__file__), "backends/nvidia/bin/ptxas")
    if not os.access(ptxas, os.X_OK):
        return None
    sm = "".join(map(str, torch.cuda.get_device_capability()))
    src, out = f"/tmp/probe_{tag}.ptx", f"/tmp/probe_{tag}.cubin"
    with open(src, "wb") as f:
        f.write(ptx)
    r = subprocess.run([ptxas, "-O3", f"-arch=sm_{sm}", "-v", src, "-o", out],
                       capture_output=True, text=True)
    print(f"  ptxas ({ptxas}): {r.stderr.strip().splitlines()[-1] if r.stderr else r.returncode}")
    if r.returncode != 0:
        return None
    with open(out, "rb") as f:
        return f.read()


def file_variants(case: str, directory: str) -> list[tuple[str, str, bytes, int, int]]:
    """PTX files <case>__<label>__<entry>__g<grid>_b<block>.ptx (another emitter's output)."""
    out = []
    for name in sorted(os.listdir(directory)) if directory else []:
        m = re.fullmatch(rf"{case}__(\w+?)__(\w+?)__g(\d+)_b(\d+)\.ptx", name)
        if m:
            with open(os.path.join(directory, name), "rb") as f:
                out.append((m.group(1), m.group(2), f.read(), int(m.group(3)), int(m.group(4))))
    return out


def _launch_shapes(kernel: RawKernel, grid0: int, block: int, occ: int) -> list[tuple[int, int]]:
    """(grid, dynamic shared bytes) for --shapes: fewer blocks per SM (shared memory nobody
    uses), at the planned grid and at one block per SM slot; smaller grids."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    static = kernel.attr(ATTR_STATIC_SHARED)
    shapes = []
    for cap in range(1, occ):
        fits = [s for s in range(SM_SHARED_BYTES // (cap + 1) - static - 2048,
                                 SM_SHARED_BYTES // cap - static, 256)
                if kernel.occupancy(block, s) == cap]
        if fits:
            shapes += [(grid0, fits[0]), (sms * cap, fits[0])]
    return shapes + [(g, 0) for g in (sms * occ, sms * occ * 2, sms * occ * 4) if g < grid0]


def _checked(label: str, fn: Callable, out: torch.Tensor, expected: torch.Tensor) -> bool:
    """Runs one launch into `out` (first filled with NaN) and compares it with eager's."""
    out.fill_(float("nan"))
    fn()
    torch.cuda.synchronize()
    if torch.allclose(out, expected, rtol=1e-4, atol=1e-4):
        return True
    print(f"  {label}: WRONG (max diff {(out - expected).abs().max().item()})")
    return False


def raw_variants(case: str, k: dict, inputs: tuple, expected: torch.Tensor,
                 status: torch.Tensor, args: argparse.Namespace) -> dict[str, Callable]:
    """Direct launches of our kernel: as planned, other grids, capped occupancy, JIT vs cubin,
    PTX rewrites, and --ptx-dir's files."""
    if sum(index is None for _, index in k["params"]) != 1:
        print(f"  {case}: not one output parameter; no raw variants")
        return {}
    out = torch.empty_like(expected)
    pointers = [(out if index is None else inputs[index]).data_ptr() for _, index in k["params"]]
    pointers.append(status.data_ptr())
    images = {"ptx": k["ptx"]}
    images.update({n: t.encode() for n, t in ptx_variants(k["ptx"].decode(), case).items()})
    cubin = ptxas_cubin(k["ptx"], case)
    if cubin:
        images["cubin"] = cubin
    grid0, block = k["gpu"]["grid"][0], k["gpu"]["block"][0]
    variants: dict[str, Callable] = {}
    for kind, image in images.items():
        try:
            kernel = RawKernel(image, k["name"])
        except RuntimeError as e:  # a rewrite that does not apply to this PTX
            print(f"  {case} raw {kind}: not loaded ({e})")
            continue
        occ = kernel.occupancy(block, 0)
        print(f"  {case} raw {kind}: {kernel.attr(ATTR_NUM_REGS)} registers, "
              f"{kernel.attr(ATTR_STATIC_SHARED)} B static shared, block {block}, {occ} "
              f"blocks/SM, planned grid {grid0}")
        shapes = [(grid0, 0)]
        if kind == "ptx" and args.shapes:
            shapes += _launch_shapes(kernel, grid0, block, occ)
        for grid, shared in shapes:
            label = f"raw {kind} grid {grid}" + (
                f" cap {kernel.occupancy(block, shared)}/SM" if shared else "")
            fn = kernel.launcher(grid, block, shared, pointers)
            if _checked(label, fn, out, expected):
                variants[label] = fn
    for label, entry, image, grid, file_block in file_variants(case, args.ptx_dir):
        kernel = RawKernel(image, entry)
        print(f"  {case} file {label}: {kernel.attr(ATTR_NUM_REGS)} registers, block "
              f"{file_block}, {kernel.occupancy(file_block, 0)} blocks/SM, grid {grid}")
        fn = kernel.launcher(grid, file_block, 0, pointers)
        if _checked(f"file {label}", fn, out, expected):
            variants[f"file {label} grid {grid}"] = fn
    return variants


def _compile_both(case: str, fn: Callable, x, x2, extra, expected, args, result) -> dict:
    """Stock and ours through torch.compile (on x and on x2), then ours raw."""
    import inductor_cpp

    fns: dict[str, Callable] = {}
    before = {id(g) for g in inductor_cpp.live_graphs()}
    for backend, name in (("inductor", "stock"), ("inductor_cpp", "ours")):
        c = torch.compile(fresh_function(fn, backend), backend=backend)
        out = c(x, *extra)
        torch.cuda.synchronize()
        print(f"  {case} {name}: correct={torch.allclose(out, expected, rtol=1e-4, atol=1e-4)}")
        fns[name] = lambda c=c: c(x, *extra)
        fns[name + " x2"] = lambda c=c: c(x2, *extra)
    graphs = [g for g in inductor_cpp.live_graphs() if id(g) not in before]
    k = kernel_of(graphs[-1]) if graphs else None
    if k is None:
        print(f"  {case}: not one GPU kernel; no raw variants")
        return fns
    result["plan"] = {"kind": k["kind"], "gpu": k["gpu"], "params": k["params"]}
    print(f"  {case} plan: {k['kind']}, {k['gpu']}, params {k['params']}")
    if not args.profile_calls:
        status = torch.zeros(4, dtype=torch.int32, device="cuda")
        fns.update(raw_variants(case, k, (x, *extra), expected, status, args))
    return fns


def _profile(fns: dict[str, Callable], calls: int) -> None:
    """Stock and ours `calls` times each in an NVTX range (for ncu --nvtx-include "probe/")."""
    torch.cuda.synchronize()
    for name in ("stock", "ours"):
        torch.cuda.nvtx.range_push("probe")
        for _ in range(calls):
            fns[name]()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()


@torch.no_grad()
def run_case(case: str, rows: int, cols: int, args: argparse.Namespace) -> dict:
    torch.manual_seed(0)
    x, x2 = torch.randn(rows, cols, device="cuda"), torch.randn(rows, cols, device="cuda")
    extra = ((torch.randn(cols, device="cuda"), torch.randn(cols, device="cuda"))
             if case == "layernorm" else ())
    result: dict = {"case": case}
    expected = WORKLOADS[case](x, *extra)
    fns = _compile_both(case, WORKLOADS[case], x, x2, extra, expected, args, result)
    if args.profile_calls:
        _profile(fns, args.profile_calls)
        return result
    result["back_to_back_ms"] = times = time_back_to_back(fns, args.calls, args.rounds)
    for name, ms in times.items():
        print(f"  {case:10} {name:34} {ms:8.4f} ms  stock/this {times['stock'] / ms:6.3f}")
    return result


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--shape", default="16384x8192", help="R x C of the input")
    p.add_argument("--only", default="layernorm,sum1,sum0", help="workloads, of: "
                   + ",".join(WORKLOADS))
    p.add_argument("--calls", type=int, default=10, help="calls back to back per sample")
    p.add_argument("--rounds", type=int, default=20, help="samples (median)")
    p.add_argument("--ptx-dir", default="", help="also launch the PTX files there (see "
                   "file_variants) with the planned kernel's parameters")
    p.add_argument("--profile-calls", type=int, default=0, metavar="N",
                   help="only call stock and ours N times each inside an NVTX range 'probe'")
    p.add_argument("--shapes", action="store_true",
                   help="also other grids and occupancy caps of the planned PTX")
    p.add_argument("--json", metavar="PATH", default=None, help="write all results as JSON")


def run(args: argparse.Namespace) -> int:
    if not torch.cuda.is_available():
        print("[gpu_raw] no CUDA device")
        return 2
    rows, cols = (int(v) for v in args.shape.lower().split("x"))
    torch.cuda.init()
    print(f"device {torch.cuda.get_device_name()}, pid {os.getpid()}")
    results = [run_case(c, rows, cols, args) for c in args.only.split(",")]
    timing.write_json(args.json, {"device": torch.cuda.get_device_name(), "cases": results})
    print(f"results written to {args.json}")
    return 0
