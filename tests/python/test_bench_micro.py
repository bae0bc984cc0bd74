"""The micro benchmark (`python -m inductor_cpp.bench micro`) and the machine probe run end to
end at tiny sizes: rows, JSON, correctness verdicts and positive numbers. No timing asserts (the
machine is shared); the real numbers come from running the command by hand (docs/benchmarks.md)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import pytest
import torch

from inductor_cpp.bench import machine, micro, micro_checks, micro_results, timing


def _run_bench(tmp_path, *argv: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, INDUCTOR_CPP_CACHE_DIR=str(tmp_path / "cache"),
               INDUCTOR_CPP_MACHINE_DIR=str(tmp_path / "machine"))
    return subprocess.run([sys.executable, "-m", "inductor_cpp.bench", *argv], env=env,
                          capture_output=True, text=True, timeout=300)


def test_micro_runs_and_reports(tmp_path):
    out = tmp_path / "micro.json"
    proc = _run_bench(tmp_path, "micro", "--size", "cache", "--only", "pointwise,sum0",
                      "--iters", "2", "--warmup", "1", "--no-stock", "--cache-shape", "64x96",
                      "--probe-mib", "4", "--threads", "1", "--json", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = proc.stdout
    assert "1 thread(s)" in text
    assert "inductor_cpp correctness: PASS" in text
    rows = [line for line in text.splitlines() if line.startswith(("pointwise ", "sum0 "))]
    assert len(rows) == 4, text  # eager + inductor_cpp for each workload
    assert sum("| PASS" in r for r in rows) == 2 and sum("reference" in r for r in rows) == 2

    data = json.loads(out.read_text())
    assert data["ok"] is True
    assert data["environment"]["threads"] == 1
    assert data["machine"]["copy_dram_gbs"] > 0 and data["machine"]["matmul_gflops"] > 0
    cases = {c["workload"]: c for c in data["cases"]}
    assert set(cases) == {"pointwise", "sum0"}
    assert cases["pointwise"]["shape"] == str(64 * 96)
    assert cases["sum0"]["shape"] == "64x96"
    # bytes: pointwise reads and writes 64*96 floats; sum0 reads 64x96 and writes 96
    assert cases["pointwise"]["bytes_moved"] == 2 * 64 * 96 * 4
    assert cases["sum0"]["bytes_moved"] == (64 * 96 + 96) * 4
    for case in cases.values():
        assert case["size_class"] == "cache"
        assert set(case["variants"]) == {"eager", "inductor_cpp"}
        for v in case["variants"].values():
            assert v["ok"] and v["error"] is None
            assert v["timing"]["median_s"] > 0 and v["first_call_s"] > 0 and v["rate"] > 0
            assert len(v["timing"]["samples_s"]) == 2
        ours = case["variants"]["inductor_cpp"]
        assert ours["check"]["ok"] and ours["check"]["mismatches"] == 0
        assert ours["vs_eager"] > 0 and ours["vs_stock"] is None
        assert ours["ops"]["graphs"] >= 1

    # the probe result was cached, and a second run reuses it
    cached = tmp_path / "machine"
    assert len(list(cached.glob("*-1t.json"))) == 1  # <cpu model>-<cpus>cpus-<threads>t
    again = _run_bench(tmp_path, "machine", "--probe-mib", "4", "--threads", "1", "--json",
                       str(tmp_path / "machine.json"))
    assert again.returncode == 0, again.stdout + again.stderr
    assert "machine limits from" in again.stdout
    assert json.loads((tmp_path / "machine.json").read_text())["threads"] == 1


def test_unknown_workload_is_rejected(tmp_path):
    proc = _run_bench(tmp_path, "micro", "--only", "pointwise,nonesuch")
    assert proc.returncode != 0
    assert "nonesuch" in proc.stderr


def test_size_too_big_for_memory_is_skipped_not_fatal(tmp_path):
    proc = _run_bench(tmp_path, "micro", "--size", "dram", "--only", "sum0", "--no-stock",
                      "--dram-shape", "1000000x1000000", "--probe-mib", "4",
                      "--json", str(tmp_path / "micro.json"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "skipped: needs" in proc.stdout


def test_single_ops_run_only_when_named():
    everything = micro._selected(argparse.Namespace(only=None))
    assert "pointwise" in {s.name for s in everything}
    assert not set(micro.UNARY_OPS) & {s.name for s in everything}
    assert [s.name for s in micro._selected(argparse.Namespace(only="erf,gelu_tanh"))] == [
        "erf", "gelu_tanh"]
    fn, (x,) = micro.WORKLOADS["gelu_tanh"].make((4, 8), None)
    assert x.shape == (32,)
    torch.testing.assert_close(fn(x), torch.nn.functional.gelu(x, approximate="tanh"))


def test_compare_catches_wrong_values_and_shapes():
    ref = torch.randn(1000)
    assert micro_checks.compare(ref.clone(), ref, rtol=1e-4, atol=1e-5)["ok"]
    wrong = ref.clone()
    wrong[7] += 1.0
    check = micro_checks.compare(wrong, ref, rtol=1e-4, atol=1e-5)
    assert not check["ok"] and check["mismatches"] == 1
    assert check["max_abs_err"] == pytest.approx(1.0, rel=1e-5)
    assert not micro_checks.compare(ref[:10], ref, rtol=1e-4, atol=1e-5)["ok"]
    nan = torch.tensor([float("nan"), 1.0])
    assert micro_checks.compare(nan.clone(), nan, rtol=1e-4, atol=1e-5)["ok"]
    assert micro_checks.max_abs_diff(torch.tensor([1.0, 1.0]), nan) == float("inf")


def test_fp64_verdict_accepts_reordered_sums_only_when_as_accurate():
    x = torch.randn(4096, 64)
    ref = x.sum(0)
    ref64 = x.double().sum(0)
    reordered = x.flip(0).sum(0)  # another summation order: rounding of the same size
    check = {"criterion": "c"}
    micro_checks.fp64_verdict(check, reordered, ref, ref64, atol=1e-5)
    assert check["ok"] and check["passed_by"] == "fp64"
    sloppy = ref + 1e-3  # far worse than eager's rounding
    check = {"criterion": "c"}
    micro_checks.fp64_verdict(check, sloppy, ref, ref64, atol=1e-5)
    assert not check["ok"]


def test_shape_parsing_and_geomeans():
    assert micro.parse_shape("1024x4096") == (1024, 4096)
    with pytest.raises(SystemExit):
        micro.parse_shape("1024")
    case = micro_results.Case("w", "cache", "1x1")
    for name, seconds in (("eager", 2.0), ("inductor_cpp", 1.0), ("inductor", 4.0)):
        case.variants[name] = micro_results.Variant(name, timing=timing.summarize([seconds]))
    means = micro_results.geomeans([case])["cache"]
    assert means["inductor_cpp vs eager"] == pytest.approx(2.0)
    assert means["inductor_cpp vs stock"] == pytest.approx(4.0)
    assert means["stock vs eager"] == pytest.approx(0.5)


def test_machine_cache_is_keyed_on_config(tmp_path, monkeypatch):
    monkeypatch.setenv("INDUCTOR_CPP_MACHINE_DIR", str(tmp_path))
    calls = []

    def fake_measure(config):
        calls.append(config)
        return machine.MachineLimits(host="h", threads=config.threads, torch="t",
                                     copy_dram_gbs=10.0, copy_cache_gbs=20.0,
                                     triad_dram_gbs=11.0, matmul_gflops=100.0,
                                     config=machine.asdict(config), measured_at="now")

    monkeypatch.setattr(machine, "measure", fake_measure)
    small = machine.ProbeConfig(threads=1, dram_bytes=1 << 20)
    assert machine.machine_limits(small).copy_gbs("dram") == 10.0
    assert machine.machine_limits(small).copy_gbs("cache") == 20.0
    assert len(calls) == 1  # the second call was served from the cache
    machine.machine_limits(small, remeasure=True)
    machine.machine_limits(machine.ProbeConfig(threads=1, dram_bytes=2 << 20))
    assert len(calls) == 3  # remeasure, and a different probe size, both measure again
