"""Faults a user or the machine may inject (issue 44), beside the cache's own in test_cache.py
and test_cache_fuzz.py: a process killed with SIGKILL mid-compile (the next one builds: the lock
died with it), a disk that fills up, a cache directory that cannot be made, inputs eager handles (NaN / Inf, zero-size, overlapping memory, aliased
arguments, more than 2^31 elements) answered as eager answers them, and a long training run
whose resident memory stays flat."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import torch

from conftest import assert_same, compile_cpp, fake_compiler, run_python, test_graphs

CHILD = """
    import json, torch, inductor_cpp
    def f(x):
        return torch.tanh(x) * 3 + x.amax()
    x = torch.linspace(-2, 2, 24).reshape(4, 6)
    with torch.no_grad():
        y = torch.compile(f, backend="inductor_cpp")(x)
    print(json.dumps({"ok": bool(torch.allclose(y, f(x))),
                      "outcomes": [g.cache_outcome for g in inductor_cpp.live_graphs()]}))
"""


def test_kill_9_mid_compile_leaves_nothing_that_blocks_the_next_process(tmp_path):
    """SIGKILL to a process while its compiler runs: its flock dies with it, so the next process
    builds at once (no wait for the 120 s lock timeout) and gets the right answer."""
    pid_file = tmp_path / "compiler.pid"
    slow = fake_compiler(tmp_path / "slow-cxx", f"echo $$ > {pid_file}\nexec sleep 300\n")
    cache = {"INDUCTOR_CPP_CACHE_DIR": str(tmp_path / "cache")}
    env = dict(os.environ, **cache, CXX=str(slow))
    victim = subprocess.Popen([sys.executable, "-c", textwrap.dedent(CHILD)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(1200):
            if pid_file.exists() and pid_file.read_text().strip():
                break
            assert victim.poll() is None
            time.sleep(0.1)
        else:
            raise AssertionError("the compiler never started")
        victim.send_signal(signal.SIGKILL)
        victim.wait(timeout=30)
    finally:
        if victim.poll() is None:
            victim.kill()
        if pid_file.exists():  # the orphaned compiler (its own process group) is ours to end
            try:
                os.kill(int(pid_file.read_text()), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
    start = time.monotonic()
    after = run_python(CHILD, {**cache, "INDUCTOR_CPP_CACHE_LOCK_TIMEOUT_MS": "600000"})
    assert after["ok"] and after["outcomes"] == ["built"], after
    assert time.monotonic() - start < 120


def test_a_full_disk_costs_that_graph_its_cache_entry_only(tmp_path):
    """Every write past 16 KiB fails (RLIMIT_FSIZE, as on a full disk; SIGXFSZ ignored, so the
    write returns EFBIG), for us and the compiler we start: the graph still gives the right
    answer, and nothing half-written is left, so the next process builds a good entry."""
    cache = {"INDUCTOR_CPP_CACHE_DIR": str(tmp_path / "cache")}
    limit = ("import resource, signal\n"
             "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
             "resource.setrlimit(resource.RLIMIT_FSIZE, (16384, 16384))\n")
    full = run_python(limit + textwrap.dedent(CHILD), cache)
    assert full["ok"] and full["outcomes"] == ["uncached"], full  # the fault did bite
    after = run_python(CHILD, cache)
    assert after["ok"] and after["outcomes"] == ["built"], after
    again = run_python(CHILD, cache)
    assert again["ok"] and again["outcomes"] == ["hit"], again


def test_a_cache_directory_that_cannot_be_made_costs_only_the_cache(tmp_path):
    """INDUCTOR_CPP_CACHE_DIR below a regular file (no directory can be made there, as on a
    read-only file system, for root too): the graph runs its generated kernels uncached, with a
    warning naming the directory."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    out = run_python(CHILD, {"INDUCTOR_CPP_CACHE_DIR": str(blocker / "cache")})
    assert out["ok"] and out["outcomes"] == ["uncached"], out
    assert "cache not used" in out["_stderr"] and str(blocker) in out["_stderr"], out["_stderr"][-2000:]


def _pointwise_and_sums(x, y):
    return torch.where(x > 0, x * y, x - y).sum(dim=-1), torch.maximum(x, y).amax(dim=0)


@pytest.mark.parametrize("case", ["nan_inf", "zero_size", "overlapping", "aliased", "views_of_one"])
def test_inputs_eager_handles_are_answered_as_eager_answers_them(case):
    if case == "nan_inf":
        x = torch.tensor([[float("nan"), 1.0, -float("inf")], [float("inf"), -2.0, 0.0]])
        args = (x, torch.tensor([[1.0, float("nan"), 2.0], [-1.0, float("inf"), 3.0]]))
    elif case == "zero_size":
        args = (torch.randn(5, 0), torch.randn(5, 0))
    elif case == "overlapping":  # rows that share memory (stride 1 along dim 0 of a 1-D buffer)
        base = torch.randn(12)
        args = (base.as_strided((5, 8), (1, 1)), base.as_strided((5, 8), (0, 1)))
    elif case == "aliased":
        x = torch.randn(6, 7)
        args = (x, x)
    else:
        base = torch.randn(8, 7)
        args = (base[1:7], base[:6])
    expected = _pointwise_and_sums(*args)
    got = compile_cpp(_pointwise_and_sums)(*args)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, equal_nan=True)


def test_in_place_update_of_an_aliased_argument_matches_eager():
    def f(a, b):
        a.mul_(2)
        return a + b

    x = torch.randn(5, 6)
    ours, theirs = x.clone(), x.clone()
    assert_same(compile_cpp(f)(ours, ours), f(theirs, theirs))
    assert_same(ours, theirs)


def test_more_than_2_to_the_31_elements():
    """int32 element offsets would wrap past 2^31 elements: a 2^31 + 7 element uint8 tensor
    (2 GiB) through a pointwise kernel and a sum must give eager's answer."""
    n = 2**31 + 7
    x = torch.ones(n, dtype=torch.uint8)  # 2 GiB: the CI machine has them
    x[-3:] = 5

    def f(t):
        return (t + 1).to(torch.int64).sum()

    assert int(compile_cpp(f)(x)) == 2 * n + 12
    graphs = test_graphs()
    assert len(graphs) == 1 and graphs[0].counters()["kernels"] >= 1, "no generated kernel ran"


def test_a_long_training_run_keeps_resident_memory_flat():
    """3,000 training steps of a small MLP (forward, backward, SGD): resident memory after the
    first 500 steps grows by less than 8 MiB over the remaining 2,500 (a per-step leak of even a
    few KiB would show)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.LayerNorm(64),
                                torch.nn.Linear(64, 10))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    compiled = torch.compile(model, backend="inductor_cpp")
    x, target = torch.randn(16, 32), torch.randint(0, 10, (16,))

    def rss_kib() -> int:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))

    for step in range(3000):
        if step == 500:
            start = rss_kib()
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(compiled(x), target)
        loss.backward()
        opt.step()
    assert torch.isfinite(loss)
    assert rss_kib() - start < 8 * 1024, (start, rss_kib())
