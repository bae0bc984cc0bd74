/// \file
/// Shared by the GEMM driver tests (matrix_gemm*_test.cpp, one executable: matrix_gemm_test):
/// one random problem's buffers with C inside a canary frame, checked against an fp64
/// reference, a stand-in for a generated tile kernel, and the GemmTest fixture (skipped
/// without AVX2).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "matrix/gemm.h"

namespace inductor_cpp::matrix::gemm_test {

inline constexpr float kCanary = 31337.5f;

/// `op` applied to x, the value at C(i, j), in double.
double reference_op(const EpilogueOp& op, double x, int64_t i, int64_t j);

/// Owns the buffers of one random problem; C lives inside a canary frame.
struct Fixture {
  GemmProblem p;
  std::vector<float> a, b, c_frame, c_init, bias_row, bias_col, residual;
  int64_t frame_ld = 0;

  Fixture(int64_t m, int64_t n, int64_t k, bool ta, bool tb, std::mt19937& rng, int64_t pad = 3);

  /// An epilogue op of `kind` on this problem's bias or residual data (x, y: its constants).
  EpilogueOp op(EpilogueKind kind, float x = 0, float y = 0) const;

  /// C against the fp64 reference (alpha, accumulate, the epilogue), the canaries untouched.
  void check() const;
};

/// What the tile kernel of the TileKernel tests sees: C and the element hit counts.
struct TileContext {
  float* c = nullptr;
  int64_t ldc = 0, n = 0;
  const float* bias_row = nullptr;
  std::vector<int>* hits = nullptr;
  int64_t fail_at_row = -1;  ///< report status 1 for the tile holding this row
};

/// A stand-in for a generated tile kernel on a Fixture's C: C(r, j) = C(r, j) / 2 − bias_row[r]
/// over each tile, counting the visits of each element in `hits`.
struct HalfMinusRowTile {
  explicit HalfMinusRowTile(const Fixture& f, int64_t fail_at_row = -1);

  /// The epilogue op that runs the kernel (bias_row as its data, for reference_op only: the
  /// library passes nothing).
  EpilogueOp op(const Fixture& f);

  std::vector<int> hits;
  TileContext context;
  char* bufs[1];
  TileKernel kernel;
};

/// Runs f's problem with B packed beforehand (gemm_f32_packed) or per call (gemm_f32).
void run_gemm(Fixture& f, int threads, bool prepacked);

class GemmTest : public ::testing::Test {
 protected:
  void SetUp() override;
  std::mt19937 rng{42};
};

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
    ASSERT_EQ(
        std::memcmp((split ? first : one_thread).data(), f.c_frame.data(), one_thread.size() * 4),
        0)
        << threads << " threads";
  }
}

}  // namespace inductor_cpp::matrix::gemm_test
