/// \file amx_check.cpp
/// \brief Standalone AMX check (plain executable): reports CPU/OS AMX availability, runs a
/// bf16 GEMM (default 2048³) through gemm_bf16 and compares with an fp64 reference computed from
/// the same bf16 inputs; prints the error and TFLOP/s. Exit status 0 = AMX used and accurate,
/// 1 = inaccurate (or pre-packed B gave another result), 2 = AMX unavailable (fallback path
/// measured instead).
/// Usage: amx_check [size=2048] [threads=all]
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "matrix/jit/cpu_features.h"
#include "matrix/gemm_bf16.h"

using namespace inductor_cpp::matrix;

int main(int argc, char** argv) {
  const int64_t s = argc > 1 ? std::atoll(argv[1]) : 2048;
  const int threads = argc > 2 ? std::atoi(argv[2]) : omp_get_max_threads();
  const auto& cpu = inductor_cpp::xbyak::cpu_features();
  std::printf("cpu features: %s\n", cpu.describe().c_str());
  std::printf("AMX: cpuid %s, OS permission %s -> gemm_bf16 uses %s\n", cpu.amx_bf16 ? "yes" : "no",
              cpu.amx_usable ? "granted" : "no",
              gemm_bf16_uses_amx() ? "AMX tiles" : "fp32 fallback");
  std::vector<uint16_t> a(s * s), b(s * s);
  std::vector<float> c(s * s);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (auto& x : a) x = f32_to_bf16(dist(rng));
  for (auto& x : b) x = f32_to_bf16(dist(rng));
  GemmBf16Problem p;
  p.m = p.n = p.k = s, p.a = a.data(), p.lda = s, p.b = b.data(), p.ldb = s, p.c = c.data(),
  p.ldc = s;
  gemm_bf16(p, threads);  // warm-up
  std::vector<double> times;
  for (int r = 0; r < 5; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    gemm_bf16(p, threads);
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  const double sec = times[times.size() / 2];
  std::printf("bf16 %ldx%ldx%ld, %d threads: %.3f ms, %.2f TFLOP/s\n", long(s), long(s), long(s),
              threads, sec * 1e3, 2.0 * s * s * s / sec / 1e12);
  // The same with B packed once (constant weights), checked bit-equal to the run above.
  const std::vector<float> c_per_call = c;
  const PackedBBf16 packed = pack_b_bf16(b.data(), s, s, s, false);
  times.clear();
  for (int r = 0; r < 6; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    gemm_bf16_packed(p, packed, threads);
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  const double sec_packed = times[times.size() / 2];
  std::printf("bf16 %ldx%ldx%ld, %d threads, pre-packed B: %.3f ms, %.2f TFLOP/s (%s)\n", long(s),
              long(s), long(s), threads, sec_packed * 1e3, 2.0 * s * s * s / sec_packed / 1e12,
              c == c_per_call ? "same result" : "DIFFERENT result");
  const bool same = c == c_per_call;
  // fp64 reference on a sample of rows (all columns), relative to sum |a||b|.
  std::vector<double> bt(s * s);
  for (int64_t kk = 0; kk < s; ++kk)
    for (int64_t j = 0; j < s; ++j) bt[j * s + kk] = bf16_to_f32(b[kk * s + j]);
  double max_rel = 0, max_abs = 0;
  for (int64_t i = 0; i < s; i += std::max<int64_t>(1, s / 64))
    for (int64_t j = 0; j < s; ++j) {
      double ref = 0, mag = 0;
      for (int64_t kk = 0; kk < s; ++kk) {
        const double prod = double(bf16_to_f32(a[i * s + kk])) * bt[j * s + kk];
        ref += prod;
        mag += std::fabs(prod);
      }
      const double err = std::fabs(c[i * s + j] - ref);
      max_abs = std::max(max_abs, err);
      max_rel = std::max(max_rel, err / mag);
    }
  std::printf(
      "max |C - ref| = %.3g, max |C - ref| / sum|a·b| = %.3g (fp32 accumulation bound ~%.1g)\n",
      max_abs, max_rel, 1e-6 * std::sqrt(double(s)));
  const bool ok = max_rel < 1e-5 && same;
  std::printf("%s\n", ok ? "OK" : "INACCURATE");
  if (!ok) return 1;
  return gemm_bf16_uses_amx() ? 0 : 2;
}
