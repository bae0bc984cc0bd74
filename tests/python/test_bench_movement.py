"""The movement benchmark (`python -m inductor_cpp.bench movement`) end to end at tiny sizes:
rows, checks against eager, GB/s and the copy limit, ops counts, JSON. No timing asserts (the
machine is shared); docs/benchmarks.md has the real run's command."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import torch

from inductor_cpp.bench import movement, movement_cases


def test_movement_runs_and_reports(tmp_path):
    out = tmp_path / "movement.json"
    rows = "transpose,roll,gather,index_put_accumulate,argmax_columns,transpose_bf16"
    env = dict(os.environ, INDUCTOR_CPP_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, "-m", "inductor_cpp.bench", "movement", "--elements", "16384",
                           "--only", rows, "--no-stock", "--iters", "2", "--warmup", "0",
                           "--threads", "1", "--json", str(out)],
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(out.read_text())
    assert sorted(r["row"] for r in data["rows"]) == sorted(rows.split(","))  # in ROWS order
    for r in data["rows"]:
        assert r["correct"] == {"inductor_cpp": True}, r
        assert set(r["median_ms"]) == {"eager", "inductor_cpp"} and r["copy_gbs"] > 0
        assert r["gb_s"]["inductor_cpp"] > 0 and r["bytes"] > 0
    ops = {r["row"]: r["ops"] for r in data["rows"]}
    assert ops["roll"]["fallback"] == 0 and ops["index_put_accumulate"]["fallback"] >= 1
    assert "transpose " in proc.stdout and "geomean" not in proc.stdout  # no stock, no ratio


def test_suite_has_25_rows_of_every_kind():
    names = [r.name for r in movement_cases.ROWS]
    assert len(names) >= 25 and len(set(names)) == len(names)
    for kind in ("transpose", "permute", "nchw", "broadcast", "cat", "gather", "embedding",
                 "scatter", "index_put", "cumsum", "argmax", "bf16", "fp16", "prime", "slice"):
        assert any(kind in n for n in names), kind


def test_check_compares_integers_exactly_and_floats_with_tolerance():
    a = torch.tensor([1, 2, 3])
    assert movement.check(a.clone(), a, (0, 0))[0]
    assert not movement.check(torch.tensor([1, 2, 4]), a, (1.0, 1.0))[0]
    x = torch.tensor([1.0, 2.0])
    assert movement.check(x + 1e-7, x, (1e-4, 1e-5))[0]
    assert not movement.check(x + 1e-2, x, (1e-4, 1e-5))[0]
    assert not movement.check(x.double(), x, (1e-4, 1e-5))[0]  # dtype differs
