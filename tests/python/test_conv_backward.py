"""Convolution backward on our kernels (options={"matrix_kernels": True}): in a backward graph,
`aten::convolution_backward` of a float32 CPU channels-last 2-D convolution (groups 1) becomes
a `matrix::conv2d_backward` plan step (runtime/conv_backward_step.h on
matrix/conv_backward.h) computing the input, weight and bias gradients (a strided filter's input gradient by phases).
NCHW training graphs and the input gradient of fewer than 8 input channels (a stem's) stay ATen. Gradients are
compared with eager's and with a float64 reference (our error at most a few times eager's)."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import inductor_cpp
from conftest import assert_same, test_graphs

NHWC = torch.channels_last


def compile_cpp(fn, **options):
    return torch.compile(fn, backend="inductor_cpp", dynamic=False,
                         options={"matrix_kernels": True, **options})


def channels_last(*sizes, requires_grad=False):
    return torch.randn(*sizes).contiguous(memory_format=NHWC).requires_grad_(requires_grad)


def backward_graph():
    graphs = [g for g in test_graphs() if "convolution_backward" in g.plan_text
              or "conv2d_backward" in g.plan_text]
    assert len(graphs) == 1, [g.plan_text for g in test_graphs()]
    return graphs[0]


def backward_steps(plan_text: str) -> list[str]:
    return [line.strip() for line in plan_text.splitlines() if "conv2d_backward" in line]


def aten_backward_calls(plan_text: str) -> list[str]:
    return [line.strip() for line in plan_text.splitlines() if "aten::convolution_backward" in line]


def assert_stays_aten_because(reason: str):
    """The backward graph keeps its convolution_backward on ATen, and the node's decision says
    why (containing `reason`)."""
    graph = backward_graph()
    assert not backward_steps(graph.plan_text) and aten_backward_calls(graph.plan_text)
    reasons = [d["reason"] for d in json.loads(graph.debug_info()["decisions"]) if not d["generated"]]
    assert any(reason in r for r in reasons), reasons


def gradients(fn, args, grad_out):
    """The gradients of sum(fn(*args) · grad_out) with respect to the args that require grad."""
    args = [a.detach().requires_grad_(a.requires_grad) if isinstance(a, torch.Tensor) else a
            for a in args]
    out = fn(*args)
    out.backward(grad_out.to(out.dtype))
    return [a.grad for a in args if isinstance(a, torch.Tensor) and a.requires_grad]


def check_gradients(fn, args, grad_out):
    """Compiled vs eager (same strides, close values) and vs float64: our error at most 4x
    eager's (both sum the same products in float32, in other orders)."""
    ours = gradients(compile_cpp(fn), args, grad_out)
    eager = gradients(fn, args, grad_out)
    reference = gradients(fn, [a.double() if isinstance(a, torch.Tensor) else a for a in args],
                          grad_out.double())
    for o, e, r in zip(ours, eager, reference):
        assert o.stride() == e.stride(), (o.stride(), e.stride())
        assert_same(o, e, rtol=1e-4, atol=1e-4)
        our_error = (o.double() - r).abs().max().item()
        eager_error = (e.double() - r).abs().max().item()
        assert our_error <= 4 * eager_error + 1e-5, (our_error, eager_error)


# (in channels, out channels, spatial size, kernel, stride, padding, dilation): resnet's
# convolutions scaled down, channel counts off the 16/32-column panels.
GEOMETRIES = {
    "3x3s1": (16, 40, 15, 3, 1, 1, 1),
    "3x3s1_nopad": (8, 24, 9, 3, 1, 0, 1),
    "3x3s1_dilated": (8, 20, 13, 3, 1, 2, 2),
    "1x1s1": (24, 72, 11, 1, 1, 0, 1),
    "1x1s2": (24, 40, 13, 1, 2, 0, 1),
    "3x3s2": (16, 40, 17, 3, 2, 1, 1),
    "7x7s2": (8, 16, 23, 7, 2, 3, 1),
}


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=list(GEOMETRIES))
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
def test_gradients_of_each_geometry(geometry, bias):
    c, oc, hw, k, stride, padding, dilation = GEOMETRIES[geometry]
    x = channels_last(2, c, hw, hw, requires_grad=True)
    w = torch.randn(oc, c, k, k).contiguous(memory_format=NHWC).requires_grad_()
    b = torch.randn(oc, requires_grad=True) if bias else None
    fn = lambda x, w, b: F.conv2d(x, w, b, stride=stride, padding=padding, dilation=dilation)
    grad_out = fn(x, w, b).detach().clone().normal_()
    check_gradients(fn, [x, w, b], grad_out)
    plan = backward_graph().plan_text
    (step,) = backward_steps(plan)
    assert f"stride=[{stride},{stride}], padding=[{padding},{padding}]" in step, step
    outs = [o.strip() for o in step.split("=")[0].split(",")]
    assert outs[1] != "_" and (outs[2] != "_") == bias, step
    decisions = json.loads(backward_graph().debug_info()["decisions"])
    (decision,) = [d for d in decisions if d["generated"] and d["reason"]] or [None]
    # Every gradient on ours, strided filters' input gradient by phases included.
    assert outs[0] != "_" and not aten_backward_calls(plan), plan
    assert decision is None, decision


def test_input_gradient_only():
    """Frozen weights: output_mask [True, False, False]; a stride-1 filter runs on ours."""
    x = channels_last(2, 8, 10, 10, requires_grad=True)
    w = torch.randn(16, 8, 3, 3).contiguous(memory_format=NHWC)
    fn = lambda x, w: F.conv2d(x, w, padding=1)
    check_gradients(fn, [x, w], channels_last(2, 16, 10, 10))
    (step,) = backward_steps(backward_graph().plan_text)
    assert step.startswith("%s") and ", _, _ = matrix::conv2d_backward(" in step, step


def test_strided_filter_input_gradient_alone():
    """Frozen weights, a 3×3 stride-2 filter: the input gradient alone, by phases on ours."""
    x = channels_last(2, 8, 11, 11, requires_grad=True)
    w = torch.randn(16, 8, 3, 3).contiguous(memory_format=NHWC)
    fn = lambda x, w: F.conv2d(x, w, stride=2, padding=1)
    check_gradients(fn, [x, w], channels_last(2, 16, 6, 6))
    plan = backward_graph().plan_text
    (step,) = backward_steps(plan)
    assert ", _, _ = matrix::conv2d_backward(" in step and "stride=[2,2]" in step, step
    assert not aten_backward_calls(plan), plan


def test_stem_weight_gradient_runs_on_ours():
    """A 3-channel 7×7/2 stem whose input needs no gradient (an image): its weight gradient
    alone, on ours (tiles by filter columns, conv_backward_weight.cpp)."""
    x = channels_last(2, 3, 40, 40)
    w = torch.randn(64, 3, 7, 7).contiguous(memory_format=NHWC).requires_grad_()
    fn = lambda x, w: F.conv2d(x, w, stride=2, padding=3)
    check_gradients(fn, [x, w], channels_last(2, 64, 20, 20))
    plan = backward_graph().plan_text
    (step,) = backward_steps(plan)
    assert step.startswith("_, %s") and ", _ = matrix::conv2d_backward(" in step, step
    assert not aten_backward_calls(plan), plan


def test_stem_input_gradient_stays_aten_and_says_why():
    x = channels_last(2, 3, 23, 23, requires_grad=True)
    w = torch.randn(16, 3, 7, 7).contiguous(memory_format=NHWC).requires_grad_()
    fn = lambda x, w: F.conv2d(x, w, stride=2, padding=3)
    check_gradients(fn, [x, w], channels_last(2, 16, 12, 12))
    assert_stays_aten_because("input gradient of fewer than 8 input channels")


def test_weight_gradient_in_the_weights_contiguous_layout():
    """A contiguous (OIHW) weight with a channels-last input: the weight gradient's layout is
    eager's (the library writes OHWI, the step copies)."""
    x = channels_last(2, 8, 10, 10, requires_grad=True)
    w = torch.randn(16, 8, 3, 3, requires_grad=True)
    fn = lambda x, w: F.conv2d(x, w, padding=1)
    check_gradients(fn, [x, w], channels_last(2, 16, 10, 10))
    assert backward_steps(backward_graph().plan_text)


class SmallResNet(nn.Module):
    """Stem, a basic block with identity, a downsampling block, pooled head: every kind of
    convolution backward resnet has (3×3 / 1×1, stride 1 / 2, with and without bias)."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 7, stride=2, padding=3, bias=False)
        self.bn0 = nn.BatchNorm2d(16)
        self.a1, self.a2 = nn.Conv2d(16, 16, 3, padding=1), nn.Conv2d(16, 16, 3, padding=1)
        self.b1 = nn.Conv2d(16, 32, 3, stride=2, padding=1, bias=False)
        self.b2 = nn.Conv2d(32, 32, 3, padding=1, bias=False)
        self.down = nn.Conv2d(16, 32, 1, stride=2, bias=False)
        self.bn1 = nn.BatchNorm2d(32)
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        x = F.relu(self.bn0(self.stem(x)))
        x = F.relu(x + self.a2(F.relu(self.a1(x))))
        x = F.relu(self.bn1(self.b2(F.relu(self.b1(x)))) + self.down(x))
        return self.head(x.mean((2, 3)))


def test_training_steps_match_eager_and_float64():
    """Three SGD steps of a channels-last model, compiled and eager, from the same weights:
    the first step's gradients against float64, the weights after each step against eager."""
    torch.manual_seed(1)
    model = SmallResNet().to(memory_format=NHWC)
    eager_model = SmallResNet().to(memory_format=NHWC)
    eager_model.load_state_dict(model.state_dict())
    reference = SmallResNet().double().to(memory_format=NHWC)
    reference.load_state_dict(model.state_dict())
    compiled = compile_cpp(model)
    x = channels_last(4, 3, 32, 32)
    target = torch.randint(0, 10, (4,))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    eager_opt = torch.optim.SGD(eager_model.parameters(), lr=0.05)
    F.cross_entropy(reference(x.double()), target).backward()
    for step in range(3):
        for m, o in ((compiled, opt), (eager_model, eager_opt)):
            o.zero_grad()
            F.cross_entropy(m(x), target).backward()
        if step == 0:
            for (name, p), e, r in zip(model.named_parameters(), eager_model.parameters(),
                                       reference.parameters()):
                ours = (p.grad.double() - r.grad).abs().max().item()
                eagers = (e.grad.double() - r.grad).abs().max().item()
                assert ours <= 4 * eagers + 1e-6, (name, ours, eagers)
        opt.step()
        eager_opt.step()
        for p, e in zip(model.parameters(), eager_model.parameters()):
            assert_same(p, e, rtol=1e-4, atol=1e-5)
    plan = backward_graph().plan_text
    # Every convolution, the 3-channel stem's weight gradient and b1's stride-2 input gradient
    # included.
    assert len(backward_steps(plan)) == 6, plan
    assert not aten_backward_calls(plan), plan


def test_nchw_training_stays_aten_and_says_why():
    x = torch.randn(2, 8, 10, 10, requires_grad=True)
    w = torch.randn(16, 8, 3, 3, requires_grad=True)
    fn = lambda x, w: F.conv2d(x, w, padding=1)
    ours = gradients(torch.compile(fn, backend="inductor_cpp", dynamic=False,
                                   options={"matrix_kernels": True, "layout_optimization": False}),
                     [x, w], torch.randn(2, 16, 10, 10))
    assert ours[0].is_contiguous()
    assert_stays_aten_because("output gradient is not channels-last")


def test_matrix_kernels_off_keeps_aten():
    x = channels_last(2, 8, 10, 10, requires_grad=True)
    w = torch.randn(16, 8, 3, 3).contiguous(memory_format=NHWC).requires_grad_()
    fn = lambda x, w: F.conv2d(x, w, padding=1)
    gradients(torch.compile(fn, backend="inductor_cpp", dynamic=False, options={"matrix_kernels": False}),
              [x, w], channels_last(2, 16, 10, 10))
    plan = backward_graph().plan_text
    assert not backward_steps(plan) and aten_backward_calls(plan)


def test_plan_round_trips_through_the_cache():
    x = channels_last(2, 8, 10, 10, requires_grad=True)
    w = torch.randn(16, 8, 3, 3).contiguous(memory_format=NHWC).requires_grad_()
    b = torch.randn(16, requires_grad=True)
    fn = lambda x, w, b: F.conv2d(x, w, b, stride=1, padding=1)
    grad_out = channels_last(2, 16, 10, 10)
    first = gradients(compile_cpp(fn), [x, w, b], grad_out)
    torch._dynamo.reset()
    second = gradients(compile_cpp(fn), [x, w, b], grad_out)  # plan.json read back
    outcomes = sorted(g.counters()["cache"] for g in test_graphs() if "conv2d_backward" in g.plan_text)
    assert outcomes == ["built", "hit"], outcomes
    for a, b_ in zip(first, second):
        assert torch.equal(a, b_)


def test_new_shapes_keep_working():
    """New input sizes (Dynamo's recompile with symbolic sizes, which our backend specializes
    per concrete shape, specialize.py): gradients stay right, and the specialized backward
    graphs run the convolution backward on our kernels."""
    w = torch.randn(16, 8, 3, 3).contiguous(memory_format=NHWC).requires_grad_()
    fn = lambda x, w: F.conv2d(x, w, padding=1)
    compiled = torch.compile(fn, backend="inductor_cpp", options={"matrix_kernels": True})
    for size in (10, 12, 14):
        x = channels_last(2, 8, size, size, requires_grad=True)
        grad_out = channels_last(2, 16, size, size)
        ours = gradients(compiled, [x, w], grad_out)
        for o, e in zip(ours, gradients(fn, [x, w], grad_out)):
            assert_same(o, e, rtol=1e-4, atol=1e-4)
    ours_graphs = [g for g in test_graphs() if backward_steps(g.plan_text)]
    assert len(ours_graphs) >= 2, [g.plan_text for g in test_graphs()]
