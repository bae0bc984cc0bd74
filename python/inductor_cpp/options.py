"""Compile options: `torch.compile(..., mode=..., options={...})` and INDUCTOR_CPP_* variables.

An explicit option wins over its environment variable. Unknown options are an error that
lists the known ones (as stock Inductor does), not a silent no-op.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")

# name -> (environment variable, description)
KNOWN: dict[str, tuple[str | None, str]] = {
    "strict": (
        "INDUCTOR_CPP_STRICT",
        "True: a graph that would run eagerly, or fail to compile, raises instead; "
        '"all": every op that would run as an ATen fallback raises too',
    ),
    "cache": ("INDUCTOR_CPP_CACHE", "False: neither read nor write the on-disk cache"),
    "matrix_kernels": (
        "INDUCTOR_CPP_MATRIX_KERNELS",
        "False: float32 CPU mm/addmm/bmm and channels-last conv2d stay ATen calls (MKL/oneDNN) "
        "with generated kernels around them (default True: they run on our xbyak GEMM / "
        "convolution kernels with the following activation/residual chain fused; see "
        "docs/codegen/matrix.md and `python -m inductor_cpp.bench matrix`)",
    ),
    "freezing": (
        "INDUCTOR_CPP_FREEZING",
        "True: treat parameters as constants, as stock Inductor's freezing does: a matrix step "
        "reuses its packed copy of a weight while the weight's version counter is unchanged, "
        "without re-reading the weight each call to check its contents (faster for small "
        "batches; writes through .data or numpy are then not seen); on a CPU with AMX, bf16 "
        "mm/addmm (Linear) also run on our AMX GEMM. Default False",
    ),
    "matrix_tile_epilogues": (
        "INDUCTOR_CPP_MATRIX_TILE_EPILOGUES",
        "with matrix_kernels, False: a pointwise kernel after an mm/addmm/conv2d that the fused "
        "activation/residual chain cannot express stays a kernel of its own (default True: the "
        "GEMM runs it on each output tile it finishes; see docs/codegen/matrix.md)",
    ),
    "layout_optimization": (
        "INDUCTOR_CPP_LAYOUT_OPT",
        "False: keep convolution graphs in the layouts they come in (default True: inference "
        "graphs with 2-D convolutions run channels-last; see layout_opt.py)",
    ),
    "shape_specializations": (
        "INDUCTOR_CPP_SHAPE_SPECIALIZATIONS",
        "how many concrete shapes a graph with symbolic sizes (Dynamo's dynamic shapes) is "
        "compiled for, each as a static graph with generated kernels (default 8; 0: none, every "
        "shape runs the symbolic graph's plan of ATen calls); see specialize.py",
    ),
    "gpu_tuning": (
        "INDUCTOR_CPP_GPU_TUNING",
        'GPU graphs: "name=value,..." (or a dict) overriding launch-shape limits of the GPU '
        "schedule and emitter switches, for measuring alternatives without a rebuild: "
        "max_threads, min_threads, persistent_chunks, vector_bytes, column_threads, "
        "max_column_rows, min_rows_per_thread (schedule); read_once_hints (0-4), row_unroll, "
        "column_unroll, max_column_block, min_column_grid (emitter); see docs/gpu.md",
    ),
    "debug_dir": (
        "INDUCTOR_CPP_DEBUG_DIR",
        "a directory: dump each compiled graph there (FX graph, IR after every pass, C++ "
        "source, compile command, timings, a standalone repro.py); see docs/observability.md",
    ),
}

# Options that change only what is reported, never what is generated: not sent to the
# compiler, so they stay out of the cache key.
DIAGNOSTIC = ("debug_dir",)


def _env_value(name: str) -> Any:
    var = KNOWN[name][0]
    raw = os.environ.get(var, "") if var else ""
    if raw == "":
        return None
    if name in ("debug_dir", "gpu_tuning"):
        return raw
    if name == "shape_specializations":
        try:
            return int(raw)
        except ValueError:
            raise ValueError(f"inductor_cpp: {var} must be a whole number, not {raw!r}") from None
    if name == "strict" and raw.lower() == "all":
        return "all"
    return raw.lower() not in ("0", "false", "no", "off")


@dataclass(frozen=True)
class Options:
    mode: str | None = None
    strict: bool | str = False
    cache: bool = True
    freezing: bool = False  # packed-weight checks; True also enters the cache key (bf16 on AMX)
    debug_dir: str | None = None
    layout_optimization: bool = True  # a graph rewrite in Python: the graph's hash covers it
    shape_specializations: int = 8  # Python-side (specialize.py): each static graph has its key
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
        raise ValueError(f'inductor_cpp: option "gpu_tuning" must be a string "name=value,..." or a '
                         f"dict, not {value!r}")
    text = ",".join(item.strip() for item in value.split(",") if item.strip())
    if text:
        from inductor_cpp import _C

        _C.check_gpu_tuning(text)  # ValueError naming the bad item and the known names
    return text


def resolve(mode: str | None = None, options: dict[str, Any] | None = None) -> Options:
    if mode not in MODES:
        raise ValueError(f"inductor_cpp: unknown mode {mode!r}; known: {MODES[1:]}")
    options = dict(options or {})
    unknown = set(options) - set(KNOWN)
    if unknown:
        known = "; ".join(f"{k}: {v[1]}" for k, v in KNOWN.items())
        raise ValueError(f"inductor_cpp: unknown option(s) {sorted(unknown)}. Known options: {known}")
    values = {}
    for name in KNOWN:
        value = options.get(name, _env_value(name))
        if value is not None:
            values[name] = value
    strict = values.get("strict", False)
    if not (isinstance(strict, bool) or strict == "all"):
        raise ValueError(f'inductor_cpp: option "strict" must be True, False or "all", not {strict!r}')
    cache = values.get("cache", True)
    if not isinstance(cache, bool):
        raise ValueError(f'inductor_cpp: option "cache" must be True or False, not {cache!r}')
    freezing = values.get("freezing", False)
    if not isinstance(freezing, bool):
        raise ValueError(f'inductor_cpp: option "freezing" must be True or False, not {freezing!r}')
    debug_dir = values.get("debug_dir")
    if debug_dir is not None and not isinstance(debug_dir, (str, os.PathLike)):
        raise ValueError(f'inductor_cpp: option "debug_dir" must be a path, not {debug_dir!r}')
    matrix_kernels = values.get("matrix_kernels", True)
    if not isinstance(matrix_kernels, bool):
        raise ValueError(f'inductor_cpp: option "matrix_kernels" must be True or False, not {matrix_kernels!r}')
    tile_epilogues = values.get("matrix_tile_epilogues", True)
    if not isinstance(tile_epilogues, bool):
        raise ValueError('inductor_cpp: option "matrix_tile_epilogues" must be True or False, '
                         f"not {tile_epilogues!r}")
    layout_optimization = values.get("layout_optimization", True)
    if not isinstance(layout_optimization, bool):
        raise ValueError('inductor_cpp: option "layout_optimization" must be True or False, '
                         f"not {layout_optimization!r}")
    shape_specializations = values.get("shape_specializations", 8)
    if isinstance(shape_specializations, bool) or not isinstance(shape_specializations, int) or \
            shape_specializations < 0:
        raise ValueError('inductor_cpp: option "shape_specializations" must be a whole number '
                         f">= 0, not {shape_specializations!r}")
    gpu_tuning = _gpu_tuning_text(values.get("gpu_tuning", ""))
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
                   shape_specializations=shape_specializations, extra=extra)
