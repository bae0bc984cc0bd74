#!/usr/bin/env bash
# Prepares, on the development machine, what the GPU machine lacks, under build/carry/ (ignored
# by git; pass it to the `device` tool with carry=["build/carry"]):
#   llvm16.tgz       LLVM 16 headers (include/llvm, include/llvm-c), ~4.4 MB
#   include/         xbyak headers and sleef.h;  lib/ libsleef.so.3 (+ libsleef.so link)
#   wheels/          the expecttest wheel (OpInfo imports it)
#   gtest/           GoogleTest headers, static libraries and CMake config (gpu.sh ctest)
# The GPU machine has libLLVM-16.so.1 but no headers and no CMake config: scripts/gpu.sh
# writes a small LLVMConfig.cmake there that points at the carried headers and its library.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CARRY=$ROOT/build/carry
PY=${PY:-python3}
mkdir -p "$CARRY/include" "$CARRY/lib" "$CARRY/wheels"
tar -czf "$CARRY/llvm16.tgz" -C /usr/include --transform 's,^llvm-16/,,;s,^llvm-c-16/,,' \
  llvm-16/llvm llvm-c-16/llvm-c
cp -r /usr/include/xbyak "$CARRY/include/"
cp /usr/include/x86_64-linux-gnu/sleef.h "$CARRY/include/"
cp -L /usr/lib/x86_64-linux-gnu/libsleef.so.3 "$CARRY/lib/"
ln -sf libsleef.so.3 "$CARRY/lib/libsleef.so"
[ -n "$(ls "$CARRY"/wheels/expecttest-*.whl 2>/dev/null)" ] ||
  "$PY" -m pip download --no-deps --only-binary=:all: -d "$CARRY/wheels" expecttest >/dev/null
mkdir -p "$CARRY/gtest/include" "$CARRY/gtest/lib/x86_64-linux-gnu/cmake"
cp -r /usr/include/gtest /usr/include/gmock "$CARRY/gtest/include/"
cp /usr/lib/x86_64-linux-gnu/libgtest*.a /usr/lib/x86_64-linux-gnu/libgmock*.a \
  "$CARRY/gtest/lib/x86_64-linux-gnu/" 2>/dev/null || true
cp -r /usr/lib/x86_64-linux-gnu/cmake/GTest "$CARRY/gtest/lib/x86_64-linux-gnu/cmake/"
du -sh "$CARRY"
