/// \file fma_peak_loop.h
/// \brief The float32 FMA peak loop the matrix benchmarks measure kernels against
/// (python/csrc/matrix_bench.cpp, tests/cpp/matrix_bench.cpp): register-only JIT code, no
/// memory traffic, so its GFLOP/s is the core's FMA throughput. Benchmark support only.
#pragma once

#include <cstdint>

namespace inductor_cpp::xbyak {

struct FmaPeakLoop {
  /// Runs `iterations` iterations of independent FMA chains.
  void (*fn)(int64_t iterations) = nullptr;
  double flops_per_iteration = 0;
};

/// 24 independent zmm FMA chains (AVX-512) per iteration, or 12 ymm (AVX2): enough to keep both
/// FMA ports busy (latency 4 × 2 ports = 8 chains needed), so the loop is bound by throughput,
/// not latency. Generated once per kind (thread-safe).
FmaPeakLoop fma_peak_loop(bool zmm);

}  // namespace inductor_cpp::xbyak
