"""Our own decompositions (python/inductor_cpp/decompositions.py) against the ATen op they
replace. They run on the CPU here: a decomposition is device-independent Python; which device's
table holds it is what decides where it is used (the CUDA rows: scripts/gpu.sh test)."""

from __future__ import annotations

import pytest
import torch

from inductor_cpp import decompositions

aten = torch.ops.aten


def _cuda_embedding_backward():
    return decompositions.decomposition_table("cuda")[aten.embedding_dense_backward.default]


@pytest.mark.parametrize("padding_idx", [-1, 3])
@pytest.mark.parametrize("index_shape", [(7,), (2, 5), (2, 3, 4)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_embedding_backward_by_index_add_matches_aten(index_shape, padding_idx, dtype):
    g = torch.Generator().manual_seed(0)
    indices = torch.randint(0, 10, index_shape, generator=g)  # repeats: rows must accumulate
    indices.view(-1)[0] = 3
    grad = torch.randn(*index_shape, 6, generator=g).to(dtype)
    want = aten.embedding_dense_backward(grad, indices, 10, padding_idx, False)
    got = _cuda_embedding_backward()(grad, indices, 10, padding_idx, False)
    assert got.dtype == want.dtype and got.shape == want.shape
    tol = 1e-2 if dtype == torch.bfloat16 else 1e-6
    torch.testing.assert_close(got, want, rtol=tol, atol=tol)
    if padding_idx >= 0:
        assert not got[padding_idx].any()


def test_embedding_backward_scaled_by_frequency_keeps_torch_decomposition():
    indices = torch.tensor([1, 1, 4, 2, 1])
    grad = torch.randn(5, 3)
    want = aten.embedding_dense_backward(grad, indices, 6, -1, True)
    torch.testing.assert_close(_cuda_embedding_backward()(grad, indices, 6, -1, True), want)


def test_device_tables_differ_only_where_listed():
    cpu = decompositions.decomposition_table("cpu")
    cuda = decompositions.decomposition_table("cuda")
    assert aten.index_add.default in cpu and aten.index_add.default not in cuda
    assert cpu[aten.embedding_dense_backward.default] is not cuda[aten.embedding_dense_backward.default]


@pytest.mark.parametrize("transposed", [False, True])
def test_convolution_bias_peeled_matches_aten(transposed):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 4, 7, 6, generator=g)
    w = torch.randn(4, 6, 3, 3, generator=g)  # [out, in/groups] or, transposed, [in, out/groups]
    b = torch.randn(6 if transposed else 4, generator=g)
    if not transposed:
        w = w[:, :2]  # groups 2: [4, 2, 3, 3]
    args = ([2, 1], [1, 0], [1, 1], transposed, [1, 0] if transposed else [0, 0], 1 if transposed else 2)
    peel = decompositions.decomposition_table("cuda")[aten.convolution.default]
    torch.testing.assert_close(peel(x, w, b, *args), aten.convolution(x, w, b, *args))
    assert peel(x, w, None, *args) is NotImplemented
    assert aten.convolution.default not in decompositions.decomposition_table("cpu")


def test_convolution_backward_bias_by_sum_matches_aten():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 4, 9, 9, generator=g)
    w = torch.randn(6, 4, 3, 3, generator=g)
    dy = torch.randn(2, 6, 4, 4, generator=g)
    args = ([6], [2, 2], [0, 0], [1, 1], False, [0, 0], 1)
    by_sum = decompositions.decomposition_table("cuda")[aten.convolution_backward.default]
    for mask in ([True, True, True], [False, True, True]):
        want = aten.convolution_backward(dy, x, w, *args, mask)
        got = by_sum(dy, x, w, *args, mask)
        for a, b in zip(got, want):
            assert (a is None) == (b is None)
            if a is not None:
                torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
    assert by_sum(dy, x, w, *args, [True, True, False]) is NotImplemented


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_convolution_with_bias_training_on_cuda_matches_float64():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.GELU(),
                                torch.nn.Conv2d(8, 8, 3, padding=1, groups=8)).cuda()
    x = torch.randn(2, 3, 12, 12, device="cuda")
    reference = [p.detach().double().clone().requires_grad_() for p in model.parameters()]
    compiled = torch.compile(model, backend="inductor_cpp")
    compiled(x).square().sum().backward()
    h = torch.nn.functional.gelu(torch.nn.functional.conv2d(x.double(), reference[0], reference[1], padding=1))
    torch.nn.functional.conv2d(h, reference[2], reference[3], padding=1, groups=8).square().sum().backward()
    for p, r in zip(model.parameters(), reference):
        torch.testing.assert_close(p.grad, r.grad.float(), rtol=1e-3, atol=1e-3)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_embedding_training_on_cuda_matches_eager():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Embedding(50, 16, padding_idx=0), torch.nn.Linear(16, 4)).cuda()
    ids = torch.randint(0, 50, (4, 12), device="cuda")
    ids[0, :3] = 0
    reference = [p.detach().clone().requires_grad_() for p in model.parameters()]
    compiled = torch.compile(model, backend="inductor_cpp")
    compiled(ids).square().sum().backward()
    emb = torch.nn.functional.embedding(ids, reference[0], padding_idx=0)
    torch.nn.functional.linear(emb, reference[1], reference[2]).square().sum().backward()
    for p, r in zip(model.parameters(), reference):
        torch.testing.assert_close(p.grad, r.grad, rtol=1e-5, atol=1e-5)


def _traced(fn, *args):
    from torch.fx.experimental.proxy_tensor import make_fx
    return make_fx(fn, tracing_mode="fake")(*args)


def test_index_add_of_zeros_folds_into_the_sum():
    from inductor_cpp import joint_graph

    def tied_grad(x, ids, rows):
        return x + aten.index_add(torch.zeros(10, 4), 0, ids, rows)

    args = (torch.randn(10, 4), torch.tensor([1, 3, 1, 9]), torch.randn(4, 4))
    gm = _traced(tied_grad, *args)
    assert joint_graph.fold_index_add_into_sum(gm.graph) == 1
    gm.recompile()
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert targets == [aten.index_add.default]
    torch.testing.assert_close(gm(*args), tied_grad(*args))


def test_index_add_fold_leaves_broadcasting_sums_and_other_uses():
    from inductor_cpp import joint_graph

    def broadcast(x, ids, rows):
        return x + aten.index_add(torch.zeros(10, 4), 0, ids, rows)

    def reused(x, ids, rows):
        scattered = aten.index_add(torch.zeros(10, 4), 0, ids, rows)
        return x + scattered, scattered

    ids, rows = torch.tensor([1, 3]), torch.randn(2, 4)
    assert joint_graph.fold_index_add_into_sum(_traced(broadcast, torch.randn(4), ids, rows).graph) == 0
    assert joint_graph.fold_index_add_into_sum(_traced(reused, torch.randn(10, 4), ids, rows).graph) == 0


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_tied_embedding_training_on_cuda_matches_eager():
    class Tied(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = torch.nn.Embedding(40, 8)

        def forward(self, ids):
            return torch.nn.functional.linear(torch.tanh(self.embedding(ids)), self.embedding.weight)

    torch.manual_seed(0)
    model = Tied().cuda()
    ids = torch.randint(0, 40, (3, 7), device="cuda")
    torch.compile(model, backend="inductor_cpp")(ids).square().mean().backward()
    want = model.embedding.weight.grad.clone()
    model.embedding.weight.grad = None
    model(ids).square().mean().backward()
    torch.testing.assert_close(want, model.embedding.weight.grad, rtol=1e-5, atol=1e-6)
