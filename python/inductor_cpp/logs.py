"""Logging registry of inductor_cpp: graded artifacts switched on by name or by level.

    INDUCTOR_CPP_LOGS=graph,cache python train.py        # by name
    INDUCTOR_CPP_LOGS=2 python train.py                   # by level (see LEVELS)
    INDUCTOR_CPP_LOGS=all python train.py                 # everything
    inductor_cpp.set_logs("fusion,perf")                  # same, from Python

Each artifact is a kind of message; enabled artifacts go to stderr through the standard
`logging` logger "inductor_cpp". `output_code`, `schedule` and `fusion` are also switched on by
torch's own `TORCH_LOGS` / `torch._logging.set_logs` names of the same meaning, and
`TORCH_LOGS="+inductor_cpp"` turns on every artifact (our logger at DEBUG). Under `TORCH_TRACE`
each graph's graph, fusion, plan, generated source and compile times also go into torch's
structured trace as `inductor_cpp_*` artifacts (tlparse shows them). Warnings (a graph that runs
eagerly, a failed compile) are always emitted, whatever is enabled. The C++ side produces records only for the artifacts
asked for (`requested()`) and returns them tagged with these names (CompiledGraph.logs()).
Examples of every artifact's output: docs/observability.md.
"""

from __future__ import annotations

import logging
import sys

from . import knobs
from .errors import OptionError

# In order of how much they print, a few lines per graph first.
ARTIFACTS: dict[str, str] = {
    "cache": "cache key and outcome (hit, built, rebuilt_corrupt, uncached) per graph",
    "fallbacks": "each op that runs as an ATen call or graph that runs eagerly, with the "
    "reason and the user's source line",
    "cudagraphs": "each CUDA graph recorded (mode=\"reduce-overhead\") and why a graph is not "
    "recorded",
    "perf": "where each graph's compile time went: import, key, cache, lowering, each pass, "
    "C++ emission and the C++ compiler (with its command line)",
    "graph": "the ATen-level graph each compile receives, in its text form",
    "fusion": "which graph nodes each generated kernel computes, which run as ATen calls, "
    "and which were folded into indexing",
    "schedule": "the scheduled kernel IR: loop nests with their parallel/vector attributes",
    "output_code": "the program generated for each graph, labelled with its cache key: the "
    "execution plan (kernel calls and ATen calls) and the generated C++ source",
    "ir": "the loop IR as lowered and after every pass (on a cache hit it is rebuilt for the "
    "log: lowering and passes only, the kernels still come from the cache)",
}

# INDUCTOR_CPP_LOGS=<level>: each level adds to the one before (tinygrad's DEBUG=n idea).
LEVELS: dict[str, tuple[str, ...]] = {
    "0": (),
    "1": ("cache", "fallbacks", "cudagraphs", "perf"),
    "2": ("cache", "fallbacks", "cudagraphs", "perf", "graph", "fusion"),
    "3": ("cache", "fallbacks", "cudagraphs", "perf", "graph", "fusion", "schedule", "output_code"),
    "4": tuple(ARTIFACTS),
}

# Artifacts torch._logging has under the same name and meaning: `TORCH_LOGS=output_code` (or
# torch._logging.set_logs(output_code=True)) turns ours on too, beside stock Inductor's.
TORCH_SHARED = ("output_code", "schedule", "fusion")

logger = logging.getLogger("inductor_cpp")
_enabled: set[str] = set()
_handler: logging.Handler | None = None


def _parse(spec: str) -> set[str]:
    names = {s.strip() for s in spec.replace(";", ",").split(",") if s.strip()}
    enabled: set[str] = set()
    for name in list(names):
        if name == "all":
            enabled |= set(ARTIFACTS)
            names.discard(name)
        elif name in LEVELS:
            enabled |= set(LEVELS[name])
            names.discard(name)
    unknown = names - set(ARTIFACTS)
    if unknown:
        raise OptionError(
            f"INDUCTOR_CPP_LOGS: unknown artifact(s) {sorted(unknown)}; known: "
            f"{', '.join(ARTIFACTS)} (or 'all', or a level {min(LEVELS)}-{max(LEVELS)})"
        )
    return enabled | names


def set_logs(spec: str | None = None, **flags: bool) -> None:
    """Enable artifacts: set_logs("graph,cache"), set_logs("2"), set_logs(cache=True),
    set_logs("") for none. Replaces what was enabled before."""
    global _enabled
    names = _parse(spec) if spec else set()
    for name, on in flags.items():
        if name not in ARTIFACTS:
            raise OptionError(f"unknown log artifact {name!r}; known: {', '.join(ARTIFACTS)}")
        if on:
            names.add(name)
    _enabled = names
    _ensure_handler()


def _enabled_by_torch() -> set[str]:
    try:
        from torch._logging._internal import log_state
    except ImportError:  # a torch without it: only INDUCTOR_CPP_LOGS
        return set()
    return {name for name in TORCH_SHARED if log_state.is_artifact_enabled(name)}


def _everything_by_debug_level() -> bool:
    """TORCH_LOGS="+inductor_cpp" (a module name is a valid TORCH_LOGS entry: torch sets that
    logger to DEBUG with its own handler, importing us on the way) or an application's
    logging.getLogger("inductor_cpp").setLevel(DEBUG): every artifact. We never set DEBUG."""
    return logger.level == logging.DEBUG


def enabled(artifact: str) -> bool:
    return artifact in _enabled or artifact in _enabled_by_torch() or _everything_by_debug_level()


def requested() -> list[str]:
    """The enabled artifacts, for the C++ side (which builds records only for these)."""
    if _everything_by_debug_level():
        return sorted(ARTIFACTS)
    return sorted(_enabled | _enabled_by_torch())


def emit(artifact: str, message: str) -> None:
    if not enabled(artifact):
        return
    if _handler is not None and _handler in logger.handlers and len(logger.handlers) > 1:
        logger.removeHandler(_handler)  # another handler (torch's) was added after ours: one print
    if logger.level > logging.INFO:  # switched on through torch._logging
        _ensure_handler()
        logger.setLevel(logging.INFO)
    logger.info("[%s] %s", artifact, message)


def warn(message: str) -> None:
    logger.warning("%s", message)


def tracing() -> bool:
    """Whether torch's structured trace (TORCH_TRACE, read by tlparse, or a handler someone
    attached to it) is on. Not for pytest's capture handlers, which its logging plugin puts on
    every logger, nor for torch's trace handler while it has no directory."""
    try:
        from torch._logging._internal import LazyTraceHandler, trace_log
    except ImportError:
        return False
    for handler in trace_log.handlers:
        if type(handler).__module__.startswith("_pytest"):
            continue
        if isinstance(handler, LazyTraceHandler) and handler.root_dir is None and handler.stream is None:
            continue
        return True
    return False


def trace(artifacts: dict[str, str]) -> None:
    """Each text as a TORCH_TRACE artifact named `inductor_cpp_<name>` (tlparse lists them
    under the compile that made them). Nothing when tracing is off."""
    if not tracing():
        return
    from torch._logging import trace_structured

    for name, text in artifacts.items():
        if text:
            trace_structured("artifact",
                             metadata_fn=lambda n=name: {"name": f"inductor_cpp_{n}",
                                                         "encoding": "string"},
                             payload_fn=lambda t=text: t)


def _ensure_handler() -> None:
    global _handler
    if _handler is None:
        if logger.handlers:  # set up by TORCH_LOGS or the application: theirs prints ours
            _handler = logger.handlers[0]
        else:
            _handler = logging.StreamHandler(sys.stderr)
            _handler.setFormatter(logging.Formatter("inductor_cpp: %(message)s"))
            logger.addHandler(_handler)
            logger.propagate = False
    logger.setLevel(logging.INFO if _enabled else logging.WARNING)


set_logs(knobs.get_text("INDUCTOR_CPP_LOGS"))
for _message in knobs.take_unknown_variable_warnings():  # INDUCTOR_CPP_* typos, once
    warn(_message)
