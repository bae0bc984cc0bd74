"""CUDA graphs for compiled GPU graphs: `mode="reduce-overhead"` or `options={"cudagraphs": True}`.

A compiled graph's plan launches hundreds of kernels and library calls per call, and on small
batches the host cannot launch them as fast as the GPU runs them (docs/gpu.md "Host cost"). A
CUDA graph records the whole plan once and replays it with one launch. Per compiled graph
(`CudaGraphRunner`, docs/cuda_graphs.md):

- the first call runs as plain launches (a warm-up: modules loaded, cuBLAS / cuDNN handles and
  plans made, lazily allocated state in place);
- a later call that no recording fits records one: one more plain run on a side stream (not
  when the graph writes an input), then the plan run under capture
  (`CompiledGraph.run_for_capture`) into a memory pool of its own;
- each tensor input is *baked* (read where it lies: parameters and buffers, Dynamo's static
  inputs, outputs of a recording, whose memory stays put) or *copied* into a static buffer on
  each call (everything else). A recording fits a call when every tensor has its recorded
  dtype, device, sizes and strides, baked ones at their recorded address, and every other
  argument is equal;
- outputs are handed out as fresh tensors over the recording's memory (`_C.CudaGraphIO`): a
  recording whose last outputs are still held is not replayed (another is used or recorded),
  so an output the caller keeps keeps its values;
- at most `cudagraph_records` recordings per graph; past that, a call that fits none runs as
  plain launches (logged once).

Inputs the graph writes (batch-norm statistics, input mutations) are written by the replays
too; a copied one is copied back. A graph that cannot be recorded safely runs as plain
launches, its reason logged once: CPU tensors in the graph, host synchronisations, inputs with
overlapping strides, a capture that fails.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from . import _C, fx_import, logs

# Ops that read a value on the host or size an output by the data: they synchronise, which a
# capture cannot contain.
_HOST_SYNC_OPS = ("_local_scalar_dense", "item", "nonzero", "masked_select", "unique",
                  "_unique", "_unique2", "unique_consecutive", "unique_dim", "repeat_interleave",
                  "bincount", "histc", "equal", "is_nonzero")

# Counters for inductor_cpp.counters(): recordings made, replays, calls run as plain launches
# by a graph that uses CUDA graphs, graphs skipped.
stats = {"cudagraph_records": 0, "cudagraph_replays": 0, "cudagraph_plain_calls": 0,
         "cudagraph_skipped_graphs": 0}
_reported: set[str] = set()
_GRAPH_MEMORY = -1  # an output's source (_C.CudaGraphIO): memory the replays write


def _report_once(message: str) -> None:
    if message not in _reported:
        _reported.add(message)
        logs.warn(message)


def _source_of(node: torch.fx.Node) -> str:
    where = fx_import.source_of(node)
    return f" ({where})" if where else ""


def _is_cuda_tensor(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.device.type == "cuda"


def analyse(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> tuple[str | None, set[int]]:
    """Why the graph must not be recorded into a CUDA graph (None: it may be), and the indices
    of the inputs it writes in place (batch-norm statistics, an inference graph's input
    mutations: replays write them too, a copied one is copied back)."""
    if not any(_is_cuda_tensor(x) for x in example_inputs) and not any(
            _is_cuda_tensor(node.meta.get("val")) for node in gm.graph.nodes):
        return "the graph runs on the CPU", set()
    inputs = [n for n in gm.graph.nodes if n.op == "placeholder"]
    placeholders = {node: i for i, node in enumerate(inputs)}  # input node -> its index
    for node, i in placeholders.items():
        value = example_inputs[i] if i < len(example_inputs) else None
        if isinstance(value, torch.Tensor) and value.device.type == "cpu":
            return f"input {i} ({node.name}) is a CPU tensor", set()
    written: set[int] = set()
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        value = node.meta.get("val")
        values = value if isinstance(value, (list, tuple)) else [value]
        if any(isinstance(v, torch.Tensor) and v.device.type == "cpu" for v in values):
            return f"{node.target} makes a CPU tensor{_source_of(node)}", set()
        target = node.target
        if isinstance(target, torch._ops.OpOverload):
            if target.namespace == "aten" and target._opname in _HOST_SYNC_OPS:
                return f"{target} synchronises with the host{_source_of(node)}", set()
            for i, argument in enumerate(target._schema.arguments):
                actual = node.args[i] if i < len(node.args) else node.kwargs.get(argument.name)
                if (argument.alias_info is not None and argument.alias_info.is_write
                        and isinstance(actual, torch.fx.Node) and actual in placeholders):
                    written.add(placeholders[actual])  # positional or keyword (out=)
    return None, written


def _static_inputs() -> set[int]:
    """Dynamo's / AOT's static inputs of the graph being compiled (parameters, buffers,
    mark_static_address), from the tracing context; empty outside one."""
    context = torch._guards.TracingContext.try_get()
    meta = getattr(context, "fw_metadata", None) if context else None
    return set(getattr(meta, "static_input_indices", None) or ())


_side_streams: dict[int, torch.cuda.Stream] = {}


def _side_stream(device: torch.device) -> torch.cuda.Stream:
    index = device.index if device.index is not None else torch.cuda.current_device()
    if index not in _side_streams:
        _side_streams[index] = torch.cuda.Stream(device=index)
    return _side_streams[index]


class _Recording:
    __slots__ = ("graph", "io", "status")

    def __init__(self, graph: torch.cuda.CUDAGraph, io: Any, status: Any):
        self.graph = graph
        self.io = io
        self.status = status


class CudaGraphRunner:
    """The boxed callable of one compiled GPU graph, replaying CUDA graphs of its plan."""

    def __init__(self, compiled: Any, plain: Callable[[list[Any]], Any], label: str,
                 static_inputs: set[int], written: set[int], max_records: int):
        self.compiled = compiled
        self.plain = plain
        self.written = written
        self.label = label
        self.static_inputs = static_inputs
        self.max_records = max_records
        self.recordings: list[_Recording] = []
        self.warmed_up = False
        self.disabled: str | None = None

    def __call__(self, args: list[Any]) -> list[Any]:
        for recording in self.recordings:
            if recording.io.prepare(args):
                return self._replay(recording, args)
        if self.disabled is None and self.warmed_up:
            if len(self.recordings) < self.max_records:
                recording = self._record(args)
                if recording is not None and recording.io.prepare(args):
                    return self._replay(recording, args)
            else:
                _report_once(f"{self.label}: {self.max_records} CUDA graphs recorded (option "
                             "cudagraph_records); calls that fit none run as plain launches")
        self.warmed_up = True
        stats["cudagraph_plain_calls"] += 1
        return self.plain(args)

    def _replay(self, recording: _Recording, args: list[Any]) -> list[Any]:
        self.compiled.check_earlier_runs()
        if isinstance(args, list):
            args.clear()  # the boxed convention: inputs die as soon as they can
        recording.graph.replay()
        self.compiled.queue_status(recording.status)
        stats["cudagraph_replays"] += 1
        return recording.io.outputs()

    def _baked(self, index: int, arg: torch.Tensor) -> bool:
        return (index in self.static_inputs or isinstance(arg, torch.nn.Parameter)
                or _C.is_cuda_graph_output(arg)
                or getattr(arg, "_dynamo_static_input_type", None) is not None)

    def _record(self, args: list[Any]) -> _Recording | None:
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        if any(t.device.type != "cuda" for t in tensors) or not tensors:
            self._disable("an input is not a CUDA tensor")
            return None
        device = tensors[0].device
        recorded: list[Any] = []
        copied: list[bool] = []
        for i, arg in enumerate(args):
            if not isinstance(arg, torch.Tensor) or self._baked(i, arg):
                recorded.append(arg)
                copied.append(False)
                continue
            if torch._debug_has_internal_overlap(arg) != 0:
                self._disable(f"input {i} has overlapping strides {arg.stride()}")
                return None
            buffer = _buffer_like(arg)
            with torch.no_grad():
                buffer.copy_(arg)
            recorded.append(buffer)
            copied.append(True)
        stream = _side_stream(device)
        graph = torch.cuda.CUDAGraph()
        try:
            stream.wait_stream(torch.cuda.current_stream(device))
            # cuBLAS keeps a workspace per stream. Dropped before the capture, the recording
            # gets one of its own, in its own pool; dropped after it, no later work (nor a
            # recording by stock Inductor, which drops them too) shares or frees that one.
            torch._C._cuda_clearCublasWorkspaces()
            if not self.written:  # (a warm-up would write the inputs once more)
                with torch.cuda.stream(stream):
                    self.plain(list(recorded))  # warm-up on the capture stream
                torch._C._cuda_clearCublasWorkspaces()
            with torch.cuda.graph(graph, stream=stream, capture_error_mode="thread_local"):
                outputs, status = self.compiled.run_for_capture(list(recorded))
        except Exception as e:  # noqa: BLE001 - any failed capture: plain launches, reason logged
            self._disable(f"the capture failed: {type(e).__name__}: {str(e).splitlines()[0]}")
            return None
        finally:
            torch._C._cuda_clearCublasWorkspaces()
            torch.cuda.current_stream(device).wait_stream(stream)
        sources = []
        for j, out in enumerate(outputs):
            source = _GRAPH_MEMORY
            if isinstance(out, torch.Tensor):
                for i, arg in enumerate(recorded):
                    if isinstance(arg, torch.Tensor) and _inside(out, _storage_span(arg)):
                        source = i
                        break
            sources.append(source)
        try:
            io = _C.CudaGraphIO(recorded, copied, [i in self.written for i in range(len(args))],
                                outputs, sources)
        except ValueError as e:  # an output in an input's memory that is not a view of it
            self._disable(str(e))
            return None
        self.recordings.append(_Recording(graph, io, status))
        stats["cudagraph_records"] += 1
        logs.emit("cudagraphs", f"{self.label}: CUDA graph {len(self.recordings)} recorded "
                                f"({sum(copied)} of {len(args)} inputs copied in per call)")
        return self.recordings[-1]

    def _disable(self, reason: str) -> None:
        self.disabled = reason
        stats["cudagraph_skipped_graphs"] += 1
        _report_once(f"{self.label}: not using CUDA graphs: {reason}")


def _buffer_like(t: torch.Tensor) -> torch.Tensor:
    """A tensor of `t`'s dtype, device, sizes and strides (gaps included) at offset 0."""
    span = 1 + sum((n - 1) * s for n, s in zip(t.shape, t.stride()) if n > 0) if t.numel() else 0
    return torch.empty(span, dtype=t.dtype, device=t.device).as_strided(t.shape, t.stride())


def _storage_span(t: torch.Tensor) -> tuple[int, int]:
    storage = t.untyped_storage()
    return storage.data_ptr(), storage.data_ptr() + storage.nbytes()


def _inside(t: torch.Tensor, span: tuple[int, int]) -> bool:
    return span[0] <= t.data_ptr() < span[1] or (t.numel() == 0 and t.data_ptr() == span[0] != 0)


def wrap(compiled: Any, gm: torch.fx.GraphModule, example_inputs: list[Any], kind: str,
         label: str, max_records: int) -> Callable[[list[Any]], Any]:
    """The compiled graph (boxed calling convention) replaying CUDA graphs where the graph
    allows it; else the compiled graph itself, the reason logged. Called inside the compiler,
    where the tracing context names a forward or inference graph's static inputs (a
    backward's saved values are recognised at run time: recordings' outputs or parameters)."""
    reason, written = analyse(gm, example_inputs)
    if reason is not None:
        stats["cudagraph_skipped_graphs"] += 1
        if reason == "the graph runs on the CPU":
            logs.emit("cudagraphs", f"{label}: not using CUDA graphs: {reason}")
        else:
            _report_once(f"{label}: not using CUDA graphs: {reason}")
        return compiled
    static = _static_inputs() if kind in ("forward", "inference") else set()
    return CudaGraphRunner(compiled, compiled, label, static, written, max_records)
