"""OpInfo correctness harness: compiled (backend="inductor_cpp") vs eager, per OpInfo sample.

Why: PyTorch's OpInfo database (`op_db`) holds sample inputs for ~700 operators, covering
broadcasting, non-contiguous inputs, scalars, empty tensors, keyword arguments and the odd
corner cases that hand-written tests miss. Running every sample through torch.compile with our
backend and comparing against eager is the broadest correctness check we have. The CI slice
(test_opinfo_slice.py) and the full sweep (sweep.py) both use this module. Samples are copied,
described and compared by sample_compare.py.

Protocol, per (OpInfo, dtype) pair on CPU (or on CUDA: DEVICE), per sample of
`op.sample_inputs(DEVICE, dtype, requires_grad=False)`:

* `torch._dynamo.reset()` first: after its recompile limit Dynamo silently runs eagerly, which
  would count as a pass.
* eager runs on an exact copy of the sample (same storages, strides and offsets, cloned) -- if
  eager raises, the sample is an "eager error" and does not count;
* `torch.compile(lambda *a, **k: fn(*a, **k), backend="inductor_cpp", fullgraph=False)` runs on
  the sample and its outputs are compared with eager's: torch.testing.assert_close with
  rtol=1e-4, atol=1e-5 for floating dtypes (exact for integers and bool), equal_nan=True,
  check_dtype=True; tuples/lists elementwise; non-tensor outputs with ==. The inputs are
  compared afterwards too (an op that mutates its input must mutate it the same way).
* A floating result that misses the tolerance gets a second chance against float64 (the
  sample's floating tensors converted to float64, the op run eagerly): it passes when, for
  every floating output (and mutated input), its largest error against float64 is at most
  FP64_ERROR_FACTOR x eager's, or within atol. We compute in float32 and round once where eager
  rounds after every op, so a compiled bfloat16 result can be closer to the truth than eager
  and still a unit in the last place away from it. Such samples record `passed_by_fp64`.
* Ops with uninitialized outputs (empty, new_empty, resize_, ...) compare only metadata.
* Random ops are skipped (see `skip_reason`).

Per sample we also record how it ran, from the backend's counters:

* "compiled": at least one graph was compiled by inductor_cpp and none ran eagerly;
* "ran eagerly": inductor_cpp.counters()["eager_graph_fallbacks"] increased -- the backend gave
  the graph back to Python (e.g. dynamic shapes); the result is still correct, but not ours;
* "no graph": Dynamo never called the backend (graph break before any op, or an empty graph);
* "generated": compiled, and every compiled graph reports ops_fallback == 0 (today always False:
  every op runs as an ATen call; the number becomes meaningful with code generation).

An aliasing mismatch (eager's output is a view of an input, the compiled one is not, or the
other way round) is recorded as a note on the sample; it does not fail it.
"""

from __future__ import annotations

import itertools
import json
import re
import time
import traceback
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable

import torch
import torch.utils._pytree as pytree

import inductor_cpp
from inductor_cpp import dynamo_backend as _dynamo_backend
from inductor_cpp import knobs
from sample_compare import (Mismatch, alias_map, clone_tree, compare, describe_sample,
                            drop_outputs, max_error)

RTOL = 1e-4
ATOL = 1e-5
# Half-precision results: we compute in float32 and round once where eager rounds after every
# op, so they may differ by a few units in the last place.
HALF_TOLERANCES: dict[str, tuple[float, float]] = {"float16": (1e-3, 1e-3),
                                                   "bfloat16": (1.6e-2, 1e-2)}
# The float64 second chance: compiled error against float64 at most this many times eager's
# (the training and micro-benchmark checks use the same factor).
FP64_ERROR_FACTOR = 3.0

# The device samples are made on: "cpu", or "cuda" (sweep.py --device cuda, which sets
# INDUCTOR_CPP_OPINFO_DEVICE so that its worker processes inherit it).
DEVICE = knobs.get_text("INDUCTOR_CPP_OPINFO_DEVICE")

DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "float64": torch.float64,
    "int64": torch.int64,
    "int32": torch.int32,
    "int16": torch.int16,
    "int8": torch.int8,
    "uint8": torch.uint8,
    "bool": torch.bool,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
}
# What the sweep runs when no --dtypes is given (half precision mainly matters on the GPU).
DEFAULT_DTYPES = [d for d in DTYPES if d not in HALF_TOLERANCES]

# Random ops: eager and compiled draw different numbers, nothing to compare.
RANDOM_OPS = {
    "bernoulli", "cauchy", "exponential", "geometric", "log_normal", "multinomial", "normal",
    "uniform", "rand_like", "randn", "randn_like", "randint", "randint_like",
    "nn.functional.dropout", "nn.functional.dropout2d", "nn.functional.dropout3d",
    "nn.functional.alpha_dropout", "nn.functional.feature_alpha_dropout",
    "nn.functional.rrelu", "nn.functional.fractional_max_pool2d",
    "nn.functional.fractional_max_pool3d", "svd_lowrank", "pca_lowrank",
}
# Matches the names above and any random op added to op_db later ...
_RANDOM_NAME = re.compile(r"rand|bernoulli|normal|uniform|multinomial|dropout")
# ... except these deterministic ones whose names happen to match.
NOT_RANDOM = {
    "__rand__",  # reflected bitwise and
    "nn.functional.normalize", "masked.normalize",
    "native_dropout_backward",  # a pointwise mask-and-scale
    "nn.functional.feature_alpha_dropout.without_train",  # identity in eval mode
}

# Ops whose outputs are (partly) uninitialized memory: only metadata can be compared.
UNINITIALIZED_OUTPUT_OPS = {
    "empty", "empty_like", "empty_strided", "empty_permuted", "new_empty",
    "new_empty_strided", "resize_", "resize_as_",
}
# Ops some of whose outputs are uninitialized memory or random-generator state: those outputs
# (by index) are compared by metadata only. The memory-efficient and flash attention kernels
# return the philox seed and offset (flash: its rng_state and an unused tensor) for their
# dropout; with dropout_p = 0 the CUDA kernel never writes them, so eager and compiled both
# return whatever the allocation held.
UNINITIALIZED_OUTPUTS = {
    "torch.ops.aten._efficient_attention_forward": (2, 3),
    "torch.ops.aten._flash_attention_forward": (2, 3),
    "torch.ops.aten._scaled_dot_product_efficient_attention": (2, 3),
}


def pair_name(op) -> str:
    """'max.reduction_with_dim' -- op name plus variant, the key used everywhere here."""
    return op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")


def pair_key(op_or_name, dtype: str) -> str:
    name = op_or_name if isinstance(op_or_name, str) else pair_name(op_or_name)
    return f"{name}|{dtype}"


def skip_reason(op) -> str | None:
    """Why the op is not compared at all (random ops), or None."""
    name = pair_name(op)
    if name in NOT_RANDOM or op.name in NOT_RANDOM:
        return None
    if op.name in RANDOM_OPS or name in RANDOM_OPS or _RANDOM_NAME.search(op.name):
        return "random op"
    if getattr(op, "skip_correctness_check_compile_vs_eager", False):
        return "OpInfo: skip_correctness_check_compile_vs_eager (random)"
    return None


def supported_dtype_names(op, wanted: Iterable[str] = DTYPES) -> list[str]:
    supported = op.supported_dtypes(DEVICE)
    return [d for d in wanted if DTYPES[d] in supported]


_OP_DB = None


def op_db() -> list:
    global _OP_DB
    if _OP_DB is None:
        from torch.testing._internal.common_methods_invocations import op_db as db

        _OP_DB = list(db)
    return _OP_DB


def find_op(name: str):
    """The OpInfo named 'name' or 'name.variant' (exact)."""
    for op in op_db():
        if pair_name(op) == name:
            return op
    raise KeyError(f"no OpInfo named {name!r}")


# ---- results --------------------------------------------------------------------------------

@dataclass
class SampleResult:
    index: int
    desc: str
    status: str  # "pass" | "fail" | "eager_error"
    error: str = ""
    how: str = ""  # "compiled" | "ran_eagerly" | "no_graph" (for run samples)
    generated: bool = False
    graphs: int = 0  # graphs compiled by inductor_cpp and called
    ops: int = 0  # ATen ops in those graphs (generated + fallback); 0: trivially "generated"
    eager_reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    # Why ops of the called graphs ran as ATen calls ("<op>: <reason>", each once): where
    # "generated" is False although the sample compiled.
    fallback_reasons: list[str] = field(default_factory=list)
    # Passed by the float64 second chance (see the module docstring): the errors it compared.
    passed_by_fp64: str = ""


@dataclass
class PairResult:
    op: str
    dtype: str
    # "pass" | "fail" | "eager_error" (every sample raised eagerly, or none) | "skipped"
    # | "sample_error" (sample generation raised) | "crash" | "timeout" (sweep workers)
    status: str = "pass"
    reason: str = ""
    samples: list[SampleResult] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def key(self) -> str:
        return f"{self.op}|{self.dtype}"

    @property
    def run_samples(self) -> list[SampleResult]:
        return [s for s in self.samples if s.status != "eager_error"]

    @property
    def failures(self) -> list[SampleResult]:
        return [s for s in self.samples if s.status == "fail"]

    @property
    def generated(self) -> bool:
        run = self.run_samples
        return self.status == "pass" and bool(run) and all(s.generated for s in run)

    @property
    def trivially_generated(self) -> bool:
        """Generated only because every compiled graph is empty (views/identity that AOT
        autograd handles outside the graph)."""
        return self.generated and all(s.ops == 0 for s in self.run_samples)

    @property
    def ran_eagerly(self) -> int:
        return sum(s.how == "ran_eagerly" for s in self.run_samples)

    @property
    def no_graph(self) -> int:
        return sum(s.how == "no_graph" for s in self.run_samples)

    def to_dict(self) -> dict:
        d = asdict(self)
        d.update(key=self.key, generated=self.generated,
                 trivially_generated=self.trivially_generated, ran_eagerly=self.ran_eagerly,
                 no_graph=self.no_graph)
        return d

    @staticmethod
    def from_dict(d: dict) -> "PairResult":
        samples = [SampleResult(**s) for s in d.get("samples", [])]
        return PairResult(op=d["op"], dtype=d["dtype"], status=d["status"],
                          reason=d.get("reason", ""), samples=samples,
                          seconds=d.get("seconds", 0.0))

    def summary(self) -> str:
        run = self.run_samples
        lines = [f"{self.key}: {self.status}"
                 f" ({len(run) - len(self.failures)}/{len(run)} samples pass,"
                 f" {len(self.samples) - len(run)} eager errors) {self.reason}"]
        for s in self.failures:
            lines.append(f"  sample {s.index} {s.desc}\n    {s.error}")
        return "\n".join(lines)


def _fp64_second_chance(fn, sample, actual: Any, expected: Any, skip: Iterable[int],
                        atol: float) -> str:
    """The float64 second chance (module docstring): "" when it fails, else what it compared.
    `actual` and `expected` are (outputs, inputs after the call)."""
    def to64(x):
        return x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x

    try:
        inputs64 = pytree.tree_map(to64, clone_tree((sample.input, sample.args, sample.kwargs)))
        outputs64 = drop_outputs(fn(inputs64[0], *inputs64[1], **inputs64[2]), skip)
    except Exception:
        return ""
    leaves = [pytree.tree_leaves(t) for t in (actual, expected, (outputs64, inputs64))]
    if len({len(l) for l in leaves}) != 1:
        return ""
    worst, worst_eager = 0.0, 0.0
    for a, e, r in zip(*leaves):
        if not (isinstance(e, torch.Tensor) and e.is_floating_point()):
            continue  # compared exactly already, and equal (only values differed)
        if not (isinstance(a, torch.Tensor) and isinstance(r, torch.Tensor)) or \
                a.shape != e.shape or r.shape != e.shape:
            return ""
        err, eager_err = max_error(a, r), max_error(e, r)
        if err is None or eager_err is None or err > max(FP64_ERROR_FACTOR * eager_err, atol):
            return ""
        worst, worst_eager = max(worst, err), max(worst_eager, eager_err)
    return f"error against float64 {worst:.3g}, eager's {worst_eager:.3g}"



# ---- running --------------------------------------------------------------------------------

def _short_error(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}"
    lines = [l for l in text.splitlines() if l.strip()]
    drop = ("Set TORCH_LOGS", "You can suppress", "torch._dynamo.config", "For even more",
            "from user code", "Developer debug context", "To execute this test")
    lines = [l for l in lines if not any(l.strip().startswith(d) for d in drop)]
    text = " | ".join(lines[:4])
    return text if len(text) <= 600 else text[:597] + "..."


def _fallback_reasons(graphs: list) -> list[str]:
    """'<op>: <reason>' for every op of `graphs` that runs as an ATen call, each text once."""
    out: list[str] = []
    for g in graphs:
        info = g.debug_info()  # texts, and JSON strings for the structured parts
        labels, decisions = (json.loads(v) if isinstance(v, str) else v
                             for v in (info.get("labels", "[]"), info.get("decisions", "[]")))
        for d in decisions:
            if d.get("generated"):
                continue
            node = d.get("node", -1)
            label = labels[node].split(" (", 1)[0] if 0 <= node < len(labels) else "?"  # no source
            text = f"{label}: {d.get('reason') or 'no reason recorded'}"
            if text not in out:
                out.append(text)
    return out


def _backend_state() -> tuple[int, list[str]]:
    reasons = list(_dynamo_backend.recent_eager_fallback_reasons)
    return inductor_cpp.counters()["eager_graph_fallbacks"], reasons


def run_sample(op, sample, index: int, dtype: str, symbolic: bool = False) -> SampleResult:
    """Eager vs compiled on one sample (see the module docstring). `symbolic`: compiled with
    `dynamic=True` and no static copies (option shape_specializations 0), so the sample runs the
    plan of a graph with symbolic sizes (ATen calls, matrix steps on dynamic rows, attention)."""
    desc = describe_sample(sample)
    fn = op.op
    metadata_only = op.name in UNINITIALIZED_OUTPUT_OPS
    floating = DTYPES[dtype].is_floating_point
    rtol, atol = HALF_TOLERANCES.get(dtype, (RTOL, ATOL))

    eager_inputs = clone_tree((sample.input, sample.args, sample.kwargs))
    # Both runs start from the same generator state: a sample that draws random numbers
    # inside an op we hand to ATen (the attention kernels' dropout_p > 0) then draws the same.
    torch.manual_seed(1000 + index)
    try:
        expected = fn(eager_inputs[0], *eager_inputs[1], **eager_inputs[2])
    except Exception as e:
        return SampleResult(index, desc, "eager_error", _short_error(e))

    torch._dynamo.reset()
    compiled_inputs = clone_tree((sample.input, sample.args, sample.kwargs))
    fallbacks_before, reasons_before = _backend_state()
    graphs_before = set(inductor_cpp.live_graphs())
    compiled_fn = torch.compile(lambda *a, **k: fn(*a, **k), backend="inductor_cpp",
                                fullgraph=False, dynamic=True if symbolic else None,
                                options={"shape_specializations": 0} if symbolic else None)
    start = time.perf_counter()
    result = SampleResult(index, desc, "pass")
    torch.manual_seed(1000 + index)
    try:
        actual = compiled_fn(compiled_inputs[0], *compiled_inputs[1], **compiled_inputs[2])
    except Exception as e:
        result.status, result.error = "fail", _short_error(e)
        actual = None
    result.seconds = round(time.perf_counter() - start, 3)

    fallbacks_after, reasons_after = _backend_state()
    new_graphs = [g for g in inductor_cpp.live_graphs() if g not in graphs_before]
    del graphs_before
    counters = [g.counters() for g in new_graphs]
    called = [c for c in counters if c.get("calls", 0) > 0]
    result.graphs = len(called)
    result.ops = sum(c.get("ops_generated", 0) + c.get("ops_fallback", 0) for c in called)
    if fallbacks_after > fallbacks_before:
        result.how = "ran_eagerly"
        new = min(fallbacks_after - fallbacks_before, len(reasons_after))
        result.eager_reasons = reasons_after[-new:] if new else ["(eager_graph_fallbacks increased)"]
    elif called:
        result.how = "compiled"
    else:
        result.how = "no_graph"
    result.generated = (result.how == "compiled"
                        and all(c.get("ops_fallback", 1) == 0 for c in called))
    if result.how == "compiled" and not result.generated:
        result.fallback_reasons = _fallback_reasons(
            [g for g, c in zip(new_graphs, counters) if c.get("calls", 0) > 0])

    if result.status == "pass":
        skip = UNINITIALIZED_OUTPUTS.get(op.name, ())
        try:
            if skip and isinstance(expected, (tuple, list)):
                for i in skip:
                    if i < len(expected) and i < len(actual):
                        compare(actual[i], expected[i], f"output[{i}]", floating, True, RTOL,
                                ATOL)
                actual, expected = drop_outputs(actual, skip), drop_outputs(expected, skip)
            compare(actual, expected, "output", floating, metadata_only, rtol, atol)
            compare(compiled_inputs, eager_inputs, "input (after the call)", floating,
                     metadata_only, rtol, atol)
        except Mismatch as e:
            verdict = None
            if floating and not metadata_only and "values differ" in str(e):
                verdict = _fp64_second_chance(fn, sample, (actual, compiled_inputs),
                                              (expected, eager_inputs), skip, atol)
            if verdict:
                result.passed_by_fp64 = verdict
            else:
                result.status, result.error = "fail", str(e)
                if len(result.error) > 600:
                    result.error = result.error[:597] + "..."
        except Exception as e:  # the comparison itself blew up
            result.status, result.error = "fail", "comparison raised " + _short_error(e)
    if result.status == "pass" and not metadata_only:
        try:
            eager_alias = alias_map(eager_inputs, expected)
            compiled_alias = alias_map(compiled_inputs, actual)
            if eager_alias != compiled_alias:
                result.notes.append(f"aliasing differs: output->input leaf eager {eager_alias}, "
                                    f"compiled {compiled_alias}")
        except Exception:
            pass
    torch._dynamo.reset()
    return result


def iter_samples(op, dtype: str, max_samples: int | None = None):
    torch.manual_seed(0)
    samples = op.sample_inputs(DEVICE, DTYPES[dtype], requires_grad=False)
    return itertools.islice(samples, max_samples) if max_samples else samples


def run_pair(op, dtype: str, max_samples: int | None = None,
             symbolic: bool = False) -> PairResult:
    """Every sample (or the first `max_samples`) of one OpInfo at one dtype (`symbolic`: see
    run_sample)."""
    pr = PairResult(pair_name(op), dtype)
    start = time.perf_counter()
    reason = skip_reason(op)
    if reason:
        pr.status, pr.reason = "skipped", reason
        return pr
    try:
        samples = iter_samples(op, dtype, max_samples)
        index = 0
        while True:
            try:
                sample = next(samples)
            except StopIteration:
                break
            except Exception as e:
                if not pr.samples:
                    pr.status, pr.reason = "sample_error", _short_error(e)
                    return pr
                break
            pr.samples.append(run_sample(op, sample, index, dtype, symbolic))
            index += 1
    finally:
        pr.seconds = round(time.perf_counter() - start, 2)
    if pr.failures:
        pr.status = "fail"
    elif not pr.run_samples:
        pr.status = "eager_error"
        pr.reason = pr.samples[0].error if pr.samples else "no samples"
    return pr


def format_traceback() -> str:
    return traceback.format_exc()
