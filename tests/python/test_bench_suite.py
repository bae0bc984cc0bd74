"""`python -m inductor_cpp.bench suite`: one quick run end to end (processes, JSON, PNG, table),
and the report's verdict on synthetic results. No timing is asserted."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from inductor_cpp.bench import suite_report


def test_quick_suite_runs_end_to_end(tmp_path):
    out_json, out_png = tmp_path / "suite.json", tmp_path / "suite.png"
    env = dict(os.environ)
    env.pop("INDUCTOR_CPP_CACHE_DIR", None)  # the suite makes its own fresh caches
    proc = subprocess.run(
        [sys.executable, "-m", "inductor_cpp.bench", "suite", "--quick", "--device", "cpu",
         "--only", "softmax,mlp_train", "--json", str(out_json), "--png", str(out_png)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert "inductor_cpp ms (x eager)" in proc.stdout and "run peak MiB" in proc.stdout
    assert "inductor_cpp correctness: PASS" in proc.stdout
    assert proc.stdout.startswith("SMOKE RUN (--quick"), proc.stdout[:300]
    data = json.loads(out_json.read_text())
    assert data["ok"] and data["variants"] == ["eager", "inductor_cpp"]
    workloads = data["devices"]["cpu"]["workloads"]
    assert set(workloads) == {"softmax", "mlp_train"}
    assert workloads["mlp_train"]["train"] and not workloads["softmax"]["train"]
    for w in workloads.values():
        ours, eager = w["variants"]["inductor_cpp"], w["variants"]["eager"]
        assert ours["check"]["ok"] and ours["timing"]["median_s"] > 0
        assert ours["first_call_s"] > 0 and ours["warm"]["first_call_s"] > 0
        assert ours["warm"]["run_peak_bytes"] is not None
        assert eager["warm"]["compile_peak_bytes"] is not None
        assert ours["compile"]["ops_generated"] > 0
    assert workloads["mlp_train"]["variants"]["inductor_cpp"]["compile"]["graphs"] == 2
    assert out_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _results(ours_check_ok: bool) -> dict:
    def variant(ms: float, ok: bool | None = None) -> dict:
        v = {"first_call_s": 1.0, "timing": {"median_s": ms / 1e3},
             "warm": {"first_call_s": 0.1, "run_peak_bytes": 2 << 20, "compile_peak_bytes": 0}}
        if ok is not None:
            v["check"] = {"ok": ok, "max_abs_err": 0.0}
        return v

    return {"environment": {"torch": "x", "cpu_count": 2, "load_average_1m": 0.0},
            "variants": ["eager", "inductor_cpp", "inductor"],
            "devices": {"cpu": {"errors": [], "workloads": {
                "a": {"train": False, "variants": {"eager": variant(4.0),
                                                   "inductor_cpp": variant(2.0, ours_check_ok),
                                                   "inductor": variant(1.0, True)}}}}}}


def test_report_verdict_tables_and_geomeans(tmp_path):
    good, bad = _results(True), _results(False)
    assert suite_report.ours_ok(good) and not suite_report.ours_ok(bad)
    g = suite_report.geomeans(good)["cpu"]
    assert g["inductor_cpp vs eager"] == 2.0 and g["inductor vs eager"] == 4.0
    assert g["inductor_cpp vs inductor"] == 0.5
    text = suite_report.report(bad, threads=2)
    assert "2.00 (2.00x)" in text and "1.00 (4.00x)" in text and "NO / yes" in text
    assert "0.50x" in text and "0.10 / 0.10" in text
    suite_report.chart(good, str(tmp_path / "c.png"))
    assert (tmp_path / "c.png").stat().st_size > 0


def test_noisy_rows_are_flagged_not_reported():
    """A variant whose timed calls spread by more than 10% of their median (interquartile range)
    makes its row's ratio "noisy (...)", with the spreads shown; a tight row keeps its ratio."""
    results = _results(True)
    variants = results["devices"]["cpu"]["workloads"]["a"]["variants"]
    for name, samples in (("eager", [4.0, 4.01, 3.99, 4.0, 4.02]),
                          ("inductor_cpp", [2.0, 2.6, 1.7, 2.0, 2.9]),
                          ("inductor", [1.0, 1.01, 0.99, 1.0, 1.0])):
        variants[name]["timing"]["samples_s"] = [x / 1e3 for x in samples]
    assert suite_report.spread(variants["inductor_cpp"]) > suite_report.NOISY
    assert suite_report.spread(variants["eager"]) < 0.01
    text = suite_report.speed_table(results)
    assert "noisy (0.50x)" in text and "%!" in text, text
    for v in variants.values():
        v["timing"]["samples_s"] = [v["timing"]["median_s"]] * 5
    text = suite_report.speed_table(results)
    assert "noisy" not in text and "0.50x" in text and "0% / 0% / 0%" in text, text
    assert not suite_report.report(results, threads=2).startswith("SMOKE RUN")


def test_models_mode_builds_all_sixteen_models():
    """`suite --mode models`: every inference model builds at --quick sizes and runs eagerly
    (timing them compiled is the on-demand run, not CI's)."""
    import torch

    from inductor_cpp.bench import suite
    from inductor_cpp.bench.suite_workloads import INFER_MODELS, build

    assert len(INFER_MODELS) == 16 and list(suite.MODES["models"]) == list(INFER_MODELS)
    for name in INFER_MODELS:
        torch.manual_seed(0)
        w = build(name, "cpu", quick=True)
        assert not w.train and w.description, name
        out = w.step(w.fn)
        assert out and all(torch.isfinite(t).all() for t in out), name
