"""CUDA graphs (`mode="reduce-overhead"`, option `cudagraphs`; python/inductor_cpp/cuda_graphs.py):
replays match eager, an output held across calls keeps its values, inputs that change are
copied in while parameters are read in place, new shapes record again up to the limit, training
forward and backward graphs are recorded (batch-norm statistics written in place), an input the
graph writes is written back, and a graph with a CPU tensor runs as plain launches with the
reason logged.

The option tests run everywhere; the rest need a CUDA device (scripts/gpu.sh runs them)."""

from __future__ import annotations

import copy

import pytest
import torch

import inductor_cpp
from conftest import collect_logs
from inductor_cpp import options as options_mod

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
DEV = "cuda"


def stats() -> dict:
    c = inductor_cpp.counters()
    return {k: v for k, v in c.items() if k.startswith("cudagraph")}


def test_reduce_overhead_turns_cuda_graphs_on_and_the_option_wins():
    assert options_mod.resolve("reduce-overhead").cudagraphs is True
    assert options_mod.resolve(None).cudagraphs is False
    assert options_mod.resolve("default", {"cudagraphs": True}).cudagraphs is True
    assert options_mod.resolve("reduce-overhead", {"cudagraphs": False}).cudagraphs is False
    assert options_mod.resolve("reduce-overhead", {"cudagraph_records": 2}).cudagraph_records == 2
    with pytest.raises(inductor_cpp.OptionError, match="cudagraph_records"):
        options_mod.resolve("reduce-overhead", {"cudagraph_records": 0})
    with pytest.raises(inductor_cpp.OptionError, match="cudagraphs"):
        options_mod.resolve(None, {"cudagraphs": "yes"})


def test_cpu_graph_under_reduce_overhead_runs_plainly_and_says_why():
    inductor_cpp.set_logs("cudagraphs")
    try:
        with collect_logs() as messages:
            f = torch.compile(lambda x: x.cos() * 2, backend="inductor_cpp", mode="reduce-overhead")
            x = torch.randn(8)
            torch.testing.assert_close(f(x), x.cos() * 2)
    finally:
        inductor_cpp.set_logs("")
    assert any("not using CUDA graphs: the graph runs on the CPU" in m for m in messages), messages


class MLP(torch.nn.Module):
    def __init__(self, width=64):
        super().__init__()
        self.a = torch.nn.Linear(width, width)
        self.norm = torch.nn.LayerNorm(width)
        self.b = torch.nn.Linear(width, 10)

    def forward(self, x):
        return self.b(torch.nn.functional.gelu(self.norm(self.a(x))))


@needs_cuda
def test_replays_match_eager_and_copy_only_the_changing_input():
    torch.manual_seed(0)
    model = MLP().to(DEV).eval()
    f = torch.compile(model, backend="inductor_cpp", mode="reduce-overhead")
    inductor_cpp.reset_counters()
    with torch.no_grad():
        for _ in range(6):
            x = torch.randn(16, 64, device=DEV)
            torch.testing.assert_close(f(x), model(x))
    s = stats()
    assert s["cudagraph_records"] == 1 and s["cudagraph_replays"] == 5, s
    assert s["cudagraph_plain_calls"] == 1, s  # the warm-up


@needs_cuda
def test_an_output_held_across_two_calls_keeps_its_values():
    torch.manual_seed(0)
    model = MLP().to(DEV).eval()
    f = torch.compile(model, backend="inductor_cpp", mode="reduce-overhead")
    with torch.no_grad():
        f(torch.randn(4, 64, device=DEV))  # warm-up
        x1, x2, x3 = (torch.randn(4, 64, device=DEV) for _ in range(3))
        held = f(x1)
        second = f(x2)  # the first recording's output is held: another recording runs
        third = f(x3)
        torch.testing.assert_close(held, model(x1))
        torch.testing.assert_close(second, model(x2))
        torch.testing.assert_close(third, model(x3))
        assert len({held.data_ptr(), second.data_ptr(), third.data_ptr()}) == 3
        del held, second, third
        before = stats()["cudagraph_records"]
        for _ in range(3):  # nothing held between calls: the recordings are replayed
            x = torch.randn(4, 64, device=DEV)
            torch.testing.assert_close(f(x), model(x))
        assert stats()["cudagraph_records"] == before


@needs_cuda
def test_past_the_record_limit_calls_run_plainly_and_stay_correct():
    torch.manual_seed(0)
    model = MLP().to(DEV).eval()
    f = torch.compile(model, backend="inductor_cpp",  # (torch takes a mode or options)
                      options={"cudagraphs": True, "cudagraph_records": 2})
    inductor_cpp.reset_counters()
    with torch.no_grad(), collect_logs() as messages:
        xs = [torch.randn(4, 64, device=DEV) for _ in range(5)]
        outs = [f(x) for x in xs]  # every output held: each call needs a free recording
        for x, out in zip(xs, outs):
            torch.testing.assert_close(out, model(x))
    assert stats()["cudagraph_records"] == 2, stats()
    assert any("2 CUDA graphs recorded" in m for m in messages), messages


@needs_cuda
def test_a_new_shape_is_recorded_again():
    torch.manual_seed(0)
    model = MLP().to(DEV).eval()
    f = torch.compile(model, backend="inductor_cpp", mode="reduce-overhead", dynamic=False)
    with torch.no_grad():
        for rows in (4, 4, 4, 9, 9, 9, 4):
            x = torch.randn(rows, 64, device=DEV)
            torch.testing.assert_close(f(x), model(x))


@needs_cuda
def test_a_graph_with_a_cpu_tensor_is_skipped_with_its_reason():
    def f(x, scale):
        return (x * 2).sum() + scale

    g = torch.compile(f, backend="inductor_cpp", mode="reduce-overhead")
    with collect_logs() as messages:
        for _ in range(3):
            x = torch.randn(32, device=DEV)
            scale = torch.tensor(3.0)  # a CPU scalar tensor input
            torch.testing.assert_close(g(x, scale), f(x, scale))
    assert any("not using CUDA graphs" in m and "CPU tensor" in m for m in messages), messages


@needs_cuda
def test_a_graph_that_writes_its_input_writes_the_callers_tensor_on_replay():
    def f(x):
        x.add_(1)
        return x * 2

    g = torch.compile(f, backend="inductor_cpp", mode="reduce-overhead")
    inductor_cpp.reset_counters()
    for _ in range(4):
        x = torch.randn(32, device=DEV)
        x_expected = x.clone()
        expected = f(x_expected)
        torch.testing.assert_close(g(x), expected)
        torch.testing.assert_close(x, x_expected)  # copied in, written, copied back
    s = stats()
    assert s["cudagraph_records"] == 1 and s["cudagraph_replays"] == 3, s


@needs_cuda
@pytest.mark.parametrize("batch_norm", [False, True])
def test_training_steps_under_cuda_graphs_match_eager(batch_norm):
    torch.manual_seed(0)
    layers = [torch.nn.Linear(32, 64)]
    if batch_norm:
        layers.append(torch.nn.BatchNorm1d(64))
    layers += [torch.nn.ReLU(), torch.nn.Linear(64, 4)]
    model = torch.nn.Sequential(*layers).to(DEV)
    reference = copy.deepcopy(model)
    f = torch.compile(model, backend="inductor_cpp", mode="reduce-overhead")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1)
    inductor_cpp.reset_counters()
    for _ in range(6):
        x = torch.randn(16, 32, device=DEV)
        loss = f(x).square().mean()
        loss.backward()
        ref_loss = reference(x).square().mean()
        ref_loss.backward()
        torch.testing.assert_close(loss, ref_loss, rtol=1e-4, atol=1e-5)
        for p, q in zip(model.parameters(), reference.parameters()):
            torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5)
        opt.step()
        ref_opt.step()
        opt.zero_grad()
        ref_opt.zero_grad()
    if batch_norm:
        torch.testing.assert_close(model[1].running_mean, reference[1].running_mean)
    s = stats()
    assert s["cudagraph_records"] >= 2 and s["cudagraph_replays"] >= 4, s


@needs_cuda
def test_gradients_accumulate_across_replays_without_zero_grad():
    torch.manual_seed(0)
    model = torch.nn.Linear(16, 8).to(DEV)
    reference = copy.deepcopy(model)
    f = torch.compile(model, backend="inductor_cpp", mode="reduce-overhead")
    for _ in range(5):  # .grad holds a replay's output: later replays must not overwrite it
        x = torch.randn(4, 16, device=DEV)
        f(x).sum().backward()
        reference(x).sum().backward()
    torch.testing.assert_close(model.weight.grad, reference.weight.grad)
    torch.testing.assert_close(model.bias.grad, reference.bias.grad)


@needs_cuda
def test_reset_frees_the_recordings():
    model = MLP().to(DEV).eval()
    f = torch.compile(model, backend="inductor_cpp", mode="reduce-overhead")
    with torch.no_grad():
        for _ in range(3):
            f(torch.randn(256, 64, device=DEV))
    torch.cuda.synchronize()
    before = torch.cuda.memory_reserved()
    torch.compiler.reset()
    import gc

    gc.collect()
    torch.cuda.empty_cache()
    assert torch.cuda.memory_reserved() < before


@needs_cuda
def test_a_view_of_an_earlier_graphs_output_does_not_pin_that_graphs_recording():
    torch.manual_seed(0)
    lin = torch.nn.Linear(32, 32).to(DEV)

    def f(x):
        h = lin(x).relu()
        torch._dynamo.graph_break()
        return h.t().sin(), h.t()  # the second graph returns a view of its input

    g = torch.compile(f, backend="inductor_cpp", mode="reduce-overhead")
    inductor_cpp.reset_counters()
    with torch.no_grad():
        for _ in range(8):
            x = torch.randn(8, 32, device=DEV)
            got = g(x)
            expected = f(x)
            for a, b in zip(got, expected):
                torch.testing.assert_close(a, b)
            del got
    s = stats()
    assert s["cudagraph_records"] <= 4 and s["cudagraph_replays"] >= 10, s
