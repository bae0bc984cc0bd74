"""Inference graphs called without AOT autograd's runtime wrappers (direct_call.py): which
graphs qualify, and that every graph that does not (mutated inputs, aliased outputs, repeated
inputs, autocast, subclasses) still gives eager's results, aliasing and mutations."""

from __future__ import annotations

import pytest
import torch

import inductor_cpp
from conftest import assert_same, compile_cpp, test_graphs


def _counts() -> tuple[int, int]:
    c = inductor_cpp.counters()
    return c["direct_inference_graphs"], c["aot_wrapped_inference_graphs"]


def test_plain_inference_graph_is_called_directly():
    def f(a, b):
        return torch.relu(a @ b) + 1, (a * 2).sum(1)

    cf = compile_cpp(f)
    a, b = torch.randn(16, 8), torch.randn(8, 4)
    with torch.no_grad():
        assert_same(cf(a, b), f(a, b))
    assert _counts() == (1, 0)
    with torch.no_grad():
        assert_same(cf(a + 1, b), f(a + 1, b))  # same graph, no recompile
    assert _counts() == (1, 0)


def test_grad_mode_follows_eager_around_a_direct_graph():
    """Inputs that need no grad: an inference graph even with grad on; the output needs no
    grad, and the caller's grad mode is what it was."""
    cf = compile_cpp(lambda x: x.sin() * 3)
    x = torch.randn(10)
    y = cf(x)
    assert _counts() == (1, 0)
    assert not y.requires_grad and torch.is_grad_enabled()
    assert_same(y, x.sin() * 3)


def test_module_under_no_grad_and_inference_mode():
    model = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.GELU(), torch.nn.Linear(5, 3))
    model.eval()
    cm = compile_cpp(model)
    x = torch.randn(4, 6)
    with torch.no_grad():
        assert_same(cm(x), model(x))
    with torch.inference_mode():
        y = cm(x)
        assert y.is_inference()
        assert_same(y, model(x))
    assert _counts()[0] >= 1
    # Parameters need grad: with grad on the same module compiles a training graph.
    y = cm(x)
    assert y.requires_grad
    y.sum().backward()
    assert model[0].weight.grad is not None


def test_dynamic_shapes_through_a_direct_graph():
    cf = compile_cpp(lambda x, y: (x * y).cumsum(0) + x.shape[0], dynamic=True)
    with torch.no_grad():
        for n in (3, 7, 12):
            x, y = torch.randn(n, 5), torch.randn(n, 5)
            assert_same(cf(x, y), (x * y).cumsum(0) + n)
    assert _counts() == (1, 0)


def test_mutated_input_keeps_aot_wrappers_and_eager_semantics():
    def f(x, y):
        x.add_(1)
        return x * y

    x, y = torch.randn(6), torch.randn(6)
    x_eager = x.clone()
    with torch.no_grad():
        expected = f(x_eager, y)
        version = x._version
        out = compile_cpp(f)(x, y)
    assert_same(out, expected)
    assert_same(x, x_eager)
    assert x._version > version  # autograd's view of the input changed, as in eager
    assert _counts() == (0, 1)


def test_output_viewing_an_input_keeps_aot_wrappers():
    f = lambda x: (x.view(-1), x + 1)  # noqa: E731
    x = torch.randn(3, 4)
    with torch.no_grad():
        out = compile_cpp(f)(x)
    assert_same(out, f(x))
    assert out[0].data_ptr() == x.data_ptr() and out[0]._base is x
    assert _counts() == (0, 1)


def test_outputs_sharing_an_intermediate_share_it_when_called_directly():
    """Two views of one intermediate share its storage in eager: a write through one shows in
    the other. An inference graph returns both views of its one buffer (AOT marks them as
    fresh outputs: it regenerates views only for autograd), so the direct call keeps that."""
    def f(x):
        y = x + 1
        return y.view(-1), y.transpose(0, 1)

    x = torch.randn(3, 4)
    with torch.no_grad():
        flat, transposed = compile_cpp(f)(x)
    assert_same((flat, transposed), f(x))
    flat[1] = 100.0
    assert transposed[1, 0] == 100.0
    assert _counts() == (1, 0)


def test_views_of_separate_intermediates_are_called_directly():
    """A view of an intermediate that nothing else sees is a fresh tensor to the caller (AOT
    turns it into an unsafe view): nothing for the wrapper to do."""
    f = lambda x: ((x + 1).view(-1), (x * 2).transpose(0, 1))  # noqa: E731
    x = torch.randn(3, 4)
    with torch.no_grad():
        assert_same(compile_cpp(f)(x), f(x))
    assert _counts() == (1, 0)


def test_returning_an_input_and_a_repeated_input():
    """Dynamo itself returns an input passed straight through and passes a repeated tensor
    once: the graph it hands over has neither, and is called directly."""
    f = lambda a, b: (a, a * b + b)  # noqa: E731
    x = torch.randn(5)
    with torch.no_grad():
        out = compile_cpp(f)(x, x)
    assert out[0] is x
    assert_same(out[1], x * x + x)
    assert _counts() == (1, 0)


def test_autocast_keeps_aot_wrappers():
    f = lambda a, b: torch.mm(a, b).relu()  # noqa: E731
    a, b = torch.randn(8, 8), torch.randn(8, 8)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        out = compile_cpp(f)(a, b)
        expected = f(a, b)
    assert out.dtype == expected.dtype == torch.bfloat16
    assert_same(out, expected, rtol=2e-2, atol=2e-2)
    assert _counts() == (0, 1)


def test_switch_off_keeps_aot_wrappers(monkeypatch):
    monkeypatch.setenv("INDUCTOR_CPP_DIRECT_INFERENCE", "0")
    f = lambda x: x.cos() - 1  # noqa: E731
    x = torch.randn(7)
    with torch.no_grad():
        assert_same(compile_cpp(f)(x), f(x))
    assert _counts() == (0, 1)


def test_direct_graph_frees_on_reset():
    import gc
    import weakref

    cf = compile_cpp(lambda x: x.exp() * 2)
    with torch.no_grad():
        cf(torch.randn(4))
    # This test's graphs: AOT autograd keeps earlier tests' training graphs alive past reset
    # (their autograd.Function classes hold them), which is not ours to free.
    graphs = [weakref.ref(g) for g in test_graphs()]
    assert _counts() == (1, 0) and graphs
    del cf
    torch.compiler.reset()
    gc.collect()
    assert all(ref() is None for ref in graphs)


def test_graph_that_turns_grad_on_keeps_aot_wrappers():
    """A graph that changes grad mode leaves it changed for the caller, as eager does: AOT's
    wrapper replays that, so such a graph keeps it."""
    def f(x):
        y = x * 2
        torch._C._set_grad_enabled(True)
        return y.relu()

    x = torch.randn(5)
    try:
        with torch.no_grad():
            out = compile_cpp(f)(x)
            assert torch.is_grad_enabled()
    finally:
        torch._C._set_grad_enabled(True)
    assert_same(out, (x * 2).relu())
    assert _counts() == (0, 1)


def test_batchnorm_statistics_update_under_no_grad():
    """Training-mode BatchNorm under no_grad mutates its running statistics (buffers, graph
    inputs): the graph keeps AOT's wrappers and the buffers match eager's."""
    bn_eager = torch.nn.BatchNorm2d(3).train()
    bn = torch.nn.BatchNorm2d(3).train()
    x = torch.randn(4, 3, 5, 5)
    compiled = compile_cpp(bn)
    with torch.no_grad():
        for _ in range(2):
            assert_same(compiled(x), bn_eager(x), rtol=1e-4, atol=1e-5)
    assert_same(bn.running_mean, bn_eager.running_mean)
    assert_same(bn.running_var, bn_eager.running_var)
    assert _counts() == (0, 1)


def test_symbolic_size_output_through_a_direct_graph():
    f = lambda x: (x.shape[0] * 2, x + 1)  # noqa: E731
    cf = compile_cpp(f, dynamic=True)
    with torch.no_grad():
        for n in (3, 6):
            x = torch.randn(n, 2)
            size, y = cf(x)
            assert size == 2 * n
            assert_same(y, x + 1)
    assert _counts() == (1, 0)


def test_subclass_built_inside_the_graph_keeps_aot_wrappers():
    from torch.testing._internal.two_tensor import TwoTensor

    f = lambda a, b: TwoTensor(a * 2, b + 1)  # noqa: E731
    a, b = torch.ones(3), torch.zeros(3)
    with torch.no_grad():
        out = compile_cpp(f)(a, b)
    assert isinstance(out, TwoTensor)
    assert_same(out.a, a * 2)
    assert_same(out.b, b + 1)
    assert _counts() == (0, 1)


def test_custom_operator_keeps_aot_wrappers_and_their_aliasing_check():
    """AOT's wrapper runs a custom op's first call under a check that its output does not
    alias its input; a graph calling one keeps that wrapper (and its warning)."""
    import warnings

    lib = torch.library.Library("inductor_cpp_test_direct", "DEF")
    lib.define("aliasing(Tensor x) -> Tensor")
    lib.impl("aliasing", lambda x: x.view(-1), "CPU")
    lib.impl("aliasing", lambda x: x.new_empty(x.numel()), "Meta")
    f = lambda x: torch.ops.inductor_cpp_test_direct.aliasing(x * 2) + 1  # noqa: E731
    x = torch.randn(3, 4)
    # AOT warns, or raises where `CI` is set in the environment (torch 2.11's default for
    # error_on_custom_op_aliasing); pin each mode so the test means the same everywhere.
    aot_config = torch._functorch.config
    with aot_config.patch(error_on_custom_op_aliasing=False):
        with warnings.catch_warnings(record=True) as caught, torch.no_grad():
            warnings.simplefilter("always")
            out = compile_cpp(f)(x)
    assert_same(out, (x * 2).view(-1) + 1)
    assert _counts() == (0, 1)
    assert any("alias" in str(w.message) for w in caught)

    torch.compiler.reset()
    with aot_config.patch(error_on_custom_op_aliasing=True), torch.no_grad():
        with pytest.raises(RuntimeError, match="must not also be an input"):
            compile_cpp(f)(x)


def test_backend_called_outside_dynamo_compiles_without_metadata():
    """inductor_cpp.backend on a traced GraphModule with real inputs (no Dynamo, so no
    TracingContext): AOT's function, no crash."""
    gm = torch.fx.symbolic_trace(lambda x: (torch.relu(x) * 2,))
    x = torch.randn(6)
    with torch.no_grad():
        out = inductor_cpp.backend(gm, [x])(x)
    assert_same(out[0], torch.relu(x) * 2)
    assert _counts() == (0, 1)
