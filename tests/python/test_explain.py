"""inductor_cpp.explain(fn)(*args): graphs, breaks, generated vs fallback ops, kernels, cache."""

from __future__ import annotations

import torch

import inductor_cpp
from conftest import assert_same


def with_break_fallback_and_cond(x):
    y = torch.sin(x).logcumsumexp(0)  # sin is generated, logcumsumexp falls back to ATen (no lowering)
    torch._dynamo.graph_break()
    z = torch.cond(y.sum() > 0, lambda a: a * 2, lambda a: a * 3, (y,))  # whole graph eager
    return z + 1


def test_explain_reports_breaks_fallbacks_kernels_and_eager_graphs():
    x = torch.randn(8)
    report = inductor_cpp.explain(with_break_fallback_and_cond)(x)
    assert_same(report.result, with_break_fallback_and_cond(x))
    assert report.dynamo_graphs == 2
    (brk,) = report.graph_breaks
    assert "graph_break" in brk.reason
    assert "test_explain.py" in brk.source and "torch._dynamo.graph_break()" in brk.source

    compiled = [g for g in report.graphs if g.eager_reason is None]
    (g,) = compiled
    assert g.kind == "inference" and len(g.key) == 64 and g.cache == "built"
    (fallback,) = g.fallbacks
    assert fallback.op == "aten::logcumsumexp" and "no lowering" in fallback.reason
    assert "test_explain.py" in fallback.source and "logcumsumexp(0)" in fallback.source
    (sin,) = g.generated
    assert sin.op == "aten::sin" and sin.kernels == ["kernel0"]
    (kernel,) = g.kernels
    assert kernel.name == "kernel0" and kernel.ops == ["aten::sin"] and kernel.flops == 8
    assert g.aten_calls == 1

    (eager,) = report.eager_graphs
    assert "cond" in eager.eager_reason
    assert report.ops_generated == 1 and report.ops_fallback == 1

    text = str(report)
    assert "2 Dynamo graph(s), 1 graph break(s)" in text and "1 ran eagerly" in text
    assert "kernel0 (~8 flops) computes: %0 aten::sin" in text
    assert "fallback %1 aten::logcumsumexp" in text and "no lowering for aten::logcumsumexp" in text
    assert "runs EAGERLY" in text and "at " in text


def test_explain_counts_cache_hits_and_training_graphs():
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())

    def step(x):
        loss = model(x).sum()
        loss.backward()
        return loss

    x = torch.randn(2, 4)
    first = inductor_cpp.explain(step)(x)
    assert [g.kind for g in first.graphs] == ["forward", "backward"]
    assert first.cache_hits == 0
    (brk,) = first.graph_breaks  # Dynamo does not trace .backward()
    assert "backward" in brk.reason and brk.source.endswith("loss.backward()")
    second = inductor_cpp.explain(step)(x)
    assert second.cache_hits == 2
    assert [g.key for g in second.graphs] == [g.key for g in first.graphs]
