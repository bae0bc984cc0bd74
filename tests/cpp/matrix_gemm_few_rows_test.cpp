/// \file
/// GEMM driver, products of few rows: one row as a matrix-vector product, a few rows times Wᵀ
/// read in place, a plain B streamed in place (AVX-512), and the swapped form Cᵀ = W · Aᵀ
/// (AVX-512); each against the fp64 reference on 1–3 threads.
#include <omp.h>

#include <cstring>
#include <tuple>

#include "matrix/gemm_config.h"
#include "matrix/gemm_driver.h"
#include "matrix/gemm_swapped.h"
#include "matrix/gemv.h"
#include "tests/cpp/matrix_gemm_test_util.h"

namespace inductor_cpp::matrix::gemm_test {
namespace {

TEST_F(GemmTest, OneRowRunsAsAMatrixVectorProduct) {
  // M = 1 (gemv.h): with Bᵀ (nn.Linear on one row) dot products along B's rows, with a plain B
  // B's rows streamed into y. K around the 16/32-float steps and their masked tails and the
  // 4-row passes, N around the vector widths and passes, padded leading dimensions, alpha,
  // accumulate and epilogues, 1–3 threads. The result does not depend on the thread count,
  // except for a plain B with K ≥ N (split over B's rows: checked against the reference, and
  // bit-identical on a repeat with the same thread count).
  ASSERT_TRUE(gemv_applies([] {
    GemmProblem p;
    p.m = 1, p.n = 8, p.k = 8, p.trans_b = true, p.ldb = 8;
    static const float b[64] = {};
    p.b = b;
    return p;
  }()));
  for (bool trans_b : {true, false})
    for (int64_t k : {1, 7, 16, 31, 32, 33, 100, 1000})
      for (int64_t n : {1, 3, 4, 5, 17, 300, 390, 1000}) {
        Fixture f(1, n, k, false, trans_b, rng, 1 + k % 3);
        f.p.alpha = k % 2 ? 1.0f : -0.5f;
        f.p.accumulate = (n + k) % 2 == 1;
        f.p.epilogue = {f.op(EpilogueKind::BiasCol), f.op(EpilogueKind::Gelu),
                        f.op(EpilogueKind::AddResidual)};
        SCOPED_TRACE("k " + std::to_string(k) + ", n " + std::to_string(n) + ", trans_b " +
                     std::to_string(trans_b));
        ASSERT_TRUE(gemv_applies(f.p));
        check_thread_counts(
            f, [&](int threads) { return gemv_grid(f.p, gemv_threads(f.p, threads)).k_parts > 1; });
        if (HasFatalFailure()) return;
      }
}

TEST_F(GemmTest, FewRowsTimesWTransposedReadWInPlace) {
  // 1 < M ≤ 32 with Bᵀ (nn.Linear on a small batch, gemv.h): W read in place in blocks of 4 rows,
  // each block run over every group of A rows (3 on AVX2, 4 on AVX-512, the last one partial).
  // K around the 8/16-float steps and their masked tails, N around the 4-row blocks, padded
  // leading dimensions, alpha, accumulate and epilogues, 1–3 threads; every output is one dot
  // product computed by one thread, so the result does not depend on the thread count.
  // M = 33, a transposed A or a plain B go to the tile kernels.
  for (int64_t m : {2, 3, 4, 5, 7, 8, 17, 32})
    for (int64_t k : {1, 7, 8, 9, 16, 33, 300})
      for (int64_t n : {1, 3, 4, 5, 17, 130}) {
        Fixture f(m, n, k, false, true, rng, 1 + (m + k) % 3);
        f.p.alpha = k % 2 ? 1.0f : -0.5f;
        f.p.accumulate = (n + k) % 2 == 1;
        f.p.epilogue = {f.op(EpilogueKind::BiasCol), f.op(EpilogueKind::BiasRow),
                        f.op(EpilogueKind::Gelu), f.op(EpilogueKind::AddResidual)};
        SCOPED_TRACE("m " + std::to_string(m) + ", k " + std::to_string(k) + ", n " +
                     std::to_string(n));
        ASSERT_TRUE(gemv_applies(f.p) && gemm_reads_b_in_place(f.p, 2));
        ASSERT_FALSE(swapped_product_applies(f.p, 1));  // W under 256 Ki floats
        check_thread_counts(f, [](int) { return false; });
        if (HasFatalFailure()) return;
      }
  for (auto [m, ta, tb] :
       {std::tuple{33, false, true}, std::tuple{4, true, true}, std::tuple{4, false, false}}) {
    Fixture f(m, 40, 50, ta, tb, rng);
    EXPECT_FALSE(gemv_applies(f.p)) << "m " << m << ", trans_a " << ta << ", trans_b " << tb;
    // A plain B under one row tile is read in place by the tile kernels too; Bᵀ is packed.
    EXPECT_EQ(gemm_reads_b_in_place(f.p, 2), !tb) << "m " << m << ", trans_b " << tb;
    gemm_f32(f.p, 2);
    f.check();
  }
  EXPECT_FALSE(gemm_reads_b_in_place(Fixture(512, 64, 64, false, false, rng).p,
                                     2));  // many row tiles: packed
}

TEST_F(GemmTest, StreamedPlainBFewRows) {
  // 2-64 rows times a plain B of 256 Ki to 4 Mi floats (torch.mm with a weight in [K, N], a
  // Linear's input gradient): B read in place over an N split in K chunks of 128 rows, the
  // kernels prefetching along B's rows (gemm_config.h "Streamed plain B"). Rows around the
  // 14-row tiles and the 6-row wide panels, N with a partial last panel, K over one and several
  // chunks with a short last one, padded leading dimensions, alpha, accumulate, JIT and C++
  // epilogue ops, 1-3 threads: each output is computed by one thread in K-chunk order, so the
  // result does not depend on the thread count (unless split-K applies).
  if (gemm_blocking().isa != xbyak::Isa::Avx512) GTEST_SKIP() << "streaming is AVX-512 only";
  struct Shape {
    int64_t n, k;
  };
  int trial = 0;
  for (int64_t m : {2, 7, 15, 33, 64})
    for (Shape s : {Shape{1000, 300}, Shape{2050, 129}, Shape{600, 513}}) {
      ++trial;
      Fixture f(m, s.n, s.k, false, false, rng, 1 + trial % 3);
      f.p.alpha = trial % 2 ? 1.0f : -0.5f;
      f.p.accumulate = trial % 3 == 0;
      f.p.epilogue = {f.op(EpilogueKind::BiasCol), f.op(EpilogueKind::BiasRow)};
      f.p.epilogue.push_back(f.op(trial % 2 ? EpilogueKind::Gelu : EpilogueKind::Relu));
      f.p.epilogue.push_back(f.op(EpilogueKind::AddResidual));
      SCOPED_TRACE("m " + std::to_string(m) + ", n " + std::to_string(s.n) + ", k " +
                   std::to_string(s.k));
      for (int threads : {1, 2, 3})
        ASSERT_TRUE(gemm_reads_b_in_place(f.p, threads)) << threads << " threads";
      check_thread_counts(
          f, [&](int threads) { return gemm_split_k_parts(f.p, nullptr, threads) > 1; });
      if (HasFatalFailure()) return;
    }
  // Under 256 Ki or over 4 Mi floats of B, or more rows than stream_max_rows: packed as before.
  EXPECT_FALSE(gemm_reads_b_in_place(Fixture(33, 500, 500, false, false, rng).p, 2));
  EXPECT_FALSE(gemm_reads_b_in_place(Fixture(33, 4100, 1100, false, false, rng).p, 2));
  EXPECT_FALSE(gemm_reads_b_in_place(Fixture(65, 1000, 300, false, false, rng).p, 2));
}

TEST_F(GemmTest, SwappedFewRowProductsTimesWTransposed) {
  // 17-128 rows times Wᵀ, computed as Cᵀ = W · Aᵀ then transposed into C (gemm_swapped.h):
  // rows around the wide tile's 64-column pairs and the 16-row transpose blocks, W rows around
  // the 64-column output pass, K over one K block (1024), A plain or transposed, padded leading
  // dimensions, alpha, accumulate, every kind of epilogue op (a column bias stays a column
  // bias), a tile kernel, 1-3 threads, and a call from inside a parallel region.
  if (gemm_blocking().isa != xbyak::Isa::Avx512) GTEST_SKIP() << "the swapped form is AVX-512 only";
  struct Shape {
    int64_t m, n, k;
  };
  int trial = 0;
  for (Shape s : {Shape{33, 200, 4000}, Shape{64, 400, 2000}, Shape{100, 6000, 140},
                  Shape{17, 129, 6200}, Shape{128, 390, 2100}, Shape{47, 12400, 64}})
    for (bool ta : {false, true}) {
      ++trial;
      Fixture f(s.m, s.n, s.k, ta, true, rng, 1 + trial % 3);
      f.p.alpha = trial % 2 ? 1.0f : -0.5f;
      f.p.accumulate = trial % 3 == 0;
      f.p.epilogue = {f.op(EpilogueKind::BiasCol), f.op(EpilogueKind::BiasRow)};
      if (trial % 2)
        f.p.epilogue.push_back(f.op(EpilogueKind::Gelu));
      else
        f.p.epilogue.push_back(f.op(EpilogueKind::Relu));
      f.p.epilogue.push_back(f.op(EpilogueKind::AddResidual));
      SCOPED_TRACE(std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) +
                   ", trans_a " + std::to_string(ta));
      ASSERT_TRUE(swapped_product_applies(f.p, 2));
      EXPECT_TRUE(gemm_reads_b_in_place(f.p, 2));
      EXPECT_TRUE(in_place_beats_packed_copy(f.p, 2, /*frozen=*/false));
      EXPECT_FALSE(in_place_beats_packed_copy(f.p, 2, /*frozen=*/true));
      const std::vector<float> c_before = f.c_frame;
      for (int threads : {1, 2, 3}) {
        f.c_frame = c_before;
        f.p.c = f.c_frame.data() + f.frame_ld;
        gemm_f32(f.p, threads);
        f.check();
        if (HasFatalFailure()) return;
        const std::vector<float> first = f.c_frame;
        f.c_frame = c_before;
        gemm_f32(f.p, threads);
        ASSERT_EQ(std::memcmp(first.data(), f.c_frame.data(), first.size() * 4), 0)
            << threads << " threads, run to run";
      }
    }
  // Not swapped: a plain B, too few W rows or too little of W per thread, fewer rows than
  // swap_min_rows or more than swap_max_rows.
  EXPECT_FALSE(swapped_product_applies(Fixture(64, 300, 2000, false, false, rng).p, 2));
  EXPECT_FALSE(swapped_product_applies(Fixture(64, 100, 6000, false, true, rng).p, 2));
  EXPECT_FALSE(swapped_product_applies(Fixture(64, 300, 1500, false, true, rng).p, 2));
  EXPECT_FALSE(swapped_product_applies(
      Fixture(gemm_blocking().swap_min_rows - 1, 300, 2000, false, true, rng).p, 2));
  EXPECT_FALSE(swapped_product_applies(
      Fixture(gemm_blocking().swap_max_rows + 1, 300, 2000, false, true, rng).p, 2));

  // A tile kernel sees every element of C once, after the other ops.
  Fixture f(70, 300, 1800, false, true, rng);
  HalfMinusRowTile tile(f);
  f.p.epilogue = {f.op(EpilogueKind::BiasCol), tile.op(f)};
  ASSERT_TRUE(swapped_product_applies(f.p, 2));
  gemm_f32(f.p, 2);
  f.check();
  for (int e = 0; e < 70 * 300; ++e) ASSERT_EQ(tile.hits[e], 1) << "element " << e;

  // Two OpenMP threads, each asking for a 2-thread swapped product (no nesting: each runs on its
  // own thread).
  Fixture g0(40, 260, 2100, false, true, rng), g1(90, 300, 1800, true, true, rng);
  Fixture* both[2] = {&g0, &g1};
  ASSERT_TRUE(swapped_product_applies(g0.p, 2) && swapped_product_applies(g1.p, 2));
#pragma omp parallel num_threads(2)
  gemm_f32(both[omp_get_thread_num()]->p, 2);
  g0.check();
  g1.check();
}

}  // namespace
}  // namespace inductor_cpp::matrix::gemm_test
