"""The backend as a user meets it: registration by entry point, options and modes, strict
mode, logs, errors that point at the user's source line, torch.compiler.reset()."""

from __future__ import annotations

import gc
import importlib.metadata
import weakref

import pytest
import torch

import inductor_cpp
from conftest import assert_same, collect_logs, compile_cpp, run_python, test_graphs


def test_entry_point_is_registered():
    eps = importlib.metadata.entry_points(group="torch_dynamo_backends")
    assert any(ep.name == "inductor_cpp" and ep.value == "inductor_cpp.dynamo_backend:backend" for ep in eps)


def test_backend_works_in_a_fresh_interpreter_without_importing_us():
    result = run_python("""
        import json, sys, torch
        f = torch.compile(lambda x: torch.sin(x) * 2, backend="inductor_cpp")
        x = torch.randn(8)
        ok = torch.allclose(f(x), torch.sin(x) * 2)
        print(json.dumps({"ok": ok, "imported_by_torch": "inductor_cpp" in sys.modules}))
    """)
    assert result["ok"] and result["imported_by_torch"]


def test_direct_use_of_backend_function():
    f = torch.compile(lambda x: x.exp() + 1, backend=inductor_cpp.backend)
    x = torch.randn(5)
    assert_same(f(x), x.exp() + 1)


def _chain(error: BaseException) -> list[BaseException]:
    """The error and every cause / context behind it (Dynamo wraps a backend's exception)."""
    out = []
    while error is not None and error not in out:
        out.append(error)
        error = error.__cause__ or error.__context__
    return out


@pytest.mark.parametrize("mode", [None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs",
                                  "lite"])
def test_modes_are_accepted(mode):
    f = torch.compile(lambda x: x.cos(), backend="inductor_cpp", mode=mode)
    x = torch.randn(3)
    assert_same(f(x), x.cos())


def test_options_are_accepted_and_unknown_ones_rejected():
    x = torch.randn(3)
    f = torch.compile(lambda x: x.cos(), backend="inductor_cpp", options={"strict": True, "cache": False})
    assert_same(f(x), x.cos())
    assert inductor_cpp.counters()["cache_misses"] == 1
    torch._dynamo.reset()
    g = torch.compile(lambda x: x.sin(), backend="inductor_cpp", options={"stirct": True})
    with pytest.raises(Exception) as info:
        g(x)
    ours = [e for e in _chain(info.value) if isinstance(e, inductor_cpp.OptionError)]
    assert ours and isinstance(ours[0], ValueError) and isinstance(ours[0], inductor_cpp.Error)
    message = str(ours[0])
    # one short line: the name, the closest valid one, the list of names (not their docs)
    assert "\n" not in message and len(message) < 400, message
    assert "unknown option 'stirct'; did you mean 'strict'?" in message and "cache" in message, message
    torch._dynamo.reset()
    h = torch.compile(lambda x: x.sin(), backend="inductor_cpp", mode="reduce_overhead")
    with pytest.raises(Exception, match="unknown mode 'reduce_overhead'; did you mean 'reduce-overhead'"):
        h(x)


def test_lite_mode_runs_the_aten_plan_without_generating_code():
    """mode="lite": the fastest compile: no kernels, no C++ compiler, the graph's ATen calls run
    by our executor, with the reason in each node's decision."""
    def f(x):
        return torch.nn.functional.gelu(x) * 2 + x.sum()

    x = torch.randn(8, 16)
    g = torch.compile(f, backend="inductor_cpp", mode="lite")
    assert_same(g(x), f(x))
    graphs = test_graphs()
    assert len(graphs) == 1
    c = graphs[0].counters()
    assert c["kernels"] == 0 and c["aten_calls"] >= 3, c
    assert inductor_cpp.counters()["cxx_compiler_invocations"] == 0
    # the default mode generates a kernel for the same graph (lite is a different cache key)
    torch._dynamo.reset()
    compile_cpp(f)(x)
    assert any(g.counters()["kernels"] >= 1 for g in test_graphs())


@pytest.mark.parametrize("options", [{"strict": 0}, {"strict": "yes"}, {"cache": "no"}])
def test_option_values_are_validated(options):
    f = torch.compile(lambda x: x.cos(), backend="inductor_cpp", options=options)
    with pytest.raises(Exception, match="must be True"):
        f(torch.randn(3))


def test_explicit_cache_option_wins_over_the_environment(monkeypatch):
    monkeypatch.setenv("INDUCTOR_CPP_CACHE", "0")
    compile_cpp(lambda x: x.cos())(torch.randn(3))
    assert [g.cache_outcome for g in test_graphs()] == ["uncached"]
    torch._dynamo.reset()
    f = torch.compile(lambda x: x.sin(), backend="inductor_cpp", options={"cache": True})
    f(torch.randn(3))
    assert "built" in [g.cache_outcome for g in test_graphs()]


def f_for_strict(x):
    return torch.cumsum(x, 0) + 1  # the op strict mode must name (no generated kernel for it)


def test_strict_all_names_the_op_and_the_source_line():
    f = torch.compile(f_for_strict, backend="inductor_cpp", options={"strict": "all"})
    with pytest.raises(Exception) as info:
        f(torch.randn(4))
    message = str(info.value)
    assert "aten::cumsum" in message
    assert "test_backend.py" in message and "return torch.cumsum(x, 0) + 1" in message


def test_strict_all_accepts_fully_generated_graphs():
    f = torch.compile(lambda x: torch.relu(x) + 1, backend="inductor_cpp", options={"strict": "all"})
    x = torch.randn(4)
    assert_same(f(x), torch.relu(x) + 1)


def test_strict_all_raises_the_strict_mode_error():
    f = torch.compile(f_for_strict, backend="inductor_cpp", options={"strict": "all"})
    with pytest.raises(Exception) as info:
        f(torch.randn(4))
    chain = _chain(info.value)
    strict = [e for e in chain if isinstance(e, inductor_cpp.StrictModeError)]
    assert strict and isinstance(strict[0], inductor_cpp.Error), chain
    assert "aten::cumsum" in str(strict[0]), strict[0]
    assert any(isinstance(e, inductor_cpp._C.CompileError) for e in chain), chain  # its cause


def test_strict_env_variable(monkeypatch):
    monkeypatch.setenv("INDUCTOR_CPP_STRICT", "all")
    f = compile_cpp(lambda x: x.cumsum(0))
    with pytest.raises(Exception, match="aten::cumsum"):
        f(torch.randn(4))


def cond_fn(x):
    return torch.cond(x.sum() > 0, lambda t: t.sin(), lambda t: t.cos(), (x,))  # no ATen op


def test_whole_graph_fallback_is_logged_with_reason():
    with collect_logs() as messages:
        f = compile_cpp(cond_fn)
        for x in (torch.randn(6), -torch.ones(6)):
            assert_same(f(x), cond_fn(x))
    assert inductor_cpp.counters()["eager_graph_fallbacks"] >= 1
    assert any("runs eagerly" in m and "cond" in m and "return torch.cond(" in m for m in messages), messages


def test_whole_graph_fallback_raises_in_strict_mode():
    f = torch.compile(cond_fn, backend="inductor_cpp", options={"strict": True})
    with pytest.raises(Exception, match="runs eagerly.*cond"):
        f(torch.randn(6))


def index_fn(x, i):
    return x[i] * 2


def test_runtime_errors_keep_their_type_and_name_the_op_and_the_source_line():
    f = compile_cpp(index_fn)
    x = torch.randn(4)
    assert_same(f(x, torch.tensor([0, 3])), index_fn(x, torch.tensor([0, 3])))
    for _ in range(2):  # the first call runs under AOT autograd's dispatch mode, later ones not
        with pytest.raises(IndexError) as info:
            f(x, torch.tensor([0, 10]))
        message = str(info.value)
        assert "out of bounds" in message
        assert "aten::index.Tensor" in message and "return x[i] * 2" in message


def test_runtime_error_on_the_first_call_keeps_its_message():
    emb = torch.nn.Embedding(10, 4)
    f = compile_cpp(emb)
    for _ in range(2):
        with pytest.raises(IndexError, match="index out of range in self(.|\n)*aten::embedding"):
            f(torch.tensor([3, 12]))


def test_integer_literals_beyond_int64_stay_correct():
    def f(x):
        return x * 2**63, x == 2**63

    x = torch.tensor([1.0, 2.0], dtype=torch.float64)
    assert_same(compile_cpp(f)(x), f(x))


def test_float8_dtypes_are_compiled():
    def f(x):
        return x.to(torch.float8_e4m3fnuz).to(torch.float32)

    x = torch.randn(8)
    assert_same(compile_cpp(f)(x), f(x))
    assert inductor_cpp.counters()["eager_graph_fallbacks"] == 0


def test_logs_env_variable_prints_artifacts():
    result = run_python("""
        import json, torch
        f = torch.compile(lambda x: torch.sigmoid(x).cumsum(0) + 1, backend="inductor_cpp")
        f(torch.randn(4))
        print(json.dumps({}))
    """, {"INDUCTOR_CPP_LOGS": "graph,cache,fallbacks,output_code"})
    err = result["_stderr"]
    assert "[graph] graph inference(%in0: float32[4]{1} cpu)" in err
    assert "[cache] graph " in err and ": built" in err
    assert "[fallbacks] aten::cumsum" in err and "runs as an ATen call" in err
    assert "[output_code] graph " in err and "= aten::cumsum(" in err and "free %s0" in err
    assert "= kernel0(%s0, " in err and 'extern "C" int32_t kernel0(' in err


def test_set_logs_from_python_and_unknown_artifact():
    with pytest.raises(ValueError, match="unknown artifact"):
        inductor_cpp.set_logs("nonsense")
    with collect_logs() as messages:
        try:
            inductor_cpp.set_logs(cache=True)
            compile_cpp(lambda x: x * 3)(torch.randn(2))
        finally:
            inductor_cpp.set_logs("")
    assert any(m.startswith("[cache] graph ") for m in messages), messages


def test_compiler_reset_frees_compiled_graphs():
    def f(x):
        return x.sin() + x.cos()

    compile_cpp(f)(torch.randn(3))
    alive = [weakref.ref(g) for g in test_graphs()]
    assert alive and all(r() is not None for r in alive)
    torch.compiler.reset()
    gc.collect()
    assert all(r() is None for r in alive)


def test_gpu_tuning_option_is_checked_and_enters_the_key(monkeypatch):
    """"gpu_tuning" (a string or a dict) is validated by the compiler: an unknown name is an
    error that lists the known ones; a valid one keys its own cache entry (CPU graphs run the
    same code, the key still differs)."""
    x = torch.randn(3)
    bad = torch.compile(lambda x: x.cos(), backend="inductor_cpp", options={"gpu_tuning": "threads=3"})
    with pytest.raises(Exception, match="gpu_tuning.*max_threads"):
        bad(x)
    torch._dynamo.reset()
    keys = []
    for tuning in ({"max_threads": 256}, "max_threads=256", "max_threads=128"):
        f = torch.compile(lambda x: x.cos(), backend="inductor_cpp", options={"gpu_tuning": tuning})
        assert_same(f(x), x.cos())
        keys.append(test_graphs()[-1].key)
        torch._dynamo.reset()
    assert keys[0] == keys[1] != keys[2]
    monkeypatch.setenv("INDUCTOR_CPP_GPU_TUNING", "read_once_hints=2x")
    env_bad = torch.compile(lambda x: x.cos(), backend="inductor_cpp")
    with pytest.raises(Exception, match="read_once_hints needs a whole number"):
        env_bad(x)


def test_large_cpu_outputs_reuse_pooled_blocks_until_reset():
    """Outputs of 4 MiB and more come from the CPU block pool (runtime/cpu_pool.h): a block
    freed by one call's output serves the next call's; pooled tensors stay resizable; when
    torch.compiler.reset() has freed the last compiled graph, the cached blocks are freed."""
    from conftest import run_python

    code = """
        import gc, json, torch, inductor_cpp
        from inductor_cpp import _C
        f = torch.compile(lambda x: x * 2 + 1, backend="inductor_cpp")
        x = torch.randn(2048, 1024)  # 8 MiB
        for _ in range(3):
            y = f(x)
            torch.testing.assert_close(y, x * 2 + 1)
            del y
        used = _C.cpu_pool_stats()
        y = f(x)
        y.resize_(4096, 1024)
        y[2048:] = 0
        del y
        torch.compiler.reset()
        del f
        gc.collect()
        print(json.dumps({"used": used, "after_reset": _C.cpu_pool_stats()}))
    """
    out = run_python(code)
    assert out["used"]["reused"] >= 2 and out["used"]["cached_bytes"] >= 8 << 20, out
    assert out["after_reset"]["cached_bytes"] == 0, out


def test_reset_frees_the_matrix_kernels_scratch():
    """The matrix library keeps per-thread scratch across calls (packed A blocks, the shared B
    ring, ...: matrix/scratch.h); when torch.compiler.reset() has freed the last
    compiled graph, it is freed too: a later release finds nothing left."""
    from conftest import run_python

    code = """
        import gc, json, torch, inductor_cpp
        from inductor_cpp import _C
        torch.set_num_threads(2)
        f = torch.compile(torch.mm, backend="inductor_cpp", options={"matrix_kernels": True})
        x = torch.randn(256, 512)
        # A new B every call: packed per call into the team's ring of B blocks (scratch).
        for _ in range(3):
            f(x, torch.randn(512, 512))
        held = _C.release_matrix_scratch()  # what three calls left behind
        f(x, torch.randn(512, 512))  # and again, for the reset to free
        torch.compiler.reset()
        del f
        gc.collect()
        print(json.dumps({"held": held, "after_reset": _C.release_matrix_scratch()}))
    """
    out = run_python(code)
    assert out["held"] > 0 and out["after_reset"] == 0, out


def test_matrix_step_outputs_come_from_the_pool():
    """The outputs of matrix-kernel steps (a matmul, a convolution) come from the same pool: a
    large output that misses glibc's heap (above its 32 MiB mmap threshold) faulted every page
    in again on each call (a 102 MB convolution output: 85 → 51 ms a call, docs/benchmarks.md)."""
    from conftest import run_python

    code = """
        import json, torch, torch.nn.functional as F, inductor_cpp
        from inductor_cpp import _C
        opts = {"matrix_kernels": True}
        mm = torch.compile(torch.mm, backend="inductor_cpp", options=opts)
        conv = torch.compile(lambda x, w: F.conv2d(x, w, padding=1), backend="inductor_cpp",
                             options=opts)
        a, b = torch.randn(2048, 256), torch.randn(256, 1024)  # an 8 MiB product
        x = torch.randn(8, 64, 64, 64).to(memory_format=torch.channels_last)
        w = torch.randn(64, 64, 3, 3).to(memory_format=torch.channels_last)
        stats = []
        for f, args, ref in [(mm, (a, b), lambda: a @ b), (conv, (x, w), lambda: F.conv2d(x, w, padding=1))]:
            before = _C.cpu_pool_stats()["reused"]
            for _ in range(3):
                y = f(*args)
                torch.testing.assert_close(y, ref(), rtol=1e-4, atol=1e-4)
                del y
            stats.append(_C.cpu_pool_stats()["reused"] - before)
        print(json.dumps({"reused": stats}))
    """
    out = run_python(code)
    # ATen's outputs never come from the pool: reuse shows the matrix steps ran and used it.
    assert out["reused"][0] >= 2 and out["reused"][1] >= 2, out
