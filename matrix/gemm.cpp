/// \file gemm.cpp
/// \brief The public fp32 GEMM entry points: B argument checks, pack_b_f32, one-row problems
/// (gemv.h), and bmm; the driver itself (split-K for long-K problems whose output tiles do not
/// share out evenly included) is gemm_driver.cpp, with its plan in gemm_plan.cpp and split-K in
/// gemm_split_k.cpp.
#include "matrix/gemm.h"

#include <xmmintrin.h>

#include <stdexcept>

#include "matrix/epilogue.h"
#include "matrix/gemm_config.h"
#include "matrix/gemm_driver.h"
#include "matrix/gemm_swapped.h"
#include "matrix/gemv.h"
#include "matrix/pack.h"

namespace inductor_cpp::matrix {

PackedB pack_b_f32(const float* b, int64_t k, int64_t n, int64_t ldb, bool trans_b, int num_threads,
                   const PackedStorage& storage) {
  if (k < 0 || n < 0 || !b) throw std::invalid_argument("pack_b_f32: bad arguments");
  const int nr = gemm_blocking().nr;
  PackedB packed(k, n, nr, storage);
  if (k > 0 && n > 0)
    for_panel_ranges(packed.num_panels(), k * n, num_threads, [&](int64_t p0, int64_t p1) {
      pack_b_panels(b, ldb, trans_b, 0, k, p0 * nr, std::min(n, p1 * nr) - p0 * nr, nr, k * nr,
                    packed.mutable_panel(p0));
    });
  return packed;
}

std::optional<OperandLayout> operand_layout(int64_t rows, int64_t cols, int64_t row_stride,
                                            int64_t col_stride) {
  if ((col_stride == 1 || cols == 1) && (rows == 1 || row_stride >= cols))
    return OperandLayout{rows == 1 ? cols : row_stride, false};
  if ((row_stride == 1 || rows == 1) && (cols == 1 || col_stride >= rows))
    return OperandLayout{cols == 1 ? rows : col_stride, true};
  return std::nullopt;
}

bool caller_flushes_denormals() {
  constexpr unsigned kFtzDaz = 0x8040;
  return (_mm_getcsr() & kFtzDaz) == kFtzDaz;
}

void gemm_f32(const GemmProblem& p, int num_threads) {
  if (p.k > 0 && (!p.b || p.ldb < (p.trans_b ? p.k : p.n)))
    throw std::invalid_argument("gemm: bad B / ldb");
  if (swapped_product_applies(p, num_threads)) return gemm_f32_swapped(p, num_threads);
  if (gemv_applies(p)) return gemv_f32(p, num_threads);
  run_gemm_f32(p, nullptr, num_threads);
}

bool gemm_reads_b_in_place(const GemmProblem& p, int num_threads) {
  return gemv_applies(p) || swapped_product_applies(p, num_threads) ||
         gemm_plan_reads_b_in_place(p, num_threads);
}

bool in_place_beats_packed_copy(const GemmProblem& p, int num_threads, bool frozen) {
  if (swapped_product_applies(p, num_threads)) return !frozen;
  if (!gemv_applies(p)) return !frozen && gemm_plan_reads_b_in_place(p, num_threads);
  return !frozen || p.m == 1 || gemm_blocking().isa != xbyak::Isa::Avx512;
}

void gemm_f32_packed(const GemmProblem& p, const PackedB& packed, int num_threads) {
  if (packed.k() != p.k || packed.n() != p.n)
    throw std::invalid_argument("gemm: PackedB shape mismatch");
  run_gemm_f32(p, &packed, num_threads);
}

void bmm_f32(const GemmProblem& p, int64_t batch, int64_t stride_a, int64_t stride_b,
             int64_t stride_c, int num_threads) {
  for (const EpilogueOp& op : p.epilogue) {
    if (op.kind == EpilogueKind::Tile)
      throw std::invalid_argument("bmm: no tile kernel epilogue (its positions are per matrix)");
  }
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
