"""The channels-last pass (python/inductor_cpp/layout_opt.py): convolution inference graphs run
channels-last, results and output strides stay eager's, everything else is left alone."""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import inductor_cpp
from inductor_cpp import layout_opt
from inductor_cpp.dynamo_backend import observe_compiles

aten = torch.ops.aten


class Block(nn.Module):
    """conv-bn-relu twice with a residual add and a strided 1x1 shortcut: a resnet block."""

    def __init__(self, cin=4, cout=8):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=2, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = nn.Conv2d(cin, cout, 1, stride=2)
        for bn in (self.bn1, self.bn2):
            nn.init.uniform_(bn.weight, 0.5, 1.5)
            nn.init.uniform_(bn.bias, -0.5, 0.5)
            bn.running_mean.uniform_(-0.2, 0.2)
            bn.running_var.uniform_(0.5, 1.5)

    def forward(self, x):
        h = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(h)) + self.down(x))


def compile_and_run(fn, *args, **options):
    torch._dynamo.reset()
    with observe_compiles() as records, torch.no_grad():
        out = torch.compile(fn, backend="inductor_cpp", options=options or None)(*args)
    graphs = [r["gm"] for r in records]
    return out, graphs


def convs(gm):
    return [n for n in gm.graph.nodes if n.target is aten.convolution.default]


def is_channels_last(node):
    return node.meta["val"].is_contiguous(memory_format=torch.channels_last)


def layout_copies(gm):
    return [n for n in gm.graph.nodes if n.target is aten.clone.default
            and n.kwargs.get("memory_format") is not None]


def test_resnet_block_runs_channels_last_with_eager_results_and_strides():
    torch.manual_seed(0)
    model = Block().eval()
    x = torch.randn(2, 4, 10, 10)
    with torch.no_grad():
        expected = model(x)
    out, (gm,) = compile_and_run(model, x)
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)
    assert out.stride() == expected.stride()  # the NCHW output eager gives
    conv_nodes = convs(gm)
    assert len(conv_nodes) == 3
    for conv in conv_nodes:
        assert is_channels_last(conv.args[0]) and is_channels_last(conv.args[1])
        assert is_channels_last(conv)
    # The block's pointwise ops after the convolutions run channels-last too: the only layout
    # copies are the input, the two 3x3 weights (the 1x1 weight is both layouts) and the
    # output's copy back.
    copies = layout_copies(gm)
    assert [c.kwargs["memory_format"] for c in copies].count(torch.channels_last) == 3
    assert [c.kwargs["memory_format"] for c in copies].count(torch.contiguous_format) == 1
    assert inductor_cpp.counters()["eager_graph_fallbacks"] == 0


def test_option_off_keeps_the_graph():
    torch.manual_seed(0)
    model = Block().eval()
    x = torch.randn(2, 4, 10, 10)
    with torch.no_grad():
        expected = model(x)
    out, (gm,) = compile_and_run(model, x, layout_optimization=False)
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)
    assert not layout_copies(gm)
    assert not any(is_channels_last(c.args[0]) for c in convs(gm))


def test_channels_last_input_needs_no_input_copy_and_keeps_its_layout():
    torch.manual_seed(0)
    model = Block().eval()
    x = torch.randn(2, 4, 10, 10).contiguous(memory_format=torch.channels_last)
    with torch.no_grad():
        expected = model(x)
    out, (gm,) = compile_and_run(model, x)
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)
    assert out.stride() == expected.stride()
    assert not layout_copies(gm)  # input, weights seen as both, activations channels-last


def test_every_returned_activation_gets_eager_strides():
    torch.manual_seed(0)
    conv = nn.Conv2d(3, 6, 3, padding=1).eval()

    def fn(x):
        y = conv(x)
        return y, torch.sigmoid(y), y.sum(dim=(2, 3))

    x = torch.randn(2, 3, 7, 5)
    with torch.no_grad():
        expected = fn(x)
    out, (gm,) = compile_and_run(fn, x)
    for o, e in zip(out, expected):
        torch.testing.assert_close(o, e, rtol=1e-5, atol=1e-5)
        assert o.stride() == e.stride()
    assert is_channels_last(convs(gm)[0])  # the graph was rewritten ...
    back = [c for c in layout_copies(gm) if c.kwargs["memory_format"] is torch.contiguous_format]
    assert len(back) == 2  # ... and both 4-D outputs are copied back to NCHW


def test_an_output_layout_a_copy_cannot_restore_leaves_the_graph_alone():
    torch.manual_seed(0)
    conv = nn.Conv2d(3, 6, 3, padding=1).eval()

    def fn(x):
        y = conv(x)
        return y.permute(0, 2, 3, 1)  # a view eager returns with NCHW-derived strides

    x = torch.randn(2, 3, 7, 5)
    with torch.no_grad():
        expected = fn(x)
    out, (gm,) = compile_and_run(fn, x)
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)
    assert out.stride() == expected.stride()
    assert not layout_copies(gm)


@pytest.mark.parametrize("layout_optimization", [True, False])
def test_training_keeps_saved_activations_channels_last(layout_optimization):
    """Forward: convolutions channels-last, the activations saved for the backward left so
    (their strides reported to AOT autograd); backward: its inputs taken in that layout, its
    convolution_backward operands channels-last. Loss, parameter and input gradients match a
    float64 reference and keep eager's strides (test_gpu_library.py trains through it on the
    GPU)."""
    assert "cpu" in layout_opt.TRAINING_DEVICES
    torch.manual_seed(0)
    model = Block().train()
    reference = Block().train().double()
    reference.load_state_dict(model.state_dict())
    x = torch.randn(2, 4, 10, 10, requires_grad=True)
    x64 = x.detach().double().requires_grad_()
    torch._dynamo.reset()
    with observe_compiles() as records:
        out = torch.compile(model, backend="inductor_cpp",
                            options={"layout_optimization": layout_optimization})(x)
        out.square().sum().backward()
    expected = reference(x64)
    expected.square().sum().backward()
    torch.testing.assert_close(out, expected.float(), rtol=1e-4, atol=1e-4)
    assert out.stride() == expected.stride()
    for p, q in zip([x, *model.parameters()], [x64, *reference.parameters()]):
        torch.testing.assert_close(p.grad, q.grad.float(), rtol=1e-4, atol=1e-4)
        assert p.grad.stride() == q.grad.stride()
    by_kind = {r["kind"]: r["gm"] for r in records}
    assert set(by_kind) == {"forward", "backward"}
    forward, backward = by_kind["forward"], by_kind["backward"]
    backward_convs = [n for n in backward.graph.nodes if n.target is aten.convolution_backward.default]
    assert len(convs(forward)) == 3 and len(backward_convs) == 3
    if not layout_optimization:
        assert not layout_copies(forward) and not layout_copies(backward)
        return
    assert all(is_channels_last(c.args[0]) for c in convs(forward))
    assert all(is_channels_last(c.args[0]) and is_channels_last(c.args[1]) for c in backward_convs)
    # The saved activations arrive channels-last: the backward copies filters, the incoming
    # gradient (eager's layout, as the caller's output had) and gives the gradients back their
    # layout, but converts no activation it was handed.
    saved = [n for n in backward.graph.nodes if n.op == "placeholder"
             and not n.name.startswith(("tangents", "primals")) and n.meta["val"].dim() == 4]
    converted = {c.args[0] for c in layout_copies(backward)}
    assert saved and not any(p in converted for p in saved)
    assert any(is_channels_last(p) and not p.meta["val"].is_contiguous() for p in saved)


def test_dynamic_shapes_stay_correct():
    torch.manual_seed(0)
    model = Block().eval()
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="inductor_cpp", dynamic=True)
    with torch.no_grad():
        for size in (10, 12, 9):
            x = torch.randn(2, 4, size, size)
            out = compiled(x)
            expected = model(x)
            torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)
            assert out.stride() == expected.stride()


@pytest.mark.parametrize("groups", [1, 2])
def test_grouped_and_depthwise_convolutions(groups):
    torch.manual_seed(0)
    conv = nn.Conv2d(4, 4, 3, padding=1, groups=groups).eval()
    x = torch.randn(1, 4, 6, 6)
    with torch.no_grad():
        expected = F.relu(conv(x))
    out, _ = compile_and_run(lambda t: F.relu(conv(t)), x)
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)
    assert out.stride() == expected.stride()
