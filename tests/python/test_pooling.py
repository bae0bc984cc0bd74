"""2-D pooling generated as loop IR (not ATen fallbacks), forward and backward, against eager:
max_pool2d with indices (padding, dilation, ceil_mode, stride != kernel, overlapping windows,
ties, NaN, integer dtypes), avg_pool2d (count_include_pad, divisor_override, ceil_mode) and
adaptive_avg_pool2d (sizes that divide the input and sizes that do not)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from inductor_cpp import debug_dir

from conftest import compile_cpp, test_graphs

POOLING_OPS = {
    "aten::max_pool2d_with_indices",
    "aten::max_pool2d_with_indices_backward",
    "aten::avg_pool2d",
    "aten::avg_pool2d_backward",
    "aten::_adaptive_avg_pool2d",
    "aten::_adaptive_avg_pool2d_backward",
}


def pooling_decisions() -> dict[str, list[str]]:
    """op -> fallback reasons ("" when generated) of the pooling nodes in this test's graphs."""
    seen: dict[str, list[str]] = {}
    for g in test_graphs():
        info = debug_dir.debug_info(g)
        for d in info["decisions"]:
            op = info["labels"][d["node"]].partition(" (")[0]
            if op in POOLING_OPS:
                seen.setdefault(op, []).append("" if d["generated"] else d["reason"])
    return seen


def assert_generated(expected_ops: set[str], only_kernels: bool = True) -> None:
    """The pooling ops seen are `expected_ops`, all generated; with `only_kernels`, the graphs
    also make no ATen call at all (a kernel that failed to build would show up as one)."""
    if only_kernels:
        for g in test_graphs():
            assert g.counters()["aten_calls"] == 0, g.counters()
    seen = pooling_decisions()
    assert set(seen) == expected_ops, seen
    for op, reasons in seen.items():
        assert all(r == "" for r in reasons), f"{op} fell back: {reasons}"


def run_with_backward(fn, inputs: tuple, compiled: bool):
    """fn(*inputs) -> list of tensors; returns them and the inputs' gradients of a weighted sum
    of the floating ones (the same weights for eager and compiled runs)."""
    xs = [x.detach().clone().requires_grad_(x.is_floating_point()) for x in inputs]
    outs = (compile_cpp(fn) if compiled else fn)(*xs)
    if any(x.requires_grad for x in xs):
        gen = torch.Generator().manual_seed(1)
        loss = sum((o * torch.randn(o.shape, generator=gen, dtype=o.dtype)).sum()
                   for o in outs if o.is_floating_point())
        loss.backward()
    return [o.detach() for o in outs] + [x.grad for x in xs if x.requires_grad]


def compare(fn, *inputs: torch.Tensor) -> None:
    """Compiled vs eager: every output (max_pool's indices exactly) and every input gradient."""
    expected = run_with_backward(fn, inputs, compiled=False)
    actual = run_with_backward(fn, inputs, compiled=True)
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        torch.testing.assert_close(a, e, equal_nan=True)


def tied_input(shape, dtype, nan: bool = False) -> torch.Tensor:
    """Small integers (many ties); with NaNs (two in one window) and a corner of -inf (windows
    whose real values are all -inf next to padding) when asked."""
    x = torch.randint(-3, 4, shape).to(dtype)
    if nan:
        x[-1, 0, :2, :2] = float("-inf")
        x[0, 0, 1, 1] = float("nan")
        x[0, 0, 1, 2] = float("nan")
        x[-1, -1, 4, 3] = float("nan")
    return x


MAX_POOLS = (
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),  # overlapping, padded, ceil
    dict(kernel_size=2, stride=1),  # overlapping windows
    dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 0), dilation=(2, 1)),
    dict(kernel_size=2, stride=3, padding=1, ceil_mode=True),  # stride > kernel
    dict(kernel_size=3, stride=2, dilation=2, padding=1, ceil_mode=True),
    dict(kernel_size=(6, 5), stride=(2, 3), padding=(3, 2), ceil_mode=True),  # > 25: reduction
)


def max_pools(x, configs=MAX_POOLS):
    outs = []
    for kwargs in configs:
        values, indices = F.max_pool2d(x, return_indices=True, **kwargs)
        outs += [values, indices]
    return outs


def test_max_pool2d_forward_backward_with_ties_and_nan():
    # float32 and float64 in one graph (one forward and one backward compile)
    # (the configurations split between the dtypes: every one of them in a single graph makes
    # one large backward kernel that takes long to compile)
    compare(lambda a, b: (max_pools(a, [MAX_POOLS[k] for k in (0, 2, 3, 5)]) +
                          max_pools(b, [MAX_POOLS[k] for k in (1, 4)])),
            tied_input((2, 3, 9, 8), torch.float32, nan=True),
            tied_input((2, 3, 8, 9), torch.float64, nan=True))
    assert_generated({"aten::max_pool2d_with_indices", "aten::max_pool2d_with_indices_backward"})


def test_max_pool2d_integer_and_channels_last_3d():
    def f(x, cl):
        return (list(F.max_pool2d(x, 3, 2, 1, ceil_mode=True, return_indices=True)) +
                max_pools(cl, MAX_POOLS[:3]))

    x = torch.randint(-100, 100, (4, 7, 9), dtype=torch.int32)
    x[:, :2, :2] = torch.iinfo(torch.int32).min  # windows whose real values are all lowest
    cl = tied_input((2, 8, 7, 6), torch.float32).contiguous(memory_format=torch.channels_last)
    compare(f, x, cl)
    assert_generated({"aten::max_pool2d_with_indices", "aten::max_pool2d_with_indices_backward"})


def avg_pools(x):
    return [
        F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=True),
        F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
        F.avg_pool2d(x, (2, 3), (1, 2), (1, 1), count_include_pad=False),
        F.avg_pool2d(x, 2, 2, divisor_override=3),
        F.avg_pool2d(x, 3, 1, 1, divisor_override=5, ceil_mode=True),
        F.avg_pool2d(x, (6, 5), 1, (3, 2), count_include_pad=False),  # > 25 positions: reduction
    ]


def adaptive_avg_pools(x, sizes):
    return [F.adaptive_avg_pool2d(x, size) for size in sizes]


def test_avg_pool2d_forward_backward():
    compare(lambda a, b: avg_pools(a) + avg_pools(b), torch.randn(2, 3, 9, 7),
            torch.randn(2, 3, 7, 9, dtype=torch.float64))
    assert_generated({"aten::avg_pool2d", "aten::avg_pool2d_backward"})


def test_adaptive_avg_pool2d_forward_backward():
    # On 10x8: (5, 4) divides the input, the others do not (overlapping windows of varying
    # sizes); (1, 2) has 10x4 windows and (30, 40) up to 6x6 windows per input position in the
    # backward: reductions rather than unrolled windows.
    compare(lambda a, b: (adaptive_avg_pools(a, [(5, 4), (3, 5), (30, 40)]) +
                          adaptive_avg_pools(b, [(7, 3), (1, 2)])),
            torch.randn(2, 3, 10, 8), torch.randn(3, 10, 8, dtype=torch.float64))
    assert_generated({"aten::_adaptive_avg_pool2d", "aten::_adaptive_avg_pool2d_backward"})


def test_small_cnn_training_step_generates_pooling():
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(4, 4, 3, padding=1), torch.nn.AvgPool2d(2, ceil_mode=True),
        torch.nn.AdaptiveAvgPool2d((2, 3)), torch.nn.Flatten(), torch.nn.Linear(24, 5))
    x = torch.randn(2, 3, 12, 10)

    def step(m):
        m.zero_grad()
        out = m(x)
        out.square().sum().backward()
        return out.detach(), [p.grad.clone() for p in m.parameters()]

    expected_out, expected_grads = step(model)
    actual_out, actual_grads = step(compile_cpp(model))
    torch.testing.assert_close(actual_out, expected_out, rtol=1e-4, atol=1e-5)
    for a, e in zip(actual_grads, expected_grads):
        torch.testing.assert_close(a, e, rtol=1e-4, atol=1e-5)
    assert_generated(POOLING_OPS, only_kernels=False)  # convolutions run as ATen calls
