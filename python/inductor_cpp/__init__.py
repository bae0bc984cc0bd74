"""inductor_cpp: a TorchInductor-class torch.compile backend written in C++.

    import torch
    model = torch.compile(model, backend="inductor_cpp")   # no import of this package needed

See README.md for options, environment variables and the cache; docs/observability.md for
logs (INDUCTOR_CPP_LOGS / set_logs), debug dumps (INDUCTOR_CPP_DEBUG_DIR), explain() and the
kernel benchmarks.
"""

import torch  # noqa: F401  (loads libtorch before our extension)

from . import _C, cache_transfer  # noqa: F401  (registers our torch mega-cache artifact type)
from .dynamo_backend import backend
from .errors import Error, OptionError, StrictModeError
from .explain import explain
from .logs import set_logs

__version__ = "0.1.0"


def counters() -> dict:
    """Process-wide compile counters: graphs compiled, cache hits/misses, plan builds, ...,
    plus the number of graphs that ran eagerly (whole-graph fallbacks) and of inference graphs
    called without / within AOT autograd's runtime wrappers (direct_call.py), and the CUDA
    graphs recorded and replayed (cuda_graphs.py)."""
    import json

    from . import cuda_graphs, direct_call, dynamo_backend

    c = json.loads(_C.stats())
    c["eager_graph_fallbacks"] = dynamo_backend.eager_graph_fallbacks
    c["direct_inference_graphs"] = direct_call.direct_graphs
    c["aot_wrapped_inference_graphs"] = direct_call.wrapped_graphs
    c.update(cuda_graphs.stats)
    return c


def reset_counters() -> None:
    from . import cuda_graphs, direct_call, dynamo_backend

    _C.reset_stats()
    for name in cuda_graphs.stats:
        cuda_graphs.stats[name] = 0
    dynamo_backend.eager_graph_fallbacks = 0
    direct_call.direct_graphs = direct_call.wrapped_graphs = 0
    dynamo_backend.recent_eager_fallback_reasons.clear()


def live_graphs() -> list:
    """The CompiledGraph objects alive in this process (each has .key, .counters())."""
    from . import dynamo_backend

    return list(dynamo_backend._live_graphs)


__all__ = ["backend", "counters", "reset_counters", "live_graphs", "set_logs", "explain",
           "Error", "OptionError", "StrictModeError"]
