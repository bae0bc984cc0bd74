"""`python -m inductor_cpp.bench ab`: settings, the timings it finds in a subcommand's JSON, the
alternating order of its processes, and one real run over two settings (tiny micro workload).
No timing is asserted."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import pytest

from inductor_cpp.bench import ab, timing


def _args(env=(), threads=None) -> argparse.Namespace:
    return argparse.Namespace(env=list(env), thread_counts=threads)


def test_settings_parse_and_cross():
    assert ab.parse_env("default") == ()
    assert ab.parse_env("A=1 B=2,3") == (("A", "1"), ("B", "2,3"))
    assert ab.parse_env("A=1;B=") == (("A", "1"), ("B", ""))
    with pytest.raises(SystemExit, match="NAME=VALUE"):
        ab.parse_env("A")
    settings = ab.settings_of(_args(["default", "X=1"], "1,2"))
    assert [s.label for s in settings] == ["--threads 1", "--threads 2", "X=1 --threads 1",
                                           "X=1 --threads 2"]
    with pytest.raises(SystemExit, match="the same"):
        ab.settings_of(_args(["X=1", "X=1"]))


def test_every_setting_starts_without_the_names_any_setting_assigns(monkeypatch):
    monkeypatch.setenv("IC_AB_KNOB", "outside")
    settings = ab.settings_of(_args(["default", "IC_AB_KNOB=2 IC_AB_OTHER=3"]))
    assert "IC_AB_KNOB" not in ab.environment(settings[0], settings)
    env = ab.environment(settings[1], settings)
    assert env["IC_AB_KNOB"] == "2" and env["IC_AB_OTHER"] == "3"


def test_timings_are_found_by_path_in_ms():
    data = {
        "environment": {"median_s": 9.0},  # skipped
        "cases": [{"workload": "sum0", "size_class": "cache",
                   "variants": {"eager": {"timing": timing.summarize([0.002]).to_dict()}}},
                  {"workload": "relu", "median_ms": {"eager": 1.5, "inductor": None},
                   "back_to_back_ms": {"eager": 1.0}}],
        "results": [{"variants": {"ours": {"median_ms": 3.0, "first_call_s": 2.0}}}],
    }
    assert ab.metrics(data) == {
        "cases[sum0 cache].variants.eager.timing.median_s": pytest.approx(2.0),
        "cases[relu].median_ms.eager": 1.5,
        "cases[relu].back_to_back_ms.eager": 1.0,
        "results[0].variants.ours.median_ms": 3.0,
    }


def test_rounds_alternate_and_medians_compare_with_the_first(monkeypatch, tmp_path):
    calls = []

    def fake_process(command, env, out_json):
        calls.append(env.get("IC_AB_KNOB", "default"))
        ms = {"default": 2.0, "fast": 1.0}[env.get("IC_AB_KNOB", "default")]
        with open(out_json, "w") as f:
            json.dump({"cases": [{"name": "a", "median_ms": ms + len(calls) / 100}]}, f)
        return 0, ""

    monkeypatch.setattr(ab, "run_process", fake_process)
    settings = ab.settings_of(_args(["default", "IC_AB_KNOB=fast"]))
    processes, samples = ab.run_rounds(["micro"], settings, 3, str(tmp_path))
    assert calls == ["default", "fast", "fast", "default", "default", "fast"]
    assert [p["rc"] for p in processes] == [0] * 6
    labels = [s.label for s in settings]
    summary = ab.summarize(samples, labels)
    row = summary["cases[a].median_ms"]
    assert row["default"]["median_ms"] == pytest.approx(2.04)
    assert row["IC_AB_KNOB=fast"]["median_ms"] == pytest.approx(1.03)
    assert row["IC_AB_KNOB=fast"]["vs_first"] == pytest.approx(2.04 / 1.03)
    text = ab.table(summary, labels)
    assert "[1] IC_AB_KNOB=fast" in text and "2.04" in text and "(1.98x)" in text
    assert ab.short_name("cases[sum0 cache].variants.eager.timing.median_s") == "cases[sum0 cache] eager"


def test_two_settings_of_a_real_subcommand(tmp_path):
    out = tmp_path / "ab.json"
    env = dict(os.environ, INDUCTOR_CPP_CACHE_DIR=str(tmp_path / "cache"),
               INDUCTOR_CPP_MACHINE_DIR=str(tmp_path / "machine"))
    proc = subprocess.run(
        [sys.executable, "-m", "inductor_cpp.bench", "ab", "--env", "default", "--env",
         "IC_AB_TEST=1", "--rounds", "1", "--json", str(out), "--", "micro", "--only", "sum0",
         "--size", "cache", "--cache-shape", "8x16", "--iters", "1", "--warmup", "0",
         "--no-stock", "--probe-mib", "1", "--threads", "1"],
        env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert "[1] IC_AB_TEST=1" in proc.stdout
    data = json.loads(out.read_text())
    assert data["settings"] == ["default", "IC_AB_TEST=1"]
    assert [p["setting"] for p in data["processes"]] == data["settings"]
    path = "cases[sum0 cache].variants.inductor_cpp.timing.median_s"
    assert set(data["timings"][path]) == set(data["settings"])


def test_the_subcommand_is_required_and_keeps_its_json_to_ab():
    from inductor_cpp.bench import __main__ as bench_main

    with pytest.raises(SystemExit, match="give the subcommand"):
        bench_main.main(["ab", "--json", "x.json"])
    with pytest.raises(SystemExit, match="leave --json out"):
        bench_main.main(["ab", "--json", "x.json", "--", "micro", "--json", "y.json"])
