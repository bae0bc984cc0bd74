"""torchvision models through backend="inductor_cpp" with the default options (matrix kernels
on): inference against eager in both memory formats and at a second batch size (Dynamo's
second graph has a symbolic batch), and a training step whose every compiled graph is checked
against its own ATen graph run eagerly on the same inputs.

Why training is checked graph by graph: whole-model gradients against a float64 reference (as
tests/python/test_training.py does for small models) are not a sound test for deep ReLU +
BatchNorm nets. A pre-activation within float32 rounding of 0 takes the other side of the ReLU
in one float32 run and not in another, and BatchNorm over few samples amplifies it: resnet50's
first-step gradients, eager float32 in one memory format against eager float32 in the other,
differ by up to 4x their distance to float64 (`python -m inductor_cpp.bench zoo --train`). Given the same
inputs, a backward graph sees the forward's masks and statistics as inputs, so its outputs must
match eager's to rounding; the forward graph's outputs (activations, saved tensors, running
statistics) too.

CI runs mobilenet_v3_small (depthwise and grouped convolutions, Hardswish, squeeze-excitation)
and resnet18; the rest are marked slow (INDUCTOR_CPP_FULL=1, README).
"""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

import inductor_cpp
import inductor_cpp.dynamo_backend as dynamo_backend
from inductor_cpp.bench.zoo_models import build_zoo_model

from conftest import test_graphs

# Largest |ours - eager| / max|eager| allowed per output: float32 summation-order differences
# through ~50 layers reach 1e-4 (resnet50's last block, measured); a wrong kernel is O(1).
TOLERANCE = 1e-3

SLOW = pytest.mark.slow
MODELS = [
    "mobilenet_v3_small", "resnet18",
    pytest.param("resnet50", marks=SLOW), pytest.param("efficientnet_b0", marks=SLOW),
    pytest.param("densenet121", marks=SLOW), pytest.param("convnext_tiny", marks=SLOW),
    pytest.param("regnet_y_400mf", marks=SLOW), pytest.param("shufflenet_v2_x0_5", marks=SLOW),
    pytest.param("resnext50_32x4d", marks=SLOW), pytest.param("swin_t", marks=SLOW),
    pytest.param("vit_b_32", marks=SLOW), pytest.param("googlenet", marks=SLOW),
]


def relative_error(actual: torch.Tensor, expected: torch.Tensor) -> float:
    scale = expected.double().abs().max().item()
    return (actual.double() - expected.double()).abs().max().item() / max(scale, 1e-12)


@pytest.mark.parametrize("name", MODELS)
def test_inference_matches_eager(name):
    model = build_zoo_model(name, 64).eval()
    for channels_last in (False, True):
        m = model.to(memory_format=torch.channels_last) if channels_last else model
        compiled = torch.compile(m, backend="inductor_cpp")
        for batch in (2, 3):
            x = torch.randn(batch, 3, 64, 64)
            if channels_last:
                x = x.to(memory_format=torch.channels_last)
            with torch.inference_mode():
                error = relative_error(compiled(x), m(x))
            assert error < TOLERANCE, (channels_last, batch, error)
        torch._dynamo.reset()
    assert inductor_cpp.counters()["eager_graph_fallbacks"] == 0


@pytest.mark.parametrize("channels_last", [False, True], ids=["contiguous", "channels_last"])
@pytest.mark.parametrize("name", MODELS)
def test_training_graphs_match_their_aten_graphs(name, channels_last, monkeypatch):
    checked = []  # (graph kind, output node, relative error) of every float output

    def compile_and_check(gm, example_inputs, kind, opts):
        run = compile_graph(gm, example_inputs, kind, opts)
        output_nodes = list(gm.graph.nodes)[-1].args[0]

        def run_and_compare(args):
            expected = gm(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args])
            actual = run(args)
            pairs = [(str(node), e.double(), a.double()) for node, e, a in zip(output_nodes, expected, actual)
                     if isinstance(e, torch.Tensor) and e.is_floating_point() and e.numel()]
            # Some outputs are mathematically zero and hold only rounding noise (the gradient of
            # a BatchNorm bias whose output feeds another train-mode BatchNorm: ~1e-10 where
            # the other gradients are ~1e-2), so errors are measured against each output's
            # own scale or the graph's median output scale, whichever is larger.
            scales = [e.abs().max().item() for _, e, _ in pairs]
            floor = sorted(scales)[len(scales) // 2]
            for (node, e, a), scale in zip(pairs, scales):
                checked.append((kind, node, (a - e).abs().max().item() / max(scale, floor, 1e-12)))
            return actual

        run_and_compare._boxed_call = True
        return run_and_compare

    compile_graph = dynamo_backend.compile_aten_graph
    monkeypatch.setattr(dynamo_backend, "compile_aten_graph", compile_and_check)
    model = build_zoo_model(name, 96).train()
    x = torch.randn(4, 3, 96, 96)
    if channels_last:
        model, x = model.to(memory_format=torch.channels_last), x.to(memory_format=torch.channels_last)
    loss = nn.functional.cross_entropy(torch.compile(model, backend="inductor_cpp")(x),
                                       torch.randint(0, 10, (4,)))
    loss.backward()
    kinds = {kind for kind, _, _ in checked}
    assert {"forward", "backward"} <= kinds, kinds
    worst = max(checked, key=lambda c: c[2])
    assert worst[2] < TOLERANCE, worst
    assert all(p.grad is not None for p in model.parameters())
    assert inductor_cpp.counters()["eager_graph_fallbacks"] == 0
    # Our matrix kernels ran the convolutions / matmuls of the forward and of the backward.
    graphs = test_graphs()
    assert len(graphs) >= 2 and all(g.counters()["matrix_kernels"] > 0 for g in graphs), \
        [g.counters() for g in graphs]
