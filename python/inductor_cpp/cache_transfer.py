"""Cache entries carried to another process or machine: torch's mega-cache and our export / import.

    artifacts, info = torch.compiler.save_cache_artifacts()   # carries our entries too
    ...                                                        # elsewhere, a fresh process:
    import inductor_cpp                                        # registers our artifact type
    torch.compiler.load_cache_artifacts(artifacts)             # then compiles are cache hits

    python -m inductor_cpp.cache export FILE    # every entry of the cache, one tar file
    python -m inductor_cpp.cache import FILE    # into this cache (entries already there kept)

Each graph compiled with the cache on is recorded with torch's CacheArtifactManager as an
`inductor_cpp` artifact (its key; the entry is packed when torch saves the artifacts): its entry
directory, meta.json and the files it lists, as a tar.
Installing one checks it as a lookup would before anything is loaded: the key is 64 hex
digits, members are plain files named `<key>/<name>` with simple names, meta.json names that
key and lists exactly those files with their sizes and SHA-256. It is staged in the root's
tmp/ (0700 directories, 0600 files) and renamed into place, as the store publishes; an entry
already present is left alone. A graph's key covers the toolchain, the CPU and the torch
build (docs/cache.md), so entries only hit where those match.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import secrets
import tarfile
from typing import Iterable

from . import _C

ARTIFACT_TYPE = "inductor_cpp"
_KEY = re.compile(r"^[0-9a-f]{64}$")
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]*$")


def entry_dir(key: str) -> str:
    return os.path.join(_C.cache_root(), key[:2], key)


def pack_entry(key: str) -> bytes | None:
    """The entry of `key` as a tar (meta.json, then the files it lists); None when absent."""
    directory = entry_dir(key)
    try:
        with open(os.path.join(directory, "meta.json"), "rb") as f:
            meta_bytes = f.read()
        names = sorted(json.loads(meta_bytes)["files"])
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            for name, data in [("meta.json", meta_bytes)] + [
                    (n, _read(os.path.join(directory, n))) for n in names]:
                member = tarfile.TarInfo(f"{key}/{name}")
                member.size = len(data)
                tar.addfile(member, io.BytesIO(data))
        return buffer.getvalue()
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _members(blob: bytes) -> tuple[str, dict[str, bytes]]:
    """The entry's key and files from a tar made by pack_entry; ValueError when it is not one."""
    files: dict[str, bytes] = {}
    key = ""
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r:") as tar:
        for member in tar.getmembers():
            parts = member.name.split("/")
            if (not member.isfile() or len(parts) != 2 or not _KEY.match(parts[0])
                    or not _NAME.match(parts[1]) or (key and parts[0] != key)):
                raise ValueError(f"unexpected member {member.name!r}")
            key = parts[0]
            if parts[1] in files:
                raise ValueError(f"{parts[1]} twice")
            extracted = tar.extractfile(member)
            files[parts[1]] = extracted.read() if extracted else b""
    if not key or "meta.json" not in files:
        raise ValueError("no meta.json")
    meta = json.loads(files["meta.json"])
    listed = meta.get("files")
    if meta.get("key") != key or not isinstance(listed, dict) or set(listed) != set(files) - {"meta.json"}:
        raise ValueError("meta.json does not describe the files")
    for name, record in listed.items():
        data = files[name]
        if record.get("size") != len(data) or record.get("sha256") != hashlib.sha256(data).hexdigest():
            raise ValueError(f"{name}: size or SHA-256 differs from meta.json")
    return key, files


def install_entry(blob: bytes) -> str | None:
    """Installs a packed entry into this process's cache root; its key, or None when it was
    already there. Raises ValueError for a blob that is not a sound entry."""
    key, files = _members(blob)
    target = entry_dir(key)
    if os.path.exists(target):
        return None
    root = _C.cache_root()
    staging = os.path.join(root, "tmp", f"{key}.{os.getpid()}.{secrets.token_hex(4)}")
    os.makedirs(os.path.join(root, "tmp"), mode=0o700, exist_ok=True)
    os.makedirs(os.path.dirname(target), mode=0o700, exist_ok=True)
    os.mkdir(staging, 0o700)
    try:
        for name, data in list(files.items()) + [("last_used", b"")]:
            fd = os.open(os.path.join(staging, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        os.rename(staging, target)
        return key
    except OSError:
        if os.path.exists(target):  # another process installed it first
            return None
        raise
    finally:
        if os.path.exists(staging):
            for name in os.listdir(staging):
                os.unlink(os.path.join(staging, name))
            os.rmdir(staging)


def cached_keys() -> list[str]:
    return [f["key"] for f in _C.cache_verify() if f["key"] and not f["problem"]]


def export(path: str, keys: Iterable[str] | None = None) -> int:
    """Writes every sound entry (or `keys`) into one tar file; returns how many."""
    count = 0
    with tarfile.open(path, "w") as out:
        for key in keys if keys is not None else cached_keys():
            blob = pack_entry(key)
            if blob is None:
                continue
            member = tarfile.TarInfo(f"{key}.tar")
            member.size = len(blob)
            out.addfile(member, io.BytesIO(blob))
            count += 1
    return count


def import_(path: str) -> tuple[int, int]:
    """Installs the entries of an exported file: (installed, already present)."""
    installed = present = 0
    with tarfile.open(path, "r:") as archive:
        for member in archive.getmembers():
            extracted = archive.extractfile(member) if member.isfile() else None
            if extracted is None:
                raise ValueError(f"unexpected member {member.name!r}")
            if install_entry(extracted.read()):
                installed += 1
            else:
                present += 1
    return installed, present


# What a recorded artifact holds until torch serializes it: the entry is packed only then, so
# a process that compiles thousands of graphs keeps their keys, not their files, in memory.
_PACK_WHEN_SAVED = b""


def record(key: str) -> None:
    """Offers the entry of a graph just compiled (built or hit) to torch's mega-cache."""
    if _registered:
        from torch.compiler._cache import CacheArtifactManager

        CacheArtifactManager.record_artifact(ARTIFACT_TYPE, key, _PACK_WHEN_SAVED)


def _register() -> bool:
    """Our artifact type for torch.compiler.save_cache_artifacts / load_cache_artifacts."""
    try:
        from torch.compiler._cache import CacheArtifact, CacheArtifactFactory
    except ImportError:  # a torch without the mega-cache
        return False

    class InductorCppCacheArtifact(CacheArtifact):
        def __getattribute__(self, name: str):
            value = object.__getattribute__(self, name)
            if name == "content" and value == _PACK_WHEN_SAVED:  # being saved: pack it now
                return pack_entry(object.__getattribute__(self, "key")) or b""
            return value

        def populate_cache(self) -> None:
            try:
                install_entry(self.content)
            except (ValueError, OSError, tarfile.TarError) as e:  # the others still load
                from . import logs

                logs.warn(f"cache artifact {self.key[:12]} not installed: {e}")

        @staticmethod
        def type() -> str:
            return ARTIFACT_TYPE

    if ARTIFACT_TYPE not in CacheArtifactFactory._artifact_types:
        CacheArtifactFactory.register(InductorCppCacheArtifact)
    return True


_registered = _register()
