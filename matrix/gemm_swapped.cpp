/// \file gemm_swapped.cpp
/// \brief Few-row products times Bᵀ as Cᵀ = W · op(A)ᵀ (see gemm_swapped.h): the swapped
/// problem on the GEMM driver into scratch, then the transposing output pass with the epilogue.
#include "matrix/gemm_swapped.h"

#include <omp.h>
#include <xmmintrin.h>

#include <algorithm>

#include "matrix/epilogue.h"
#include "matrix/gemm_config.h"
#include "matrix/gemm_driver.h"
#include "matrix/pack.h"
#include "matrix/scratch.h"

namespace inductor_cpp::matrix {
namespace {

/// Rows of W per thread below which the swapped problem would not give every thread a wide
/// tile's share (gemm_config.h pair_min_rows).
constexpr int64_t kMinWRowsPerThread = 64;
/// Least of W per thread (floats): below it the per-call costs (packing op(A)ᵀ, the output
/// pass, a second parallel region) outweigh the read of W saved. H200 host, 16 threads,
/// compiled Linear, swapped against packed (two leases): 1024² (64 Ki floats a thread) 64 rows
/// 218 against 146 µs, 128 rows 374 against 251; 3072 × 768 (144 Ki) 0.89-1.13x, level;
/// 4096² (1 Mi) 1.26-1.43x. Dev Xeon, 2 threads: 768² (288 Ki) 1.05-1.39x.
constexpr int64_t kMinWFloatsPerThread = 256 * 1024;
/// C columns the output pass handles at once: the transposed block (m × 64 floats, 32 KiB at
/// m = 128) is still in L1/L2 when the epilogue reads it.
constexpr int64_t kPassColumns = 64;

}  // namespace

bool swapped_product_applies(const GemmProblem& p, int num_threads) {
  const GemmBlocking& blk = gemm_blocking();
  const int64_t threads = std::max(num_threads, 1);
  return blk.isa == xbyak::Isa::Avx512 && p.trans_b && p.m >= blk.swap_min_rows &&
         p.m <= blk.swap_max_rows && p.k > 0 && p.n >= kMinWRowsPerThread * threads &&
         p.n * p.k >= kMinWFloatsPerThread * threads;
}

void gemm_f32_swapped(const GemmProblem& p, int num_threads) {
  check_gemm_problem(p);
  // Cᵀ, n × m, in the calling thread's scratch (kept across calls: a fresh buffer above the
  // allocator's mmap threshold would fault its pages in on every call).
  thread_local ScratchVector<float> product;
  float* const ct = product.get(size_t(p.n) * size_t(p.m));
  GemmProblem q;
  q.m = p.n;
  q.n = p.m;
  q.k = p.k;
  q.a = p.b;  // W = op(B)ᵀ: row-major n × k, since B is transposed
  q.lda = p.ldb;
  q.b = p.a;  // op(A)ᵀ: k × m
  q.ldb = p.lda;
  q.trans_b = !p.trans_a;
  q.c = ct;
  q.ldc = p.m;
  q.alpha = p.alpha;
  q.flush_denormals = p.flush_denormals;
  run_gemm_f32(q, nullptr, num_threads);

  // Cᵀ → C, kPassColumns columns of C at a time, then the epilogue on them.
  const int64_t blocks = (p.n + kPassColumns - 1) / kPassColumns;
  const int workers = int(std::clamp<int64_t>(blocks, 1, std::max(num_threads, 1)));
  auto worker = [&](int t) {
    const unsigned saved_csr = _mm_getcsr();
    if (p.flush_denormals) _mm_setcsr(saved_csr | 0x8040);  // FTZ | DAZ
    for (int64_t b = blocks * t / workers; b < blocks * (t + 1) / workers; ++b) {
      const int64_t j0 = b * kPassColumns, cols = std::min(kPassColumns, p.n - j0);
      transpose_f32(ct + j0 * p.m, p.m, cols, p.m, p.c + j0, p.ldc, p.accumulate);
      if (!p.epilogue.empty())
        apply_epilogue_tile(p.c + j0, p.ldc, p.m, cols, 0, j0, p.epilogue, 0);
    }
    _mm_setcsr(saved_csr);
  };
  if (workers == 1 || omp_get_active_level() >= omp_get_max_active_levels()) {
    for (int t = 0; t < workers; ++t) worker(t);
    return;
  }
#pragma omp parallel num_threads(std::max(num_threads, workers))  // the whole team
  for_each_worker(workers, worker);
}

}  // namespace inductor_cpp::matrix
