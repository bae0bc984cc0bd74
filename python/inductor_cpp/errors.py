"""The errors inductor_cpp raises on purpose, all under one base class, so a caller can tell
ours from everything else: `except inductor_cpp.Error`."""

from __future__ import annotations


class Error(RuntimeError):
    """Base of every error inductor_cpp raises on purpose."""


class StrictModeError(Error):
    """Strict mode (`options={"strict": True}` or `"all"`): a graph, or with "all" an op, would
    run without our generated code. The message names the op or graph, the reason and the
    user's source line."""


class OptionError(Error, ValueError):
    """A `mode=` or `options=` value torch.compile passed that we do not accept (one line: the
    name, the closest valid ones)."""
