"""Cache entries carried between caches (cache_transfer.py): torch.compiler.save_cache_artifacts()
in one process and load_cache_artifacts() in a fresh one with an empty cache give a warm start
(cache hits, no C++ compiler run); `python -m inductor_cpp.cache export / import` does the same
through a file; a tampered entry is refused before anything is written."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile

COMPILE = """
import json, sys, torch, inductor_cpp
{before}
f = torch.compile(lambda x: torch.softmax(x.sin(), -1) * 2, backend="inductor_cpp")
f(torch.randn(4, 8))
{after}
print(json.dumps(inductor_cpp.counters()))
"""


def _child(cache: str, before: str = "", after: str = "", cwd=None) -> dict:
    env = dict(os.environ, INDUCTOR_CPP_CACHE_DIR=cache)
    proc = subprocess.run([sys.executable, "-c", COMPILE.format(before=before, after=after)],
                          env=env, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_torch_mega_cache_carries_our_entries_to_a_fresh_process(tmp_path):
    blob = tmp_path / "artifacts.bin"
    first = _child(str(tmp_path / "a"), after=(
        "artifacts = torch.compiler.save_cache_artifacts()\n"
        f"open({str(blob)!r}, 'wb').write(artifacts[0])\n"
        "assert artifacts[1].artifacts['inductor_cpp'], artifacts[1]"))
    assert first["cxx_compiler_invocations"] == 1
    second = _child(str(tmp_path / "b"), before=(
        f"torch.compiler.load_cache_artifacts(open({str(blob)!r}, 'rb').read())"))
    assert second["cache_hits"] == 1 and second["cxx_compiler_invocations"] == 0, second


def test_export_and_import_through_a_file(tmp_path):
    first = _child(str(tmp_path / "a"))
    assert first["cache_misses"] == 1
    archive = tmp_path / "entries.tar"

    def cli(cache: str, *args: str) -> str:
        proc = subprocess.run([sys.executable, "-m", "inductor_cpp.cache", *args],
                              env=dict(os.environ, INDUCTOR_CPP_CACHE_DIR=cache),
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc.stdout

    assert "exported 1 entries" in cli(str(tmp_path / "a"), "export", str(archive))
    assert "imported 1 entries" in cli(str(tmp_path / "c"), "import", str(archive))
    assert "(1 already there)" in cli(str(tmp_path / "c"), "import", str(archive))
    assert "1 entries in" in cli(str(tmp_path / "c"), "verify")
    third = _child(str(tmp_path / "c"))
    assert third["cache_hits"] == 1 and third["cxx_compiler_invocations"] == 0, third


def test_a_tampered_entry_is_refused_before_anything_is_written(tmp_path, monkeypatch):
    monkeypatch.setenv("INDUCTOR_CPP_CACHE_DIR", str(tmp_path / "a"))
    _child(str(tmp_path / "a"))
    from inductor_cpp import cache_transfer

    key = cache_transfer.cached_keys()[0]
    blob = cache_transfer.pack_entry(key)
    assert blob is not None
    members = {}
    with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
        for m in tar.getmembers():
            members[m.name] = tar.extractfile(m).read()
    victim = next(n for n in members if not n.endswith("meta.json"))
    members[victim] = members[victim][:-1] + bytes([members[victim][-1] ^ 1])
    tampered = io.BytesIO()
    with tarfile.open(fileobj=tampered, mode="w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    monkeypatch.setenv("INDUCTOR_CPP_CACHE_DIR", str(tmp_path / "b"))
    import pytest

    with pytest.raises(ValueError, match="SHA-256"):
        cache_transfer.install_entry(tampered.getvalue())
    assert not os.path.exists(cache_transfer.entry_dir(key))
    escaping = io.BytesIO()
    with tarfile.open(fileobj=escaping, mode="w") as tar:
        info = tarfile.TarInfo(f"{key}/../../evil")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    with pytest.raises(ValueError, match="unexpected member"):
        cache_transfer.install_entry(escaping.getvalue())
