"""torch's own debugging switches see our work: TORCH_TRACE (the structured trace tlparse reads)
carries each graph's inductor_cpp artifacts, and TORCH_COMPILE_DEBUG=1 writes our debug
directory beside stock Inductor's. Each runs in a child process (both are read at start-up)."""

from __future__ import annotations

import glob
import os
import subprocess
import sys

SCRIPT = """
import torch
f = torch.compile(lambda x: torch.softmax(x.sin(), -1) * 2, backend="inductor_cpp")
print(f(torch.randn(4, 8)).shape)
"""


def _run(tmp_path, **env_extra) -> subprocess.CompletedProcess:
    env = dict(os.environ, INDUCTOR_CPP_CACHE_DIR=str(tmp_path / "cache"), **env_extra)
    proc = subprocess.run([sys.executable, "-c", SCRIPT], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def test_torch_trace_carries_our_artifacts(tmp_path):
    trace_dir = tmp_path / "trace"
    _run(tmp_path, TORCH_TRACE=str(trace_dir))
    text = "".join(open(p).read() for p in glob.glob(str(trace_dir / "*")))
    for name in ("inductor_cpp_graph", "inductor_cpp_fusion", "inductor_cpp_plan",
                 "inductor_cpp_source", "inductor_cpp_compile_times"):
        assert f'"name": "{name}"' in text, name
    assert "aten::sin" in text  # the payloads themselves, not only their names


def test_torch_compile_debug_writes_our_debug_directory(tmp_path):
    _run(tmp_path, TORCH_COMPILE_DEBUG="1")
    graphs = glob.glob(str(tmp_path / "torch_compile_debug" / "run_*" / "inductor_cpp" / "000-*"))
    assert len(graphs) == 1, os.listdir(tmp_path)
    for name in ("plan.txt", "kernels.cpp", "repro.py", "fx_graph.txt"):
        assert os.path.exists(os.path.join(graphs[0], name)), (name, os.listdir(graphs[0]))
