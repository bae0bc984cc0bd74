/// \file gemv.cpp
/// \brief One- and few-row GEMMs (see gemv.h). Few rows × Wᵀ: dot_block, W in blocks of four rows
/// run over every group of A rows while in L1. One row: y = x · Wᵀ: dot products along W's rows, four rows per
/// pass, two accumulators per row (32 floats of K per step on AVX-512, 16 on AVX2), masked K
/// tails. y = x · B: B's rows streamed in order, eight per pass, into the thread's slice of y
/// (in L1), vector by vector (four per pass: 1 × 768² 18 µs, eight: 16 µs, as the tile path);
/// with K ≥ N and several threads, each thread takes a range of B's rows instead
/// (gemv_split_k; with K < N, over B's columns first and then its rows, gemv_grid). Each output
/// is then summed in an order fixed by the thread count.
#include "matrix/gemv.h"

#include <immintrin.h>
#include <omp.h>
#include <xmmintrin.h>

// GCC 12 warns inside its own avx512fintrin.h (_mm512_undefined_ps) under target attributes.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "matrix/epilogue.h"
#include "matrix/gemm_config.h"
#include "matrix/gemm_driver.h"
#include "matrix/scratch.h"

namespace inductor_cpp::matrix {
namespace {

#define AVX512_FN __attribute__((target("avx512f")))
#define AVX2_FN __attribute__((target("avx2,fma")))

constexpr int kRows = 4;      ///< W rows per pass (4 streams per thread).
constexpr int kAxpyRows = 8;  ///< B rows per pass over y (y read and written once per 8 rows).
constexpr int64_t kSerialFloats = 32 * 1024;  ///< Smaller W: one thread.
constexpr int64_t kMinRowsPerThread = 4 * kRows;
constexpr int64_t kMinRun = 512;      ///< Shortest run of a B row per thread when K is split too.
constexpr int64_t kMinKPerPart = 64;  ///< Fewest B rows per K group.

/// out[r] = W[r, :k] · x for r < R, a compile-time row count: the accumulators stay in
/// registers with no per-row branches (a runtime row count, which GCC kept in registers too but
/// tested at every step, was ~1 % slower in situ: Linear 1 × 4096² 1364 → 1348 µs).
template <int R>
AVX512_FN void dot_rows_avx512(const float* w, int64_t ldw, const float* x, int64_t k, float* out) {
  __m512 acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  int64_t kk = 0;
  for (; kk + 32 <= k; kk += 32) {
    const __m512 x0 = _mm512_loadu_ps(x + kk), x1 = _mm512_loadu_ps(x + kk + 16);
    for (int r = 0; r < R; ++r) {
      acc[r][0] = _mm512_fmadd_ps(_mm512_loadu_ps(w + r * ldw + kk), x0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(_mm512_loadu_ps(w + r * ldw + kk + 16), x1, acc[r][1]);
    }
  }
  for (int half = 0; kk < k; kk += 16, ++half) {
    const int64_t left = k - kk;
    const __mmask16 mask = left >= 16 ? __mmask16(0xffff) : __mmask16((1u << left) - 1);
    const __m512 xv = _mm512_maskz_loadu_ps(mask, x + kk);
    for (int r = 0; r < R; ++r)
      acc[r][half] =
          _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, w + r * ldw + kk), xv, acc[r][half]);
  }
  for (int r = 0; r < R; ++r) out[r] = _mm512_reduce_add_ps(_mm512_add_ps(acc[r][0], acc[r][1]));
}

/// dot_rows_avx512 for any row count up to kRows (4).
AVX512_FN void dot_rows_avx512_any(const float* w, int64_t ldw, const float* x, int64_t k, int rows,
                                   float* out) {
  static_assert(kRows == 4);
  switch (rows) {
    case 4:
      return dot_rows_avx512<4>(w, ldw, x, k, out);
    case 3:
      return dot_rows_avx512<3>(w, ldw, x, k, out);
    case 2:
      return dot_rows_avx512<2>(w, ldw, x, k, out);
    default:
      return dot_rows_avx512<1>(w, ldw, x, k, out);
  }
}

AVX2_FN float horizontal_sum(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
}

AVX2_FN void dot_rows_avx2(const float* w, int64_t ldw, const float* x, int64_t k, int rows,
                           float* out) {
  __m256 acc[kRows][2];
  for (int r = 0; r < kRows; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  int64_t kk = 0;
  for (; kk + 16 <= k; kk += 16) {
    const __m256 x0 = _mm256_loadu_ps(x + kk), x1 = _mm256_loadu_ps(x + kk + 8);
    for (int r = 0; r < rows; ++r) {
      acc[r][0] = _mm256_fmadd_ps(_mm256_loadu_ps(w + r * ldw + kk), x0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(_mm256_loadu_ps(w + r * ldw + kk + 8), x1, acc[r][1]);
    }
  }
  for (int half = 0; kk < k; kk += 8, ++half) {
    const int64_t left = std::min<int64_t>(k - kk, 8);
    alignas(32) int32_t lanes[8];
    for (int i = 0; i < 8; ++i) lanes[i] = i < left ? -1 : 0;
    const __m256i mask = _mm256_load_si256(reinterpret_cast<const __m256i*>(lanes));
    const __m256 xv = _mm256_maskload_ps(x + kk, mask);
    for (int r = 0; r < rows; ++r)
      acc[r][half] = _mm256_fmadd_ps(_mm256_maskload_ps(w + r * ldw + kk, mask), xv, acc[r][half]);
  }
  for (int r = 0; r < rows; ++r) out[r] = horizontal_sum(_mm256_add_ps(acc[r][0], acc[r][1]));
}

/// Few rows times Wᵀ (1 < M ≤ GemmBlocking::few_rows): out[i][r] = A[i, :k] · W[r, :k] for MR rows of A and R
/// (≤ kRows) rows of W, one accumulator each, both counts compile-time so the accumulators stay
/// in registers: on AVX2 3 × 4 accumulators + 3 A vectors + the W vector being used fill the
/// 16 ymm registers (loading all 4 W vectors first needs 17: spills, 3x slower); on AVX-512
/// 4 × 4 of 32 zmm. The caller walks W in blocks of kRows rows and runs every group of A rows
/// over one block while it is in L1, so W is read from memory once, as in the one-row case.
/// One 8-float step of dot_block_avx2 (masked: the last, partial one).
template <int MR, int R, bool kMasked>
AVX2_FN inline void dot_block_step_avx2(const float* w, int64_t ldw, const float* a, int64_t lda,
                                        __m256i mask, __m256 (&acc)[MR][R]) {
  __m256 av[MR];
  for (int i = 0; i < MR; ++i)
    av[i] = kMasked ? _mm256_maskload_ps(a + i * lda, mask) : _mm256_loadu_ps(a + i * lda);
  for (int r = 0; r < R; ++r) {
    const __m256 wv = kMasked ? _mm256_maskload_ps(w + r * ldw, mask) : _mm256_loadu_ps(w + r * ldw);
    for (int i = 0; i < MR; ++i) acc[i][r] = _mm256_fmadd_ps(wv, av[i], acc[i][r]);
  }
}

template <int MR, int R>
AVX2_FN void dot_block_avx2(const float* w, int64_t ldw, const float* a, int64_t lda, int64_t k,
                            float (*out)[kRows]) {
  __m256 acc[MR][R];
  for (int i = 0; i < MR; ++i)
    for (int r = 0; r < R; ++r) acc[i][r] = _mm256_setzero_ps();
  int64_t kk = 0;
  for (; kk + 8 <= k; kk += 8)
    dot_block_step_avx2<MR, R, false>(w + kk, ldw, a + kk, lda, _mm256_setzero_si256(), acc);
  if (kk < k) {  // masked loads only here (slow on AMD Zen)
    alignas(32) int32_t lanes[8];
    for (int l = 0; l < 8; ++l) lanes[l] = l < k - kk ? -1 : 0;
    const __m256i mask = _mm256_load_si256(reinterpret_cast<const __m256i*>(lanes));
    dot_block_step_avx2<MR, R, true>(w + kk, ldw, a + kk, lda, mask, acc);
  }
  for (int i = 0; i < MR; ++i)
    for (int r = 0; r < R; ++r) out[i][r] = horizontal_sum(acc[i][r]);
}

/// One 16-float step of dot_block_avx512 (masked: the last, partial one).
template <int MR, int R, bool kMasked>
AVX512_FN inline void dot_block_step_avx512(const float* w, int64_t ldw, const float* a, int64_t lda,
                                            __mmask16 mask, __m512 (&acc)[MR][R]) {
  __m512 av[MR];
  for (int i = 0; i < MR; ++i)
    av[i] = kMasked ? _mm512_maskz_loadu_ps(mask, a + i * lda) : _mm512_loadu_ps(a + i * lda);
  for (int r = 0; r < R; ++r) {
    const __m512 wv = kMasked ? _mm512_maskz_loadu_ps(mask, w + r * ldw) : _mm512_loadu_ps(w + r * ldw);
    for (int i = 0; i < MR; ++i) acc[i][r] = _mm512_fmadd_ps(wv, av[i], acc[i][r]);
  }
}

/// Plain loads in the main loop and one masked step for the tail: with every load masked (the
/// mask recomputed per step) the 4 × 4 block ran 1.3-1.6x slower (Xeon dev machine, one
/// thread, 4-32 rows × 384-2048 × 768: 33-55 against 40-86 GFLOP/s); same sums in the same
/// order either way.
template <int MR, int R>
AVX512_FN void dot_block_avx512(const float* w, int64_t ldw, const float* a, int64_t lda, int64_t k,
                                float (*out)[kRows]) {
  __m512 acc[MR][R];
  for (int i = 0; i < MR; ++i)
    for (int r = 0; r < R; ++r) acc[i][r] = _mm512_setzero_ps();
  int64_t kk = 0;
  for (; kk + 16 <= k; kk += 16)
    dot_block_step_avx512<MR, R, false>(w + kk, ldw, a + kk, lda, __mmask16(0xffff), acc);
  if (kk < k)
    dot_block_step_avx512<MR, R, true>(w + kk, ldw, a + kk, lda, __mmask16((1u << (k - kk)) - 1), acc);
  for (int i = 0; i < MR; ++i)
    for (int r = 0; r < R; ++r) out[i][r] = _mm512_reduce_add_ps(acc[i][r]);
}

/// dot_block for runtime counts: a_rows ≤ MR rows of A (the last group may be short), rows ≤
/// kRows rows of W (the last block of a thread's range may be short).
template <int MR, int R = kRows>
void dot_block(bool avx512, const float* w, int64_t ldw, const float* a, int64_t lda, int64_t k,
               int a_rows, int rows, float (*out)[kRows]) {
  if constexpr (MR > 1) {
    if (a_rows < MR) return dot_block<MR - 1, R>(avx512, w, ldw, a, lda, k, a_rows, rows, out);
  }
  if constexpr (R > 1) {
    if (rows < R) return dot_block<MR, R - 1>(avx512, w, ldw, a, lda, k, a_rows, rows, out);
  }
  if (avx512)
    dot_block_avx512<MR, R>(w, ldw, a, lda, k, out);
  else
    dot_block_avx2<MR, R>(w, ldw, a, lda, k, out);
}

constexpr int kBlockRowsAvx2 = 3, kBlockRowsAvx512 = 4;

/// acc[0, n) = Σ_k x[k] · B[k, 0:n), rows of B in order (each element summed in k order, as
/// the tile kernels do), kAxpyRows rows per pass over acc.
AVX512_FN void rows_axpy_avx512(const float* b, int64_t ldb, const float* x, int64_t k, int64_t n,
                                float* acc) {
  // Plain loads and stores for whole vectors, masks for the tail only (as dot_block_avx512).
  const __mmask16 tail = __mmask16((1u << (n % 16)) - 1);
  for (int64_t k0 = 0; k0 < k; k0 += kAxpyRows) {
    const int rows = int(std::min<int64_t>(kAxpyRows, k - k0));
    __m512 xs[kAxpyRows];
    for (int r = 0; r < rows; ++r) xs[r] = _mm512_set1_ps(x[k0 + r]);
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
      __m512 v = k0 == 0 ? _mm512_setzero_ps() : _mm512_loadu_ps(acc + j);
      for (int r = 0; r < rows; ++r)
        v = _mm512_fmadd_ps(xs[r], _mm512_loadu_ps(b + (k0 + r) * ldb + j), v);
      _mm512_storeu_ps(acc + j, v);
    }
    if (j < n) {
      __m512 v = k0 == 0 ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(tail, acc + j);
      for (int r = 0; r < rows; ++r)
        v = _mm512_fmadd_ps(xs[r], _mm512_maskz_loadu_ps(tail, b + (k0 + r) * ldb + j), v);
      _mm512_mask_storeu_ps(acc + j, tail, v);
    }
  }
}

AVX2_FN void rows_axpy_avx2(const float* b, int64_t ldb, const float* x, int64_t k, int64_t n,
                            float* acc) {
  alignas(32) int32_t lanes[16] = {-1, -1, -1, -1, -1, -1, -1, -1};
  for (int64_t k0 = 0; k0 < k; k0 += kAxpyRows) {
    const int rows = int(std::min<int64_t>(kAxpyRows, k - k0));
    __m256 xs[kAxpyRows];
    for (int r = 0; r < rows; ++r) xs[r] = _mm256_set1_ps(x[k0 + r]);
    // Whole vectors with plain loads and stores: a masked store (vmaskmovps) is microcoded
    // and slow on AMD Zen, so masks are for the tail only.
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
      __m256 v = k0 == 0 ? _mm256_setzero_ps() : _mm256_loadu_ps(acc + j);
      for (int r = 0; r < rows; ++r)
        v = _mm256_fmadd_ps(xs[r], _mm256_loadu_ps(b + (k0 + r) * ldb + j), v);
      _mm256_storeu_ps(acc + j, v);
    }
    if (j < n) {
      const __m256i mask =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(lanes + 8 - (n - j)));
      __m256 v = k0 == 0 ? _mm256_setzero_ps() : _mm256_maskload_ps(acc + j, mask);
      for (int r = 0; r < rows; ++r)
        v = _mm256_fmadd_ps(xs[r], _mm256_maskload_ps(b + (k0 + r) * ldb + j, mask), v);
      _mm256_maskstore_ps(acc + j, mask, v);
    }
  }
}

/// Outputs [j0, j1): the products, alpha and accumulate, then the whole epilogue.
void gemv_range(const GemmProblem& p, int64_t j0, int64_t j1, bool avx512) {
  if (p.m > 1) {  // few rows × Wᵀ (gemv_applies)
    const int group = avx512 ? kBlockRowsAvx512 : kBlockRowsAvx2;
    for (int64_t j = j0; j < j1; j += kRows) {
      const int rows = int(std::min<int64_t>(kRows, j1 - j));
      for (int64_t i0 = 0; i0 < p.m; i0 += group) {
        const int a_rows = int(std::min<int64_t>(group, p.m - i0));
        float dots[kBlockRowsAvx512][kRows];
        dot_block<kBlockRowsAvx512>(avx512, p.b + j * p.ldb, p.ldb, p.a + i0 * p.lda, p.lda, p.k, a_rows,
                                    rows, dots);
        for (int i = 0; i < a_rows; ++i) {
          float* c = p.c + (i0 + i) * p.ldc + j;
          for (int r = 0; r < rows; ++r) c[r] = p.alpha * dots[i][r] + (p.accumulate ? c[r] : 0.0f);
        }
      }
    }
    if (!p.epilogue.empty()) apply_epilogue_tile(p.c + j0, p.ldc, p.m, j1 - j0, 0, j0, p.epilogue, 0);
    return;
  }
  if (p.trans_b) {
    for (int64_t j = j0; j < j1; j += kRows) {
      const int rows = int(std::min<int64_t>(kRows, j1 - j));
      float dots[kRows];
      if (avx512)
        dot_rows_avx512_any(p.b + j * p.ldb, p.ldb, p.a, p.k, rows, dots);
      else
        dot_rows_avx2(p.b + j * p.ldb, p.ldb, p.a, p.k, rows, dots);
      for (int r = 0; r < rows; ++r)
        p.c[j + r] = p.alpha * dots[r] + (p.accumulate ? p.c[j + r] : 0.0f);
    }
  } else {
    thread_local ScratchVector<float> scratch;
    float* const acc = scratch.get(size_t(j1 - j0));
    if (avx512)
      rows_axpy_avx512(p.b + j0, p.ldb, p.a, p.k, j1 - j0, acc);
    else
      rows_axpy_avx2(p.b + j0, p.ldb, p.a, p.k, j1 - j0, acc);
    for (int64_t j = j0; j < j1; ++j)
      p.c[j] = p.alpha * acc[j - j0] + (p.accumulate ? p.c[j] : 0.0f);
  }
  if (!p.epilogue.empty()) apply_epilogue_tile(p.c + j0, p.ldc, 1, j1 - j0, 0, j0, p.epilogue, 0);
}

/// y = x · B with B read in place over several threads, split over B's rows (K) as well:
/// thread t sums a contiguous range of rows of its K group over its column range of N into its
/// group's partial row; then each thread adds the groups' partials of its output range in group
/// order and finishes it. K ≥ N: every thread its own K range over all N columns (one sequential
/// stream). Splitting N instead reads each B row in runs of N / threads floats (1.5 KiB for
/// N = 768), which the prefetchers follow poorly. Dev machine, 2 threads, compiled mm (µs per
/// call, same process): 1 × 768²: 46 → 38 (ATen's mm under Dynamo: 32), 1 × 3072 (K) × 768 (N):
/// 257 → 205 (190), 1 × 4096²: 1199 → 1164 (1213); with K < N it lost (1 × 768 × 3072: 224 →
/// 230, 214), so there the columns are split first, into runs of at least kMinRun floats, and
/// only what is left of the team over K (gemv_grid).
void gemv_split_k(const GemmProblem& p, const GemvGrid& grid, bool avx512, int num_threads) {
  const int threads = grid.k_parts * grid.n_parts;
  // The calling thread's, reused across calls (a fresh one above the allocator's mmap threshold
  // is an mmap / munmap pair per call, whose TLB shootdown reaches the whole team).
  thread_local ScratchVector<float> partial_buffer;
  float* const partial = partial_buffer.get(size_t(grid.k_parts) * p.n);
  const int64_t units = (p.k + kAxpyRows - 1) / kAxpyRows, lines = (p.n + 15) / 16;
#pragma omp parallel num_threads(std::max(num_threads, threads))  // the whole team
  {
    const int team = omp_get_num_threads();
    const unsigned saved_csr = _mm_getcsr();
    if (p.flush_denormals) _mm_setcsr(saved_csr | 0x8040);  // FTZ | DAZ
    for (int t = omp_get_thread_num(); t < threads; t += team) {
      const int kp = t / grid.n_parts, np = t % grid.n_parts;
      const int64_t k0 = std::min(p.k, units * kp / grid.k_parts * kAxpyRows),
                    k1 = std::min(p.k, units * (kp + 1) / grid.k_parts * kAxpyRows);
      const int64_t j0 = std::min(p.n, lines * np / grid.n_parts * 16),
                    j1 = std::min(p.n, lines * (np + 1) / grid.n_parts * 16);
      float* acc = partial + size_t(kp) * p.n + j0;
      if (k0 == k1) {
        std::fill(acc, acc + (j1 - j0), 0.0f);
      } else if (avx512) {
        rows_axpy_avx512(p.b + k0 * p.ldb + j0, p.ldb, p.a + k0, k1 - k0, j1 - j0, acc);
      } else if (j0 < j1) {
        rows_axpy_avx2(p.b + k0 * p.ldb + j0, p.ldb, p.a + k0, k1 - k0, j1 - j0, acc);
      }
    }
#pragma omp barrier
    for (int t = omp_get_thread_num(); t < threads; t += team) {
      const int64_t j0 = std::min(p.n, lines * t / threads * 16),
                    j1 = std::min(p.n, lines * (t + 1) / threads * 16);
      for (int64_t j = j0; j < j1; ++j) {
        float sum = partial[j];
        for (int u = 1; u < grid.k_parts; ++u) sum += partial[size_t(u) * p.n + j];
        p.c[j] = p.alpha * sum + (p.accumulate ? p.c[j] : 0.0f);
      }
      if (j0 < j1 && !p.epilogue.empty())
        apply_epilogue_tile(p.c + j0, p.ldc, 1, j1 - j0, 0, j0, p.epilogue, 0);
    }
    _mm_setcsr(saved_csr);
  }
}

}  // namespace

bool gemv_applies(const GemmProblem& p) {
  if (!p.b || p.k <= 0 || p.n <= 0 || p.ldb < (p.trans_b ? p.k : p.n)) return false;
  if (p.m == 1) return !p.trans_a || p.lda == 1;
  return p.m > 1 && p.m <= gemm_blocking().few_rows && p.trans_b && !p.trans_a;
}

int gemv_threads(const GemmProblem& p, int num_threads) {
  if (p.n * p.k < kSerialFloats || omp_get_active_level() >= omp_get_max_active_levels()) return 1;
  return int(std::clamp<int64_t>(p.n / kMinRowsPerThread, 1, std::max(num_threads, 1)));
}

GemvGrid gemv_grid(const GemmProblem& p, int threads) {
  if (threads <= 1 || p.trans_b) return {1, threads};
  if (p.k >= p.n) return {threads, 1};
  // K < N: columns first, in runs of at least kMinRun floats; the rest of the team over K.
  if (!gemm_blocking().balance_split_k || p.n / threads >= kMinRun) return {1, threads};
  int n_parts = 1;
  for (int d = 1; d <= threads; ++d)
    if (threads % d == 0 && p.n / d >= kMinRun) n_parts = d;
  const int k_parts = threads / n_parts;
  if (p.k / k_parts < kMinKPerPart) return {1, threads};
  return {k_parts, n_parts};
}

void gemv_f32(const GemmProblem& p, int num_threads) {
  check_gemm_problem(p);
  if (!gemv_applies(p)) throw std::invalid_argument("gemv_f32: not a one-row GEMM");
  const bool avx512 = gemm_blocking().isa == xbyak::Isa::Avx512;
  const int threads = gemv_threads(p, num_threads);
  auto worker = [&](int t) {
    const unsigned saved_csr = _mm_getcsr();
    if (p.flush_denormals) _mm_setcsr(saved_csr | 0x8040);  // FTZ | DAZ
    // Contiguous output ranges: whole passes of kRows rows of Wᵀ, or whole 64-byte lines of y.
    const int64_t unit = p.trans_b ? kRows : 16, units = (p.n + unit - 1) / unit;
    const int64_t j0 = std::min(p.n, units * t / threads * unit),
                  j1 = std::min(p.n, units * (t + 1) / threads * unit);
    if (j0 < j1) gemv_range(p, j0, j1, avx512);
    _mm_setcsr(saved_csr);
  };
  if (threads == 1) return worker(0);
  if (const GemvGrid grid = gemv_grid(p, threads); grid.k_parts > 1)
    return gemv_split_k(p, grid, avx512, num_threads);
#pragma omp parallel num_threads(std::max(num_threads, threads))  // the whole team
  for_each_worker(threads, worker);
}

}  // namespace inductor_cpp::matrix
