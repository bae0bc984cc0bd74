"""The main job (`python -m inductor_cpp.bench main`) runs end to end and reports correctness:
a small configuration, so it stays in CI; the real numbers come from scripts/main.sh."""

from __future__ import annotations

import json
import os
import subprocess
import sys


def test_main_job_runs_and_checks_correctness(tmp_path):
    out = tmp_path / "main.json"
    env = dict(os.environ, INDUCTOR_CPP_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run(
        [sys.executable, "-m", "inductor_cpp.bench", "main", "--no-stock", "--iters", "1",
         "--warmup", "0", "--batch", "1", "--mlp-batch", "8", "--json", str(out)],
        env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "inductor_cpp correctness: PASS" in proc.stdout
    assert "resnet18 inference" in proc.stdout and "MLP train step" in proc.stdout
    assert json.loads(out.read_text())  # machine-readable results were written
