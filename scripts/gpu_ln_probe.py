"""Launch-shape probe for the NVPTX row/column reduction kernels (issue 5; run on a CUDA machine).

    python scripts/gpu_ln_probe.py [--only layernorm,sum1,sum0] [--calls 10] [--rounds 20]
        [--shapes] [--ptx-dir DIR] [--profile-calls N] [--json FILE]

Compiles layer_norm(x, (C,), w, b), x.sum(-1) and x.sum(0) (16384 x 8192 float32, as the GPU
micro benchmark) with stock Inductor and with inductor_cpp, takes our graph's single kernel (its
PTX, through the driver's JIT or assembled by Triton's ptxas) and launches it directly through
the driver API (ctypes on libcuda) in variants: --shapes adds other grids (the kernels
grid-stride over rows, so any grid is correct) and occupancy capped with unused dynamic shared
memory; PTX rewrites move a segment's loads ahead of its stores (loads_ahead), make them
ld.global.nc, or add cache hints by buffer (hinted: parameter 0, the big input, vs the others;
stores); --ptx-dir launches PTX files another emitter build wrote (file_variants). Every
variant (stock, ours through torch.compile, ours raw) is timed in one process, interleaved, as
K calls back to back between two CUDA events (median over rounds, ms per call), stock and ours
also on a second, separately allocated input (x2: other physical pages). Each raw variant's
output is checked against eager before it is timed (a wrong one is reported and dropped).
--profile-calls N only calls stock and ours N times inside an NVTX range "probe", for
`ncu --nvtx --nvtx-include probe/`. Run it in several processes to see what changes between
them. Results: a table on stdout, --json for all numbers. docs/codegen/nvptx.md has what it found.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import subprocess
import sys
import types
from collections.abc import Callable

import torch

from inductor_cpp.bench.gpu_micro import time_back_to_back
from inductor_cpp.bench.micro import layer_norm, sum_first, sum_last

_cuda = ctypes.CDLL("libcuda.so.1")
_cuda.cuModuleLoadData.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
_cuda.cuModuleGetFunction.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p,
                                      ctypes.c_char_p]
_cuda.cuFuncGetAttribute.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_int, ctypes.c_void_p]
_cuda.cuFuncSetAttribute.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
_cuda.cuOccupancyMaxActiveBlocksPerMultiprocessor.argtypes = [
    ctypes.POINTER(ctypes.c_int), ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
_cuda.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [
    ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
ATTR_NUM_REGS, ATTR_STATIC_SHARED, ATTR_MAX_DYNAMIC_SHARED = 4, 1, 8
SM_SHARED_BYTES = 227 * 1024  # usable shared memory per SM on sm_90 (per-block opt-in limit)


def check(result: int, what: str) -> None:
    if result != 0:
        raise RuntimeError(f"{what}: CUresult {result}")


class RawKernel:
    """One kernel of a module image (PTX text or cubin bytes) loaded through the driver."""

    def __init__(self, image: bytes, name: str):
        self.module = ctypes.c_void_p()
        buffer = ctypes.create_string_buffer(image)  # NUL-terminated, as PTX needs
        check(_cuda.cuModuleLoadData(ctypes.byref(self.module), buffer), "cuModuleLoadData")
        self.fn = ctypes.c_void_p()
        check(_cuda.cuModuleGetFunction(ctypes.byref(self.fn), self.module, name.encode()),
              f"cuModuleGetFunction({name})")

    def attr(self, which: int) -> int:
        v = ctypes.c_int()
        check(_cuda.cuFuncGetAttribute(ctypes.byref(v), which, self.fn), "cuFuncGetAttribute")
        return v.value

    def occupancy(self, block: int, dynamic_shared: int) -> int:
        v = ctypes.c_int()
        check(_cuda.cuOccupancyMaxActiveBlocksPerMultiprocessor(ctypes.byref(v), self.fn, block,
                                                                 dynamic_shared), "occupancy")
        return v.value

    def launcher(self, grid: int, block: int, dynamic_shared: int, pointers: list[int]):
        """A no-argument function launching the kernel on the current stream (dynamic shared
        memory past 48 KiB needs the attribute set at load, to the largest size used)."""
        values = [ctypes.c_void_p(p) for p in pointers]
        params = (ctypes.c_void_p * len(values))(*[ctypes.addressof(v) for v in values])
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)

        def launch(values=values, params=params):
            check(_cuda.cuLaunchKernel(self.fn, grid, 1, 1, block, 1, 1, dynamic_shared, stream,
                                       params, None), "cuLaunchKernel")
        return launch


WORKLOADS = {"layernorm": layer_norm, "sum1": sum_last, "sum0": sum_first}


def fresh_function(fn: Callable, tag: str) -> Callable:
    """A copy of `fn` with its own code object, so each backend's Dynamo cache is separate."""
    code = fn.__code__.replace(co_name=f"{fn.__name__}_{tag}")
    return types.FunctionType(code, fn.__globals__, code.co_name)


back_to_back = time_back_to_back  # same protocol as `bench gpu`


def our_graph(before: set[int]):
    import inductor_cpp

    graphs = [g for g in inductor_cpp.live_graphs() if id(g) not in before]
    return graphs[-1] if graphs else None


def kernel_of(graph) -> dict | None:
    """Our graph's single kernel: name, launch, images and its parameters' buffers."""
    plan = json.loads(graph.plan_json)
    steps = [s for s in plan.get("steps", []) if "gpu" in s]
    if len(steps) != 1:
        return None
    info = graph.debug_info()
    sig = re.search(r"kernel (\w+)\((.*?)\) \{", info["schedule_text"])
    params = []  # (name, graph input index or None for the output)
    for p in sig.group(2).split(","):
        name, mode = p.strip().lstrip("%").split(":")[0], p.strip().split()[-1]
        numbered = re.fullmatch(r"in(\d+)", name)
        if mode == "in" and not numbered:
            print(f"  input parameter {name} is not a graph input: {sig.group(0)}")
            return None
        params.append((name, int(numbered.group(1)) if mode == "in" else None))
    source = graph.cpp_source
    ptx = source[source.index("// ---- PTX"):]
    ptx = ptx[ptx.index("\n") + 1:]
    return {"name": sig.group(1), "kind": plan.get("library_kind"), "gpu": steps[0]["gpu"],
            "params": params, "ptx": ptx.encode()}


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


def _dest_registers(line: str) -> set[str]:
    parts = line.strip().split(None, 1)
    if len(parts) < 2 or parts[0].startswith(("st.", "@", "bar.", "bra")):
        return set()
    rest = parts[1]
    dest = rest[:rest.index("}") + 1] if rest.startswith("{") else rest.split(",")[0]
    return set(re.findall(r"%\w+", dest))


def loads_ahead(ptx: str, distance: int, non_coherent: bool = False) -> tuple[str, int]:
    """The PTX with each straight-line segment's global loads that follow its first store moved
    `distance` stores earlier (their address registers permitting); non_coherent: those loads
    become ld.global.nc. Returns the text and the number of loads moved."""
    lines = ptx.split("\n")
    out: list[str] = []
    moved = 0
    segment: list[str] = []

    def flush():
        nonlocal moved
        stores = [i for i, l in enumerate(segment) if l.strip().startswith("st.global")]
        if not stores:
            out.extend(segment)
            return
        placed: dict[int, list[str]] = {}
        keep = []
        for i, line in enumerate(segment):
            text = line.strip()
            if text.startswith("ld.global") and i > stores[0]:
                if non_coherent and not text.startswith("ld.global.nc"):
                    line = line.replace("ld.global", "ld.global.nc", 1)
                before = sum(1 for st in stores if st < i)
                target = stores[max(0, before - distance)]
                address = set(re.findall(r"%\w+", line[line.index("["):]))
                if target < i and not any(_dest_registers(segment[j]) & address
                                          for j in range(target, i)):
                    placed.setdefault(target, []).append(line)
                    moved += 1
                    continue
            keep.append((i, line))
        for i, line in keep:
            out.extend(placed.get(i, []))
            out.append(line)

    for line in lines:
        text = line.strip()
        if text.startswith("$L__"):
            flush()
            segment = [line]
            continue
        segment.append(line)
        if "bra" in text.split(None, 1)[0] if text else False:
            flush()
            segment = []
    flush()
    return "\n".join(out), moved


def param_registers(ptx: str) -> dict[int, set[str]]:
    """Per kernel parameter (pointer), the registers computed from it (a forward data flow over
    the PTX text: good enough for the address arithmetic LLVM emits)."""
    sets: dict[int, set[str]] = {}
    for m in re.finditer(r"ld\.param\.u64\s+(%rd\d+), \[\w+_param_(\d+)\]", ptx):
        sets.setdefault(int(m.group(2)), set()).add(m.group(1))
    lines = [line.strip().rstrip(";") for line in ptx.split("\n")]
    for _ in range(3):  # loops: registers defined after their use in the text
        for line in lines:
            parts = line.split(None, 1)
            if len(parts) < 2 or line.startswith(("ld.", "st.", "/", "@", "$", ".", "bra", "bar")):
                continue
            operands = [o.strip() for o in parts[1].split(",")]
            for regs in sets.values():
                if any(o in regs for o in operands[1:]):
                    regs.add(operands[0])
    return sets


POLICY = "\n\t.reg .b64 %rdpol_{0};\n\tcreatepolicy.fractional.L2::{0}.b64 %rdpol_{0}, 0f3F800000;"


def hinted(ptx: str, x_l1: str = "", x_l2: str = "", other_l1: str = "", other_l2: str = "",
           store: str = "") -> str:
    """The PTX with cache hints by buffer: loads of parameter 0 (the big input, read once) get
    L1 hint x_l1 and L2 policy x_l2 (evict_first / evict_last), the other loads (w, b: every
    row) other_l1 and other_l2; loads already hinted are left alone; stores get `store` (an
    L2 policy name, or a plain qualifier such as .cs)."""
    x_regs = param_registers(ptx).get(0, set())
    load = re.compile(r"^(\s*(?:@%p\d+\s+)?)ld\.global\.(?!nc|L2::cache_hint)(\S+)(\s+)(.*?)"
                      r"\[(%rd\d+)(.*);$", re.M)
    policies = set()

    def one_load(m):
        is_x = m.group(5) in x_regs
        hint, tail = (x_l1 if is_x else other_l1), f"[{m.group(5)}{m.group(6)}"
        l2 = x_l2 if is_x else other_l2
        if l2:
            hint, tail = hint + ".L2::cache_hint", tail + f", %rdpol_{l2}"
            policies.add(l2)
        return f"{m.group(1)}ld.global{hint}.{m.group(2)}{m.group(3)}{m.group(4)}{tail};"

    text = load.sub(one_load, ptx)
    if store.startswith("."):
        text = re.sub(r"\bst\.global\.", f"st.global{store}.", text)
    elif store:
        text = re.sub(r"^(\s*(?:@%p\d+\s+)?)st\.global\.(\S+)(\s+)(.*);$",
                      rf"\1st.global.L2::cache_hint.\2\3\4, %rdpol_{store};", text, flags=re.M)
        policies.add(store)
    if policies:
        setup = "".join(POLICY.format(p) for p in sorted(policies))
        text = re.sub(r"(\.entry [^{]*\{)", lambda m: m.group(1) + setup, text)
    return text


def hint_variants(ptx: str, case: str) -> dict[str, str]:
    out = {"x L1 no_allocate": hinted(ptx, x_l1=".L1::no_allocate"),
           "x L2 evict_first": hinted(ptx, x_l2="evict_first")}
    if case == "layernorm":
        out.update({"wb L2 evict_last": hinted(ptx, other_l2="evict_last"),
                    "wb L1+L2 evict_last": hinted(ptx, other_l1=".L1::evict_last",
                                                  other_l2="evict_last"),
                    "st L2 evict_first": hinted(ptx, store="evict_first")})
    return out


def file_variants(case: str, directory: str) -> list[tuple[str, str, bytes, int, int]]:
    """PTX files <case>__<label>__<entry>__g<grid>_b<block>.ptx (another emitter's output)."""
    out = []
    for name in sorted(os.listdir(directory)) if directory else []:
        m = re.fullmatch(rf"{case}__(\w+?)__(\w+?)__g(\d+)_b(\d+)\.ptx", name)
        if m:
            with open(os.path.join(directory, name), "rb") as f:
                out.append((m.group(1), m.group(2), f.read(), int(m.group(3)), int(m.group(4))))
    return out


def raw_variants(case: str, k: dict, inputs: tuple, expected: torch.Tensor,
                 status: torch.Tensor, args) -> dict[str, Callable]:
    """Direct launches of our kernel: as planned, other grids, capped occupancy, JIT vs cubin."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    out = torch.empty_like(expected)
    if sum(index is None for _, index in k["params"]) != 1:
        print(f"  {case}: not one output parameter; no raw variants")
        return {}
    pointers = [(out if index is None else inputs[index]).data_ptr() for _, index in k["params"]]
    pointers.append(status.data_ptr())
    images = {"ptx": k["ptx"]}
    ptx = k["ptx"].decode()
    images.update({f"ptx {n}": t.encode() for n, t in hint_variants(ptx, case).items()})
    images["ptx nc"] = re.sub(r"\bld\.global\.(?!nc)", "ld.global.nc.", ptx).encode()
    for distance, nc in ((8, False), (8, True)):  # a row's loads before its stores
        text, moved = loads_ahead(ptx, distance, nc)
        if moved:
            images[f"ptx ahead{distance}{' nc' if nc else ''}"] = text.encode()
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
        regs, static = kernel.attr(ATTR_NUM_REGS), kernel.attr(ATTR_STATIC_SHARED)
        # lets the occupancy queries below count large shared sizes
        check(_cuda.cuFuncSetAttribute(kernel.fn, ATTR_MAX_DYNAMIC_SHARED,
                                       SM_SHARED_BYTES - static), "cuFuncSetAttribute")
        occ = kernel.occupancy(block, 0)
        print(f"  {case} raw {kind}: {regs} registers, {static} B static shared, block {block}, "
              f"{occ} blocks/SM, planned grid {grid0}")
        shapes = [(grid0, 0)]
        if kind == "ptx" and args.shapes:
            for cap in range(1, occ):  # fewer blocks per SM: shared memory nobody uses
                fits = [s for s in range(SM_SHARED_BYTES // (cap + 1) - static - 2048,
                                         SM_SHARED_BYTES // cap - static, 256)
                        if kernel.occupancy(block, s) == cap]
                if fits:
                    shapes.append((grid0, fits[0]))
                    shapes.append((sms * cap, fits[0]))
            for g in (sms * occ, sms * occ * 2, sms * occ * 4):
                if g < grid0:
                    shapes.append((g, 0))
        for grid, shared in shapes:
            cap = kernel.occupancy(block, shared)
            label = f"raw {kind} grid {grid}" + (f" cap {cap}/SM" if shared else "")
            fn = kernel.launcher(grid, block, shared, pointers)
            out.fill_(float("nan"))
            fn()
            torch.cuda.synchronize()
            if not torch.allclose(out, expected, rtol=1e-4, atol=1e-4):
                print(f"  {label}: WRONG (max diff {(out - expected).abs().max().item()})")
                continue
            variants[label] = fn
    for label, entry, image, grid, block in file_variants(case, args.ptx_dir):
        kernel = RawKernel(image, entry)
        print(f"  {case} file {label}: {kernel.attr(ATTR_NUM_REGS)} registers, block {block}, "
              f"{kernel.occupancy(block, 0)} blocks/SM, grid {grid}")
        fn = kernel.launcher(grid, block, 0, pointers)
        out.fill_(float("nan"))
        fn()
        torch.cuda.synchronize()
        if torch.allclose(out, expected, rtol=1e-4, atol=1e-4):
            variants[f"file {label} grid {grid}"] = fn
        else:
            print(f"  file {label}: WRONG")
    return variants


def run_case(case: str, rows: int, cols: int, args) -> dict:
    import inductor_cpp

    fn = WORKLOADS[case]
    torch.manual_seed(0)
    x = torch.randn(rows, cols, device="cuda")
    x2 = torch.randn(rows, cols, device="cuda")
    extra = (torch.randn(cols, device="cuda"), torch.randn(cols, device="cuda")) \
        if case == "layernorm" else ()
    status = torch.zeros(4, dtype=torch.int32, device="cuda")
    fns: dict[str, Callable] = {}
    result: dict = {"case": case}
    with torch.no_grad():
        expected = fn(x, *extra)
        for backend in ("inductor", "inductor_cpp"):
            before = {id(g) for g in inductor_cpp.live_graphs()}
            c = torch.compile(fresh_function(fn, backend), backend=backend)
            out = c(x, *extra)
            torch.cuda.synchronize()
            ok = torch.allclose(out, expected, rtol=1e-4, atol=1e-4)
            name = "stock" if backend == "inductor" else "ours"
            fns[name] = lambda c=c: c(x, *extra)
            fns[name + " x2"] = lambda c=c: c(x2, *extra)
            print(f"  {case} {name}: correct={ok}")
            if backend == "inductor_cpp":
                graph = our_graph(before)
                k = kernel_of(graph) if graph is not None else None
                if k is None:
                    print(f"  {case}: not one GPU kernel; no raw variants")
                    continue
                result["plan"] = {"kind": k["kind"], "gpu": k["gpu"], "params": k["params"]}
                print(f"  {case} plan: {k['kind']}, {k['gpu']}, params {k['params']}")
                if not args.profile_calls:
                    fns.update(raw_variants(case, k, (x, *extra), expected, status, args))
        if args.profile_calls:  # for an outside profiler (ncu --nvtx-include "probe/")
            torch.cuda.synchronize()
            for name in ("stock", "ours"):
                torch.cuda.nvtx.range_push("probe")
                for _ in range(args.profile_calls):
                    fns[name]()
                torch.cuda.synchronize()
                torch.cuda.nvtx.range_pop()
            return result
        times = back_to_back(fns, args.calls, args.rounds)
    stock = times["stock"]
    result["ms"] = times
    for name, ms in times.items():
        print(f"  {case:10} {name:34} {ms:8.4f} ms  stock/this {stock / ms:6.3f}")
    return result


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shape", default="16384x8192")
    p.add_argument("--only", default="layernorm,sum1,sum0")
    p.add_argument("--calls", type=int, default=10)
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--json", default="")
    p.add_argument("--ptx-dir", default="", help="also launch the PTX files there (see "
                   "file_variants) with the planned kernel's parameters")
    p.add_argument("--profile-calls", type=int, default=0, metavar="N",
                   help="only call stock and ours N times each inside an NVTX range 'probe'")
    p.add_argument("--shapes", action="store_true",
                   help="also other grids and occupancy caps of the planned PTX")
    args = p.parse_args()
    rows, cols = map(int, args.shape.split("x"))
    torch.cuda.init()
    print(f"device {torch.cuda.get_device_name()}, pid {os.getpid()}")
    results = [run_case(c, rows, cols, args) for c in args.only.split(",")]
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
