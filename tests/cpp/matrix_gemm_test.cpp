/// \file
/// GEMM driver against an fp64 reference: fuzzed shapes around the tile sizes (tails, 1-row /
/// 1-column, leading dimensions ≠ sizes, transposes), canaries around C, tile kernels, split K,
/// bmm, denormal flushing with MXCSR restored; thread counts 1–7 on shapes whose blocks and
/// thread grids split unevenly (cooperative B packing), run-to-run bit-identity, calls from
/// inside a parallel region and from concurrent callers, bad arguments. The few-row forms,
/// epilogues and packing have their own files (matrix_gemm_*_test.cpp).
#include <omp.h>
#include <xmmintrin.h>

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <thread>

#include "matrix/gemm_config.h"
#include "matrix/gemm_driver.h"
#include "matrix/pack.h"
#include "tests/cpp/matrix_gemm_test_util.h"

namespace inductor_cpp::matrix::gemm_test {
namespace {

TEST_F(GemmTest, FuzzedShapesAroundTiles) {
  const int64_t sizes[] = {1, 2, 5, 13, 14, 15, 16, 17, 28, 31, 32, 33, 47, 64, 65, 100};
  std::uniform_int_distribution<int> pick(0, std::size(sizes) - 1), coin(0, 1);
  for (int trial = 0; trial < 120; ++trial) {
    Fixture f(sizes[pick(rng)], sizes[pick(rng)], sizes[pick(rng)], coin(rng), coin(rng), rng,
              1 + coin(rng) * 5);
    f.p.accumulate = coin(rng);
    f.p.alpha = coin(rng) ? 1.0f : -0.75f;
    gemm_f32(f.p, 1 + coin(rng));
    f.check();
    if (HasFatalFailure()) return;
  }
}

TEST_F(GemmTest, BlockedSizesBothThreadCounts) {
  // Larger than one K block (256), one M block and several column panels; 1-row, 1-column.
  struct Shape {
    int64_t m, n, k;
  };
  for (Shape s : {Shape{300, 97, 600}, Shape{1, 200, 700}, Shape{150, 1, 520}, Shape{470, 70, 33}})
    for (int threads : {1, 2})
      for (bool tb : {false, true}) {
        Fixture f(s.m, s.n, s.k, false, tb, rng);
        f.p.accumulate = true;
        gemm_f32(f.p, threads);
        f.check();
      }
  // A row block a little over mc (130 rows in one block rather than 120 + 10) with A packed
  // (transposed): the packed A buffer must hold the whole block.
  for (int64_t m : {130, 256}) {
    Fixture f(m, 97, 600, true, false, rng);
    gemm_f32(f.p, 1);
    f.check();
  }
}

TEST_F(GemmTest, TileKernelRunsOnceOnEveryElementAfterTheOtherOps) {
  // Tiles of every kind (tails, one row: the matrix-vector path, split K, two threads, B
  // packed beforehand or per call), the kernel after a JIT op and a C++-pass op.
  struct Shape {
    int64_t m, n, k;
  };
  for (Shape s : {Shape{37, 45, 70}, Shape{1, 200, 300}, Shape{8, 32, 4096}, Shape{130, 97, 600}})
    for (int threads : {1, 2})
      for (bool prepacked : {false, true}) {
        Fixture f(s.m, s.n, s.k, false, threads == 2, rng);
        HalfMinusRowTile tile(f);
        f.p.epilogue = {f.op(EpilogueKind::BiasCol), f.op(EpilogueKind::Gelu), tile.op(f)};
        run_gemm(f, threads, prepacked);
        f.check();
        EXPECT_EQ(tile.kernel.status.load(), 0);
        for (int64_t e = 0; e < s.m * s.n; ++e)
          ASSERT_EQ(tile.hits[e], 1)
              << "element " << e << " of " << s.m << "x" << s.n << "x" << s.k;
        if (HasFatalFailure()) return;
      }
}

TEST_F(GemmTest, TileKernelStatusAndPlacement) {
  Fixture f(64, 48, 32, false, false, rng);
  HalfMinusRowTile tile(f, /*fail_at_row=*/50);
  EpilogueOp op = tile.op(f);
  f.p.epilogue = {op};
  gemm_f32(f.p, 2);
  EXPECT_EQ(tile.kernel.status.load(), 1);  // the failing tile's status is kept
  f.p.epilogue = {op, f.op(EpilogueKind::Relu)};
  EXPECT_THROW(gemm_f32(f.p, 1), std::invalid_argument);  // not the last op
  op.tile = nullptr;
  f.p.epilogue = {op};
  EXPECT_THROW(gemm_f32(f.p, 1), std::invalid_argument);  // no kernel
  tile.kernel.status = 0;
  op.tile = &tile.kernel;
  f.p.epilogue = {op};
  EXPECT_THROW(bmm_f32(f.p, 2, 0, 0, 0, 1), std::invalid_argument);  // per-matrix positions
}

TEST_F(GemmTest, SplitKWhenTooFewTiles) {
  // 1 or 2 output tiles, long K, 2 threads: K is split across the threads.
  for (auto s : std::vector<std::array<int64_t, 3>>{{1, 30, 5000}, {8, 32, 4096}, {14, 17, 4500}})
    for (bool ta : {false, true}) {
      Fixture f(s[0], s[1], s[2], ta, !ta, rng);
      f.p.accumulate = true;
      f.p.alpha = 0.5f;
      f.p.epilogue = {f.op(EpilogueKind::BiasCol), f.op(EpilogueKind::Relu)};
      gemm_f32(f.p, 2);
      f.check();
    }
}

TEST_F(GemmTest, SplitKBalancesUnevenPanelShares) {
  // Long K and output tiles that do not share out evenly: 24 column panels on 16 threads (on
  // AVX-512 the BERT FFN down-projection at batch 8, 8 × 768 × 3072), 3 panels on 4 threads,
  // one 4 × 16 tile on 6 threads. The team splits K into groups; B pre-packed (a K range of
  // each panel), read in place, or transposed (packed per call: split where each part packs a
  // private copy, else run unsplit); the whole epilogue, alpha and accumulate after the
  // reduction; bit-identical on a second call.
  struct Shape {
    int64_t m, n, k;
    int threads;
  };
  // One row tile (8 rows on AVX-512's 14-row tiles, 5 on AVX2's 6-row ones) over nr-wide panels.
  const GemmBlocking& blk = gemm_blocking();
  // K long enough that the split takes at least kMinSplitSavedMacs off the busiest thread.
  const int64_t rows = std::min(8, blk.mr - 1), nr = blk.nr, k = nr >= 32 ? 3072 : 8192;
  for (Shape s :
       {Shape{rows, 24 * nr, k, 16}, Shape{rows, 3 * nr, 16384, 4}, Shape{4, 16, 8192, 6}})
    for (int variant = 0; variant < 3; ++variant) {
      const bool prepacked = variant == 0, tb = variant == 2;
      Fixture f(s.m, s.n, s.k, false, tb, rng);
      f.p.alpha = 0.5f;
      f.p.accumulate = true;
      f.p.epilogue = {f.op(EpilogueKind::BiasCol), f.op(EpilogueKind::Gelu),
                      f.op(EpilogueKind::AddResidual)};
      SCOPED_TRACE(std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) +
                   ", variant " + std::to_string(variant));
      const PackedB packed = pack_b_f32(f.p.b, f.p.k, f.p.n, f.p.ldb, tb);
      const int parts = gemm_split_k_parts(f.p, prepacked ? &packed : nullptr, s.threads);
      // A transposed B is packed per call: split only where each part packs its own copy.
      if (!tb) EXPECT_GT(parts, 1);
      const std::vector<float> before = f.c_frame;
      auto run = [&] {
        if (prepacked)
          gemm_f32_packed(f.p, packed, s.threads);
        else
          gemm_f32(f.p, s.threads);
      };
      run();
      f.check();
      if (HasFatalFailure()) return;
      const std::vector<float> first = f.c_frame;
      f.c_frame = before;
      f.p.c = f.c_frame.data() + f.frame_ld;
      run();
      ASSERT_EQ(std::memcmp(first.data(), f.c_frame.data(), first.size() * sizeof(float)), 0);
    }
  // Enough tiles for everyone: no split.
  Fixture big(256, 256, 2048, false, false, rng);
  EXPECT_EQ(gemm_split_k_parts(big.p, nullptr, 4), 1);
}

TEST_F(GemmTest, ThreadCountsWithUnevenSplits) {
  // Several B blocks along N (> nc columns) and K (> kc), row and column tails, thread grids that
  // split M, N or both unevenly (7 threads: 7 × 1 or 1 × 7), per-call packed B (plain and
  // transposed), a pre-packed B and a B read in place (few rows).
  struct Shape {
    int64_t m, n, k;
  };
  // Long K (4–5 blocks): the shared B ring (3 slots) is refilled while other threads may still
  // read the previous block.
  for (Shape s : {Shape{100, 1060, 300}, Shape{45, 700, 270}, Shape{5, 600, 100},
                  Shape{31, 97, 700}, Shape{140, 64, 2100}, Shape{40, 500, 1600}})
    for (bool tb : {false, true})
      for (int threads : {1, 2, 3, 4, 7}) {
        Fixture f(s.m, s.n, s.k, threads % 2 == 0, tb, rng);
        f.p.accumulate = threads == 3;
        f.p.epilogue = {f.op(EpilogueKind::BiasCol), f.op(EpilogueKind::Relu)};
        SCOPED_TRACE(std::to_string(threads) + " threads, trans_b " + std::to_string(tb));
        run_gemm(f, threads, /*prepacked=*/threads == 4);
        f.check();
        if (HasFatalFailure()) return;
      }
}

TEST_F(GemmTest, SameThreadCountIsBitIdentical) {
  for (int threads : {2, 3, 7}) {
    Fixture f(130, 1100, 600, false, true, rng);
    gemm_f32(f.p, threads);
    const std::vector<float> first = f.c_frame;
    for (int rep = 0; rep < 3; ++rep) {
      for (int64_t i = 0; i < f.p.m; ++i) std::fill_n(f.p.c + i * f.p.ldc, f.p.n, float(rep));
      gemm_f32(f.p, threads);
      ASSERT_EQ(std::memcmp(first.data(), f.c_frame.data(), first.size() * sizeof(float)), 0)
          << threads << " threads, repeat " << rep;
    }
  }
}

TEST_F(GemmTest, WideTilesOverPanelPairs) {
  // Many rows per thread (or M ≤ 6) on packed B take the wide tile over pairs of panels
  // (gemm_config.h: pair_min_rows): even and odd panel counts per thread column, a partial
  // last panel alone or second in its pair, uneven K blocks (K 2501: 834 + 834 + 833),
  // prepacked and per-call packed B.
  struct Shape {
    int64_t m, n, k;
  };
  for (Shape s : {Shape{131, 100, 300}, Shape{140, 64, 900}, Shape{131, 100, 2501},
                  Shape{200, 1060, 130}, Shape{70, 40, 50}, Shape{5, 100, 300}, Shape{1, 1060, 64}})
    for (int threads : {1, 2, 3})
      for (bool prepacked : {false, true}) {
        Fixture f(s.m, s.n, s.k, false, true, rng);
        f.p.epilogue = {f.op(EpilogueKind::BiasCol), f.op(EpilogueKind::AddResidual),
                        f.op(EpilogueKind::Relu)};
        SCOPED_TRACE(std::to_string(threads) + " threads, prepacked " + std::to_string(prepacked));
        run_gemm(f, threads, prepacked);
        f.check();
        if (HasFatalFailure()) return;
      }
}

TEST_F(GemmTest, SharedRingSurvivesThreadSkew) {
  // More threads than cores: thread columns drift up to the ring's 3 slots apart while the last
  // K block is shorter than the others (K = 4001: 3 × 1001 + 998 on the wide tile). Each panel
  // has a fixed place in its slot; a layout by the step's own K length let a column that was
  // ahead overwrite panels another column was still reading (seen with 8 threads on 2 cores).
  std::mt19937 local(7);
  std::uniform_real_distribution<float> dist(-1, 1);
  const int64_t m = 512, n = 2048, k = 4001;
  std::vector<float> a(m * k), b(k * n), reference(m * n), c(m * n);
  for (float& x : a) x = dist(local);
  for (float& x : b) x = dist(local);
  GemmProblem p;
  p.m = m, p.n = n, p.k = k, p.a = a.data(), p.lda = k, p.b = b.data(), p.ldb = n;
  p.c = reference.data(), p.ldc = n;
  gemm_f32(p, 1);
  p.c = c.data();
  for (int threads : {8, 12})
    for (int rep = 0; rep < 5; ++rep) {
      std::fill(c.begin(), c.end(), 0.0f);
      gemm_f32(p, threads);
      for (int64_t i = 0; i < m * n; ++i)
        ASSERT_NEAR(c[i], reference[i], 1e-3f * (1 + std::fabs(reference[i])))
            << "element " << i << ", " << threads << " threads, repeat " << rep;
    }
}

TEST_F(GemmTest, CalledFromInsideAParallelRegion) {
  // Each of two OpenMP threads asks for a 3-thread GEMM; without nesting the inner region would
  // get a team of one, so the call must run on its thread instead of skipping work.
  std::vector<std::unique_ptr<Fixture>> fixtures;
  for (int t = 0; t < 2; ++t)
    fixtures.push_back(std::make_unique<Fixture>(90 + t, 300, 400, false, t == 1, rng));
#pragma omp parallel for num_threads(2)
  for (int t = 0; t < 2; ++t) gemm_f32(fixtures[t]->p, 3);
  for (auto& f : fixtures) f->check();
}

TEST_F(GemmTest, BatchedStrides) {
  const int64_t batch = 3, m = 20, n = 33, k = 18;
  std::vector<float> a(batch * m * k), b(batch * k * n), c(batch * m * n);
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(i % 13) * 0.1f - 0.6f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = float(i % 7) * 0.2f - 0.6f;
  for (int threads : {1, 2, 4}) {
    GemmProblem p;
    p.m = m, p.n = n, p.k = k, p.a = a.data(), p.lda = k, p.b = b.data(), p.ldb = n;
    p.c = c.data(), p.ldc = n;
    bmm_f32(p, batch, m * k, k * n, m * n, threads);
    for (int64_t t = 0; t < batch; ++t)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double r = 0;
          for (int64_t kk = 0; kk < k; ++kk)
            r += double(a[t * m * k + i * k + kk]) * b[t * k * n + kk * n + j];
          ASSERT_NEAR(c[t * m * n + i * n + j], r, 1e-4);
        }
  }
}

TEST_F(GemmTest, DenormalFlushIsOptInAndRestoresMxcsr) {
  const float tiny = std::numeric_limits<float>::denorm_min() * 64;
  std::vector<float> a(16 * 16, tiny), b(16 * 16, 0.5f), c(16 * 16, -1);
  GemmProblem p;
  p.m = p.n = p.k = 16, p.a = a.data(), p.lda = 16, p.b = b.data(), p.ldb = 16, p.c = c.data(),
  p.ldc = 16;
  gemm_f32(p, 1);
  EXPECT_EQ(c[0], tiny * 0.5f * 16) << "IEEE by default: denormals kept";
  p.flush_denormals = true;
  const unsigned before = _mm_getcsr();  // (after the test's own denormal arithmetic above)
  gemm_f32(p, 2);
  EXPECT_EQ(c[5], 0.0f) << "DAZ: denormal inputs read as zero";
  EXPECT_EQ(_mm_getcsr(), before) << "FTZ/DAZ must not leak to the caller";
}

TEST_F(GemmTest, ConcurrentCallersAreIndependent) {
  // Reentrancy: four caller threads, each with its own shapes (so new kernels are generated
  // concurrently through the shared cache) and its own OpenMP team of two.
  std::vector<std::unique_ptr<Fixture>> fixtures;
  for (int t = 0; t < 4; ++t) {
    fixtures.push_back(
        std::make_unique<Fixture>(20 + 7 * t, 40 + 3 * t, 50 + 11 * t, t % 2, t / 2, rng));
    fixtures.back()->p.epilogue = {fixtures.back()->op(EpilogueKind::BiasCol),
                                   fixtures.back()->op(EpilogueKind::Silu)};
  }
  std::vector<std::thread> callers;
  for (auto& f : fixtures)
    callers.emplace_back([&f] {
      for (int rep = 0; rep < 3; ++rep) gemm_f32(f->p, 2);
    });
  for (auto& c : callers) c.join();
  for (auto& f : fixtures) f->check();
}

TEST_F(GemmTest, ZeroSizesAndBadArguments) {
  std::vector<float> c(4, 7.0f), a(4, 1.0f), b(4, 1.0f);
  GemmProblem p;
  p.m = 2, p.n = 2, p.k = 0, p.c = c.data(), p.ldc = 2, p.a = a.data(), p.lda = 1, p.b = b.data(),
  p.ldb = 2;
  gemm_f32(p, 2);  // k = 0: C = 0
  EXPECT_EQ(c[3], 0.0f);
  p.k = 2;
  p.lda = 1;  // < k
  EXPECT_THROW(gemm_f32(p, 1), std::invalid_argument);
  p.lda = 2;
  p.epilogue = {{EpilogueKind::BiasCol}};  // no data
  EXPECT_THROW(gemm_f32(p, 1), std::invalid_argument);
  const PackedB packed = pack_b_f32(b.data(), 2, 2, 2, false);
  p.epilogue.clear();
  p.n = 1;
  EXPECT_THROW(gemm_f32_packed(p, packed, 1), std::invalid_argument);
}

}  // namespace
}  // namespace inductor_cpp::matrix::gemm_test
