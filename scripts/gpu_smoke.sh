#!/usr/bin/env bash
# GPU machine smoke test (run there through the `device` tool): builds the extension against the
# machine's Python 3.12 + torch 2.11.0+cu130 with CMake directly (no network, no pip install),
# then checks CUDA models through inductor_cpp (ATen fallback runtime) against eager.
# Results go to $OUT (or ./out). The full GPU script (codegen, benchmarks) comes with the GPU issue.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PY=${PY:-/opt/torch/.venv/bin/python3}
OUT=${OUT:-$ROOT/out}
mkdir -p "$OUT"
# The machine's first g++ on PATH (/opt/gcc) links libstdc++ statically: a second copy of
# libstdc++ beside the one torch uses crashes in iostreams. Use the distribution's compiler.
CXX_COMPILER=${CXX_COMPILER:-/usr/bin/g++}
cmake -S "$ROOT" -B "$ROOT/build/gpu" -G Ninja -DPython_EXECUTABLE="$PY" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER="$CXX_COMPILER" -DINDUCTOR_CPP_PYTHON=ON -DINDUCTOR_CPP_TESTS=OFF \
  >"$OUT/cmake.log" 2>&1
cmake --build "$ROOT/build/gpu" -j "$(nproc)" >"$OUT/build.log" 2>&1
cp "$ROOT"/build/gpu/python/_C*.so "$ROOT/python/inductor_cpp/"
cd "$ROOT"
PYTHONPATH="$ROOT/python" INDUCTOR_CPP_CACHE_DIR="$OUT/cache" "$PY" "$ROOT/scripts/gpu_smoke.py" | tee "$OUT/smoke.txt"
