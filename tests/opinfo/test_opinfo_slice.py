"""CI slice of the OpInfo sweep: ~50 representative (op, dtype) pairs, compiled vs eager.

Why: the full sweep (sweep.py) takes tens of minutes; this slice keeps the same protocol
(harness.py: Dynamo reset per sample, rtol 1e-4 / atol 1e-5 for floats, exact otherwise) on a
mix chosen to touch every kind of graph the backend meets -- unary/binary pointwise with type
promotion, comparisons, reductions with dim/keepdim, views and as_strided, indexing, gather and
scatter, cat/stack/split (list inputs and outputs), where, clamp, cumsum, sort/topk (tuple
outputs), matmul family, softmax, layer_norm, conv2d, max_pool2d, losses, dtype conversions, and
int64/int32/bool dtypes -- in about a minute on 2 cores. A second, smaller slice runs with
symbolic sizes (SYMBOLIC_SLICE: the plans Dynamo's dynamic shapes reach past the static copies).

Only the first MAX_SAMPLES samples of each pair run (the OpInfo generators are deterministic
under the harness's seed, so it is always the same ones). Each test asserts that all of them
pass. Pairs known to fail are listed with the reason in expected_failures.json and run as
xfail(strict=True): when a fix lands, the test XPASSes, fails, and the entry must be removed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import harness

MAX_SAMPLES = 8

SLICE: list[tuple[str, str]] = [
    # unary / binary pointwise, type promotion
    ("sin", "float32"),
    ("exp", "float64"),
    ("abs", "int64"),
    ("neg", "int32"),
    ("add", "float32"),
    ("mul", "int32"),
    ("div.no_rounding_mode", "int64"),  # int / int -> float
    ("pow", "float64"),
    ("logical_and", "bool"),
    ("bitwise_xor", "int64"),
    # comparisons
    ("eq", "float32"),
    ("lt", "int64"),
    # reductions with dim / keepdim
    ("sum", "float32"),
    ("mean", "float64"),
    ("amax", "int32"),
    ("max.reduction_with_dim", "float32"),
    ("argmax", "int64"),
    ("any", "bool"),
    ("var", "float32"),
    # views
    ("view", "float32"),
    ("reshape", "int64"),
    ("permute", "float32"),
    ("transpose", "bool"),
    ("expand", "float32"),
    ("squeeze", "float32"),
    ("unsqueeze", "int32"),
    ("narrow", "float32"),
    ("select", "int64"),
    ("as_strided", "float32"),
    # indexing, gather / scatter
    ("index_select", "float32"),
    ("gather", "int64"),
    ("scatter", "float32"),
    ("__getitem__", "float32"),
    ("masked_fill", "bool"),
    # lists in and out
    ("cat", "float32"),
    ("stack", "int64"),
    ("split", "float32"),
    # where, clamp, scans, sorting
    ("where", "float32"),
    ("clamp", "float32"),
    ("cumsum", "int64"),
    ("sort", "float32"),
    ("topk", "float64"),
    # matmul family
    ("matmul", "float32"),
    ("addmm", "float32"),
    ("bmm", "float64"),
    # nn
    ("softmax", "float32"),
    ("log_softmax", "float64"),
    ("nn.functional.layer_norm", "float32"),
    ("nn.functional.conv2d", "float32"),
    ("nn.functional.max_pool2d", "float32"),
    ("nn.functional.cross_entropy", "float32"),
    ("nn.functional.mse_loss", "float32"),
    ("nn.functional.relu", "int64"),
    # dtype conversions
    ("to", "float32"),
    ("float", "int64"),
    ("bool", "float32"),
]

# Run again with symbolic sizes (dynamic=True, shape_specializations 0): the plan of ATen calls,
# fused ATen kernels kept whole, matmuls on dynamic rows absorbing an activation, attention,
# size arithmetic (sym:: steps). Ops whose symbolic plans differ from the static path.
SYMBOLIC_SLICE: list[tuple[str, str]] = [
    ("matmul", "float32"),
    ("addmm", "float32"),
    ("nn.functional.linear", "float32"),
    ("bmm", "float32"),
    ("softmax", "float32"),
    ("log_softmax", "float32"),
    ("nn.functional.layer_norm", "float32"),
    ("nn.functional.group_norm", "float32"),
    ("nn.functional.batch_norm", "float32"),
    ("nn.functional.conv2d", "float32"),
    ("nn.functional.gelu", "float32"),
    ("nn.functional.scaled_dot_product_attention", "float32"),
    ("nn.functional.max_pool2d", "float32"),
    ("nn.functional.interpolate.nearest", "float32"),
    ("nn.functional.pad.constant", "float32"),
    ("nn.functional.cross_entropy", "float32"),
    ("__getitem__", "float32"),
    ("cat", "float32"),
    ("var", "float32"),
]

EXPECTED_FAILURES: dict[str, str] = {
    k: v for k, v in json.loads((Path(__file__).parent / "expected_failures.json").read_text()).items()
    if not k.startswith("_")  # comments
}


def _params():
    for name, dtype in SLICE:
        key = harness.pair_key(name, dtype)
        marks = []
        if key in EXPECTED_FAILURES:
            marks.append(pytest.mark.xfail(reason=EXPECTED_FAILURES[key], strict=True))
        yield pytest.param(name, dtype, id=key, marks=marks)


def test_slice_pairs_are_valid():
    """Every slice entry names an OpInfo that supports that dtype and is not random; every
    expected failure names a pair of the full sweep (a stale entry would silently never run)."""
    for name, dtype in SLICE:
        op = harness.find_op(name)
        assert dtype in harness.supported_dtype_names(op), f"{name} does not support {dtype}"
        assert harness.skip_reason(op) is None, f"{name} is skipped as random"
    keys = {harness.pair_key(op, d) for op in harness.op_db() if harness.skip_reason(op) is None
            for d in harness.supported_dtype_names(op)}
    stale = sorted(set(EXPECTED_FAILURES) - keys)
    assert not stale, f"expected_failures.json names pairs not in the sweep: {stale}"


@pytest.mark.parametrize("name, dtype", list(_params()))
def test_opinfo(name, dtype):
    result = harness.run_pair(harness.find_op(name), dtype, max_samples=MAX_SAMPLES)
    assert result.status == "pass", result.summary()
    assert result.run_samples, f"{result.key}: every sample raised eagerly"


@pytest.mark.parametrize("name, dtype", SYMBOLIC_SLICE,
                         ids=[harness.pair_key(n, d) for n, d in SYMBOLIC_SLICE])
def test_opinfo_with_symbolic_sizes(name, dtype):
    op = harness.find_op(name)
    assert dtype in harness.supported_dtype_names(op) and harness.skip_reason(op) is None
    result = harness.run_pair(op, dtype, max_samples=MAX_SAMPLES, symbolic=True)
    assert result.status == "pass", result.summary()
    assert any(s.how == "compiled" for s in result.samples), result.summary()
