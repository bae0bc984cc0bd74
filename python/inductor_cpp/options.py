"""Compile options: `torch.compile(..., mode=..., options={...})` and INDUCTOR_CPP_* variables.

Each option is backed by a knob of the registry (knobs/knob_list.h), which declares its
environment variable, type, default and doc. An explicit option wins over its variable.
Unknown options are an error that lists the known ones (as stock Inductor does), not a silent
no-op.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field
from typing import Any

from . import knobs
from .errors import OptionError

# torch.compile's modes. "lite": the fastest compile, no code generation (the graph's ATen plan
# run by our C++ executor); "reduce-overhead": CUDA graphs (cuda_graphs.py); the others compile
# as "default" today (docs/README "Options").
MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs", "lite")

# option name -> its knob (knobs/knob_list.h: environment variable, type, default, doc).
KNOWN: dict[str, knobs.Knob] = {k.option: k for k in knobs.KNOBS.values() if k.option}

# Options that change only what is reported, never what is generated: not sent to the
# compiler, so they stay out of the cache key.
DIAGNOSTIC = ("debug_dir",)


def _knob_value(name: str) -> Any:
    """The option's value from its environment variable, else the registry's default."""
    knob = KNOWN[name]
    if name == "strict" and (knobs.raw(knob.name) or "").lower() == "all":
        return "all"
    if knob.type == "bool":
        return knobs.get_bool(knob.name)
    if knob.type == "count":
        if knobs.malformed(knob.name):
            raise OptionError(f"inductor_cpp: {knob.name} must be a whole number, not "
                             f"{knobs.raw(knob.name)!r}")
        return knobs.get_count(knob.name)
    return knobs.get_text(knob.name)


@dataclass(frozen=True)
class Options:
    mode: str | None
    strict: bool | str
    cache: bool
    freezing: bool  # packed-weight checks; True also enters the cache key (bf16 on AMX)
    debug_dir: str | None
    layout_optimization: bool  # a graph rewrite in Python: the graph's hash covers it
    shape_specializations: int  # Python-side (specialize.py): each static graph has its key
    cudagraphs: bool = False  # run-time only (cuda_graphs.py): not in the cache key
    cudagraph_records: int = 8
    extra: dict[str, Any] = field(default_factory=dict)

    def for_compiler(self) -> dict[str, Any]:
        """What the C++ compiler receives; everything but strict, cache and a False freezing
        enters the cache key (diagnostic options such as debug_dir are not sent at all)."""
        return {"strict": self.strict, "cache": self.cache, "freezing": self.freezing,
                "mode": self.mode or "default", **self.extra}


def _gpu_tuning_text(value: Any) -> str:
    """The "gpu_tuning" option as the compiler reads it: "name=value,..." (a dict is joined in
    its order), checked by the compiler's own parser (inductor/gpu_tuning.h)."""
    if isinstance(value, dict):
        value = ",".join(f"{k}={int(v)}" for k, v in value.items())
    if not isinstance(value, str):
        raise OptionError(f'inductor_cpp: option "gpu_tuning" must be a string "name=value,..." or a '
                         f"dict, not {value!r}")
    text = ",".join(item.strip() for item in value.split(",") if item.strip())
    if text:
        from inductor_cpp import _C

        try:
            _C.check_gpu_tuning(text)  # ValueError naming the bad item and the known names
        except ValueError as e:
            raise OptionError(str(e)) from None
    return text


def _did_you_mean(name: str, valid) -> str:
    close = difflib.get_close_matches(name, [v for v in valid if v], n=2, cutoff=0.6)
    return f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""


def resolve(mode: str | None = None, options: dict[str, Any] | None = None) -> Options:
    if mode not in MODES:
        raise OptionError(f"inductor_cpp: unknown mode {mode!r}{_did_you_mean(str(mode), MODES[1:])} "
                          f"(modes: {', '.join(MODES[1:])})")
    options = dict(options or {})
    unknown = sorted(set(options) - set(KNOWN), key=str)
    if unknown:
        name = unknown[0]
        raise OptionError(f"inductor_cpp: unknown option {name!r}{_did_you_mean(str(name), KNOWN)} "
                          f"(options: {', '.join(KNOWN)}; README \"Options\")")
    values = {name: options[name] if name in options else _knob_value(name) for name in KNOWN}
    strict = values["strict"]
    if not (isinstance(strict, bool) or strict == "all"):
        raise OptionError(f'inductor_cpp: option "strict" must be True, False or "all", not {strict!r}')
    cache = values["cache"]
    if not isinstance(cache, bool):
        raise OptionError(f'inductor_cpp: option "cache" must be True or False, not {cache!r}')
    freezing = values["freezing"]
    if not isinstance(freezing, bool):
        raise OptionError(f'inductor_cpp: option "freezing" must be True or False, not {freezing!r}')
    debug_dir = values["debug_dir"]
    if debug_dir is not None and not isinstance(debug_dir, (str, os.PathLike)):
        raise OptionError(f'inductor_cpp: option "debug_dir" must be a path, not {debug_dir!r}')
    matrix_kernels = values["matrix_kernels"]
    if not isinstance(matrix_kernels, bool):
        raise OptionError(f'inductor_cpp: option "matrix_kernels" must be True or False, not {matrix_kernels!r}')
    tile_epilogues = values["matrix_tile_epilogues"]
    if not isinstance(tile_epilogues, bool):
        raise OptionError('inductor_cpp: option "matrix_tile_epilogues" must be True or False, '
                         f"not {tile_epilogues!r}")
    layout_optimization = values["layout_optimization"]
    if not isinstance(layout_optimization, bool):
        raise OptionError('inductor_cpp: option "layout_optimization" must be True or False, '
                         f"not {layout_optimization!r}")
    shape_specializations = values["shape_specializations"]
    if isinstance(shape_specializations, bool) or not isinstance(shape_specializations, int) or \
            shape_specializations < 0:
        raise OptionError('inductor_cpp: option "shape_specializations" must be a whole number '
                         f">= 0, not {shape_specializations!r}")
    gpu_tuning = _gpu_tuning_text(values["gpu_tuning"])
    # CUDA graphs: the option, else INDUCTOR_CPP_CUDAGRAPHS when set, else the mode.
    cudagraphs = values["cudagraphs"]
    if "cudagraphs" not in options and not knobs.raw(KNOWN["cudagraphs"].name):
        cudagraphs = mode == "reduce-overhead"
    if not isinstance(cudagraphs, bool):
        raise OptionError(f'inductor_cpp: option "cudagraphs" must be True or False, not {cudagraphs!r}')
    records = values["cudagraph_records"]
    if isinstance(records, bool) or not isinstance(records, int) or records < 1:
        raise OptionError('inductor_cpp: option "cudagraph_records" must be a whole number >= 1, '
                         f"not {records!r}")
    # Code generation options enter the cache key. matrix_kernels is sent when on (the compiler's
    # own default is off, for callers that build options by hand); other options only when not
    # at their default, so default keys stay what they were.
    extra: dict[str, Any] = {"matrix_kernels": True} if matrix_kernels else {}
    if matrix_kernels and not tile_epilogues:
        extra["matrix_tile_epilogues"] = False
    if gpu_tuning:
        extra["gpu_tuning"] = gpu_tuning
    return Options(mode=mode, strict=strict, cache=cache, freezing=freezing,
                   debug_dir=os.fspath(debug_dir) if debug_dir else None,
                   layout_optimization=layout_optimization,
                   shape_specializations=shape_specializations, cudagraphs=cudagraphs,
                   cudagraph_records=records, extra=extra)
