"""The full OpInfo sweep as a test: every (op, dtype) pair of op_db on CPU, all samples.

Marked slow (about 10 minutes per dtype on 2 cores): it runs with
`INDUCTOR_CPP_FULL=1 bash scripts/test.sh`, not in CI. Same protocol and expected-failures file
as the CI slice (test_opinfo_slice.py); random ops are skipped, pairs whose every sample raises
in eager are not counted. For the numbers (correct %, generated %), run sweep.py instead.
"""

from __future__ import annotations

import pytest

import harness
from test_opinfo_slice import EXPECTED_FAILURES


def _all_pairs():
    for op in harness.op_db():
        if harness.skip_reason(op) is not None:
            continue
        for dtype in harness.supported_dtype_names(op):
            key = harness.pair_key(op, dtype)
            marks = [pytest.mark.slow]
            if key in EXPECTED_FAILURES:
                marks.append(pytest.mark.xfail(reason=EXPECTED_FAILURES[key], strict=True))
            yield pytest.param(harness.pair_name(op), dtype, id=key, marks=marks)


@pytest.mark.parametrize("name, dtype", list(_all_pairs()))
def test_opinfo_full(name, dtype):
    result = harness.run_pair(harness.find_op(name), dtype)
    if result.status == "eager_error":
        pytest.skip(f"{result.key}: eager rejects every sample")
    assert result.status == "pass", result.summary()
