#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh) and runs all tests: the C++ unit tests (ctest) and the
# Python end-to-end tests (pytest). The CI set by default; INDUCTOR_CPP_FULL=1 adds the slow
# ones (model suites, full sweeps). Extra arguments go to pytest.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$ROOT/scripts/setup.sh"

export CCACHE_DIR="$DEV_HOME/ccache" CCACHE_BASEDIR="$ROOT" CCACHE_NOHASHDIR=1
cmake -S "$ROOT" -B "$ROOT/build/cpp" -G Ninja -DINDUCTOR_CPP_PYTHON=OFF -DINDUCTOR_CPP_TESTS=ON \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$ROOT/build/cpp" -j "$(nproc)"
ctest --test-dir "$ROOT/build/cpp" --output-on-failure -j "$(nproc)"

marker=(-m "not slow")
[ "${INDUCTOR_CPP_FULL:-0}" = "1" ] && marker=(-m "slow or not slow")
cd "$ROOT"
"$VENV_PYTHON" -m pytest tests/python tests/opinfo "${marker[@]}" -q -rs "$@"
