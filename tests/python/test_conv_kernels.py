"""With options={"matrix_kernels": True}, float32 CPU 2-D convolutions (groups 1) whose input
and output are channels-last run on our NHWC direct convolution (conv2d plan steps,
runtime/conv_step.h), the conv's bias and a following activation / residual add in its
epilogue, the packed weight cached while it does not change. NCHW convolutions, other dtypes
and groups > 1 stay ATen calls; the option is off by default. Results are compared with eager
F.conv2d and with a float64 reference (our error must be of the order of eager's)."""

from __future__ import annotations

import json
import re

import pytest
import torch
import torch.nn.functional as F

import inductor_cpp
from conftest import assert_same, test_graphs

RTOL, ATOL = 1e-4, 1e-5
NHWC = torch.channels_last


def compile_cpp(fn, **options):
    return torch.compile(fn, backend="inductor_cpp", dynamic=False,
                         options={"matrix_kernels": True, **options})


def channels_last(*sizes):
    return torch.randn(*sizes).contiguous(memory_format=NHWC)


def conv_steps(plan_text: str) -> list[str]:
    return [line.strip() for line in plan_text.splitlines() if "matrix::conv2d" in line]


def the_graph():
    graphs = test_graphs()
    assert len(graphs) == 1, f"expected one graph, got {len(graphs)}"
    return graphs[0]


def check_against_references(actual, fn, *args):
    """actual vs eager (same strides, GEMM tolerance) and vs float64: our error is at most a
    few times eager's (both sum K products in float32)."""
    expected = fn(*args)
    assert actual.stride() == expected.stride(), (actual.stride(), expected.stride())
    assert_same(actual, expected, rtol=RTOL, atol=ATOL)
    reference = fn(*(a.double() if isinstance(a, torch.Tensor) else a for a in args))
    ours = (actual.double() - reference).abs().max().item()
    eagers = (expected.double() - reference).abs().max().item()
    assert ours <= 4 * eagers + 1e-6, (ours, eagers)


# (in channels, out channels, spatial size, kernel, stride, padding): resnet's convolutions,
# scaled down; out channels not a multiple of the 32-column panel, widths not of 14-row tiles.
GEOMETRIES = {
    "stem7x7s2": (3, 16, 23, 7, 2, 3),
    "3x3s1": (16, 40, 15, 3, 1, 1),
    "3x3s2": (16, 40, 17, 3, 2, 1),
    "1x1s1": (24, 72, 11, 1, 1, 0),
    "1x1s2": (24, 40, 13, 1, 2, 0),
}


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=list(GEOMETRIES))
@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
def test_resnet_geometries(geometry, batch, bias):
    c, oc, hw, k, stride, padding = GEOMETRIES[geometry]
    x, w = channels_last(batch, c, hw, hw), torch.randn(oc, c, k, k)
    b = torch.randn(oc) if bias else None
    fn = lambda x, w, b: F.conv2d(x, w, b, stride=stride, padding=padding)
    with torch.no_grad():
        check_against_references(compile_cpp(fn)(x, w, b), fn, x, w, b)
    graph = the_graph()
    (step,) = conv_steps(graph.plan_text)
    assert f"stride=[{stride},{stride}], padding=[{padding},{padding}]" in step, step
    assert ("-> bias_col(" in step) == bias, step
    c = graph.counters()
    assert c["matrix_kernels"] == 1 and c["aten_calls"] == 0 and c["kernels"] == 0, c
    assert c["ops_fallback"] == 0, c


def test_large_input_row_blocks_and_padding():
    """Output rows in several cache blocks per image (uneven last one), each with its own
    zero-padded copy of the input rows it reads (matrix/conv.cpp)."""
    x, w, b = channels_last(2, 64, 90, 90), torch.randn(48, 64, 3, 3), torch.randn(48)
    r = channels_last(2, 48, 90, 90)
    fn = lambda x, w, b, r: F.relu(F.conv2d(x, w, b, padding=1) + r)
    with torch.no_grad():
        check_against_references(compile_cpp(fn)(x, w, b, r), fn, x, w, b, r)
    assert "-> residual(" in conv_steps(the_graph().plan_text)[0]


def test_dilation():
    x, w = channels_last(2, 8, 19, 19), torch.randn(24, 8, 3, 3)
    fn = lambda x, w: F.conv2d(x, w, padding=2, dilation=2)
    with torch.no_grad():
        check_against_references(compile_cpp(fn)(x, w), fn, x, w)
    assert "dilation=[2,2]" in conv_steps(the_graph().plan_text)[0]


@pytest.mark.parametrize("act, kind", [(F.relu, "relu"), (F.hardtanh, "clamp(-1, 1)"),
                                       (lambda t: t.clamp(min=0.0, max=6.0), "clamp(0, 6)"),
                                       (F.silu, "silu"), (torch.sigmoid, "sigmoid"),
                                       (lambda t: t * 0.5, "scale(0.5)")])
def test_activation_is_absorbed(act, kind):
    x, w, b = channels_last(2, 16, 12, 12), torch.randn(32, 16, 3, 3), torch.randn(32)
    fn = lambda x, w, b: act(F.conv2d(x, w, b, padding=1))
    with torch.no_grad():
        check_against_references(compile_cpp(fn)(x, w, b), fn, x, w, b)
    graph = the_graph()
    (step,) = conv_steps(graph.plan_text)
    assert step.split(" free ")[0].rstrip().endswith(f"-> bias_col(%s2) -> {kind}"), step
    c = graph.counters()
    assert c["kernels"] == 0 and c["aten_calls"] == 0 and c["ops_fallback"] == 0, c


def test_residual_add_and_relu_are_absorbed():
    """resnet's block end: relu(conv(x) + b + identity), one fused kernel of two nodes."""
    x, w, b = channels_last(3, 16, 10, 10), torch.randn(16, 16, 3, 3), torch.randn(16)
    r = channels_last(3, 16, 10, 10)
    fn = lambda x, w, b, r: F.relu(F.conv2d(x, w, b, padding=1) + r)
    with torch.no_grad():
        check_against_references(compile_cpp(fn)(x, w, b, r), fn, x, w, b, r)
    graph = the_graph()
    (step,) = conv_steps(graph.plan_text)
    assert "-> bias_col(%s2) -> residual(%s3) -> relu" in step, step
    assert graph.counters()["kernels"] == 0, graph.plan_text


def test_residual_from_another_conv_is_absorbed_only_when_ready():
    """relu(conv_a(x) + conv_b(x)): the add goes into the later conv's epilogue (the other
    conv's output must exist when it runs)."""
    x = channels_last(1, 8, 9, 9)
    wa, wb = torch.randn(16, 8, 3, 3), torch.randn(16, 8, 1, 1)
    fn = lambda x, wa, wb: F.relu(F.conv2d(x, wa, padding=1) + F.conv2d(x, wb))
    with torch.no_grad():
        check_against_references(compile_cpp(fn)(x, wa, wb), fn, x, wa, wb)
    graph = the_graph()
    steps = conv_steps(graph.plan_text)
    assert len(steps) == 2 and graph.counters()["kernels"] == 0, graph.plan_text
    assert "-> residual(" in steps[1] and "-> residual(" not in steps[0], graph.plan_text


def test_conv_output_with_a_second_reader_is_not_absorbed():
    x, w = channels_last(1, 8, 9, 9), torch.randn(16, 8, 3, 3)

    def fn(x, w):
        y = F.conv2d(x, w, padding=1)
        return F.relu(y), y.sum()

    with torch.no_grad():
        out = compile_cpp(fn)(x, w)
        expected = fn(x, w)
    for a, e in zip(out, expected):
        assert_same(a, e, rtol=RTOL, atol=1e-4)
    graph = the_graph()
    (step,) = conv_steps(graph.plan_text)
    assert "-> relu" not in step and graph.counters()["kernels"] >= 1, graph.plan_text


def test_weight_updated_in_place_is_repacked():
    x, w = channels_last(2, 8, 11, 11), torch.randn(16, 8, 3, 3)
    fn = lambda x, w: F.conv2d(x, w, padding=1)
    compiled = compile_cpp(fn)
    with torch.no_grad():
        for _ in range(3):  # the second call caches the packed weight, the third reuses it
            assert_same(compiled(x, w), fn(x, w), rtol=RTOL, atol=ATOL)
        w.add_(1)  # bumps the version counter: repacked
        assert_same(compiled(x, w), fn(x, w), rtol=RTOL, atol=ATOL)
        assert_same(compiled(x, w), fn(x, w), rtol=RTOL, atol=ATOL)
        w.mul_(-0.5)
        assert_same(compiled(x, w), fn(x, w), rtol=RTOL, atol=ATOL)


def weight_cache_counts() -> tuple[int, int]:
    c = the_graph().counters()
    return c["weight_packs"], c["weight_stale_drops"]


def test_cached_weight_sees_writes_that_bypass_the_version_counter():
    """`.data` and numpy writes leave the version counter alone; the packed copy's content
    fingerprint (runtime/weight_fingerprint.h) catches them. The counters prove the cache is in
    use (one pack for three calls)."""
    x, w = channels_last(2, 8, 11, 11), torch.randn(16, 8, 3, 3)
    fn = lambda x, w: F.conv2d(x, w, padding=1)
    compiled = compile_cpp(fn)
    with torch.no_grad():
        for _ in range(3):
            assert_same(compiled(x, w), fn(x, w), rtol=RTOL, atol=ATOL)
        assert weight_cache_counts() == (1, 0)
        w.data.add_(1)
        assert_same(compiled(x, w), fn(x, w), rtol=RTOL, atol=ATOL)
        w.numpy()[15, 7, 2, 2] = 5.0  # a single float, the last one
        assert_same(compiled(x, w), fn(x, w), rtol=RTOL, atol=ATOL)
        assert_same(compiled(x, w), fn(x, w), rtol=RTOL, atol=ATOL)
    assert weight_cache_counts() == (3, 2)


def test_weight_behind_a_layout_copy_is_read_in_place():
    """The channels-last FX pass copies each weight to channels-last before its convolution;
    the conv step packs the source instead (the copy is dropped), so the packed weight is
    cached across calls."""
    x, w = channels_last(2, 8, 11, 11), torch.randn(16, 8, 3, 3)
    fn = lambda x, w: F.conv2d(x, w.contiguous(memory_format=NHWC), padding=1)
    compiled = compile_cpp(fn, layout_optimization=False)
    with torch.no_grad():
        for _ in range(3):
            out = compiled(x, w)
        check_against_references(out, fn, x, w)
        assert weight_cache_counts() == (1, 0)
    graph = the_graph()
    assert graph.counters()["kernels"] == 0, graph.plan_text
    step = conv_steps(graph.plan_text)[0]  # reads both graph inputs (%s0, %s1) directly
    assert re.match(r"%s2 = matrix::conv2d\(%s[01], %s[01],", step), graph.plan_text


def test_weight_copy_taken_before_the_graph_writes_the_weight_is_kept():
    x, w = channels_last(2, 8, 11, 11), torch.randn(16, 8, 3, 3)

    def fn(x, w):
        before = w.contiguous(memory_format=NHWC)
        w.add_(1)
        return F.conv2d(x, before, padding=1)

    with torch.no_grad():
        expected = fn(x, w.clone())
        actual = compile_cpp(fn, layout_optimization=False)(x, w)
    assert_same(actual, expected, rtol=RTOL, atol=ATOL)
    assert conv_steps(the_graph().plan_text), the_graph().plan_text


def decision_reasons(graph) -> list[str]:
    return [d["reason"] for d in json.loads(graph.debug_info()["decisions"]) if not d["generated"]]


def test_nchw_input_stays_aten_and_says_why():
    x, w = torch.randn(2, 8, 11, 11), torch.randn(16, 8, 3, 3)
    fn = lambda x, w: F.conv2d(x, w, padding=1)
    with torch.no_grad():
        assert_same(compile_cpp(fn, layout_optimization=False)(x, w), fn(x, w), rtol=RTOL, atol=ATOL)
    graph = the_graph()
    assert not conv_steps(graph.plan_text) and "aten::convolution" in graph.plan_text
    assert graph.counters()["aten_calls"] == 1 and graph.counters()["matrix_kernels"] == 0
    (reason,) = decision_reasons(graph)
    assert "matrix kernels: input is not channels-last" in reason, reason


def test_groups_stay_aten():
    x, w = channels_last(2, 8, 11, 11), torch.randn(16, 4, 3, 3)
    fn = lambda x, w: F.conv2d(x, w, padding=1, groups=2)
    with torch.no_grad():
        assert_same(compile_cpp(fn)(x, w), fn(x, w), rtol=RTOL, atol=ATOL)
    graph = the_graph()
    assert not conv_steps(graph.plan_text)
    (reason,) = decision_reasons(graph)
    assert "groups != 1" in reason, reason


def test_float64_stays_aten():
    x, w = channels_last(2, 8, 11, 11).double(), torch.randn(16, 8, 3, 3).double()
    fn = lambda x, w: F.relu(F.conv2d(x, w, padding=1))
    with torch.no_grad():
        assert_same(compile_cpp(fn)(x, w), fn(x, w))
    assert not conv_steps(the_graph().plan_text)


def test_matrix_kernels_are_on_by_default():
    x, w = channels_last(2, 8, 11, 11), torch.randn(16, 8, 3, 3)
    fn = lambda x, w: F.conv2d(x, w, padding=1)
    with torch.no_grad():
        assert_same(torch.compile(fn, backend="inductor_cpp")(x, w), fn(x, w), rtol=RTOL, atol=ATOL)
    graph = the_graph()
    assert conv_steps(graph.plan_text) and "aten::convolution" not in graph.plan_text, graph.plan_text


def test_matrix_kernels_off_leaves_convolutions_to_aten():
    x, w = channels_last(2, 8, 11, 11), torch.randn(16, 8, 3, 3)
    fn = lambda x, w: F.conv2d(x, w, padding=1)
    with torch.no_grad():
        compiled = torch.compile(fn, backend="inductor_cpp", options={"matrix_kernels": False})
        assert_same(compiled(x, w), fn(x, w), rtol=RTOL, atol=ATOL)
    graph = the_graph()
    assert not conv_steps(graph.plan_text) and "aten::convolution" in graph.plan_text
    assert graph.counters()["aten_calls"] == 1


def test_plan_round_trips_through_the_cache():
    x, w, b = channels_last(1, 8, 11, 11), torch.randn(16, 8, 3, 3), torch.randn(16)
    fn = lambda x, w, b: F.relu(F.conv2d(x, w, b, stride=2, padding=1, dilation=1))
    with torch.no_grad():
        compile_cpp(fn)(x, w, b)
        torch._dynamo.reset()
        actual = compile_cpp(fn)(x, w, b)  # plan.json read back from the cache entry
    check_against_references(actual, fn, x, w, b)
    assert test_graphs()[-1].counters()["cache"] == "hit"
    assert all("stride=[2,2], padding=[1,1]" in g.plan_text and "-> relu" in g.plan_text
               for g in test_graphs())


def test_resnet_block_module_through_the_layout_pass():
    """A module on an NCHW input: the channels-last pass makes its convolutions NHWC, they run
    on our kernel, and the caller gets eager's (NCHW) strides back."""
    torch.manual_seed(3)
    conv1 = torch.nn.Conv2d(16, 16, 3, padding=1)
    conv2 = torch.nn.Conv2d(16, 16, 3, padding=1)
    block = lambda x: F.relu(conv2(F.relu(conv1(x))) + x)
    x = torch.randn(2, 16, 12, 12)
    with torch.no_grad():
        compiled = compile_cpp(block)
        for _ in range(3):
            out = compiled(x)
        expected = block(x)
    assert out.stride() == expected.stride()
    assert_same(out, expected, rtol=RTOL, atol=ATOL)
    graph = the_graph()
    assert len(conv_steps(graph.plan_text)) == 2, graph.plan_text
    assert graph.counters()["aten_calls"] == 0, graph.plan_text


def test_explain_does_not_count_matrix_steps_as_aten_calls():
    x, w = channels_last(1, 8, 9, 9), torch.randn(16, 8, 3, 3)
    fn = lambda x, w: F.relu(F.conv2d(x, w, padding=1))
    with torch.no_grad():
        report = inductor_cpp.explain(fn, options={"matrix_kernels": True})(x, w)
    (g,) = [g for g in report.graphs if g.eager_reason is None]
    assert g.aten_calls == 0 and not g.fallbacks, g


# Eval BatchNorm after a convolution (ir/passes/absorb_epilogues.h): absorbed into the conv2d
# step's epilogue as one per-channel scale and shift, x·s[c] + t[c], s and t computed on every
# call by a small kernel over the channels (ir/passes/column_affine.h).


def random_batch_norm(channels: int, affine: bool = True) -> torch.nn.BatchNorm2d:
    bn = torch.nn.BatchNorm2d(channels, affine=affine).eval()
    with torch.no_grad():
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.25, 4)
        if affine:
            bn.weight.uniform_(-2, 2)
            bn.bias.uniform_(-1, 1)
    return bn


def batch_norm_fn(bn):
    """Eval batch norm as a function (in y's dtype, for the float64 reference)."""
    cast = lambda t: None if t is None else t.to(y_dtype[0])
    y_dtype = [torch.float32]

    def fn(y):
        y_dtype[0] = y.dtype
        return F.batch_norm(y, cast(bn.running_mean), cast(bn.running_var), cast(bn.weight),
                            cast(bn.bias), False, 0.0, bn.eps)

    return fn


def assert_all_absorbed(graph, convs: int):
    steps = conv_steps(graph.plan_text)
    assert len(steps) == convs, graph.plan_text
    assert all("-> scale_col(" in s for s in steps), graph.plan_text
    c = graph.counters()
    # One kernel per batch norm: its scale and shift over the channels.
    assert c["matrix_kernels"] == convs and c["kernels"] == convs, (c, graph.plan_text)
    assert c["aten_calls"] == 0 and c["ops_fallback"] == 0, (c, graph.plan_text)
    return steps


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
@pytest.mark.parametrize("geometry", ["3x3s2", "1x1s1", "stem7x7s2"])
def test_batch_norm_and_relu_are_absorbed(geometry, bias):
    c, oc, hw, k, stride, padding = GEOMETRIES[geometry]
    x, w = channels_last(2, c, hw, hw), torch.randn(oc, c, k, k)
    b = torch.randn(oc) if bias else None
    bn = batch_norm_fn(random_batch_norm(oc))
    fn = lambda x, w, b: F.relu(bn(F.conv2d(x, w, b, stride=stride, padding=padding)))
    with torch.no_grad():
        check_against_references(compile_cpp(fn)(x, w, b), fn, x, w, b)
    (step,) = assert_all_absorbed(the_graph(), 1)
    epilogue = step.split(")", 1)[1].split(" free ")[0].strip()
    # The convolution's bias folds into the batch norm's shift.
    assert re.fullmatch(r"-> scale_col\(%s\d+\) -> bias_col\(%s\d+\) -> relu", epilogue), step


def test_batch_norm_without_affine_parameters():
    x, w = channels_last(2, 16, 9, 9), torch.randn(24, 16, 3, 3)
    bn = batch_norm_fn(random_batch_norm(24, affine=False))
    fn = lambda x, w: bn(F.conv2d(x, w, padding=1))
    with torch.no_grad():
        check_against_references(compile_cpp(fn)(x, w), fn, x, w)
    (step,) = assert_all_absorbed(the_graph(), 1)
    assert re.search(r"-> scale_col\(%s\d+\) -> bias_col\(%s\d+\)", step), step


def test_batch_norm_residual_and_relu_are_absorbed():
    """resnet's block end: relu(bn(conv(x)) + identity)."""
    x, w, r = channels_last(2, 16, 10, 10), torch.randn(16, 16, 3, 3), channels_last(2, 16, 10, 10)
    bn = batch_norm_fn(random_batch_norm(16))
    fn = lambda x, w, r: F.relu(bn(F.conv2d(x, w, padding=1)) + r)
    with torch.no_grad():
        check_against_references(compile_cpp(fn)(x, w, r), fn, x, w, r)
    (step,) = assert_all_absorbed(the_graph(), 1)
    assert re.search(r"-> scale_col\([^)]*\) -> bias_col\([^)]*\) -> residual\(%s\d+\) -> relu", step), step


def test_batch_norm_parameters_are_read_on_every_call():
    """Running statistics and affine parameters change between calls (in place, as a training
    step would): the scale and shift are recomputed per call, never cached."""
    model = torch.nn.Sequential(torch.nn.Conv2d(8, 16, 3, padding=1, bias=False),
                                random_batch_norm(16), torch.nn.ReLU()).eval()
    x = channels_last(2, 8, 9, 9)
    compiled = compile_cpp(model)
    bn = model[1]
    with torch.no_grad():
        for step in range(4):
            assert_same(compiled(x), model(x), rtol=RTOL, atol=ATOL)
            bn.running_mean.add_(0.5)
            bn.running_var.mul_(1.5)
            bn.weight.mul_(-0.75)
            bn.bias.sub_(0.25)
    assert_all_absorbed(the_graph(), 1)


def test_batch_norm_output_read_twice_is_not_absorbed():
    x, w = channels_last(1, 8, 9, 9), torch.randn(16, 8, 3, 3)
    bn = batch_norm_fn(random_batch_norm(16))

    def fn(x, w):
        y = bn(F.conv2d(x, w, padding=1))
        return F.relu(y), y * 2

    with torch.no_grad():
        assert_same(compile_cpp(fn)(x, w), fn(x, w), rtol=RTOL, atol=ATOL)
    graph = the_graph()
    (step,) = conv_steps(graph.plan_text)
    assert "scale_col" not in step and graph.counters()["kernels"] >= 1, graph.plan_text


def test_batch_norm_of_a_sum_is_absorbed_after_the_residual():
    """bn(conv(x) + r): the add is the residual op, the batch norm the per-channel scale and
    shift after it (ir/passes/column_affine.h)."""
    x, w, r = channels_last(1, 8, 9, 9), torch.randn(16, 8, 3, 3), channels_last(1, 16, 9, 9)
    bn = batch_norm_fn(random_batch_norm(16))
    fn = lambda x, w, r: bn(F.conv2d(x, w, padding=1) + r)
    with torch.no_grad():
        check_against_references(compile_cpp(fn)(x, w, r), fn, x, w, r)
    graph = the_graph()
    (step,) = conv_steps(graph.plan_text)
    assert re.search(r"-> residual\(%s\d+\) -> scale_col\(%s\d+\) -> bias_col\(%s\d+\)", step), step
    assert graph.counters()["kernels"] == 1, graph.plan_text  # the scale and shift


def resnet_basic_block(c_in, c_out, stride):
    """torchvision's BasicBlock, eval mode, random statistics."""
    conv = lambda ci, co, k, s: torch.nn.Conv2d(ci, co, k, stride=s, padding=k // 2, bias=False)

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1, self.bn1 = conv(c_in, c_out, 3, stride), random_batch_norm(c_out)
            self.conv2, self.bn2 = conv(c_out, c_out, 3, 1), random_batch_norm(c_out)
            self.downsample = None
            if stride != 1 or c_in != c_out:
                self.downsample = torch.nn.Sequential(conv(c_in, c_out, 1, stride),
                                                      random_batch_norm(c_out))

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            identity = x if self.downsample is None else self.downsample(x)
            return F.relu(out + identity)

    return Block().eval()


def test_resnet_basic_block():
    """Both conv+BN pairs are absorbed (the second with the identity and the ReLU). The input
    is channels-last: with an NCHW one the block's output is copied back to NCHW by the last
    kernel, which is then no pure epilogue chain (in a whole network only the last layer's
    output is copied back)."""
    torch.manual_seed(1)
    block = resnet_basic_block(16, 16, 1)
    x = channels_last(2, 16, 12, 12)
    with torch.no_grad():
        compiled = compile_cpp(block)
        for _ in range(3):
            out = compiled(x)
        expected = block(x)
    assert out.stride() == expected.stride()
    assert_same(out, expected, rtol=RTOL, atol=ATOL)
    steps = assert_all_absorbed(the_graph(), 2)
    assert steps[0].split(" free ")[0].rstrip().endswith("-> relu"), steps
    assert re.search(r"-> residual\(%s\d+\) -> relu", steps[1]), steps


def test_resnet_downsample_block():
    """Two convolutions feed the block's last kernel, relu(bn2(conv2(.)) + bn(downsample(x))):
    the first of them writes its batch norm's output, the second absorbs its own batch norm,
    that output as the residual and the relu; the kernel is gone."""
    torch.manual_seed(2)
    block = resnet_basic_block(16, 32, 2)
    x = channels_last(2, 16, 12, 12)
    with torch.no_grad():
        compiled = compile_cpp(block)
        for _ in range(2):
            assert_same(compiled(x), block(x), rtol=RTOL, atol=ATOL)
    graph = the_graph()
    steps = assert_all_absorbed(graph, 3)
    first = re.match(r"%s(\d+) = ", steps[1]).group(1)
    assert steps[1].split(" free ")[0].rstrip().endswith(")"), steps  # batch norm only
    assert steps[2].split(" free ")[0].rstrip().endswith(f"-> residual(%s{first}) -> relu"), steps


def test_two_convolutions_without_batch_norm_on_the_first_keep_their_kernel():
    """relu(bn(conv_a(x)) + sin(conv_b(x))): the second operand's chain is no epilogue (sin),
    so the kernel stays (conv_a still takes its batch norm); the result is still eager's."""
    x = channels_last(1, 8, 9, 9)
    wa, wb = torch.randn(16, 8, 3, 3), torch.randn(16, 8, 1, 1)
    bn = batch_norm_fn(random_batch_norm(16))
    fn = lambda x, wa, wb: F.relu(bn(F.conv2d(x, wa, padding=1)) + torch.sin(F.conv2d(x, wb)))
    with torch.no_grad():
        check_against_references(compile_cpp(fn)(x, wa, wb), fn, x, wa, wb)
    graph = the_graph()
    assert graph.counters()["kernels"] == 2, graph.plan_text  # the kernel, the BN's scale/shift


def test_two_convolutions_with_a_scaled_second_are_split():
    """relu(bn(conv_a(x)) + conv_b(x) * 2): conv_a writes its batch norm's output, conv_b
    absorbs the scale, that residual and the relu; no kernel is left."""
    x = channels_last(1, 8, 9, 9)
    wa, wb = torch.randn(16, 8, 3, 3), torch.randn(16, 8, 1, 1)
    bn = batch_norm_fn(random_batch_norm(16))
    fn = lambda x, wa, wb: F.relu(bn(F.conv2d(x, wa, padding=1)) + F.conv2d(x, wb) * 2)
    with torch.no_grad():
        check_against_references(compile_cpp(fn)(x, wa, wb), fn, x, wa, wb)
    graph = the_graph()
    assert graph.counters()["kernels"] == 1, graph.plan_text  # the BN's scale/shift
    assert "-> scale(2) -> residual(" in graph.plan_text, graph.plan_text


def test_batch_norm_epilogue_round_trips_through_the_cache():
    model = torch.nn.Sequential(torch.nn.Conv2d(8, 16, 3, padding=1), random_batch_norm(16),
                                torch.nn.ReLU()).eval()
    x = channels_last(1, 8, 9, 9)
    with torch.no_grad():
        compile_cpp(model)(x)
        torch._dynamo.reset()
        actual = compile_cpp(model)(x)  # plan.json read back from the cache entry
        assert_same(actual, model(x), rtol=RTOL, atol=ATOL)
    graph = test_graphs()[-1]
    assert graph.counters()["cache"] == "hit"
    assert_all_absorbed(graph, 1)


def test_resnet18_matches_eager():
    """torchvision's resnet18, eval, random statistics: every conv → BN (→ relu / + identity →
    relu) is absorbed (the downsample blocks' ends split between their two convolutions) but
    the stem's (its kernel also computes the max pool) and the last block's (its output buffer
    is laid out for the average pool)."""
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(4)
    model = torchvision.models.resnet18().eval()
    with torch.no_grad():
        for bn in (m for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d)):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 2)
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.uniform_(-0.5, 0.5)
    x = torch.randn(2, 3, 64, 64)
    with torch.no_grad():
        actual = compile_cpp(model)(x)
        expected = model(x)
    assert_same(actual, expected, rtol=1e-4, atol=1e-4)
    graph = the_graph()
    steps = conv_steps(graph.plan_text)
    assert len(steps) == 20, graph.plan_text
    assert sum("-> scale_col(" in s for s in steps) >= 18, graph.plan_text
    assert graph.counters()["kernels"] <= 4 + 20, graph.plan_text  # + a scale/shift kernel per BN
