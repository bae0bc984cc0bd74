"""Compiled == eager on functions: elementwise math, graph breaks, in-place ops on inputs,
views as outputs, multiple outputs, integer and bool tensors, non-contiguous inputs."""

from __future__ import annotations

import pytest
import torch

import inductor_cpp
from conftest import assert_same, compile_cpp, test_graphs


def test_elementwise_chain():
    def f(x, y):
        return torch.nn.functional.gelu(x * 1.5 + 0.25) * torch.sigmoid(y) - torch.tanh(x) / 3

    x, y = torch.randn(64, 33), torch.randn(64, 33)
    assert_same(compile_cpp(f)(x, y), f(x, y))
    graphs = test_graphs()
    assert len(graphs) == 1
    c = graphs[0].counters()
    assert c["ops_fallback"] == 0 and c["ops_generated"] > 0 and c["calls"] == 1
    assert c["kernels"] == 1 and c["aten_calls"] == 0  # the whole chain fused into one kernel


def test_scalars_and_python_numbers():
    def f(x):
        return (x * 2 + 1) ** 2 - x.clamp(min=-0.5, max=0.5) + torch.full_like(x, float("inf")).isinf()

    x = torch.randn(10)
    assert_same(compile_cpp(f)(x), f(x))


def test_tensor_constants_are_generated():
    """torch.tensor(...) in the function: Dynamo lifts the constant and copies it
    (aten::lift_fresh_copy), a generated copy, not an ATen call."""
    def f(x):
        return x * torch.tensor([1.0, 2.0, 3.0]) + torch.tensor(0.5)

    x = torch.randn(4, 3)
    assert_same(compile_cpp(f)(x), f(x))
    counters = [g.counters() for g in test_graphs()]
    assert counters and all(c["ops_fallback"] == 0 for c in counters), counters


@pytest.mark.parametrize("name", ["split_with_sizes", "chunk", "unbind", "split_views_returned"])
def test_split_pieces_are_generated_views(name):
    """split / chunk / unbind: each piece is a view of the input (an index rewrite), so the
    graph has no ATen call; pieces returned as they are keep eager's strides."""
    fns = {
        "split_with_sizes": lambda x: [t.sin() for t in torch.split(x, [2, 3, 1], dim=1)],
        "chunk": lambda x: [t * 2 for t in x.chunk(3, 0)],
        "unbind": lambda x: [t + 1 for t in x.unbind(1)],
        "split_views_returned": lambda x: torch.split(x, 4, -1),
    }
    x = torch.randn(7, 6)
    got, expected = compile_cpp(fns[name])(x), fns[name](x)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert_same(g, e)
        assert g.stride() == e.stride()
    counters = [g.counters() for g in test_graphs()]
    assert counters and all(c["ops_fallback"] == 0 for c in counters), counters


def _write_slice(x):
    y = x * 2
    y[:, 1:5:2] = x[:, :2] + 1  # slice_scatter with a step
    return y


def _write_row(x):
    y = x.clone()
    y[2] = y[0] * 3  # select_scatter
    return y.sin()


def _write_diagonal(x):
    y = x.exp()
    y.diagonal(1).zero_()  # diagonal_scatter above the main diagonal
    return y


_REARRANGE_FNS = {
    "flip": lambda x: x.flip(0, -1) + 1,
    "roll": lambda x: x.roll((2, -1), (0, 1)) * 2,
    "roll_flat": lambda x: torch.roll(x, 5).cos(),
    "repeat": lambda x: x.repeat(2, 1, 3) - 1,
    "unfold": lambda x: x.unfold(1, 3, 2).sum(-1),
    "slice_scatter": _write_slice,
    "select_scatter": _write_row,
    "diagonal_scatter": _write_diagonal,
    "slice_scatter_op": lambda x: torch.slice_scatter(x, x[:, :3].neg(), 1, -3),
    "permute_copy": lambda x: torch.permute_copy(x, (1, 0)),
    "unbind_copy": lambda x: [t * 2 for t in torch.unbind_copy(x, 1)],
}


@pytest.mark.parametrize("name", sorted(_REARRANGE_FNS))
def test_rearranging_copies_are_generated(name):
    """flip, repeat, unfold, slice_scatter and diagonal_scatter (what functionalization makes of
    writes into views) and the *_copy views are lowered as index rewrites; roll and
    select_scatter decompose into lowered ops: either way the graph calls no ATen op."""
    fn = _REARRANGE_FNS[name]
    x = torch.randn(6, 7)
    assert_same(compile_cpp(fn)(x), fn(x))
    counters = [g.counters() for g in test_graphs()]
    assert counters and all(c["ops_fallback"] == 0 for c in counters), counters


def test_empty_tensors():
    """Zero-size results of zero-size operands are generated (loops of no iterations); a
    reduction over an empty dim (sum: zeros; amax would raise in eager) stays an ATen call."""
    def empty_chain(x):
        return (x * 2 + 1).relu().t()

    def empty_sum(x):
        return x.sum(0) + 1

    x = torch.randn(0, 3)
    got = compile_cpp(empty_chain)(x)
    assert_same(got, empty_chain(x))
    assert got.shape == (3, 0) and got.stride() == empty_chain(x).stride()
    assert all(g.counters()["ops_fallback"] == 0 for g in test_graphs())
    torch._dynamo.reset()
    assert_same(compile_cpp(empty_sum)(x), empty_sum(x))


def test_graph_break_gives_two_graphs():
    def f(x):
        y = torch.sin(x) * 2
        torch._dynamo.graph_break()
        return torch.cos(y) + 1

    x = torch.randn(8, 8)
    assert_same(compile_cpp(f)(x), f(x))
    assert inductor_cpp.counters()["graphs_compiled"] == 2


def test_in_place_op_on_an_input():
    def f(x, y):
        x.add_(y)
        x.mul_(2)
        return x.sum()

    x, y = torch.randn(5, 5), torch.randn(5, 5)
    x_eager, x_compiled = x.clone(), x.clone()
    expected = f(x_eager, y)
    actual = compile_cpp(f)(x_compiled, y)
    assert_same(actual, expected)
    assert_same(x_compiled, x_eager)  # the caller sees the mutation


def test_view_returned_as_output_aliases_the_input():
    def f(x):
        return x.t(), x[1:, :2], x + 1

    x = torch.randn(4, 6)
    t, sliced, plus = compile_cpp(f)(x)
    assert_same((t, sliced, plus), f(x))
    x.zero_()  # the views must see this, as in eager
    assert t.abs().sum() == 0 and sliced.abs().sum() == 0


def test_multiple_outputs_of_one_op():
    def f(x):
        values, indices = torch.max(x, dim=1)
        return values * 2, indices, torch.sort(x, dim=0)

    x = torch.randn(7, 9)
    assert_same(compile_cpp(f)(x), f(x))


def test_int64_and_bool_tensors():
    def f(a, b, mask):
        q = a * 3 // 2 - b
        both = (a > 2) & mask
        return q, both, torch.where(both, a, -b), (a % 5).sum(), mask.any()

    a = torch.randint(-10, 10, (6, 5), dtype=torch.int64)
    b = torch.randint(1, 4, (6, 5), dtype=torch.int64)
    mask = torch.rand(6, 5) > 0.5
    assert_same(compile_cpp(f)(a, b, mask), f(a, b, mask))


def test_non_contiguous_inputs():
    def f(x, y):
        return x @ y + y.sum(0, keepdim=True)

    x = torch.randn(12, 16).t()[:, ::2]  # 16 x 6, strided both ways
    w = torch.randn(3, 6).t()  # 6 x 3, transposed
    assert not x.is_contiguous() and not w.is_contiguous()
    assert_same(compile_cpp(f)(x, w), f(x, w), rtol=1e-4, atol=1e-5)


def test_list_returning_op_and_cat():
    def f(x):
        a, b, c = torch.split(x, [2, 3, 4], dim=1)
        return torch.cat([c, a * 2, b], dim=1), torch.stack([a.sum(1), c.sum(1)])

    x = torch.randn(5, 9)
    assert_same(compile_cpp(f)(x), f(x), rtol=1e-5, atol=1e-5)


def test_dtype_and_device_arguments():
    def f(x):
        return torch.zeros(3, 4, dtype=torch.float64) + x.to(torch.float64), torch.arange(5, device=x.device)

    x = torch.randn(3, 4)
    assert_same(compile_cpp(f)(x), f(x))


def test_half_and_bfloat16():
    def f(x):
        return (x * 2).softmax(-1).to(torch.float32)

    for dtype in (torch.float16, torch.bfloat16):
        x = torch.randn(4, 8).to(dtype)
        assert_same(compile_cpp(f)(x), f(x), rtol=1e-2, atol=1e-2)


def test_inference_mode():
    def f(x):
        return torch.relu(x) * 3

    x = torch.randn(4, 4)
    with torch.inference_mode():
        assert_same(compile_cpp(f)(x), f(x))


def test_new_shapes_keep_working_and_compile_once():
    def f(x, y):
        z = x.view(-1, x.shape[1] * 2) * x.shape[0]
        return z.sum(0) + y[: x.shape[0] // 2].sum(), torch.tanh(x).mean(-1) * (x.shape[0] / 3)

    cf = compile_cpp(f)
    for n in (4, 8, 12, 6, 2):
        x, y = torch.randn(n, 6), torch.randn(9)
        assert_same(cf(x, y), f(x, y), rtol=1e-5, atol=1e-5)
    assert inductor_cpp.counters()["eager_graph_fallbacks"] == 0

    torch._dynamo.reset()
    inductor_cpp.reset_counters()
    g = compile_cpp(lambda x: torch.tanh(x).sum(-1) * x.shape[0])
    for n in (4, 7, 13, 5):
        x = torch.randn(n, 3)
        assert_same(g(x), torch.tanh(x).sum(-1) * n)
    c = inductor_cpp.counters()
    # one static graph; then one with symbolic sizes (its plan of ATen calls is the fallback)
    # and a static graph for each later shape (specialize.py)
    assert c["graphs_compiled"] == 2 + 3 and c["eager_graph_fallbacks"] == 0, c

    torch._dynamo.reset()
    inductor_cpp.reset_counters()
    h = torch.compile(lambda x: torch.tanh(x).sum(-1) * x.shape[0], backend="inductor_cpp",
                      options={"shape_specializations": 0})
    for n in (4, 7, 13, 5):
        x = torch.randn(n, 3)
        assert_same(h(x), torch.tanh(x).sum(-1) * n)
    # without specializations the symbolic graph serves every later shape
    assert inductor_cpp.counters()["graphs_compiled"] == 2


def test_dynamic_shapes_training():
    model = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.ReLU(), torch.nn.Linear(7, 1))
    cm = torch.compile(model, backend="inductor_cpp", dynamic=True)
    for n in (3, 9, 4):
        x = torch.randn(n, 5)
        model.zero_grad()
        model(x).pow(2).mean().backward()
        expected = [p.grad.clone() for p in model.parameters()]
        model.zero_grad()
        cm(x).pow(2).mean().backward()
        for p, e in zip(model.parameters(), expected):
            assert_same(p.grad, e, rtol=1e-5, atol=1e-6)
    assert inductor_cpp.counters()["eager_graph_fallbacks"] == 0
