"""INDUCTOR_CPP_DEBUG_DIR (or options={"debug_dir": path}): everything about each compiled graph.

One subdirectory per graph the backend compiles, `<root>/<NNN>-<kind>-<key12>/` (NNN counts
the graphs of the process, kind is forward/backward/inference, key12 starts the cache key):

    fx_graph.txt          the ATen FX graph as AOT autograd handed it over (print_readable)
    graph.txt             the graph as the compiler imported it (ATen-level text form)
    ir/00-lowered.txt     the loop IR as lowered, then ir/NN-<pass>.txt after every pass
    schedule.txt          the scheduled kernels (loop nests)
    fusion.txt            which graph nodes each kernel computes, which run as ATen calls
    kernels.cpp           the generated C++ translation unit, ic_runtime.h the header it
    ic_runtime.h            includes, kernels.so the library (when the cache still had it)
    kernels.so
    compile_command.txt   the C++ compiler command, rewritten to build in this directory
    plan.txt, plan.json   the execution plan (kernel launches and ATen calls)
    decisions.json        per graph node: generated or ATen fallback, and why
    kernels.json          per kernel: parameters (dtype, sizes, strides), graph nodes, FLOP
                          estimate (`python -m inductor_cpp.bench kernels <this dir>` reads it)
    timings.json          this compile (Python and C++ stages), and the build's per-pass,
                          emit and C++ compiler times
    repro.py              standalone reproducer (debug_repro.py), constants.pt beside it when
                          the graph has constant tensors
    inputs.pt             the inputs of the graph's first call (when they total at most
                          64 MiB): repro.py runs on them, so numerical trouble reproduces

On a cache hit the IR is rebuilt for the dump (lowering and passes, no C++ compiler run); the
build times in timings.json are those of the build that made the cache entry. Writing the
dump never fails a compile: a problem is one warning.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from typing import Any

import torch

from . import _C, debug_repro, knobs

ENV = "INDUCTOR_CPP_DEBUG_DIR"
MAX_SAVED_INPUT_BYTES = 64 << 20


def root(opts: Any) -> str | None:
    """The debug directory the options (or else the environment) ask for, or None. With
    neither, TORCH_COMPILE_DEBUG=1 (torch._inductor.config.trace.enabled) puts it beside
    stock's, in this process's torch_compile_debug/run_*/inductor_cpp."""
    chosen = getattr(opts, "debug_dir", None) or knobs.get_text(ENV)
    if not chosen and _torch_compile_debug():
        chosen = _torch_debug_root()
    return os.path.abspath(chosen) if chosen else None


_torch_root: list[str] = []  # this process's, chosen once


def _torch_compile_debug() -> bool:
    try:
        from torch._inductor import config
    except ImportError:
        return False
    return bool(config.trace.enabled)


def _torch_debug_root() -> str:
    if not _torch_root:
        from torch._dynamo.utils import get_debug_dir

        _torch_root.append(os.path.join(get_debug_dir(), "inductor_cpp"))
    return _torch_root[0]


def graph_dir_name(number: int, kind: str, key: str) -> str:
    return f"{number:03d}-{kind}-{key[:12]}"


def debug_info(compiled: Any) -> dict[str, Any]:
    """CompiledGraph.debug_info() with its JSON parts parsed."""
    raw = compiled.debug_info()
    info: dict[str, Any] = {}
    for name, value in raw.items():
        if name in ("passes", "labels", "decisions", "kernels", "build", "timings", "ir_rebuilt"):
            info[name] = json.loads(value)
        else:
            info[name] = value
    return info


def _write(directory: str, name: str, text: str) -> None:
    with open(os.path.join(directory, name), "w") as f:
        f.write(text if text.endswith("\n") or not text else text + "\n")


def _write_json(directory: str, name: str, data: Any) -> None:
    _write(directory, name, json.dumps(data, indent=2))


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


def _write_ir(directory: str, info: dict[str, Any]) -> None:
    ir_dir = os.path.join(directory, "ir")
    os.makedirs(ir_dir, exist_ok=True)
    note = ("# cache hit: IR rebuilt for this dump (kernels came from the cache)\n"
            if info.get("ir_rebuilt") else "")
    if info.get("lowered_text"):
        _write(ir_dir, "00-lowered.txt", note + info["lowered_text"])
    for i, p in enumerate(info.get("passes", []), start=1):
        changed = "changed" if p["changed"] else "unchanged"
        head = f"# after pass {i} {p['name']}: {p['ms']:.3f} ms, {changed}\n"
        _write(ir_dir, f"{i:02d}-{_safe(p['name'])}.txt", note + head + p["ir"])


def compile_command(info: dict[str, Any], directory: str) -> str:
    """The C++ compiler command of the build, with its (long gone) build directory replaced
    by `directory`, where kernels.cpp and ic_runtime.h are."""
    cxx = (info.get("build") or {}).get("cxx")
    if not cxx:
        return "# no generated kernels in this graph: nothing to compile\n"
    command = cxx["command"].replace(cxx["dir"], directory) if cxx.get("dir") else cxx["command"]
    return (f"# the C++ compiler command of this graph's kernels (took {cxx['seconds']:.2f} s"
            f"{'' if cxx.get('ok', True) else ', FAILED'}); run it with: sh compile_command.txt\n"
            f"{command}\n")


def _decisions(info: dict[str, Any]) -> list[dict[str, Any]]:
    labels = info.get("labels", [])
    out = []
    for d in info.get("decisions", []):
        node = d["node"]
        out.append({"node": node, "op": labels[node] if 0 <= node < len(labels) else "?",
                    "generated": d["generated"], "reason": d["reason"]})
    return out


def dump(root_dir: str, number: int, kind: str, gm: torch.fx.GraphModule, example_inputs: list[Any],
         compiled: Any, fusion_text: str, python_ms: dict[str, float]) -> str:
    """Writes the subdirectory of one compiled graph; returns its path."""
    directory = os.path.join(root_dir, graph_dir_name(number, kind, compiled.key))
    os.makedirs(directory, exist_ok=True)
    info = debug_info(compiled)
    _write(directory, "fx_graph.txt", gm.print_readable(print_output=False, include_stride=True,
                                                        include_device=True))
    _write(directory, "graph.txt", info["graph_text"])
    _write_ir(directory, info)
    _write(directory, "schedule.txt", info.get("schedule_text") or "# no generated kernels")
    _write(directory, "fusion.txt", fusion_text)
    if compiled.cpp_source:
        _write(directory, "kernels.cpp", compiled.cpp_source)
        _write(directory, "ic_runtime.h", _C.runtime_header())
        library = info.get("kernel_library")
        if library and os.path.exists(library):
            shutil.copyfile(library, os.path.join(directory, "kernels.so"))
    _write(directory, "compile_command.txt", compile_command(info, directory))
    _write(directory, "plan.txt", compiled.plan_text)
    _write(directory, "plan.json", compiled.plan_json)
    _write_json(directory, "decisions.json", _decisions(info))
    _write_json(directory, "kernels.json", info.get("kernels", []))
    _write_json(directory, "timings.json", {
        "key": compiled.key, "kind": kind, "graph_number": number, "cache": compiled.cache_outcome,
        "python_ms": python_ms, "compile_ms": info.get("timings", {}),
        "build": info.get("build", {}), "ir_rebuilt": info.get("ir_rebuilt", False)})
    debug_repro.write_repro(directory, gm, example_inputs, kind, compiled.key, number)
    return directory


def save_inputs(directory: str, args: list[Any]) -> None:
    """inputs.pt: copies of the first call's inputs, when they total at most
    MAX_SAVED_INPUT_BYTES (else repro.py uses random inputs of the recorded layouts)."""
    try:
        total = sum(a.numel() * a.element_size() for a in args if isinstance(a, torch.Tensor))
        if total > MAX_SAVED_INPUT_BYTES:
            return
        saved = [a.detach().clone() if isinstance(a, torch.Tensor) else a for a in args]
        torch.save(saved, os.path.join(directory, debug_repro.INPUTS_FILE))
    except Exception as e:  # noqa: BLE001  (a dump problem must not fail the user's call)
        from . import logs

        logs.warn(f"debug dir {directory}: could not save the first call's inputs: "
                  f"{type(e).__name__}: {e}")
