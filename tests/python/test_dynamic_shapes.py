"""Graphs with symbolic sizes (Dynamo's dynamic shapes): a static compile per concrete shape,
up to the `shape_specializations` limit, then the symbolic graph's plan of ATen calls
(python/inductor_cpp/specialize.py)."""

from __future__ import annotations

import functools

import pytest
import torch
import torch.nn.functional as F

import inductor_cpp
from conftest import assert_same, collect_logs, test_graphs


def softmax_of_sin(x):
    return (x.sin() + 1).softmax(-1)


def graphs_by_kind():
    """(static graphs with generated kernels, graphs made only of ATen calls) of this test."""
    graphs = test_graphs()
    generated = [g for g in graphs if g.counters()["kernels"] > 0]
    aten_only = [g for g in graphs if g.counters()["kernels"] == 0]
    return generated, aten_only


def test_each_new_shape_gets_a_static_graph_with_kernels():
    compiled = torch.compile(softmax_of_sin, backend="inductor_cpp", dynamic=True)
    for rows in (5, 7, 5, 9, 7):
        x = torch.randn(rows, 8)
        assert_same(compiled(x), softmax_of_sin(x))
    generated, aten_only = graphs_by_kind()
    assert len(generated) == 3, [g.plan_text for g in generated]  # 5, 7 and 9 rows
    assert sorted(g.counters()["calls"] for g in generated) == [1, 2, 2]
    # The symbolic graph's own plan (ATen calls) exists as the fallback, but nothing ran it.
    assert len(aten_only) == 1 and aten_only[0].counters()["calls"] == 0


def test_shapes_past_the_limit_run_the_symbolic_plan():
    compiled = torch.compile(softmax_of_sin, backend="inductor_cpp", dynamic=True,
                             options={"shape_specializations": 2})
    with collect_logs() as messages:
        for rows in (3, 4, 5, 6, 3):
            x = torch.randn(rows, 8)
            assert_same(compiled(x), softmax_of_sin(x))
    generated, aten_only = graphs_by_kind()
    assert len(generated) == 2 and sum(g.counters()["calls"] for g in generated) == 3
    assert len(aten_only) == 1 and aten_only[0].counters()["calls"] == 2  # 5 and 6 rows
    assert sum("shape_specializations" in m for m in messages) == 1, messages  # warned once


def test_zero_specializations_keep_every_shape_on_the_symbolic_plan():
    compiled = torch.compile(softmax_of_sin, backend="inductor_cpp", dynamic=True,
                             options={"shape_specializations": 0})
    for rows in (3, 4):
        x = torch.randn(rows, 8)
        assert_same(compiled(x), softmax_of_sin(x))
    generated, aten_only = graphs_by_kind()
    assert not generated and len(aten_only) == 1 and aten_only[0].counters()["calls"] == 2


def scale_by_constant(x):
    return x * torch.tensor([1.0, 2.0, 3.0]) + 1


@pytest.mark.parametrize("inference", [False, True])
def test_graph_with_a_tensor_constant_takes_new_shapes(inference):
    """A tensor made in user code (torch.tensor([...]): a tensor attribute of the ATen graph, as
    in torchvision's swin_t) in a graph with symbolic sizes. Copying that graph module for the
    per-shape compiles deep-copied the constant under AOT autograd's fake mode, which raised, so
    the second batch size failed to compile."""
    compiled = torch.compile(scale_by_constant, backend="inductor_cpp")
    with torch.inference_mode(inference):
        for rows in (2, 3, 4):
            x = torch.randn(rows, 3)
            assert_same(compiled(x), scale_by_constant(x))
    # 2 rows (static), then the symbolic graph (its plan unused) and one static graph each for 3
    # and 4 rows.
    assert sorted(g.counters()["calls"] for g in test_graphs()) == [0, 1, 1, 1]


def test_training_with_dynamic_batch_matches_eager():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.LayerNorm(16),
                                torch.nn.Linear(16, 4))
    compiled = torch.compile(model, backend="inductor_cpp", dynamic=True)
    for rows in (5, 7, 3):
        x = torch.randn(rows, 8, requires_grad=True)
        model.zero_grad()
        out = compiled(x)
        out.square().sum().backward()
        grads = [p.grad.clone() for p in model.parameters()] + [x.grad.clone()]
        x.grad = None
        model.zero_grad()
        expected = model(x)
        expected.square().sum().backward()
        assert_same(out, expected, rtol=1e-5, atol=1e-5)
        for got, want in zip(grads, [p.grad for p in model.parameters()] + [x.grad]):
            assert_same(got, want, rtol=1e-4, atol=1e-5)
    generated, _ = graphs_by_kind()
    assert len(generated) >= 6  # a forward and a backward per shape


def test_matrix_steps_and_layouts_follow_each_shape():
    """A dynamic-batch Linear + GELU: each static graph absorbs the GELU into the matmul."""
    lin = torch.nn.Linear(32, 24)
    fn = lambda x: F.gelu(lin(x))  # noqa: E731
    compiled = torch.compile(fn, backend="inductor_cpp", dynamic=True,
                             options={"matrix_kernels": True})
    with torch.no_grad():
        for rows in (6, 10):
            x = torch.randn(rows, 32)
            assert_same(compiled(x), fn(x), rtol=1e-4, atol=1e-5)
    static = [g for g in test_graphs() if g.counters()["calls"] > 0]
    assert len(static) == 2
    for g in static:
        assert "matrix::addmm" in g.plan_text and "-> gelu" in g.plan_text, g.plan_text


def test_static_copies_share_one_packed_weight():
    """Each shape's static graph has its own matmul step for the same Linear weight; the second
    one takes the packed copy the first made instead of packing (and holding) another. A write
    behind the version counter (`.data`) is still seen by both: each drops the stale copy."""
    torch.manual_seed(0)
    lin = torch.nn.Linear(64, 48)
    compiled = torch.compile(lin, backend="inductor_cpp", dynamic=True,
                             options={"matrix_kernels": True})
    shapes = (40, 56)
    with torch.no_grad():
        for _ in range(3):  # cached from the second sight of the weight on
            for rows in shapes:
                x = torch.randn(rows, 64)
                assert_same(compiled(x), lin(x), rtol=1e-4, atol=1e-5)
        static = sorted((g for g in test_graphs() if g.counters()["calls"] > 0),
                        key=lambda g: g.plan_text)
        assert len(static) == 2 and all("matrix::addmm" in g.plan_text for g in static)
        counts = sorted((g.counters()["weight_packs"], g.counters()["weight_shared"])
                        for g in static)
        assert counts == [(0, 1), (1, 0)], counts  # one graph packed, the other took its copy
        lin.weight.data.mul_(-1)  # behind the version counter: the fingerprint sees it
        for rows in shapes:
            x = torch.randn(rows, 64)
            assert_same(compiled(x), lin(x), rtol=1e-4, atol=1e-5)
        assert sum(g.counters()["weight_stale_drops"] for g in static) == 2
        # The first graph to see the new contents packed them; the other took that copy.
        assert sum(g.counters()["weight_packs"] for g in static) == 2
        assert sum(g.counters()["weight_shared"] for g in static) == 2


def test_static_copies_share_one_packed_convolution_weight():
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(16, 32, 3, padding=1).eval()
    compiled = torch.compile(conv, backend="inductor_cpp", dynamic=True,
                             options={"matrix_kernels": True})
    with torch.no_grad():
        for _ in range(3):
            for batch in (2, 3):
                x = torch.randn(batch, 16, 10, 10)
                assert_same(compiled(x), conv(x), rtol=1e-4, atol=1e-5)
    static = [g for g in test_graphs() if g.counters()["calls"] > 0]
    assert len(static) == 2 and all("matrix::conv2d" in g.plan_text for g in static)
    counts = sorted((g.counters()["weight_packs"], g.counters()["weight_shared"]) for g in static)
    assert counts == [(0, 1), (1, 0)], counts


class LinearThen(torch.nn.Module):
    def __init__(self, activation, keep_pre_activation=False):
        super().__init__()
        self.lin = torch.nn.Linear(32, 48)
        self.activation, self.keep = activation, keep_pre_activation

    def forward(self, x):
        y = self.lin(x)
        return self.activation(y) + y if self.keep else self.activation(y)


@pytest.mark.parametrize("activation,batch_dims,absorbed", [
    (F.gelu, 2, "gelu"),  # [B, S, 32]: the addmm's output is viewed as [B, S, 48] first
    (functools.partial(F.gelu, approximate="tanh"), 2, "gelu_tanh"),
    (torch.relu, 1, "relu"),  # [M, 32]: read straight from the addmm
    (F.silu, 2, "silu"),
])
def test_symbolic_plan_absorbs_the_activation_after_a_linear(activation, batch_dims, absorbed):
    """Past the static copies, a Linear with dynamic rows runs on our GEMM; the activation after
    it (through the [B·S, N] -> [B, S, N] view) is its epilogue instead of an ATen call."""
    torch.manual_seed(0)
    model = LinearThen(activation).eval()
    compiled = torch.compile(model, backend="inductor_cpp", dynamic=True,
                             options={"shape_specializations": 0})
    with torch.no_grad():
        for rows in (5, 11):
            x = torch.randn(*([2, rows] if batch_dims == 2 else [rows]), 32)
            assert_same(compiled(x), model(x), rtol=1e-5, atol=1e-6)
    (graph,) = [g for g in test_graphs() if g.counters()["calls"] > 0]
    text = graph.plan_text
    assert "matrix::addmm(" in text and f"-> {absorbed}" in text, text
    name = absorbed.split("_")[0]
    assert f"aten::{name}" not in text and f"aten::{absorbed}" not in text, text


def test_symbolic_plan_keeps_an_activation_whose_input_is_read_again():
    torch.manual_seed(0)
    model = LinearThen(F.gelu, keep_pre_activation=True).eval()
    compiled = torch.compile(model, backend="inductor_cpp", dynamic=True,
                             options={"shape_specializations": 0})
    with torch.no_grad():
        for rows in (5, 11):
            x = torch.randn(2, rows, 32)
            assert_same(compiled(x), model(x), rtol=1e-5, atol=1e-6)
    (graph,) = [g for g in test_graphs() if g.counters()["calls"] > 0]
    assert "matrix::addmm(" in graph.plan_text and "aten::gelu(" in graph.plan_text, \
        graph.plan_text


class NormThenSoftmax(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(16)
        self.proj = torch.nn.Linear(16, 16)

    def forward(self, x):
        return self.proj(self.norm(x)).softmax(-1)


def test_symbolic_plan_keeps_fused_kernels_whole_and_static_copies_decompose_them():
    """The symbolic graph's own plan is ATen calls: layer_norm and softmax (and their backward
    ops) stay one fused ATen call each there instead of their decompositions' five to eight
    ops. A static copy is re-traced with the full decomposition table, so its layer_norm and
    softmax become generated kernels as in a static compile."""
    torch.manual_seed(0)
    model = NormThenSoftmax()
    compiled = torch.compile(model, backend="inductor_cpp", dynamic=True,
                             options={"shape_specializations": 1})
    for rows in (4, 6, 9):  # 4: the one static copy; 6 and 9: past the limit, symbolic plans
        x = torch.randn(rows, 16, requires_grad=True)
        out = compiled(x)
        out.pow(3).sum().backward()
        grads = [p.grad.clone() for p in model.parameters()] + [x.grad.clone()]
        x.grad = None
        model.zero_grad()
        expected = model(x)
        expected.pow(3).sum().backward()
        assert_same(out, expected, rtol=1e-5, atol=1e-6)
        for got, want in zip(grads, [p.grad for p in model.parameters()] + [x.grad]):
            assert_same(got, want, rtol=1e-4, atol=1e-6)
        model.zero_grad()
    generated, aten_only = graphs_by_kind()
    symbolic_text = "\n".join(g.plan_text for g in aten_only)
    for fused in ("aten::native_layer_norm(", "aten::native_layer_norm_backward(",
                  "aten::_softmax(", "aten::_softmax_backward_data("):
        assert fused in symbolic_text, symbolic_text
    assert sorted(g.counters()["calls"] for g in aten_only) == [2, 2]  # forward, backward
    assert len(generated) == 2  # the forward and backward copies for 4 rows
    for g in generated:
        assert "layer_norm" not in g.plan_text and "softmax" not in g.plan_text, g.plan_text


class SquareConv(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.head = torch.nn.Linear(8, 4)

    def forward(self, x):
        return self.head(torch.relu(self.conv(x)).mean((2, 3)))


def test_square_images_with_symbolic_sizes_keep_their_plan():
    """dynamic=True on square images gives one size symbol for height and width, and strides
    such as 3*s0**2, which the index parser did not read: the whole graph's code generation was
    abandoned with a warning."""
    model = SquareConv().eval()
    compiled = torch.compile(model, backend="inductor_cpp", dynamic=True,
                             options={"shape_specializations": 0})
    with collect_logs() as messages, torch.no_grad():
        for batch, side in ((2, 12), (3, 10)):
            x = torch.randn(batch, 3, side, side)
            assert_same(compiled(x), model(x), rtol=1e-4, atol=1e-5)
    assert not any("abandoned" in m for m in messages), messages
    (graph,) = [g for g in test_graphs() if g.counters()["calls"] > 0]
    assert "matrix::addmm" in graph.plan_text, graph.plan_text  # the head, on dynamic rows


@pytest.mark.parametrize("bad", [-1, 1.5, True, "4"])
def test_bad_limit_is_an_error(bad):
    with pytest.raises(ValueError, match="shape_specializations"):
        inductor_cpp.options.resolve(options={"shape_specializations": bad})


def test_limit_from_the_environment(monkeypatch):
    monkeypatch.setenv("INDUCTOR_CPP_SHAPE_SPECIALIZATIONS", "3")
    assert inductor_cpp.options.resolve().shape_specializations == 3
    monkeypatch.setenv("INDUCTOR_CPP_SHAPE_SPECIALIZATIONS", "many")
    with pytest.raises(ValueError, match="whole number"):
        inductor_cpp.options.resolve()
