"""`inductor_cpp.explain(fn)(*args)`: what torch.compile(fn, backend="inductor_cpp") does with fn.

    report = inductor_cpp.explain(model)(x)
    print(report)                 # readable summary
    report.graphs[0].kernels      # or read the fields

Runs fn once through our backend, wrapped in Dynamo's ExplainWithBackend, and collects for
every graph Dynamo hands over (forward / backward / inference after AOT autograd): its cache
key and outcome, every op generated or run as an ATen fallback (with the reason and the
user's source line), the kernels with the graph nodes each computes, graphs that ran eagerly
and why, and Dynamo's graph breaks with their source lines. Like torch._dynamo.explain it
resets Dynamo before and after (other compiled functions compile again on their next call).
A backward graph is compiled when backward runs: call .backward() inside fn to see it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from . import debug_dir, dynamo_backend


@dataclass
class OpReport:
    node: int
    op: str  # "aten::sin"
    source: str  # "model.py:3 in forward: return x.sin()" ("" when unknown)
    generated: bool
    # Why it falls back; for a generated op, what part of it still runs on ATen ("" if none:
    # a convolution_backward whose input gradient ATen computes while ours does the rest).
    reason: str
    kernels: list[str] = field(default_factory=list)  # the kernels computing it


@dataclass
class KernelReport:
    name: str
    nodes: list[int]
    ops: list[str]
    flops: int


@dataclass
class GraphReport:
    number: int
    kind: str  # forward, backward, inference
    key: str = ""
    cache: str = ""  # hit, built, rebuilt_corrupt, uncached
    eager_reason: str | None = None  # the whole graph runs eagerly, and why
    ops: list[OpReport] = field(default_factory=list)
    kernels: list[KernelReport] = field(default_factory=list)
    aten_calls: int = 0

    @property
    def generated(self) -> list[OpReport]:
        return [o for o in self.ops if o.generated]

    @property
    def fallbacks(self) -> list[OpReport]:
        return [o for o in self.ops if not o.generated]


@dataclass
class GraphBreak:
    reason: str
    source: str  # innermost user frame: "f.py:12 in f: print(x)"


@dataclass
class Explanation:
    graphs: list[GraphReport]
    graph_breaks: list[GraphBreak]
    dynamo_graphs: int
    result: Any = None  # what fn returned

    @property
    def eager_graphs(self) -> list[GraphReport]:
        return [g for g in self.graphs if g.eager_reason is not None]

    @property
    def ops_generated(self) -> int:
        return sum(len(g.generated) for g in self.graphs)

    @property
    def ops_fallback(self) -> int:
        return sum(len(g.fallbacks) for g in self.graphs)

    @property
    def cache_hits(self) -> int:
        return sum(g.cache == "hit" for g in self.graphs)

    def __str__(self) -> str:
        return format_explanation(self)


# ------------------------------------------------------------------------------ collecting

def _split_label(label: str) -> tuple[str, str]:
    """"aten::sin (f.py:3 in f: ...)" -> ("aten::sin", "f.py:3 in f: ...")."""
    op, _, rest = label.partition(" (")
    return op, rest[:-1] if rest.endswith(")") else rest


def graph_report(record: dict[str, Any]) -> GraphReport:
    report = GraphReport(record["number"], record["kind"], eager_reason=record["eager_reason"])
    compiled = record["compiled"]
    if compiled is None:
        return report
    info = debug_dir.debug_info(compiled)
    report.key, report.cache = compiled.key, compiled.cache_outcome
    labels = info["labels"]
    kernels_of: dict[int, list[str]] = {}
    for k in info["kernels"]:
        ops = [_split_label(labels[n])[0] for n in k["graph_nodes"] if 0 <= n < len(labels)]
        report.kernels.append(KernelReport(k["name"], list(k["graph_nodes"]), ops, int(k["flops"])))
        for n in k["graph_nodes"]:
            kernels_of.setdefault(n, []).append(k["name"])
    for d in info["decisions"]:
        op, source = _split_label(labels[d["node"]])
        report.ops.append(OpReport(d["node"], op, source, d["generated"], d["reason"],
                                   kernels_of.get(d["node"], [])))
    plan = json.loads(compiled.plan_json)
    report.aten_calls = sum(1 for s in plan.get("steps", []) if "aten" in s)
    return report


def _frame_text(frame: Any) -> str:
    return f"{frame.filename}:{frame.lineno} in {frame.name}: {(frame.line or '').strip()}"


def graph_breaks(break_reasons: list[Any]) -> list[GraphBreak]:
    out = []
    for r in break_reasons:
        stack = list(getattr(r, "user_stack", []) or [])
        out.append(GraphBreak(str(r.reason).strip(), _frame_text(stack[-1]) if stack else ""))
    return out


def explain(fn: Callable, *, options: dict[str, Any] | None = None,
            mode: str | None = None) -> Callable[..., Explanation]:
    """explain(fn)(*args, **kwargs) -> Explanation (see the module doc)."""
    from torch._dynamo.backends.debugging import ExplainWithBackend

    def inner(*args: Any, **kwargs: Any) -> Explanation:
        torch._dynamo.reset()
        recorder = ExplainWithBackend(
            lambda gm, example_inputs: dynamo_backend.backend(gm, example_inputs, mode=mode,
                                                              options=options))
        try:
            with dynamo_backend.observe_compiles() as records:
                result = torch.compile(fn, backend=recorder)(*args, **kwargs)
            dynamo = recorder.output()
            return Explanation(graphs=[graph_report(r) for r in records],
                               graph_breaks=graph_breaks(dynamo.break_reasons),
                               dynamo_graphs=dynamo.graph_count, result=result)
        finally:
            torch._dynamo.reset()

    return inner


# ------------------------------------------------------------------------------ formatting

def _op_line(o: OpReport) -> str:
    return f"%{o.node} {o.op}" + (f"  ({o.source})" if o.source else "")


def _graph_text(g: GraphReport) -> list[str]:
    head = f"graph {g.number} ({g.kind})"
    if g.eager_reason is not None:
        return [f"{head}: runs EAGERLY (not compiled): {g.eager_reason}"]
    lines = [f"{head}: key {g.key[:12]}, cache {g.cache}; {len(g.ops)} ops: {len(g.generated)} "
             f"generated in {len(g.kernels)} kernel(s), {len(g.fallbacks)} ATen fallback(s)"]
    for k in g.kernels:
        lines.append(f"  {k.name} (~{k.flops} flops) computes: "
                     + ", ".join(f"%{n} {op}" for n, op in zip(k.nodes, k.ops)))
    for o in g.fallbacks:
        lines.append(f"  fallback {_op_line(o)}: {o.reason}")
    for o in g.generated:
        if o.reason:
            lines.append(f"  partly ATen {_op_line(o)}: {o.reason}")
    folded = [o for o in g.generated if not o.kernels]
    if folded:
        lines.append("  generated without a kernel of their own (views folded into indexing, "
                     "or unused): " + ", ".join(f"%{o.node} {o.op}" for o in folded))
    return lines


def format_explanation(e: Explanation) -> str:
    total = e.ops_generated + e.ops_fallback
    share = f" ({100 * e.ops_generated / total:.0f}% generated)" if total else ""
    lines = [f"inductor_cpp explain: {e.dynamo_graphs} Dynamo graph(s), {len(e.graph_breaks)} "
             f"graph break(s); {len(e.graphs)} ATen graph(s) after AOT autograd, "
             f"{e.cache_hits} cache hit(s), {len(e.eager_graphs)} ran eagerly",
             f"ops: {e.ops_generated} generated, {e.ops_fallback} ATen fallback(s){share}"]
    if e.graph_breaks:
        lines.append("graph breaks:")
        for i, b in enumerate(e.graph_breaks, start=1):
            lines.append(f"  {i}. {b.reason.splitlines()[0] if b.reason else '?'}")
            if b.source:
                lines.append(f"     at {b.source}")
    for g in e.graphs:
        lines += _graph_text(g)
    return "\n".join(lines)
