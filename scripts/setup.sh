#!/usr/bin/env bash
# Sets up everything inductor_cpp needs, idempotently, and prints where it is:
#   1. Debian packages (compilers, CMake, LLVM 16, xbyak, nlohmann/json, OpenMP, Sleef, GoogleTest,
#      ccache), installed only if missing;
#   2. the project venv with the pinned requirements.txt, outside the clone, named by a hash of
#      requirements.txt (so a re-run, or a new clone on the same machine, reuses it);
#   3. inductor_cpp itself, built and pip-installed into that venv when its sources changed.
# Sourced by scripts/main.sh and scripts/test.sh; exports VENV_PYTHON.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DEV_HOME=${INDUCTOR_CPP_DEV_HOME:-$HOME/.cache/inductor_cpp}
PYTHON=${PYTHON:-python3}
APT_PACKAGES=(g++ cmake ninja-build ccache git python3-venv llvm-16-dev libxbyak-dev
  nlohmann-json3-dev libomp-dev libsleef-dev libgtest-dev)

log() { echo "[setup] $*" >&2; }

install_debian_packages() {
  local missing=()
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing Debian packages: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

ensure_venv() {
  local hash
  hash=$(sha256sum "$ROOT/requirements.txt" | cut -c1-12)
  VENV="$DEV_HOME/venv-$hash"
  if [ ! -f "$VENV/.complete" ]; then
    log "creating $VENV (torch is a ~3 GB download on a cold pip cache)"
    rm -rf "$VENV"
    mkdir -p "$DEV_HOME" && chmod 700 "$DEV_HOME"
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/python" -m pip install -q --upgrade pip
    "$VENV/bin/python" -m pip install -q --cache-dir "$DEV_HOME/pip" -r "$ROOT/requirements.txt"
    touch "$VENV/.complete"
  fi
  export VENV_PYTHON="$VENV/bin/python"
}

sources_hash() {
  (cd "$ROOT" && { find CMakeLists.txt pyproject.toml ir inductor runtime kernels_cache codegen matrix knobs \
      python -type f -not -path '*/__pycache__/*' 2>/dev/null || true; } | LC_ALL=C sort |
    xargs sha256sum | sha256sum | cut -c1-16)
}

install_package() {
  local stamp="$VENV/.inductor_cpp-installed" hash
  hash=$(sources_hash)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$hash" ]; then return 0; fi
  log "building and installing inductor_cpp into $VENV"
  export CCACHE_DIR="$DEV_HOME/ccache" CCACHE_BASEDIR="$ROOT" CCACHE_NOHASHDIR=1
  local t0=$SECONDS
  "$VENV_PYTHON" -m pip install -q --no-build-isolation --no-deps "$ROOT"
  echo "$hash" >"$stamp"
  log "installed in $((SECONDS - t0)) s"
}

install_debian_packages
ensure_venv
install_package
