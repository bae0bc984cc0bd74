/// \file gemm.cpp
/// \brief The public fp32 GEMM entry points: B argument checks, pack_b_f32, one-row problems on
/// Bᵀ as dot products (gemv.h), split-K for long-K problems with too few output tiles, and bmm;
/// the driver itself is gemm_driver.cpp.
#include "runtime/matrix/gemm.h"

#include <omp.h>
#include <xmmintrin.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <vector>

#include "runtime/matrix/epilogue.h"
#include "runtime/matrix/gemm_config.h"
#include "runtime/matrix/gemm_driver.h"
#include "runtime/matrix/gemv.h"
#include "runtime/matrix/pack.h"

namespace inductor_cpp::matrix {
namespace {

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

/// Too few output tiles for the threads but a long K (e.g. a 1×32 row times a 4096×32 matrix):
/// split K instead of idling threads.
bool use_split_k(const GemmProblem& p, int num_threads) {
  const GemmBlocking& blk = gemm_blocking();
  return num_threads > 1 && p.k >= 1024 &&
         ceil_div(p.m, blk.mr) * ceil_div(p.n, blk.nr) < num_threads &&
         (p.m * p.n * p.k >= blk.serial_macs || p.n * p.k >= blk.serial_b_floats);
}

/// Each thread reduces one K range into a private m×n buffer (alpha 1, no epilogue); the caller
/// then sums them in thread order (deterministic), applies alpha / accumulate, and the epilogue.
void run_split_k(const GemmProblem& p, int num_threads) {
  check_gemm_problem(p);
  const int parts = num_threads;
  std::vector<float> partial(size_t(parts) * p.m * p.n);
#pragma omp parallel for num_threads(parts) schedule(static)
  for (int t = 0; t < parts; ++t) {
    const int64_t k0 = p.k * t / parts, k1 = p.k * (t + 1) / parts;
    GemmProblem q;
    q.m = p.m, q.n = p.n, q.k = k1 - k0;
    q.a = p.trans_a ? p.a + k0 * p.lda : p.a + k0, q.lda = p.lda, q.trans_a = p.trans_a;
    q.b = p.trans_b ? p.b + k0 : p.b + k0 * p.ldb, q.ldb = p.ldb, q.trans_b = p.trans_b;
    q.c = partial.data() + size_t(t) * p.m * p.n, q.ldc = p.n;
    q.flush_denormals = p.flush_denormals;
    run_gemm_f32(q, nullptr, 1);
  }
  const unsigned saved_csr = _mm_getcsr();
  if (p.flush_denormals) _mm_setcsr(saved_csr | 0x8040);
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t j = 0; j < p.n; ++j) {
      float sum = 0;
      for (int t = 0; t < parts; ++t) sum += partial[(size_t(t) * p.m + i) * p.n + j];
      float& c = p.c[i * p.ldc + j];
      c = p.alpha * sum + (p.accumulate ? c : 0.0f);
    }
  apply_epilogue_tile(p.c, p.ldc, p.m, p.n, 0, 0, p.epilogue, 0);
  _mm_setcsr(saved_csr);
}

}  // namespace

PackedB pack_b_f32(const float* b, int64_t k, int64_t n, int64_t ldb, bool trans_b) {
  if (k < 0 || n < 0 || !b) throw std::invalid_argument("pack_b_f32: bad arguments");
  const int nr = gemm_blocking().nr;
  PackedB packed(k, n, nr);
  if (k > 0 && n > 0)
    pack_b_panels(b, ldb, trans_b, 0, k, 0, n, nr, k * nr, packed.mutable_panel(0));
  return packed;
}

bool caller_flushes_denormals() {
  constexpr unsigned kFtzDaz = 0x8040;
  return (_mm_getcsr() & kFtzDaz) == kFtzDaz;
}

void gemm_f32(const GemmProblem& p, int num_threads) {
  if (p.k > 0 && (!p.b || p.ldb < (p.trans_b ? p.k : p.n)))
    throw std::invalid_argument("gemm: bad B / ldb");
  if (gemv_applies(p)) return gemv_f32(p, num_threads);
  if (use_split_k(p, num_threads)) return run_split_k(p, num_threads);
  run_gemm_f32(p, nullptr, num_threads);
}

void gemm_f32_packed(const GemmProblem& p, const PackedB& packed, int num_threads) {
  if (packed.k() != p.k || packed.n() != p.n)
    throw std::invalid_argument("gemm: PackedB shape mismatch");
  run_gemm_f32(p, &packed, num_threads);
}

void bmm_f32(const GemmProblem& p, int64_t batch, int64_t stride_a, int64_t stride_b,
             int64_t stride_c, int num_threads) {
  auto one = [&](int64_t t, int threads) {
    GemmProblem q = p;
    q.a += t * stride_a;
    q.b += t * stride_b;
    q.c += t * stride_c;
    for (EpilogueOp& op : q.epilogue)
      if (is_residual_op(op.kind)) op.data += t * stride_c;
    gemm_f32(q, threads);
  };
  if (batch >= num_threads && num_threads > 1) {
#pragma omp parallel for num_threads(num_threads) schedule(static)
    for (int64_t t = 0; t < batch; ++t) one(t, 1);
    return;
  }
  for (int64_t t = 0; t < batch; ++t) one(t, num_threads);
}

}  // namespace inductor_cpp::matrix
