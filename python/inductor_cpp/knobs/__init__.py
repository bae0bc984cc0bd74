"""The INDUCTOR_CPP_* environment variables ("knobs"), read from Python.

Every knob is declared once, in the C++ registry knobs/knob_list.h: name, type, default, a
one-line doc, whether it can change what a graph compiles to (then it is part of the cache
key), who reads it (its scope) and the torch.compile option it backs, if any. This module gets
that table from _C and reads values with the registry's own rules (an empty value is unset; a
bool is false for 0, false, off or no), so Python reads INDUCTOR_CPP_* only here. The table as
docs/knobs.md:

    python -m inductor_cpp.knobs --markdown > docs/knobs.md

An INDUCTOR_CPP_* variable that is no knob (a typo) is logged once per process, at `import
inductor_cpp`, naming the closest knob.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import _C


@dataclass(frozen=True)
class Knob:
    name: str
    type: str  # bool, count, float, text or path
    default: str  # the value when unset, "" for none
    codegen: bool  # part of the cache key
    scope: str
    option: str  # the torch.compile option it backs, or ""
    doc: str


KNOBS: dict[str, Knob] = {row["name"]: Knob(**row) for row in _C.knobs.table()}

# Taken before anything reads a knob (C++ would print them at its first read); logs.py logs
# them once its handler is in place.
_unknown_variable_warnings: list[str] = _C.knobs.take_unknown_warnings()


def raw(name: str) -> str | None:
    """The variable's value; None when unset or empty."""
    return _C.knobs.raw(name)


def get_text(name: str) -> str:
    """The value, else the declared default."""
    return _C.knobs.get_text(name)


def get_bool(name: str) -> bool:
    return _C.knobs.get_bool(name)


def get_count(name: str) -> int | None:
    """The value if a decimal integer, else the default's (None if there is none)."""
    return _C.knobs.get_count(name)


def get_float(name: str) -> float | None:
    """The value if a number, else the default's (None if there is none)."""
    return _C.knobs.get_float(name)


def malformed(name: str) -> bool:
    """Set to something its type cannot read (for readers that refuse it)."""
    return _C.knobs.malformed(name)


def take_unknown_variable_warnings() -> list[str]:
    """The warnings about unknown INDUCTOR_CPP_* variables, the first time; then none."""
    global _unknown_variable_warnings
    taken, _unknown_variable_warnings = _unknown_variable_warnings, []
    return taken


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def markdown() -> str:
    """docs/knobs.md: every knob, grouped by scope in the order the registry declares them."""
    lines = [
        "# Knobs: the INDUCTOR_CPP_* environment variables",
        "",
        "Generated from the registry (`knobs/knob_list.h`) by",
        "`python -m inductor_cpp.knobs --markdown > docs/knobs.md`; do not edit by hand",
        "(`tests/python/test_knobs.py` fails when this file is stale).",
        "",
        "An empty value is the same as unset. A bool is false for `0`, `false`, `off` or `no` (any",
        "case), true otherwise; a count is a decimal integer. *Codegen*: the value can change what a",
        "graph compiles to, so a value other than the default is part of the cache key. *Option*:",
        "the `torch.compile(..., options={...})` entry that backs the variable and wins over it.",
        "An `INDUCTOR_CPP_*` variable that is not listed here is reported once per process, with",
        "the closest name. The matrix-tuning knobs are read once per process, at the first matrix",
        "call.",
    ]
    scopes = list(dict.fromkeys(k.scope for k in KNOBS.values()))
    for scope in scopes:
        lines += ["", f"## {scope}", "",
                  "| Variable | Type | Default | Codegen | Option | What it does |",
                  "|---|---|---|---|---|---|"]
        for k in KNOBS.values():
            if k.scope != scope:
                continue
            default = f"`{k.default}`" if k.default else "unset"
            option = f"`{k.option}`" if k.option else ""
            codegen = "yes" if k.codegen else "no"
            lines.append(f"| `{k.name}` | {k.type} | {default} | {codegen} | {option} | "
                         f"{_cell(k.doc)} |")
    return "\n".join(lines) + "\n"
