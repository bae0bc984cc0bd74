"""Self-tests of the OpInfo harness: that it can fail.

Why: a sweep that reports 100% correct is only worth something if the harness notices a wrong
result, a wrong input mutation, a graph given back to eager and an eager error. These tests
break the backend on purpose (monkeypatching the Python side of inductor_cpp for one test) and
check that harness.run_pair / run_sample classify each case; they also pin down the exact-copy
helper the comparison depends on.
"""

from __future__ import annotations

import types

import pytest
import torch
from torch.testing._internal.opinfo.core import SampleInput

import harness
from inductor_cpp import dynamo_backend, fx_import


def _fake_op(fn, name="fake"):
    return types.SimpleNamespace(op=fn, name=name, variant_test_name="")


def test_clean_run_is_compiled_and_passes():
    r = harness.run_pair(harness.find_op("sin"), "float32", max_samples=2)
    assert r.status == "pass", r.summary()
    assert all(s.how == "compiled" and s.graphs >= 1 and s.ops >= 1 for s in r.samples)
    assert r.generated  # sin has a generated kernel: no op fell back
    fallback = harness.run_pair(harness.find_op("logcumsumexp"), "float32", max_samples=1)
    assert fallback.status == "pass" and not fallback.generated  # logcumsumexp runs as an ATen call
    reasons = fallback.samples[0].fallback_reasons
    assert any(r.startswith("aten::logcumsumexp: ") and "no lowering" in r for r in reasons), reasons
    assert all(s.fallback_reasons == [] for s in r.samples)  # nothing fell back for sin


def test_wrong_output_fails(monkeypatch):
    real = dynamo_backend._boxed

    def corrupting(compiled, *rest):
        run = real(compiled, *rest)

        def wrong(args):
            outs = run(args)
            return [o + 1 if isinstance(o, torch.Tensor) and o.is_floating_point() else o
                    for o in outs]

        wrong._boxed_call = True
        return wrong

    monkeypatch.setattr(dynamo_backend, "_boxed", corrupting)
    r = harness.run_pair(harness.find_op("sin"), "float32", max_samples=2)
    assert r.status == "fail"
    assert "values differ" in r.failures[0].error


def test_wrong_input_mutation_fails(monkeypatch):
    real = dynamo_backend._boxed

    def mutating(compiled, *rest):
        run = real(compiled, *rest)

        def bad(args):
            for a in args:
                if isinstance(a, torch.Tensor) and a.is_floating_point():
                    a.add_(1)
            return run(args)

        bad._boxed_call = True
        return bad

    monkeypatch.setattr(dynamo_backend, "_boxed", mutating)
    sample = SampleInput(torch.randn(3, 4))
    r = harness.run_sample(_fake_op(lambda x: x * 2), sample, 0, "float32")
    assert r.status == "fail"
    # the output differs too; with an op that does not read its input only the input would
    assert "differ" in r.error


def test_graph_given_back_to_eager_is_counted(monkeypatch):
    def refuse(gm, example_inputs, kind):
        raise fx_import.UnsupportedGraph("refused by test")

    monkeypatch.setattr(fx_import, "describe", refuse)
    r = harness.run_pair(harness.find_op("add"), "float32", max_samples=2)
    assert r.status == "pass", r.summary()
    assert r.ran_eagerly == len(r.run_samples) > 0
    assert not r.generated
    assert "refused by test" in r.samples[0].eager_reasons[0]


def test_eager_error_is_not_counted():
    sample = SampleInput(torch.randn(2, 3))
    r = harness.run_sample(_fake_op(lambda x: x.view(7)), sample, 0, "float32")
    assert r.status == "eager_error"


def test_non_tensor_and_nested_outputs():
    sample = SampleInput(torch.randn(4, 6))
    r = harness.run_sample(_fake_op(lambda x: (x.shape, [x.sum(0), (x.amax(),)], 3)), sample,
                           0, "float32")
    assert r.status == "pass", r.error


def test_random_ops_are_skipped_deterministic_lookalikes_are_not():
    assert harness.skip_reason(harness.find_op("nn.functional.dropout")) == "random op"
    assert harness.skip_reason(harness.find_op("bernoulli")) == "random op"
    assert harness.skip_reason(harness.find_op("__rand__")) is None
    assert harness.skip_reason(harness.find_op("nn.functional.normalize")) is None
    op = harness.find_op("nn.functional.feature_alpha_dropout.without_train")
    assert harness.skip_reason(op) is None


@pytest.mark.parametrize("make", [
    lambda base: base[1:, ::2],                       # offset + strides
    lambda base: base[0].expand(3, 5),                # overlapping (stride 0)
    lambda base: base.t(),                            # transposed
])
def test_exact_clone_keeps_layout(make):
    base = torch.arange(15.0).reshape(3, 5)
    t = make(base)
    c = harness.clone_tree(t)
    assert (c.shape, c.stride(), c.storage_offset()) == (t.shape, t.stride(), t.storage_offset())
    assert torch.equal(c, t)
    assert c.untyped_storage().data_ptr() != t.untyped_storage().data_ptr()


def test_exact_clone_keeps_sharing_between_inputs():
    base = torch.randn(4, 4)
    a, b = harness.clone_tree([base, base[1]])
    assert a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
    assert a.untyped_storage().data_ptr() != base.untyped_storage().data_ptr()


def test_float64_second_chance_forgives_only_results_closer_to_the_truth():
    """A half-precision result that misses eager by a rounding step passes when its error
    against float64 is at most FP64_ERROR_FACTOR x eager's, and only then."""
    x = torch.linspace(-3, 3, 64, dtype=torch.bfloat16)
    sample = SampleInput(x)
    fn = lambda t: t * 1.1 + 0.3  # noqa: E731  (eager rounds after the mul, then again)
    expected = fn(x.clone())
    truth = (x.double() * 1.1 + 0.3).to(torch.bfloat16)  # rounded once
    atol = harness.HALF_TOLERANCES["bfloat16"][1]
    inputs = (x, [], {})
    verdict = harness._fp64_second_chance(fn, sample, (truth, inputs), (expected, inputs), (), atol)
    assert verdict.startswith("error against float64"), verdict
    wrong = expected + 0.25
    assert harness._fp64_second_chance(fn, sample, (wrong, inputs), (expected, inputs), (),
                                       atol) == ""
    nan_where_eager_is_finite = truth.clone()
    nan_where_eager_is_finite[3] = float("nan")
    assert harness._fp64_second_chance(fn, sample, (nan_where_eager_is_finite, inputs),
                                       (expected, inputs), (), atol) == ""
