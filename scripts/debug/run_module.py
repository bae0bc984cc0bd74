"""Runs `python -m MODULE ARGS...` through runpy, so that the GPU host's probe stage (which runs
scripts in this folder with the built package on its path) can run our benchmarks too:

    PROBE="run_module.py inductor_cpp.bench train --threads 16" bash scripts/gpu.sh probe
"""

from __future__ import annotations

import runpy
import sys

if len(sys.argv) < 2:
    sys.exit(__doc__)
sys.argv = sys.argv[1:]
runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
