"""The source tree's shape, checked in CI (issue 39): folders include one another in one
direction only (no cycle between folders, nor between files), no source or test file is over
600 lines, no design document over 400, environment variables are read only through the knobs
registry, and measurement code lives in `python -m inductor_cpp.bench`, not in scripts/.

These read files only (no build, no torch), so they take well under a second."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CPP_FOLDERS = ("ir", "inductor", "codegen", "matrix", "runtime", "kernels_cache", "knobs", "python/csrc")
CPP_SUFFIXES = {".h", ".cpp", ".in"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def _cpp_files() -> list[Path]:
    return sorted(p for folder in CPP_FOLDERS if (ROOT / folder).is_dir()
                  for p in (ROOT / folder).rglob("*") if p.suffix in CPP_SUFFIXES)


def _includes(path: Path) -> set[Path]:
    """The project files `path` includes, by path from the root (or, failing that, relative
    to its own folder)."""
    found = set()
    for line in path.read_text(errors="replace").splitlines():
        m = INCLUDE.match(line)
        if not m:
            continue
        for candidate in (ROOT / m.group(1), path.parent / m.group(1)):
            if candidate.is_file():
                found.add(candidate.resolve())
                break
    return found


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of `graph` as a list of nodes, or None."""
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def _graphs() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    files: dict[str, set[str]] = defaultdict(set)
    folders: dict[str, set[str]] = defaultdict(set)
    for path in _cpp_files():
        source = str(path.relative_to(ROOT))
        for target in _includes(path):
            name = str(target.relative_to(ROOT))
            files[source].add(name)
            if path.parent != target.parent:
                folders[str(path.parent.relative_to(ROOT))].add(str(target.parent.relative_to(ROOT)))
    return files, folders


def test_folders_include_one_another_one_way():
    _, folders = _graphs()
    assert _cycle(folders) is None, f"folder include cycle: {' -> '.join(_cycle(folders))}"


def test_files_include_one_another_one_way():
    files, _ = _graphs()
    assert _cycle(files) is None, f"file include cycle: {' -> '.join(_cycle(files))}"


def _tracked(pattern: str) -> list[Path]:
    return sorted(p for p in ROOT.glob(pattern) if "build" not in p.relative_to(ROOT).parts[:1])


def test_no_source_file_over_600_lines():
    long = []
    for suffix in ("*.h", "*.cpp", "*.py", "*.in", "*.c"):
        for p in ROOT.rglob(suffix):
            rel = p.relative_to(ROOT)
            if rel.parts[0] in ("build", ".git", "out") or "__pycache__" in rel.parts:
                continue
            if (n := len(p.read_text(errors="replace").splitlines())) > 600:
                long.append(f"{rel}: {n}")
    assert not long, "files over 600 lines:\n" + "\n".join(long)


def test_no_document_over_400_lines():
    long = [f"{p.relative_to(ROOT)}: {n}" for p in sorted((ROOT / "docs").rglob("*.md"))
            if (n := len(p.read_text().splitlines())) > 400]
    assert not long, "documents over 400 lines:\n" + "\n".join(long)


def test_environment_is_read_only_through_the_knobs_registry():
    readers = []
    for path in _cpp_files():
        if path.relative_to(ROOT).parts[0] == "knobs":
            continue
        for k, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if re.search(r"\bgetenv\s*\(", line):
                readers.append(f"{path.relative_to(ROOT)}:{k}: {line.strip()}")
    assert not readers, "getenv outside knobs/:\n" + "\n".join(readers)


def test_measurement_code_lives_in_the_bench_cli():
    scripts = sorted(p.name for p in (ROOT / "scripts").iterdir())
    assert not (ROOT / "scripts" / "debug").exists(), "scripts/debug/ is back"
    assert set(scripts) <= {"setup.sh", "main.sh", "test.sh", "gpu.sh", "gpu_carry.sh"}, scripts
