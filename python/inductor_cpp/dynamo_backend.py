"""`inductor_cpp.backend`: what torch.compile calls.

    torch.compile(model, backend="inductor_cpp", mode=None, options={"strict": True})

Per call we build AOT autograd around three compilers (forward, backward, inference), with
torch's decompositions (decompositions.py) and the min-cut rematerialization partitioner (after
the joint-graph passes of joint_graph.py). Each compiler rewrites its ATen FX graph
(layout_opt.py: channels-last convolutions; pad_mm.py: half-precision matrix products padded
to aligned sizes on CUDA), turns it into a description (fx_import.py) and crosses into C++
once (_C.compile_graph); the CompiledGraph it gets back runs the whole graph in C++. An
inference graph whose AOT runtime wrappers would have nothing to do is handed to Dynamo
without them (direct_call.py).
"""

from __future__ import annotations

import collections
import contextlib
import copy
import itertools
import json
import os
import sys
import time
import weakref
from typing import Any, Callable, Iterator

import torch
from torch._dynamo.backends.common import aot_autograd

from . import (_C, cache_transfer, cuda_graphs, debug_dir, decompositions, direct_call,
               few_row_conv, fx_import, joint_graph, knobs, layout_opt, logs, pad_mm, specialize)
from . import options as options_mod
from .errors import StrictModeError

# Compiled graphs alive in this process, for counters and tests; weak, so that
# torch.compiler.reset() (which drops Dynamo's references) frees them.
_live_graphs: "weakref.WeakSet[Any]" = weakref.WeakSet()


# Compiled graphs not yet freed; when the last one goes (torch.compiler.reset(), then garbage
# collection), the CPU block pool's cached blocks (runtime/cpu_pool.h) and the matrix
# library's per-thread scratch (matrix/scratch.h) are freed too.
_graphs_holding_pool = 0


def _track_for_pool(compiled: Any) -> None:
    global _graphs_holding_pool
    _graphs_holding_pool += 1
    weakref.finalize(compiled, _graph_freed)


def _graph_freed() -> None:
    global _graphs_holding_pool
    _graphs_holding_pool -= 1
    if _graphs_holding_pool == 0:
        _C.release_cpu_pool()
        _C.release_matrix_scratch()




def _environment() -> str:
    return json.dumps({"torch": torch.__version__, "python": sys.implementation.cache_tag,
                       "schema": fx_import.SCHEMA_VERSION})


# Graphs this process has compiled (or tried to): numbers them in progress lines and debug dirs.
_graph_numbers = itertools.count()
# Callbacks told about every graph compile_aten_graph handles (explain() listens here).
_observers: list[Callable[[dict[str, Any]], None]] = []


@contextlib.contextmanager
def observe_compiles() -> Iterator[list[dict[str, Any]]]:
    """Collects a record per graph compiled inside the block: {"number", "kind", "gm",
    "compiled" (a CompiledGraph, or None), "eager_reason" (why it runs eagerly, or None)}."""
    records: list[dict[str, Any]] = []
    _observers.append(records.append)
    try:
        yield records
    finally:
        _observers.remove(records.append)


def _notify(record: dict[str, Any]) -> None:
    for observer in list(_observers):
        observer(record)


def _progress(label: str) -> dict[str, Any] | None:
    """Progress-line settings for the C++ side: only when stderr is a terminal (our own
    stream and file descriptor 2 both), after INDUCTOR_CPP_PROGRESS seconds (default 1; 0
    turns it off)."""
    after = knobs.get_float("INDUCTOR_CPP_PROGRESS")
    if after <= 0:
        return None
    try:
        if not (sys.stderr.isatty() and os.isatty(2)):
            return None
    except (AttributeError, ValueError, OSError):
        return None
    return {"label": label, "after_s": after}


def _run_eagerly(gm: torch.fx.GraphModule, kind: str, reason: str, opts: options_mod.Options,
                 number: int = -1) -> Callable:
    message = f"{kind} graph runs eagerly (not compiled): {reason}"
    if opts.strict:
        raise StrictModeError(f"inductor_cpp (strict): {message}")
    logs.warn(message)
    global eager_graph_fallbacks
    eager_graph_fallbacks += 1
    recent_eager_fallback_reasons.append(reason)
    _notify({"number": number, "kind": kind, "gm": gm, "compiled": None, "eager_reason": reason})

    def run(args: list[Any]) -> Any:
        return gm(*args)

    run._boxed_call = True  # type: ignore[attr-defined]
    return run


# Graphs handed back to run eagerly (inductor_cpp.counters()), and the latest reasons (bounded:
# a long-running process must not grow a list per graph).
eager_graph_fallbacks = 0
recent_eager_fallback_reasons: "collections.deque[str]" = collections.deque(maxlen=100)


def compile_aten_graph(gm: torch.fx.GraphModule, example_inputs: list[Any], kind: str,
                       opts: options_mod.Options) -> Callable:
    """Compile one ATen FX graph (forward, backward or inference) into a boxed callable. A
    graph with symbolic sizes gets its plan of ATen calls plus, per concrete shape, a static
    compile (specialize.py)."""
    lite = opts.mode == "lite"  # no code generation: no per-shape compiles, no graph rewrites
    if opts.shape_specializations > 0 and not lite and specialize.has_symbolic_sizes(example_inputs):
        # The layout pass below rewrites gm's graph in place: keep a copy of the graph. Its
        # tensor attributes (constants such as torch.tensor([...]) in user code) are shared,
        # not deep-copied: a deepcopy copies weights, and fails under the fake mode AOT
        # autograd compiles in ("set the storage of a tensor on device meta").
        pristine = torch.fx.GraphModule(gm, copy.deepcopy(gm.graph), gm.__class__.__name__)
        fallback = _compile_one_graph(gm, example_inputs, kind, opts)
        static = lambda g, example: _compile_one_graph(g, example, kind, opts)  # noqa: E731
        return specialize.ShapeSpecializedGraph(
            pristine, kind, opts.shape_specializations, bool(opts.strict), fallback, static,
            decompositions.decomposition_table(_device_type(example_inputs))).boxed()
    return _compile_one_graph(gm, example_inputs, kind, opts)


def _compile_one_graph(gm: torch.fx.GraphModule, example_inputs: list[Any], kind: str,
                       opts: options_mod.Options) -> Callable:
    number = next(_graph_numbers)
    start = time.perf_counter()
    lite = opts.mode == "lite"
    if opts.layout_optimization and not lite and layout_opt.channels_last(gm, example_inputs, kind) \
            and kind == "forward":
        layout_opt.report_output_strides(gm)
    if not lite:
        pad_mm.pad_matrix_products(gm, example_inputs)
        if opts.extra.get("matrix_kernels") and opts.strict != "all" and kind != "inference":
            few_row_conv.rewrite_few_row_convolutions(gm, example_inputs)
    try:
        description, constants = fx_import.describe(gm, example_inputs, kind)
    except fx_import.UnsupportedGraph as e:
        return _run_eagerly(gm, kind, str(e), opts, number)
    described = time.perf_counter()
    dump_root = debug_dir.root(opts)
    tracing = logs.tracing()
    wanted = set(logs.requested()) | ({"fusion"} if dump_root or tracing else set()) | \
        ({"graph", "perf"} if tracing else set())
    diagnostics = {"log_artifacts": sorted(wanted),
                   "keep_ir_text": logs.enabled("ir") or dump_root is not None,
                   "progress": _progress(f"graph {number} ({kind})")}
    try:
        compiled = _C.compile_graph(json.dumps(description), constants,
                                    json.dumps(opts.for_compiler()), _environment(),
                                    json.dumps(diagnostics))
    except _C.CompileError as e:  # strict="all": an op would run as an ATen fallback
        raise StrictModeError(str(e)) from e
    except Exception as e:  # a compiler bug must not take the user's program down
        if opts.strict:
            raise
        return _run_eagerly(gm, kind, f"compile failed: {e}", opts, number)
    python_ms = {"describe": (described - start) * 1e3,
                 "compile_graph": (time.perf_counter() - described) * 1e3}
    texts: dict[str, str] = {}
    for artifact, message in compiled.logs():
        if artifact == "warning":
            logs.warn(message)
            continue
        texts[artifact] = message
        logs.emit(artifact, message)
    fusion_text = texts.get("fusion", "")
    if logs.enabled("output_code"):
        source = compiled.cpp_source or "// no generated kernels in this graph\n"
        logs.emit("output_code", f"graph {compiled.key}:\n{compiled.plan_text}\n{source}")
    python_ms["total"] = (time.perf_counter() - start) * 1e3
    if tracing:
        logs.trace({"graph": texts.get("graph", ""), "fusion": fusion_text,
                    "plan": compiled.plan_text, "source": compiled.cpp_source,
                    "compile_times": texts.get("perf", "") + "\n" + json.dumps(python_ms)})
    logs.emit("perf", f"graph {compiled.key}: {kind} graph {number} ready in "
                      f"{python_ms['total']:.1f} ms in all (describe "
                      f"{python_ms['describe']:.1f} ms, compile_graph "
                      f"{python_ms['compile_graph']:.1f} ms)")
    first_call = None
    if dump_root is not None:
        directory = _dump(dump_root, number, kind, gm, example_inputs, compiled, fusion_text,
                          python_ms)
        if directory is not None:
            first_call = lambda args: debug_dir.save_inputs(directory, args)  # noqa: E731
    _live_graphs.add(compiled)
    _track_for_pool(compiled)
    if compiled.cache_outcome in ("hit", "built", "rebuilt_corrupt"):
        cache_transfer.record(compiled.key)  # for torch.compiler.save_cache_artifacts()
    _notify({"number": number, "kind": kind, "gm": gm, "compiled": compiled, "eager_reason": None})
    call = compiled
    if opts.cudagraphs:
        call = cuda_graphs.wrap(compiled, gm, example_inputs, kind, f"{kind} graph {number}",
                                opts.cudagraph_records)
    return _boxed(compiled, first_call, call)


def _dump(root: str, number: int, kind: str, gm: torch.fx.GraphModule, example_inputs: list[Any],
          compiled: Any, fusion_text: str, python_ms: dict[str, float]) -> str | None:
    """The debug dump of one graph (its directory); trouble writing it is a warning, never a
    failed compile."""
    try:
        return debug_dir.dump(root, number, kind, gm, example_inputs, compiled, fusion_text,
                              python_ms)
    except Exception as e:  # noqa: BLE001
        logs.warn(f"debug dir {root}: could not write graph {number} ({kind}): "
                  f"{type(e).__name__}: {e}")
        return None


def _boxed(compiled: Any, first_call: Callable[[list[Any]], None] | None = None,
           call: Callable[[list[Any]], Any] | None = None) -> Callable:
    """The boxed calling convention AOT autograd looks for (`_boxed_call`): inputs arrive as
    one list, which the C++ side empties so inputs die as soon as the plan is done with them.
    A Python function rather than the C++ object itself, because wrappers on the way (Dynamo's
    disable()) copy attributes with functools.wraps, which sees only a function's __dict__.
    `first_call` sees the inputs of the first call before the graph runs (debug dumps);
    `call` runs it (default: the compiled graph itself; cuda_graphs.py's replays)."""
    pending = [first_call] if first_call is not None else []
    call = call or compiled

    def run(args: list[Any]) -> list[Any]:
        if pending:
            pending.pop()(args)
        return call(args)

    run._boxed_call = True  # type: ignore[attr-defined]
    run.compiled_graph = compiled  # type: ignore[attr-defined]
    return run


def _compiler(kind: str, opts: options_mod.Options,
              slot: direct_call.Slot | None = None) -> Callable:
    def compile_fn(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable:
        compiled = compile_aten_graph(gm, example_inputs, kind, opts)
        if slot is not None:
            slot.offer(gm, compiled)
        return compiled

    compile_fn.__name__ = f"inductor_cpp_{kind}_compiler"
    return compile_fn


def _device_type(example_inputs: list[Any]) -> str:
    """The device type of the graph's first tensor input ("cpu" when there is none)."""
    for x in example_inputs:
        if isinstance(x, torch.Tensor):
            return x.device.type
    return "cpu"


def backend(gm: torch.fx.GraphModule, example_inputs: list[Any], *, mode: str | None = None,
            options: dict[str, Any] | None = None) -> Callable:
    """The torch.compile backend (entry point `torch_dynamo_backends: inductor_cpp`)."""
    opts = options_mod.resolve(mode, options)
    slot = direct_call.Slot(gm, example_inputs)
    aot = aot_autograd(
        fw_compiler=_compiler("forward", opts),
        bw_compiler=_compiler("backward", opts),
        inference_compiler=_compiler("inference", opts, slot),
        # Symbolic sizes: the graph's own plan is ATen calls (lowering needs static sizes), so
        # fused kernels such as layer_norm stay whole; its static copies decompose them when
        # they are re-traced (specialize.py).
        decompositions=decompositions.decomposition_table(
            _device_type(example_inputs),
            generated=not specialize.has_symbolic_sizes(example_inputs)),
        partition_fn=joint_graph.partition,
        keep_inference_input_mutations=True,
    )
    # An inference graph whose AOT runtime wrappers would be idle is called without them
    # (direct_call.py: 11-17 µs a call on the dev machine).
    return slot.choose(aot(gm, example_inputs))
