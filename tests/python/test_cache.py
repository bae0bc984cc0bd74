"""The on-disk cache across processes: a second process hits and builds nothing, two
concurrent processes build once, a corrupt entry is detected and rebuilt, the CLI works."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import torch

import inductor_cpp
from conftest import collect_logs, compile_cpp, fake_compiler, run_python, test_graphs

CHILD = """
    import json, os, time, torch, inductor_cpp
    barrier = os.environ.get("START_AT")
    if barrier:
        time.sleep(max(0.0, float(barrier) - time.time()))
    def f(x):
        return torch.nn.functional.gelu(x) * 2 + x.sum()
    x = torch.arange(12.0).reshape(3, 4)
    with torch.no_grad():
        y = torch.compile(f, backend="inductor_cpp")(x)
    graphs = inductor_cpp.live_graphs()
    print(json.dumps({**inductor_cpp.counters(), "ok": bool(torch.allclose(y, f(x))),
                      "keys": [g.key for g in graphs], "outcomes": [g.cache_outcome for g in graphs]}))
"""


def cache_env(tmp_path: Path) -> dict:
    return {"INDUCTOR_CPP_CACHE_DIR": str(tmp_path / "shared-cache")}


def entry_dir(tmp_path: Path, key: str) -> Path:
    return tmp_path / "shared-cache" / key[:2] / key


def test_second_process_hits_and_builds_nothing(tmp_path):
    first = run_python(CHILD, cache_env(tmp_path))
    assert first["ok"] and first["outcomes"] == ["built"]
    assert first["plan_builds"] == 1 and first["cache_misses"] == 1
    second = run_python(CHILD, cache_env(tmp_path))
    assert second["ok"] and second["outcomes"] == ["hit"]
    assert second["keys"] == first["keys"]
    assert second["cache_hits"] == 1 and second["cache_misses"] == 0
    assert second["plan_builds"] == 0 and second["cxx_compiler_invocations"] == 0
    entry = entry_dir(tmp_path, first["keys"][0])
    assert (entry / "meta.json").is_file() and (entry / "plan.json").is_file()
    assert (tmp_path / "shared-cache").stat().st_mode & 0o077 == 0  # private to the user


def test_concurrent_processes_build_once(tmp_path):
    """Four processes compile one graph at the same moment: one builds, three wait for its lock
    and load what it published."""
    env = dict(os.environ, **cache_env(tmp_path), START_AT=str(time.time() + 12.0))
    import textwrap
    procs = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(CHILD)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(4)]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    assert all(r["ok"] for r in results)
    assert sum(r["plan_builds"] for r in results) == 1
    assert sorted(o for r in results for o in r["outcomes"]) == ["built", "hit", "hit", "hit"]


def test_corrupt_entry_is_detected_and_rebuilt(tmp_path):
    first = run_python(CHILD, cache_env(tmp_path))
    plan = entry_dir(tmp_path, first["keys"][0]) / "plan.json"
    data = plan.read_bytes()
    plan.write_bytes(data[: len(data) // 2])  # truncated, as by a crash or a full disk
    second = run_python(CHILD, cache_env(tmp_path))
    assert second["ok"] and second["outcomes"] == ["rebuilt_corrupt"]
    assert second["cache_corrupt_rebuilt"] == 1 and second["plan_builds"] == 1
    assert plan.read_bytes() == data  # rebuilt whole

    flipped = bytearray(data)
    flipped[len(flipped) // 2] ^= 0x01  # same size, one bit off
    plan.write_bytes(bytes(flipped))
    third = run_python(CHILD, cache_env(tmp_path))
    assert third["ok"] and third["outcomes"] == ["rebuilt_corrupt"]


def test_unsafe_cache_root_is_not_used(tmp_path, monkeypatch):
    root = tmp_path / "open-cache"
    root.mkdir()
    root.chmod(0o777)  # anyone could plant an artifact here
    monkeypatch.setenv("INDUCTOR_CPP_CACHE_DIR", str(root))
    f = compile_cpp(lambda x: x.sin() * 2)
    x = torch.randn(4)
    with collect_logs() as messages:
        torch.testing.assert_close(f(x), x.sin() * 2)
    assert any("cache not used" in m and str(root) in m for m in messages), messages
    graphs = test_graphs()
    assert [g.cache_outcome for g in graphs] == ["uncached"]
    assert not any(p.name != "tmp" for p in root.iterdir() if len(p.name) == 2)


def test_cache_cli_info_and_clear(tmp_path):
    run_python(CHILD, cache_env(tmp_path))
    root = tmp_path / "shared-cache"
    (root / "unrelated.txt").write_text("keep me")
    env = dict(os.environ, **cache_env(tmp_path))
    info = subprocess.run([sys.executable, "-m", "inductor_cpp.cache", "info"], env=env,
                          capture_output=True, text=True, check=True).stdout
    assert f"root: {root}" in info and "entries: 1" in info
    cleared = subprocess.run([sys.executable, "-m", "inductor_cpp.cache", "clear"], env=env,
                             capture_output=True, text=True, check=True).stdout
    assert "removed 1 entries" in cleared
    assert (root / "unrelated.txt").read_text() == "keep me"
    again = subprocess.run([sys.executable, "-m", "inductor_cpp.cache", "info"], env=env,
                           capture_output=True, text=True, check=True).stdout
    assert "entries: 0" in again


def _verify(env: dict) -> tuple[int, str]:
    done = subprocess.run([sys.executable, "-m", "inductor_cpp.cache", "verify"], env=env,
                          capture_output=True, text=True)
    return done.returncode, done.stdout


def test_cache_cli_verify_lists_corrupt_unsafe_and_stale_and_changes_nothing(tmp_path):
    first = run_python(CHILD, cache_env(tmp_path))
    key = first["keys"][0]
    entry, root = entry_dir(tmp_path, key), tmp_path / "shared-cache"
    env = dict(os.environ, **cache_env(tmp_path))
    rc, out = _verify(env)
    assert rc == 0 and f"ok: {key}" in out and "1 entries" in out, out
    # a plan that fails validation although its checksums were resealed
    plan = json.loads((entry / "plan.json").read_text())
    plan["kernel_library"] = "../../evil.so"
    (entry / "plan.json").write_text(json.dumps(plan))
    _reseal(entry, "plan.json")
    rc, out = _verify(env)
    assert rc == 1 and f"corrupt: plan.json" in out and key in out, out
    # a library whose bytes no longer match meta.json
    with open(entry / "kernels.so", "ab") as f:
        f.write(b"\0")
    rc, out = _verify(env)
    assert rc == 1 and "corrupt:" in out and "kernels.so" in out, out
    # a leftover build directory of a process that died two hours ago
    stale = root / "tmp" / f"{key}.4242.deadbeef"
    stale.mkdir(parents=True, exist_ok=True)
    os.utime(stale, (time.time() - 7200, time.time() - 7200))
    # a shard directory others may write to: unsafe, whatever its entry holds
    entry.parent.chmod(0o777)
    rc, out = _verify(env)
    assert rc == 1 and "unsafe shard dir" in out and "stale:" in out and str(stale) in out, out
    assert entry.is_dir() and stale.is_dir()  # verify changes nothing
    entry.parent.chmod(0o700)
    cleared = subprocess.run([sys.executable, "-m", "inductor_cpp.cache", "clear"], env=env,
                             capture_output=True, text=True, check=True).stdout
    assert "removed 1 entries" in cleared and not entry.exists() and not stale.exists()
    rc, out = _verify(env)
    assert rc == 0 and "0 entries" in out, out


def _reseal(entry: Path, name: str) -> None:
    """Rewrites meta.json's size and sha256 for `name`: an attacker who can write the entry can
    do that too, so the checksums alone do not make a tampered entry safe."""
    import hashlib
    meta = json.loads((entry / "meta.json").read_text())
    data = (entry / name).read_bytes()
    meta["files"][name] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    (entry / "meta.json").write_text(json.dumps(meta))


def test_plan_naming_a_library_outside_the_entry_is_refused(tmp_path):
    first = run_python(CHILD, cache_env(tmp_path))
    entry = entry_dir(tmp_path, first["keys"][0])
    marker = tmp_path / "foreign-code-ran"
    source = tmp_path / "evil.c"
    source.write_text('#include <stdio.h>\n__attribute__((constructor)) static void run(void) '
                      '{ FILE* f = fopen("%s", "w"); if (f) fclose(f); }\n' % marker)
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(tmp_path / "evil.so"), str(source)], check=True)
    plan = json.loads((entry / "plan.json").read_text())
    assert plan["kernel_library"] == "kernels.so"
    plan["kernel_library"] = os.path.relpath(tmp_path / "evil.so", entry)  # "../../../evil.so"
    (entry / "plan.json").write_text(json.dumps(plan))
    _reseal(entry, "plan.json")
    second = run_python(CHILD, cache_env(tmp_path))
    assert second["ok"], second
    assert not marker.exists(), "a library outside the cache entry was loaded"
    assert second["plan_builds"] == 1 and second["outcomes"] == ["rebuilt_corrupt"], second
    assert json.loads((entry / "plan.json").read_text())["kernel_library"] == "kernels.so"


def test_hung_compiler_is_killed_at_its_deadline(tmp_path):
    """A compiler that never finishes (and a child it started) is killed with its process group
    at INDUCTOR_CPP_TOOL_TIMEOUT_S; the graph runs as ATen calls, nothing is cached, and the
    next process with a working compiler builds the graph (the lock was released)."""
    pid_file = tmp_path / "grandchild.pid"
    hung = fake_compiler(tmp_path / "hung-cxx", f"sleep 300 & echo $! > {pid_file}\nwait\n")
    env = {**cache_env(tmp_path), "CXX": str(hung), "INDUCTOR_CPP_TOOL_TIMEOUT_S": "3"}
    start = time.monotonic()
    first = run_python(CHILD, env, timeout=120)
    assert first["ok"] and first["cxx_compile_failures"] == 1, first
    assert time.monotonic() - start < 60
    assert "killed after 3 s" in first["_stderr"], first["_stderr"][-2000:]
    grandchild = int(pid_file.read_text())
    for _ in range(50):  # reaped by init shortly after the kill
        try:
            os.kill(grandchild, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        raise AssertionError("the compiler's child outlived the deadline")
    assert not any(p.name != "tmp" and p.name != "locks" for p in (tmp_path / "shared-cache").iterdir()
                   if len(p.name) == 2 and any(p.iterdir()))
    second = run_python(CHILD, cache_env(tmp_path), timeout=300)
    assert second["ok"] and second["outcomes"] == ["built"], second


def test_ctrl_c_during_a_compile_stops_it_at_once(tmp_path):
    """SIGINT while the C++ compiler runs (in its own process group, so a terminal's Ctrl-C
    misses it): the compiler and its child are killed at once, the program gets its
    KeyboardInterrupt within seconds (not at the 600 s tool deadline), no scratch directory is
    left, nothing is cached and the lock is free: the next process builds the graph."""
    pid_file = tmp_path / "grandchild.pid"
    shell_pid = tmp_path / "compiler.pid"
    hung = fake_compiler(tmp_path / "hung-cxx",
                         f"echo $$ >> {shell_pid}\nsleep 300 & echo $! > {pid_file}\nwait\n")
    scratch = tmp_path / "tmpdir"
    scratch.mkdir()
    import signal
    import textwrap
    env = dict(os.environ, **cache_env(tmp_path), CXX=str(hung), TMPDIR=str(scratch),
               INDUCTOR_CPP_TOOL_TIMEOUT_S="600")
    # As an interactive program: Python's KeyboardInterrupt handler, even when this test runs
    # in a background job (which starts with SIGINT ignored, inherited by the child; a program
    # that ignores SIGINT keeps doing so: we do not install ours then).
    interactive = "import signal, torch\nsignal.signal(signal.SIGINT, signal.default_int_handler)\n"
    child = subprocess.Popen([sys.executable, "-c", interactive + textwrap.dedent(CHILD)],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(1200):  # the compiler starts after Dynamo and lowering
            if pid_file.exists() and pid_file.read_text().strip():
                break
            assert child.poll() is None, child.communicate()
            time.sleep(0.1)
        else:
            raise AssertionError("the compiler never started")
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        _, stderr = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    assert time.monotonic() - sent < 30
    assert child.returncode != 0 and "KeyboardInterrupt" in stderr, stderr[-2000:]
    # the compiler (every one started: a single run) and its child are gone
    compilers = [int(p) for p in shell_pid.read_text().split()]
    assert len(compilers) == 1, compilers
    for pid in compilers + [int(pid_file.read_text())]:
        for _ in range(50):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
        else:
            raise AssertionError(f"process {pid} of the compiler outlived the interrupt")
    assert not list(scratch.glob("inductor_cpp-build-*"))
    second = run_python(CHILD, cache_env(tmp_path), timeout=300)
    assert second["ok"] and second["outcomes"] == ["built"], second


def test_scratch_dirs_of_killed_builds_are_removed(tmp_path):
    """A build killed mid-compile leaves its inductor_cpp-build-* directory in TMPDIR; the next
    process that builds removes such directories once they are older than any build may run,
    and nothing else."""
    tmp = tmp_path / "tmpdir"
    tmp.mkdir()
    stale, fresh, other = (tmp / "inductor_cpp-build-stale1", tmp / "inductor_cpp-build-fresh1",
                           tmp / "unrelated-old")
    for d in (stale, fresh, other):
        d.mkdir()
        (d / "kernels.cpp").write_text("// left over")
    old = time.time() - 3 * 3600
    for d in (stale, other):
        os.utime(d, (old, old))
    result = run_python(CHILD, {**cache_env(tmp_path), "TMPDIR": str(tmp)})
    assert result["ok"] and result["outcomes"] == ["built"]
    assert not stale.exists() and fresh.exists() and other.exists()
    assert sorted(p.name for p in tmp.iterdir()) == ["inductor_cpp-build-fresh1", "unrelated-old"]


def test_tmpdir_faults_cost_nothing_while_the_cache_can_stage_builds(tmp_path):
    """A TMPDIR that is missing or a file: the build's scratch dir goes to the cache's tmp/
    (ScratchDir), the compiler pipes its stages (-pipe), the graph runs generated code and is
    cached, and no scratch dir is left behind."""
    not_a_dir = tmp_path / "a-file"
    not_a_dir.write_text("")
    for n, tmpdir in enumerate((tmp_path / "missing", not_a_dir)):
        env = {"INDUCTOR_CPP_CACHE_DIR": str(tmp_path / f"cache{n}"), "TMPDIR": str(tmpdir)}
        out = run_python(CHILD, env)
        assert out["ok"] and out["outcomes"] == ["built"], (tmpdir, out)
        assert out["cxx_compiler_invocations"] == 1, out
        staged = tmp_path / f"cache{n}" / "tmp"
        assert not list(staged.glob("inductor_cpp-build-*")) if staged.exists() else True



def test_warm_cache_runs_generated_kernels_without_a_compiler_on_path(tmp_path):
    """The compiler's identity is recorded next to the cache at build time (fingerprint.cpp):
    with an empty PATH the key is the same, the entry loads and its kernels run; and while the
    compiler's file is unchanged the identity is read from the record, not by running it."""
    env = cache_env(tmp_path)
    first = run_python(CHILD, env)
    assert first["outcomes"] == ["built"], first
    records = list((tmp_path / "shared-cache" / "toolchains").glob("*.json"))
    assert len(records) == 1 and json.loads(records[0].read_text())["identity"]
    second = run_python(CHILD, dict(env, PATH=""))
    assert second["ok"] and second["outcomes"] == ["hit"], second
    assert second["keys"] == first["keys"] and second["eager_graph_fallbacks"] == 0, second
    # a miss without a compiler: the graph runs as ATen calls (its plan), nothing cached
    assert subprocess.run([sys.executable, "-m", "inductor_cpp.cache", "clear"], check=True,
                          env=dict(os.environ, **env), capture_output=True).returncode == 0
    miss = run_python(CHILD, dict(env, PATH=""))
    assert miss["ok"] and miss["outcomes"] == ["uncached"] and miss["eager_graph_fallbacks"] == 0, miss
    assert miss["cxx_compile_failures"] == 1, miss
    # no compiler and no record: the key cannot be made, the graph runs eagerly, correctly
    records[0].unlink()
    third = run_python(CHILD, dict(env, PATH=""))
    assert third["ok"] and third["eager_graph_fallbacks"] == 1, third


def test_library_others_may_write_is_not_loaded(tmp_path):
    """The kernel library is opened once, checked through its descriptor (ours, a regular
    file, not writable by others, its sha256 as recorded) and loaded through that descriptor
    (/proc/self/fd/N): a group-writable kernels.so is refused and the entry rebuilt."""
    first = run_python(CHILD, cache_env(tmp_path))
    library = entry_dir(tmp_path, first["keys"][0]) / "kernels.so"
    library.chmod(0o664)
    second = run_python(CHILD, cache_env(tmp_path))
    assert second["ok"] and second["outcomes"] == ["rebuilt_corrupt"], second
    assert (library.stat().st_mode & 0o022) == 0


def test_symlinked_or_foreign_owned_library_is_not_loaded(tmp_path):
    """kernels.so replaced by a symlink to an identical copy (its sha256 still matches), then
    (as root) chowned to another user: each is refused (O_NOFOLLOW; the descriptor's owner) and
    the entry rebuilt."""
    import shutil
    first = run_python(CHILD, cache_env(tmp_path))
    library = entry_dir(tmp_path, first["keys"][0]) / "kernels.so"
    elsewhere = tmp_path / "elsewhere.so"
    shutil.copy2(library, elsewhere)
    library.unlink()
    library.symlink_to(elsewhere)
    second = run_python(CHILD, cache_env(tmp_path))
    assert second["ok"] and second["outcomes"] == ["rebuilt_corrupt"], second
    assert library.is_file() and not library.is_symlink()
    if os.geteuid() != 0:
        return
    os.chown(library, 65534, 65534)
    third = run_python(CHILD, cache_env(tmp_path))
    assert third["ok"] and third["outcomes"] == ["rebuilt_corrupt"], third
    assert library.stat().st_uid == os.geteuid()


TWO_GRAPHS = """
    import json, torch, inductor_cpp
    f = torch.compile(lambda x: torch.nn.functional.gelu(x) * 2 + x.sum(), backend="inductor_cpp")
    g = torch.compile(lambda x: x.cos() * 3 - x.exp(), backend="inductor_cpp")
    x = torch.arange(12.0).reshape(3, 4) / 7
    with torch.no_grad():
        ok = [bool(torch.allclose(f(x), torch.nn.functional.gelu(x) * 2 + x.sum())),
              bool(torch.allclose(g(x), x.cos() * 3 - x.exp()))] * 2
        ok += [bool(torch.allclose(f(x), torch.nn.functional.gelu(x) * 2 + x.sum()))]
    print(json.dumps({"ok": all(ok), "outcomes": [g.cache_outcome for g in inductor_cpp.live_graphs()]}))
"""


def test_libraries_loaded_through_descriptors_stay_apart(tmp_path):
    """Two kernel libraries loaded at once, each through its descriptor: the loader knows a
    library by name (/proc/self/fd/N), so a descriptor closed after the load let the second
    graph's dlopen return the first graph's library (its kernel0: wrong code, a crash)."""
    for expected in ("built", "hit"):
        out = run_python(TWO_GRAPHS, cache_env(tmp_path))
        assert out["ok"] and out["outcomes"] == [expected, expected], out
