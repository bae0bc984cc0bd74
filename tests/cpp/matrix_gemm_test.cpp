/// \file matrix_gemm_test.cpp
/// \brief GEMM driver against an fp64 reference: fuzzed shapes around the tile sizes (tails,
/// 1-row / 1-column, leading dimensions ≠ sizes, transposes), canaries around C, pre-packed B,
/// bmm, every epilogue op (JIT and C++ pass), denormal flushing with MXCSR restored; thread
/// counts 1–7 on shapes whose blocks and thread grids split unevenly (cooperative B packing),
/// run-to-run bit-identity, calls from inside a parallel region, and the packers' layouts.
#include <gtest/gtest.h>
#include <omp.h>
#include <xmmintrin.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <thread>
#include <tuple>
#include <vector>

#include "matrix/jit/cpu_features.h"
#include "matrix/gemm.h"
#include "matrix/gemm_config.h"
#include "matrix/gemm_driver.h"
#include "matrix/gemm_swapped.h"
#include "matrix/gemv.h"
#include "matrix/pack.h"
#include "matrix/scratch.h"

namespace inductor_cpp::matrix {
namespace {

constexpr float kCanary = 31337.5f;

double reference_op(const EpilogueOp& op, double x, int64_t i, int64_t j) {
  switch (op.kind) {
    case EpilogueKind::BiasRow:
      return x + op.data[i];
    case EpilogueKind::BiasCol:
      return x + op.data[j];
    case EpilogueKind::Scale:
      return x * op.a;
    case EpilogueKind::ScaleCol:
      return x * op.data[j];
    case EpilogueKind::Relu:
      return std::max(x, 0.0);
    case EpilogueKind::Gelu:
      return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    case EpilogueKind::GeluTanh:
      return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    case EpilogueKind::Silu:
      return x / (1 + std::exp(-x));
    case EpilogueKind::Clamp:
      return std::min(std::max(x, double(op.a)), double(op.b));
    case EpilogueKind::AddResidual:
      return x + op.data[i * op.ld + j];
    case EpilogueKind::MulResidual:
      return x * op.data[i * op.ld + j];
    case EpilogueKind::Sigmoid:
      return 1 / (1 + std::exp(-x));
    case EpilogueKind::Tanh:
      return std::tanh(x);
    case EpilogueKind::Tile:  // tile_half_minus_row below
      return 0.5 * x - op.data[i];
  }
  return x;
}

/// What the tile kernel of the TileKernel tests sees: C and the element hit counts.
struct TileContext {
  float* c = nullptr;
  int64_t ldc = 0, n = 0;
  const float* bias_row = nullptr;
  std::vector<int>* hits = nullptr;
  int64_t fail_at_row = -1;  ///< report status 1 for the tile holding this row
};

/// A stand-in for a generated tile kernel: C(r, j) = C(r, j) / 2 − bias_row[r] over the tile.
int32_t tile_half_minus_row(char* const* bufs, const int64_t* symbols, int32_t /*threads*/) {
  const auto* t = reinterpret_cast<const TileContext*>(bufs[0]);
  const int64_t row0 = symbols[0], rows = symbols[1], col0 = symbols[2], cols = symbols[3];
  for (int64_t r = row0; r < row0 + rows; ++r)
    for (int64_t j = col0; j < col0 + cols; ++j) {
      float& x = t->c[r * t->ldc + j];
      x = 0.5f * x - t->bias_row[r];
      ++(*t->hits)[r * t->n + j];
    }
  return t->fail_at_row >= row0 && t->fail_at_row < row0 + rows ? 1 : 0;
}

/// Owns the buffers of one random problem; C lives inside a canary frame.
struct Fixture {
  GemmProblem p;
  std::vector<float> a, b, c_frame, c_init, bias_row, bias_col, residual;
  int64_t frame_ld = 0;

  Fixture(int64_t m, int64_t n, int64_t k, bool ta, bool tb, std::mt19937& rng, int64_t pad = 3) {
    std::uniform_real_distribution<float> dist(-1, 1);
    p.m = m, p.n = n, p.k = k, p.trans_a = ta, p.trans_b = tb;
    p.lda = (ta ? m : k) + pad;
    p.ldb = (tb ? k : n) + pad;
    p.ldc = n + pad;
    a.resize((ta ? k : m) * p.lda + 1);
    b.resize((tb ? n : k) * p.ldb + 1);
    for (float& x : a) x = dist(rng);
    for (float& x : b) x = dist(rng);
    frame_ld = p.ldc;
    c_frame.assign((m + 2) * frame_ld, kCanary);
    c_init.resize(m * n);
    p.c = c_frame.data() + frame_ld;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) p.c[i * p.ldc + j] = c_init[i * n + j] = dist(rng);
    bias_row.resize(m);
    bias_col.resize(n);
    residual.resize(m * (n + 1));
    for (float& x : bias_row) x = dist(rng);
    for (float& x : bias_col) x = dist(rng);
    for (float& x : residual) x = dist(rng);
    p.a = a.data();
    p.b = b.data();
  }

  EpilogueOp op(EpilogueKind kind, float x = 0, float y = 0) const {
    EpilogueOp e{kind};
    e.a = x, e.b = y;
    if (kind == EpilogueKind::BiasRow) e.data = bias_row.data();
    if (kind == EpilogueKind::BiasCol) e.data = bias_col.data();
    if (is_residual_op(kind)) e.data = residual.data(), e.ld = p.n + 1;
    return e;
  }

  void check() const {
    const GemmProblem& q = p;
    for (int64_t i = 0; i < q.m; ++i)
      for (int64_t j = 0; j < q.n; ++j) {
        double acc = 0, mag = 0;
        for (int64_t kk = 0; kk < q.k; ++kk) {
          const double x = q.trans_a ? a[kk * q.lda + i] : a[i * q.lda + kk];
          const double y = q.trans_b ? b[j * q.ldb + kk] : b[kk * q.ldb + j];
          acc += x * y;
          mag += std::fabs(x * y);
        }
        double r = q.alpha * acc + (q.accumulate ? c_init[i * q.n + j] : 0.0);
        for (const EpilogueOp& e : q.epilogue) r = reference_op(e, r, i, j);
        ASSERT_NEAR(q.c[i * q.ldc + j], r, 2e-6 * (mag + 8) + 1e-6)
            << "C(" << i << "," << j << ") of " << q.m << "x" << q.n << "x" << q.k;
      }
    for (int64_t j = 0; j < frame_ld; ++j) {
      ASSERT_EQ(c_frame[j], kCanary) << "row above C written";
      ASSERT_EQ(c_frame[(q.m + 1) * frame_ld + j], kCanary) << "row below C written";
    }
    for (int64_t i = 0; i < q.m; ++i)
      for (int64_t j = q.n; j < q.ldc; ++j)
        ASSERT_EQ(q.c[i * q.ldc + j], kCanary) << "past column n";
  }
};

/// Runs f's problem with B packed beforehand (gemm_f32_packed) or per call (gemm_f32).
void run_gemm(Fixture& f, int threads, bool prepacked) {
  if (!prepacked) return gemm_f32(f.p, threads);
  const PackedB packed = pack_b_f32(f.p.b, f.p.k, f.p.n, f.p.ldb, f.p.trans_b);
  gemm_f32_packed(f.p, packed, threads);
}

class GemmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!xbyak::cpu_features().avx2) GTEST_SKIP() << "needs AVX2 or AVX-512";
  }
  std::mt19937 rng{42};
};

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
        std::vector<int> hits(s.m * s.n, 0);
        TileContext context{f.p.c, f.p.ldc, s.n, f.bias_row.data(), &hits};
        char* bufs[1] = {reinterpret_cast<char*>(&context)};
        TileKernel tile;
        tile.fn = tile_half_minus_row;
        tile.bufs = bufs;
        EpilogueOp op = f.op(EpilogueKind::Tile);
        op.data = f.bias_row.data();  // for reference_op only: the library passes nothing
        op.tile = &tile;
        f.p.epilogue = {f.op(EpilogueKind::BiasCol), f.op(EpilogueKind::Gelu), op};
        run_gemm(f, threads, prepacked);
        f.check();
        EXPECT_EQ(tile.status.load(), 0);
        for (int64_t e = 0; e < s.m * s.n; ++e)
          ASSERT_EQ(hits[e], 1) << "element " << e << " of " << s.m << "x" << s.n << "x" << s.k;
        if (HasFatalFailure()) return;
      }
}

TEST_F(GemmTest, TileKernelStatusAndPlacement) {
  Fixture f(64, 48, 32, false, false, rng);
  std::vector<int> hits(64 * 48, 0);
  TileContext context{f.p.c, f.p.ldc, 48, f.bias_row.data(), &hits, /*fail_at_row=*/50};
  char* bufs[1] = {reinterpret_cast<char*>(&context)};
  TileKernel tile;
  tile.fn = tile_half_minus_row;
  tile.bufs = bufs;
  EpilogueOp op = f.op(EpilogueKind::Tile);
  op.tile = &tile;
  f.p.epilogue = {op};
  gemm_f32(f.p, 2);
  EXPECT_EQ(tile.status.load(), 1);  // the failing tile's status is kept
  f.p.epilogue = {op, f.op(EpilogueKind::Relu)};
  EXPECT_THROW(gemm_f32(f.p, 1), std::invalid_argument);  // not the last op
  op.tile = nullptr;
  f.p.epilogue = {op};
  EXPECT_THROW(gemm_f32(f.p, 1), std::invalid_argument);  // no kernel
  tile.status = 0;
  op.tile = &tile;
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

/// Runs f's problem on 1 thread (checked against the reference), then on 2 and 3 threads, each
/// result bit-identical to the one-thread one; where `varies(threads)` (a sum split over
/// threads) it is checked against the reference instead and must repeat bit-identically.
template <typename Varies>
void check_thread_counts(Fixture& f, Varies&& varies) {
  const std::vector<float> c_before = f.c_frame;
  gemm_f32(f.p, 1);
  f.check();
  if (::testing::Test::HasFatalFailure()) return;
  const std::vector<float> one_thread = f.c_frame;
  for (int threads : {2, 3}) {
    const bool split = varies(threads);
    f.c_frame = c_before;
    f.p.c = f.c_frame.data() + f.frame_ld;
    gemm_f32(f.p, threads);
    const std::vector<float> first = f.c_frame;
    if (split) {
      f.check();
      f.c_frame = c_before;
      gemm_f32(f.p, threads);
    }
    ASSERT_EQ(std::memcmp((split ? first : one_thread).data(), f.c_frame.data(), one_thread.size() * 4), 0)
        << threads << " threads";
  }
}

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
        check_thread_counts(f, [&](int threads) { return gemv_grid(f.p, gemv_threads(f.p, threads)).k_parts > 1; });
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
        f.p.epilogue = {f.op(EpilogueKind::BiasCol), f.op(EpilogueKind::BiasRow), f.op(EpilogueKind::Gelu),
                        f.op(EpilogueKind::AddResidual)};
        SCOPED_TRACE("m " + std::to_string(m) + ", k " + std::to_string(k) + ", n " + std::to_string(n));
        ASSERT_TRUE(gemv_applies(f.p) && gemm_reads_b_in_place(f.p, 2));
        ASSERT_FALSE(swapped_product_applies(f.p, 1));  // W under 256 Ki floats
        check_thread_counts(f, [](int) { return false; });
        if (HasFatalFailure()) return;
      }
  for (auto [m, ta, tb] : {std::tuple{33, false, true}, std::tuple{4, true, true}, std::tuple{4, false, false}}) {
    Fixture f(m, 40, 50, ta, tb, rng);
    EXPECT_FALSE(gemv_applies(f.p)) << "m " << m << ", trans_a " << ta << ", trans_b " << tb;
    // A plain B under one row tile is read in place by the tile kernels too; Bᵀ is packed.
    EXPECT_EQ(gemm_reads_b_in_place(f.p, 2), !tb) << "m " << m << ", trans_b " << tb;
    gemm_f32(f.p, 2);
    f.check();
  }
  EXPECT_FALSE(gemm_reads_b_in_place(Fixture(512, 64, 64, false, false, rng).p, 2));  // many row tiles: packed
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
  std::vector<int> hits(70 * 300, 0);
  TileContext context{f.p.c, f.p.ldc, 300, f.bias_row.data(), &hits};
  char* bufs[1] = {reinterpret_cast<char*>(&context)};
  TileKernel tile;
  tile.fn = tile_half_minus_row;
  tile.bufs = bufs;
  EpilogueOp op = f.op(EpilogueKind::Tile);
  op.data = f.bias_row.data();  // for reference_op only
  op.tile = &tile;
  f.p.epilogue = {f.op(EpilogueKind::BiasCol), op};
  ASSERT_TRUE(swapped_product_applies(f.p, 2));
  gemm_f32(f.p, 2);
  f.check();
  for (int e = 0; e < 70 * 300; ++e) ASSERT_EQ(hits[e], 1) << "element " << e;

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

TEST_F(GemmTest, PackersMatchTheirLayouts) {
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> src(80 * 90);
  for (float& x : src) x = dist(rng);
  const int64_t ld = 90;
  for (bool trans : {false, true})
    for (int64_t kc : {1, 16, 37})
      for (int64_t ncols : {1, 16, 33, 64}) {
        const int nr = 32;
        const int64_t panels = (ncols + nr - 1) / nr, stride = kc * nr + 5;
        std::vector<float> dst(panels * stride, kCanary);
        pack_b_panels(src.data(), ld, trans, 3, kc, 2, ncols, nr, stride, dst.data());
        for (int64_t p = 0; p < panels; ++p)
          for (int64_t kk = 0; kk < kc; ++kk)
            for (int64_t c = 0; c < nr; ++c) {
              const int64_t j = 2 + p * nr + c, k = 3 + kk;
              const float want = p * nr + c >= ncols ? 0.0f
                                 : trans             ? src[j * ld + k]
                                                     : src[k * ld + j];
              ASSERT_EQ(dst[p * stride + kk * nr + c], want)
                  << "B panel " << p << " k " << kk << " c " << c << " trans " << trans;
            }
        for (int64_t p = 0; p < panels; ++p)
          for (int64_t x = kc * nr; x < stride; ++x) ASSERT_EQ(dst[p * stride + x], kCanary);
      }
  for (bool trans : {false, true})
    for (int64_t rows : {1, 14, 20, 31})
      for (int64_t kc : {1, 17, 40}) {
        const int mr = 14;
        std::vector<float> dst(((rows + mr - 1) / mr) * kc * mr + 8, kCanary);
        pack_a_tiles(src.data(), ld, trans, 4, rows, 5, kc, mr, dst.data());
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t kk = 0; kk < kc; ++kk) {
            const int64_t r = 4 + i, k = 5 + kk;
            ASSERT_EQ(dst[(i / mr) * kc * mr + kk * mr + i % mr],
                      trans ? src[k * ld + r] : src[r * ld + k])
                << "A row " << i << " k " << kk << " trans " << trans;
          }
        const int64_t used = (rows / mr) * kc * mr + (rows % mr ? (kc - 1) * mr + rows % mr : 0);
        for (size_t x = used; x < dst.size(); ++x) ASSERT_EQ(dst[x], kCanary) << "past A tiles";
      }
}

TEST_F(GemmTest, PowerOfTwoLeadingDimensionPacksA) {
  Fixture f(64, 96, 512, false, false, rng, 512);  // lda = 1024
  ASSERT_EQ(f.p.lda % 256, 0);
  gemm_f32(f.p, 2);
  f.check();
}

TEST_F(GemmTest, PrepackedB) {
  for (bool tb : {false, true}) {
    Fixture f(77, 130, 300, false, tb, rng);
    const PackedB packed = pack_b_f32(f.p.b, f.p.k, f.p.n, f.p.ldb, tb);
    EXPECT_EQ(packed.k(), 300);
    EXPECT_EQ(packed.n(), 130);
    f.p.b = nullptr;  // must not be read
    gemm_f32_packed(f.p, packed, 2);
    f.check();
    Fixture g(3, 130, 300, false, tb, rng);  // skinny M with the same weights
    g.b = f.b;
    g.p.b = nullptr;
    gemm_f32_packed(g.p, packed, 2);
    g.p.b = g.b.data();
    g.check();
  }
}

// B packed into storage the caller provides (a compiled graph's block pool), on several
// threads (large enough for more than one packer): the same products; misaligned storage throws.
TEST_F(GemmTest, PrepackedBInCallerStorageOnThreads) {
  for (bool tb : {false, true}) {
    Fixture f(40, 300, 700, false, tb, rng);
    std::vector<std::shared_ptr<float>> given;
    const PackedStorage storage = [&](size_t floats) {
      float* data = static_cast<float*>(std::aligned_alloc(64, (floats * 4 + 63) / 64 * 64));
      given.emplace_back(data, [](float* p) { std::free(p); });
      return given.back();
    };
    const PackedB packed = pack_b_f32(f.p.b, f.p.k, f.p.n, f.p.ldb, tb, 3, storage);
    ASSERT_EQ(given.size(), 1u);
    EXPECT_EQ(packed.panel(0), given[0].get());
    f.p.b = nullptr;
    gemm_f32_packed(f.p, packed, 2);
    f.check();
  }
  const PackedStorage misaligned = [](size_t floats) {
    auto block = std::shared_ptr<float>(new float[floats + 1], std::default_delete<float[]>());
    return std::shared_ptr<float>(block, block.get() + 1);
  };
  EXPECT_THROW(PackedB(8, 8, gemm_blocking().nr, misaligned), std::invalid_argument);
}

TEST_F(GemmTest, EveryEpilogueOpAlone) {
  using K = EpilogueKind;
  for (K kind : {K::BiasRow, K::BiasCol, K::Scale, K::Relu, K::Gelu, K::GeluTanh, K::Silu, K::Clamp,
                 K::AddResidual, K::MulResidual, K::Sigmoid, K::Tanh}) {
    Fixture f(29, 45, 40, false, false, rng);
    f.p.epilogue = {f.op(kind, kind == K::Scale ? 2.5f : -0.2f, 0.3f)};
    gemm_f32(f.p, 2);
    SCOPED_TRACE(int(kind));
    f.check();
  }
}

TEST_F(GemmTest, EpilogueChainsAcrossJitAndCppPass) {
  using K = EpilogueKind;
  Fixture f(70, 100, 300, false, true, rng);  // two K blocks: epilogue only on the last
  f.p.accumulate = true;
  f.p.epilogue = {f.op(K::BiasCol), f.op(K::Gelu),        f.op(K::AddResidual), f.op(K::Relu),
                  f.op(K::Silu),    f.op(K::Scale, 1.5f), f.op(K::BiasRow)};
  gemm_f32(f.p, 2);
  f.check();
  // Gates: a product with another tensor in the JIT, then sigmoid / tanh in the C++ pass and a
  // product after them there.
  Fixture g(33, 70, 50, false, false, rng);
  g.p.epilogue = {g.op(K::BiasCol), g.op(K::MulResidual), g.op(K::Tanh), g.op(K::Sigmoid),
                  g.op(K::MulResidual)};
  gemm_f32(g.p, 2);
  g.check();
}

TEST_F(GemmTest, TanhAndSigmoidAcrossTheirRanges) {
  // The C++ pass's tanh switches formula at |x| = 0.625 and its exp clamps at ±88: relative
  // accuracy for tiny inputs, both sides of the switch, saturation, and a masked tail vector.
  std::vector<float> xs;
  for (float x : {0.0f, 1e-30f, 1e-6f, 1e-3f, 0.3f, 0.62f, 0.625f, 0.63f, 1.0f, 3.0f, 9.0f, 20.0f,
                  88.0f, 100.0f})
    xs.insert(xs.end(), {x, -x});
  const int64_t n = int64_t(xs.size());  // 28: one vector and a masked tail
  for (EpilogueKind kind : {EpilogueKind::Tanh, EpilogueKind::Sigmoid}) {
    // C = A · B with A = [1] and B = xs: the epilogue sees xs exactly.
    std::vector<float> a{1.0f}, c(n);
    GemmProblem p;
    p.m = 1, p.n = n, p.k = 1, p.a = a.data(), p.lda = 1, p.b = xs.data(), p.ldb = n;
    p.c = c.data(), p.ldc = n;
    p.epilogue = {{kind}};
    gemm_f32(p, 1);
    for (int64_t j = 0; j < n; ++j) {
      const double x = xs[j];
      const double want = kind == EpilogueKind::Tanh ? std::tanh(x) : 1 / (1 + std::exp(-x));
      EXPECT_NEAR(c[j], want, 4e-7 * std::fabs(want) + 1e-37)
          << "x = " << x << ", kind " << int(kind);
    }
  }
}

TEST_F(GemmTest, NonFiniteValuesKeepEagerSemantics) {
  // NaN and ±inf through every op, as eager gives them: relu / clamp / sigmoid / tanh of NaN are
  // NaN (x86 max and min drop a NaN first operand), exp overflows to +inf (SiLU(-inf) is NaN),
  // sigmoid(±inf) is 0 / 1. C = A · B with k = 1, so the epilogue sees B's values times A's:
  // three rows through the JIT micro-kernels (bias / scale / relu / clamp / residuals there),
  // one row through the one-row product, whose epilogue is the C++ pass for every op.
  const float inf = std::numeric_limits<float>::infinity(),
              nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> xs{nan,    inf,    -inf,    0.0f, -0.0f, 1.0f,   -1.0f, 88.5f, -88.5f, 89.0f,
                        -89.0f, 100.0f, -100.0f, 0.3f, -0.3f, 1e-30f, 5.0f,  -5.0f, nan,    2.0f};
  const int64_t n = int64_t(xs.size());  // 20: whole vectors and a masked tail
  using K = EpilogueKind;
  for (int64_t m : {3, 1})
    for (K kind : {K::BiasRow, K::BiasCol, K::Scale, K::Relu, K::Gelu, K::GeluTanh, K::Silu,
                   K::Clamp, K::AddResidual, K::MulResidual, K::Sigmoid, K::Tanh}) {
      std::vector<float> a{1.0f, -1.0f, 0.5f}, c(m * n), row_data(m, 0.25f), col_data(m * n, 0.5f);
      GemmProblem p;
      p.m = m, p.n = n, p.k = 1, p.a = a.data(), p.lda = 1, p.b = xs.data(), p.ldb = n;
      p.c = c.data(), p.ldc = n;
      EpilogueOp op{kind};
      op.a = kind == K::Scale ? 2.5f : -0.5f, op.b = 0.5f;
      op.data = kind == K::BiasRow ? row_data.data() : col_data.data();
      if (is_residual_op(kind)) op.ld = n;
      p.epilogue = {op};
      gemm_f32(p, 1);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          const double want = reference_op(op, double(a[i]) * xs[j], i, j);
          const float got = c[i * n + j];
          SCOPED_TRACE(::testing::Message()
                       << "op " << int(kind) << ", m " << m << ", x = " << a[i] * xs[j]);
          if (std::isnan(want)) {
            EXPECT_TRUE(std::isnan(got)) << got;
          } else if (std::isinf(want)) {
            EXPECT_EQ(got, want);
          } else {
            EXPECT_NEAR(got, want, 2e-6 * (std::fabs(want) + 8));
          }
        }
    }
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

// The per-thread scratch (scratch.h) is freed on every thread of the team, nothing is left for
// a second release, and the next call allocates it again and computes the same.
TEST_F(GemmTest, ScratchIsReleasedOnEveryThreadAndRegrows) {
  Fixture f(300, 260, 700, false, false, rng);  // B packed per call into the team's ring
  gemm_f32(f.p, 2);
  f.check();
  // At least the team's ring of packed B blocks on the calling thread.
  EXPECT_GE(release_scratch(2), size_t(3 * 32 * 700 * sizeof(float)));
  EXPECT_EQ(release_scratch(2), 0u);
  gemm_f32(f.p, 2);
  f.check();
  EXPECT_GT(release_scratch(2), 0u);
}

// release_scratch frees each worker's own scratch, on that worker (every buffer of the team is
// empty afterwards); release_thread_scratch frees exactly the calling thread's.
ScratchVector<char>& thread_buffer() {
  thread_local ScratchVector<char> buffer;  // constructed on each thread that calls this
  return buffer;
}

TEST(ScratchTest, ReleaseVisitsEveryWorkerOfTheTeam) {
  ScratchVector<char>& mine = thread_buffer();
  release_scratch(4);
  std::vector<size_t> capacity(4, 0);
#pragma omp parallel num_threads(4)
  if (omp_get_num_threads() == 4) thread_buffer().get(1000 + size_t(omp_get_thread_num()));
  size_t outside = 0;
  std::thread other([&] {
    thread_buffer().get(5000);
    EXPECT_EQ(release_thread_scratch(), 5000u);  // its own, on its own thread
    outside = thread_buffer().vector().capacity();
  });
  other.join();
  EXPECT_GE(release_scratch(4), size_t(4 * 1000));
#pragma omp parallel num_threads(4)
  if (omp_get_num_threads() == 4)
    capacity[size_t(omp_get_thread_num())] = thread_buffer().vector().capacity();
  for (size_t c : capacity) EXPECT_EQ(c, 0u);
  EXPECT_EQ(outside, 0u);
  EXPECT_EQ(mine.vector().capacity(), 0u);
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
}  // namespace inductor_cpp::matrix
