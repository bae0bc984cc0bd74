"""Compiled == eager on nn.Modules: parameters and buffers, BatchNorm in train mode (running
stats), train/eval toggling, an MLP training step (grads), resnet18 inference."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn as nn

import inductor_cpp
from conftest import assert_same, compile_cpp


class WithBuffer(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)
        self.register_buffer("shift", torch.linspace(-1, 1, 4))

    def forward(self, x):
        return torch.relu(self.fc(x)) + self.shift


def test_module_with_parameters_and_buffers():
    m = WithBuffer()
    x = torch.randn(3, 8)
    with torch.no_grad():
        assert_same(compile_cpp(m)(x), m(x))
    assert_same(compile_cpp(m)(x), m(x))  # with autograd: forward graph of a training pair


def test_batchnorm_train_mode_updates_running_stats():
    eager = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU())
    compiled_model = copy.deepcopy(eager)
    cm = compile_cpp(compiled_model)
    for step in range(3):
        x = torch.randn(4, 3, 10, 10)
        assert_same(cm(x), eager(x), rtol=1e-4, atol=1e-5)
    bn_e, bn_c = eager[1], compiled_model[1]
    assert_same(bn_c.running_mean, bn_e.running_mean, rtol=1e-5, atol=1e-6)
    assert_same(bn_c.running_var, bn_e.running_var, rtol=1e-5, atol=1e-6)
    assert bn_c.num_batches_tracked.item() == bn_e.num_batches_tracked.item() == 3


def test_train_eval_toggling():
    eager = nn.Sequential(nn.Linear(6, 6), nn.BatchNorm1d(6), nn.Dropout(0.0), nn.Tanh())
    compiled_model = copy.deepcopy(eager)
    cm = compile_cpp(compiled_model)
    x = torch.randn(5, 6)
    for mode in ("train", "eval", "train", "eval"):
        getattr(eager, mode)()
        getattr(compiled_model, mode)()
        with torch.no_grad():  # train mode under no_grad: an inference graph that mutates buffers
            assert_same(cm(x), eager(x), rtol=1e-5, atol=1e-6)
        assert_same(compiled_model[1].running_mean, eager[1].running_mean, rtol=1e-5, atol=1e-6)
        assert compiled_model[1].num_batches_tracked.item() == eager[1].num_batches_tracked.item()


def _mlp():
    return nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 64), nn.LayerNorm(64),
                         nn.ReLU(), nn.Linear(64, 10))


def test_mlp_training_step_grads_match_eager():
    torch.manual_seed(0)
    eager = _mlp()
    compiled_model = copy.deepcopy(eager)
    reference = copy.deepcopy(eager).double()
    cm = compile_cpp(compiled_model)
    x, target = torch.randn(16, 32), torch.randint(0, 10, (16,))
    loss_fn = nn.CrossEntropyLoss()

    loss_e = loss_fn(eager(x), target)
    loss_e.backward()
    loss_c = loss_fn(cm(x), target)
    loss_c.backward()
    loss_r = loss_fn(reference(x.double()), target)
    loss_r.backward()

    assert_same(loss_c, loss_e, rtol=1e-5, atol=1e-6)
    for (name, p_e), p_c, p_r in zip(eager.named_parameters(), compiled_model.parameters(), reference.parameters()):
        assert_same(p_c.grad, p_e.grad, rtol=1e-4, atol=1e-6)
        err_eager = (p_e.grad.double() - p_r.grad).abs().max().item()
        err_compiled = (p_c.grad.double() - p_r.grad).abs().max().item()
        assert err_compiled <= 3 * err_eager + 1e-7, name
    assert inductor_cpp.counters()["graphs_compiled"] == 2  # a forward and a backward graph


def test_mlp_optimizer_loop_matches_eager():
    torch.manual_seed(1)
    eager = _mlp()
    compiled_model = copy.deepcopy(eager)
    cm = compile_cpp(compiled_model)
    opt_e = torch.optim.SGD(eager.parameters(), lr=0.05, momentum=0.9)
    opt_c = torch.optim.SGD(compiled_model.parameters(), lr=0.05, momentum=0.9)
    for step in range(5):
        x, target = torch.randn(16, 32), torch.randint(0, 10, (16,))
        for model, opt in ((eager, opt_e), (cm, opt_c)):
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), target).backward()
            opt.step()
    for p_e, p_c in zip(eager.parameters(), compiled_model.parameters()):
        assert_same(p_c, p_e, rtol=1e-4, atol=1e-5)


def test_resnet18_inference():
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    model = torchvision.models.resnet18(weights=None).eval()
    x = torch.randn(2, 3, 64, 64)
    with torch.no_grad():
        expected = model(x)
        actual = compile_cpp(model)(x)
    assert_same(actual, expected, rtol=1e-3, atol=1e-3)
    c = inductor_cpp.counters()
    assert c["graphs_compiled"] == 1 and c["eager_graph_fallbacks"] == 0


def test_autocast_bfloat16_training_step():
    torch.manual_seed(2)
    eager = _mlp()
    compiled_model = copy.deepcopy(eager)
    cm = compile_cpp(compiled_model)
    x = torch.randn(8, 32)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out_e, out_c = eager(x), cm(x)
    assert out_c.dtype == out_e.dtype == torch.bfloat16
    assert_same(out_c, out_e, rtol=1.6e-2, atol=1e-2)
    out_e.float().sum().backward()
    out_c.float().sum().backward()
    for p_e, p_c in zip(eager.parameters(), compiled_model.parameters()):
        assert_same(p_c.grad, p_e.grad, rtol=1.6e-2, atol=1e-2)
