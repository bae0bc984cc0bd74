/// \file matrix_bench.cpp
/// \brief Matrix-library benchmark (plain executable, not a test): measures the FMA peak with a
/// register-only JIT loop at 1..N threads, then GFLOP/s of GEMM, addmm+bias+relu, skinny and
/// small GEMMs, pre-packed B, the BERT-base Linear shapes (per-call vs pre-packed weight) and
/// convolutions; prints a table (median of repeats, std::chrono).
/// Usage: matrix_bench [threads=2] [gemm|addmm|bert|small|skinny|conv|conv32] [reps-scale=1]
/// (conv: batch 1, conv32: batch 32, the same layers); the filter
/// "shape:MxNxK[:bT][:pk][:relu]" times one GEMM and skips the peak loop (for A/B comparisons).
/// Torch comparisons are done from Python.
#include <omp.h>
#include <sys/mman.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "knobs/knobs.h"
#include "matrix/jit/cpu_features.h"
#include "matrix/conv.h"
#include "matrix/gemm.h"
#include "matrix/jit/fma_peak_loop.h"

using namespace inductor_cpp::matrix;

namespace {

/// Median and minimum over reps runs after one warm-up, and the median process CPU time per run
/// (on a shared machine wall time includes time the scheduler gave to others; CPU time / threads
/// does not, though it does include spin-waiting).
struct Timing {
  double median, best, cpu_median;
};

double process_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

Timing time_runs(const std::function<void()>& fn, int reps) {
  fn();  // warm-up (JIT, page faults, packing buffers)
  std::vector<double> t, cpu;
  for (int r = 0; r < reps; ++r) {
    const double c0 = process_cpu_seconds();
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    cpu.push_back(process_cpu_seconds() - c0);
  }
  std::sort(t.begin(), t.end());
  std::sort(cpu.begin(), cpu.end());
  return {t[t.size() / 2], t.front(), cpu[cpu.size() / 2]};
}

double g_reps_scale = 1;  ///< Third command-line argument: more repeats on a noisy machine.

int reps_for(double flops) {
  return std::clamp(int(g_reps_scale * 2e10 / std::max(flops, 1.0)), 3, 2000);
}

/// Allocator for the operands: with MATRIX_BENCH_HUGEPAGES=1 they are 2 MiB-aligned and
/// madvise(MADV_HUGEPAGE)d (transparent huge pages in "madvise" mode), to tell TLB effects apart.
template <class T>
struct BenchAllocator {
  using value_type = T;
  BenchAllocator() = default;
  template <class U>
  BenchAllocator(const BenchAllocator<U>&) {}
  T* allocate(size_t n) {
    static const bool huge = inductor_cpp::knobs::host_env("MATRIX_BENCH_HUGEPAGES").has_value();
    const size_t align = huge ? (2u << 20) : 64,
                 bytes = (n * sizeof(T) + align - 1) / align * align;
    void* p = std::aligned_alloc(align, bytes);
    if (huge) madvise(p, bytes, MADV_HUGEPAGE);
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t) { std::free(p); }
  bool operator==(const BenchAllocator&) const { return true; }
  bool operator!=(const BenchAllocator&) const { return false; }
};
using FloatVector = std::vector<float, BenchAllocator<float>>;

FloatVector random_vector(size_t n) {
  FloatVector v(n);
  uint32_t s = 12345;
  for (float& x : v) {
    s = s * 1664525u + 1013904223u;
    x = float(s >> 8) / float(1u << 24) - 0.5f;
  }
  return v;
}

double fma_peak(int threads) {
  const inductor_cpp::xbyak::FmaPeakLoop loop =
      inductor_cpp::xbyak::fma_peak_loop(inductor_cpp::xbyak::cpu_features().avx512);
  auto fn = loop.fn;
  const int64_t iters = 20'000'000;
  const double sec = time_runs(
                         [&] {
#pragma omp parallel num_threads(threads)
                           fn(iters);
                         },
                         5)
                         .best;
  return double(iters) * loop.flops_per_iteration * threads / sec / 1e9;
}

int g_threads = 1;

void row(const char* kind, const std::string& shape, double flops, Timing t, double peak) {
  std::printf(
      "%-10s %-26s %9.3f ms %9.1f GFLOP/s %6.1f%% of peak   (best %9.1f GFLOP/s, per cpu-time "
      "%9.1f)\n",
      kind, shape.c_str(), t.median * 1e3, flops / t.median / 1e9,
      100 * flops / t.median / 1e9 / peak, flops / t.best / 1e9,
      flops / (t.cpu_median / g_threads) / 1e9);
}

void bench_gemm(const char* kind, int64_t m, int64_t n, int64_t k, int threads, double peak,
                bool bias_relu, bool prepack, bool trans_b) {
  auto a = random_vector(m * k), b = random_vector(k * n), c = random_vector(m * n),
       bias = random_vector(n);
  GemmProblem p;
  p.m = m, p.n = n, p.k = k, p.a = a.data(), p.lda = k, p.b = b.data(), p.ldb = trans_b ? k : n;
  p.trans_b = trans_b, p.c = c.data(), p.ldc = n;
  if (bias_relu) p.epilogue = {{EpilogueKind::BiasCol, bias.data()}, {EpilogueKind::Relu}};
  const double flops = 2.0 * m * n * k;
  Timing sec;
  if (prepack) {
    const PackedB packed = pack_b_f32(b.data(), k, n, p.ldb, trans_b);
    sec = time_runs([&] { gemm_f32_packed(p, packed, threads); }, reps_for(flops));
  } else {
    sec = time_runs([&] { gemm_f32(p, threads); }, reps_for(flops));
  }
  row(kind,
      std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) +
          (trans_b ? " bT" : ""),
      flops, sec, peak);
}

void bench_conv(const char* name, int64_t n, int64_t h, int64_t w, int64_t c, int64_t oc,
                int64_t kh, int64_t stride, int64_t pad, int threads, double peak) {
  Conv2dParams q;
  q.n = n, q.h = h, q.w = w, q.c = c, q.oc = oc, q.kh = q.kw = kh;
  q.stride_h = q.stride_w = stride, q.pad_h = q.pad_w = pad;
  const int64_t oh = q.out_h(), ow = q.out_w();
  auto x = random_vector(n * h * w * c), wt = random_vector(oc * kh * kh * c),
       y = random_vector(n * oh * ow * oc), bias = random_vector(oc);
  const PackedConvWeight pw = pack_conv_weight_f32(wt.data(), q);
  q.epilogue = {{EpilogueKind::BiasCol, bias.data()}, {EpilogueKind::Relu}};
  const double flops = 2.0 * n * oh * ow * oc * kh * kh * c;
  const Timing sec =
      time_runs([&] { conv2d_nhwc_f32(x.data(), pw, y.data(), q, threads); }, reps_for(flops));
  row("conv", name, flops, sec, peak);
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  g_threads = threads;
  const std::string only = argc > 2 ? argv[2] : "";
  if (argc > 3) g_reps_scale = std::max(0.01, std::atof(argv[3]));
  auto want = [&](const char* what) { return only.empty() || only == what; };
  if (only.rfind("shape:", 0) == 0) {
    long m = 0, n = 0, k = 0;
    if (std::sscanf(only.c_str(), "shape:%ldx%ldx%ld", &m, &n, &k) != 3) return 2;
    auto has = [&](const char* flag) { return only.find(flag) != std::string::npos; };
    bench_gemm("shape", m, n, k, threads, 1e9, has(":relu"), has(":pk"), has(":bT"));
    return 0;
  }
  std::printf("cpu: %s\n", inductor_cpp::xbyak::cpu_features().describe().c_str());
  double peak = 0;
  for (int t = 1; t <= threads; ++t) {
    peak = fma_peak(t);
    std::printf("FMA peak (%s, register-only) %d thread(s): %8.1f GFLOP/s\n",
                inductor_cpp::xbyak::cpu_features().avx512 ? "zmm" : "ymm", t, peak);
  }
  std::printf("--- %d threads, percentages relative to the %d-thread peak ---\n", threads, threads);
  if (want("gemm")) {
    for (int64_t s : {1024, 4096}) bench_gemm("gemm", s, s, s, threads, peak, false, false, false);
    bench_gemm("gemm", 1024, 1024, 1024, threads, peak, false, false, true);
    for (int64_t s : {1024, 4096})
      bench_gemm("gemm-pk", s, s, s, threads, peak, false, true, false);
  }
  if (want("bert"))  // BERT-base Linear layers at 1024 tokens: op(B) = Wᵀ (an nn.Linear weight).
    for (auto nk : {std::pair<int64_t, int64_t>{2304, 768}, {768, 768}, {3072, 768}, {768, 3072}}) {
      bench_gemm("bert", 1024, nk.first, nk.second, threads, peak, false, false, true);
      bench_gemm("bert-pk", 1024, nk.first, nk.second, threads, peak, false, true, true);
    }
  if (want("addmm")) bench_gemm("addmm", 1024, 1024, 1024, threads, peak, true, false, false);
  if (want("small"))
    for (int64_t s : {64, 128, 256})
      bench_gemm("small", s, s, s, threads, peak, false, false, false);
  if (want("skinny"))
    for (int64_t m : {1, 8, 32})
      for (auto nk :
           {std::pair<int64_t, int64_t>{768, 768}, {3072, 768}, {768, 3072}, {4096, 4096}}) {
        bench_gemm("skinny", m, nk.first, nk.second, threads, peak, false, false, false);
        bench_gemm("skinny-pk", m, nk.first, nk.second, threads, peak, false, true, true);
      }
  for (int64_t batch : {1, 32}) {
    if (!want(batch == 1 ? "conv" : "conv32")) continue;
    const std::string b = "b" + std::to_string(batch) + " ";
    bench_conv((b + "r50 3x3 64 56x56").c_str(), batch, 56, 56, 64, 64, 3, 1, 1, threads, peak);
    bench_conv((b + "r50 1x1 64>256 56x56").c_str(), batch, 56, 56, 64, 256, 1, 1, 0, threads,
               peak);
    bench_conv((b + "r50 3x3 128 28x28").c_str(), batch, 28, 28, 128, 128, 3, 1, 1, threads, peak);
    bench_conv((b + "r50 3x3 256 14x14").c_str(), batch, 14, 14, 256, 256, 3, 1, 1, threads, peak);
    bench_conv((b + "r50 3x3 512 7x7").c_str(), batch, 7, 7, 512, 512, 3, 1, 1, threads, peak);
    bench_conv((b + "r18@112 3x3 512 4x4").c_str(), batch, 4, 4, 512, 512, 3, 1, 1, threads, peak);
    bench_conv((b + "r50 7x7/2 3>64 224").c_str(), batch, 224, 224, 3, 64, 7, 2, 3, threads, peak);
  }
  return 0;
}
