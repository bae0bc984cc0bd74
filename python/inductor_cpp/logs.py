"""Logging registry of inductor_cpp: graded artifacts switched on by name.

    INDUCTOR_CPP_LOGS=graph,cache python train.py        # or: all
    inductor_cpp.set_logs("fallbacks")                    # same, from Python

Each artifact is a kind of message; enabled artifacts go to stderr through the standard
`logging` logger "inductor_cpp". Warnings (a graph that runs eagerly, a failed compile) are
always emitted, whatever is enabled. The C++ side returns its messages tagged with these
same artifact names (CompiledGraph.logs()).
"""

from __future__ import annotations

import logging
import os
import sys

ARTIFACTS: dict[str, str] = {
    "output_code": "the program generated for each graph, labelled with its cache key: the "
    "execution plan (kernel calls and ATen calls) and the generated C++ source",
    "graph": "the ATen-level graph each compile receives, in its text form",
    "cache": "cache key and outcome (hit, built, rebuilt_corrupt, uncached) per graph",
    "perf": "time spent compiling generated kernels, with the compiler command",
    "fallbacks": "each op that runs as an ATen call or graph that runs eagerly, with the "
    "reason and the user's source line",
}

logger = logging.getLogger("inductor_cpp")
_enabled: set[str] = set()
_handler: logging.Handler | None = None


def _parse(spec: str) -> set[str]:
    names = {s.strip() for s in spec.replace(";", ",").split(",") if s.strip()}
    if "all" in names:
        return set(ARTIFACTS)
    unknown = names - set(ARTIFACTS)
    if unknown:
        raise ValueError(
            f"INDUCTOR_CPP_LOGS: unknown artifact(s) {sorted(unknown)}; known: "
            f"{', '.join(sorted(ARTIFACTS))} (or 'all')"
        )
    return names


def set_logs(spec: str | None = None, **flags: bool) -> None:
    """Enable artifacts: set_logs("graph,cache"), set_logs(cache=True), set_logs("") for none."""
    global _enabled
    names = _parse(spec) if spec else set()
    for name, on in flags.items():
        if name not in ARTIFACTS:
            raise ValueError(f"unknown log artifact {name!r}; known: {', '.join(sorted(ARTIFACTS))}")
        if on:
            names.add(name)
    _enabled = names
    _ensure_handler()


def enabled(artifact: str) -> bool:
    return artifact in _enabled


def emit(artifact: str, message: str) -> None:
    if artifact in _enabled:
        logger.info("[%s] %s", artifact, message)


def warn(message: str) -> None:
    logger.warning("%s", message)


def _ensure_handler() -> None:
    global _handler
    if _handler is None:
        _handler = logging.StreamHandler(sys.stderr)
        _handler.setFormatter(logging.Formatter("inductor_cpp: %(message)s"))
        logger.addHandler(_handler)
        logger.propagate = False
    logger.setLevel(logging.INFO if _enabled else logging.WARNING)


set_logs(os.environ.get("INDUCTOR_CPP_LOGS", ""))
