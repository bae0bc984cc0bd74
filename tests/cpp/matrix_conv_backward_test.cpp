/// \file matrix_conv_backward_test.cpp
/// \brief Convolution backward (matrix/conv_backward.h) against fp64 references: the
/// input gradient (stride-1 flipped-filter path, 1×1 GEMM path with and without stride, phases
/// of strided filters), the
/// weight and bias gradients (the direct method, its tile by output channels or by filter
/// columns, or im2col chunks as the shapes pick; ctest also runs every case with
/// INDUCTOR_CPP_CONV_BWD_WEIGHT=direct-by-oc, =direct-by-columns and =im2col) over
/// filter sizes, padding, stride, dilation, channel tails and 1-3 threads, with canaries past
/// every output; which parameters each direction supports.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "matrix/jit/cpu_features.h"
#include "matrix/conv_backward.h"

namespace inductor_cpp::matrix {
namespace {

struct Case {
  int64_t n, h, w, c, oc, kh, kw, stride, pad, dilation;
};

constexpr float kCanary = 1234.5f;

Conv2dParams params_of(const Case& cc) {
  Conv2dParams q;
  q.n = cc.n, q.h = cc.h, q.w = cc.w, q.c = cc.c, q.oc = cc.oc, q.kh = cc.kh, q.kw = cc.kw;
  q.stride_h = q.stride_w = cc.stride, q.pad_h = q.pad_w = cc.pad;
  q.dilation_h = q.dilation_w = cc.dilation;
  return q;
}

/// Calls f(img, oy, ox, fy, fx, iy, ix) for every output pixel and tap that reads the input.
template <typename F>
void for_each_tap(const Conv2dParams& q, F&& f) {
  for (int64_t img = 0; img < q.n; ++img)
    for (int64_t oy = 0; oy < q.out_h(); ++oy)
      for (int64_t ox = 0; ox < q.out_w(); ++ox)
        for (int64_t fy = 0; fy < q.kh; ++fy)
          for (int64_t fx = 0; fx < q.kw; ++fx) {
            const int64_t iy = oy * q.stride_h - q.pad_h + fy * q.dilation_h;
            const int64_t ix = ox * q.stride_w - q.pad_w + fx * q.dilation_w;
            if (iy >= 0 && iy < q.h && ix >= 0 && ix < q.w) f(img, oy, ox, fy, fx, iy, ix);
          }
}

/// Random x, w (OIHW; the input gradient reads an OHWI copy), dy; each gradient our library
/// computes against the fp64 sums, with a tolerance scaled by the sum of the products' magnitudes.
void check_backward(const Case& cc, int threads, std::mt19937& rng) {
  const Conv2dParams q = params_of(cc);
  SCOPED_TRACE(::testing::Message()
               << "n" << cc.n << " " << cc.h << "x" << cc.w << "x" << cc.c << " -> " << cc.oc
               << " k" << cc.kh << "x" << cc.kw << " s" << cc.stride << " p" << cc.pad << " d"
               << cc.dilation << " threads " << threads);
  const int64_t oh = q.out_h(), ow = q.out_w(), taps = q.kh * q.kw;
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> x(q.n * q.h * q.w * q.c), w(q.oc * q.c * taps), dy(q.n * oh * ow * q.oc);
  for (auto* v : {&x, &w, &dy})
    for (float& e : *v) e = dist(rng);
  const auto dy_at = [&](int64_t img, int64_t oy, int64_t ox, int64_t o) {
    return double(dy[((img * oh + oy) * ow + ox) * q.oc + o]);
  };

  if (conv2d_backward_input_supported(q)) {
    std::vector<float> dx(x.size() + 16, kCanary), w_ohwi(w.size());
    for (int64_t o = 0; o < q.oc; ++o)
      for (int64_t c = 0; c < q.c; ++c)
        for (int64_t tap = 0; tap < taps; ++tap)
          w_ohwi[(o * taps + tap) * q.c + c] = w[(o * q.c + c) * taps + tap];
    conv2d_backward_input_nhwc_f32(dy.data(), w_ohwi.data(), dx.data(), q, threads);
    std::vector<double> want(x.size(), 0.0), mag(x.size(), 0.0);
    for_each_tap(q, [&](int64_t img, int64_t oy, int64_t ox, int64_t fy, int64_t fx, int64_t iy,
                        int64_t ix) {
      for (int64_t c = 0; c < q.c; ++c)
        for (int64_t o = 0; o < q.oc; ++o) {
          const double p = dy_at(img, oy, ox, o) * w[((o * q.c + c) * q.kh + fy) * q.kw + fx];
          want[((img * q.h + iy) * q.w + ix) * q.c + c] += p;
          mag[((img * q.h + iy) * q.w + ix) * q.c + c] += std::fabs(p);
        }
    });
    for (size_t e = 0; e < x.size(); ++e)
      ASSERT_NEAR(dx[e], want[e], 2e-6 * (mag[e] + 4)) << "dx element " << e;
    for (size_t e = x.size(); e < dx.size(); ++e) ASSERT_EQ(dx[e], kCanary) << "wrote past dx";
  }

  std::vector<float> dw(w.size() + 16, kCanary), db(q.oc + 16, kCanary);
  conv2d_backward_weight_nhwc_f32(dy.data(), x.data(), dw.data(), db.data(), q, threads);
  std::vector<double> want(w.size(), 0.0), mag(w.size(), 0.0);  // OHWI, as dw is written
  for_each_tap(
      q, [&](int64_t img, int64_t oy, int64_t ox, int64_t fy, int64_t fx, int64_t iy, int64_t ix) {
        for (int64_t o = 0; o < q.oc; ++o)
          for (int64_t c = 0; c < q.c; ++c) {
            const double p = dy_at(img, oy, ox, o) * x[((img * q.h + iy) * q.w + ix) * q.c + c];
            want[((o * q.kh + fy) * q.kw + fx) * q.c + c] += p;
            mag[((o * q.kh + fy) * q.kw + fx) * q.c + c] += std::fabs(p);
          }
      });
  for (size_t e = 0; e < w.size(); ++e)
    ASSERT_NEAR(dw[e], want[e], 2e-6 * (mag[e] + 4)) << "dw element " << e;
  for (size_t e = w.size(); e < dw.size(); ++e) ASSERT_EQ(dw[e], kCanary) << "wrote past dw";
  for (int64_t o = 0; o < q.oc; ++o) {
    double sum = 0, sum_mag = 0;
    for (int64_t p = 0; p < q.n * oh * ow; ++p) {
      sum += dy[p * q.oc + o];
      sum_mag += std::fabs(dy[p * q.oc + o]);
    }
    ASSERT_NEAR(db[o], sum, 1e-6 * (sum_mag + 1)) << "db channel " << o;
  }
  for (int64_t o = q.oc; o < q.oc + 16; ++o) ASSERT_EQ(db[o], kCanary) << "wrote past db";
}

class ConvBackwardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!xbyak::cpu_features().avx2) GTEST_SKIP() << "needs AVX2 or AVX-512";
  }
  std::mt19937 rng{11};
};

// Stride 1: the input gradient is the flipped-filter forward convolution.
TEST_F(ConvBackwardTest, StrideOneFilters) {
  for (int threads : {1, 2, 3}) {
    check_backward({2, 9, 11, 16, 37, 3, 3, 1, 1, 1}, threads, rng);  // padded, channel tails
    check_backward({1, 8, 8, 8, 24, 3, 3, 1, 0, 1}, threads, rng);    // no padding
  }
  check_backward({2, 10, 9, 5, 7, 5, 5, 1, 2, 1}, 2, rng);    // 5×5, odd channel counts
  check_backward({1, 12, 12, 4, 33, 3, 3, 1, 2, 2}, 2, rng);  // dilation 2
  check_backward({1, 7, 13, 6, 20, 1, 3, 1, 0, 1}, 1, rng);   // 1×3, unequal filter sides
  check_backward({1, 6, 6, 8, 16, 2, 2, 1, 1, 1}, 2, rng);    // even filter, padding 1
}

// 1×1: GEMMs (stride 1), the strided input gradient scattered into a zeroed dx.
TEST_F(ConvBackwardTest, PointwiseFilters) {
  for (int threads : {1, 2, 3}) {
    check_backward({2, 7, 9, 24, 40, 1, 1, 1, 0, 1}, threads, rng);
    check_backward({2, 13, 14, 16, 33, 1, 1, 2, 0, 1}, threads, rng);  // odd height, stride 2
  }
  check_backward({1, 9, 9, 8, 8, 1, 1, 3, 0, 1}, 2, rng);  // stride 3
}

// Strided and padded filters (the input gradient by phases).
TEST_F(ConvBackwardTest, StridedFilters) {
  for (int threads : {1, 2, 3}) {
    check_backward({2, 11, 13, 16, 40, 3, 3, 2, 1, 1}, threads, rng);
    check_backward({1, 20, 20, 3, 16, 7, 7, 2, 3, 1}, threads, rng);  // the stem: C = 3
  }
  check_backward({3, 6, 6, 32, 64, 3, 3, 2, 1, 1}, 3, rng);  // few pixels: split by columns
}

// Enough columns for every thread's panels (column groups) and few (pixel groups with
// partial sums): both with enough work to leave the one-thread threshold.
TEST_F(ConvBackwardTest, ColumnAndPixelSplits) {
  check_backward({2, 12, 12, 64, 32, 3, 3, 1, 1, 1}, 2, rng);  // 576 columns
  check_backward({4, 16, 16, 8, 16, 3, 3, 1, 1, 1}, 3, rng);   // 72 columns, 1024 pixels
}

// More pixels per thread than one chunk (at most 512 pixels): later chunks accumulate.
TEST_F(ConvBackwardTest, ChunksAccumulate) {
  check_backward({2, 32, 32, 8, 16, 3, 3, 1, 1, 1}, 1, rng);   // 4 chunks of 512 pixels
  check_backward({2, 32, 33, 8, 16, 3, 3, 2, 1, 1}, 2, rng);   // strided, a short last chunk
  check_backward({1, 24, 24, 64, 32, 3, 3, 1, 1, 1}, 1, rng);  // 576 columns: 455-pixel chunks
}

// The direct weight-gradient method's output rows in several ~512 KiB blocks (24 rows of
// 3×3 64->64 @56² take two), and few tiles for the threads: pixel groups with partial sums.
TEST_F(ConvBackwardTest, DirectMethodBlocksAndPixelGroups) {
  check_backward({1, 24, 56, 64, 64, 3, 3, 1, 1, 1}, 2, rng);
  check_backward({4, 32, 32, 4, 8, 3, 3, 1, 1, 1}, 4, rng);
  check_backward({4, 32, 32, 4, 8, 3, 3, 2, 1, 1}, 3, rng);
}

// A stem's weight gradient on tiles by filter columns (its 21-column filter rows as tile rows,
// the output channels as tile columns, summed into dw through a dwᵀ buffer per pixel group):
// output rows of 20 and 56 pixels take the direct method; one and several pixel groups.
TEST_F(ConvBackwardTest, StemWeightGradientByFilterColumns) {
  for (int threads : {1, 2, 3}) check_backward({2, 40, 40, 3, 64, 7, 7, 2, 3, 1}, threads, rng);
  check_backward({1, 112, 112, 3, 72, 7, 7, 2, 3, 1}, 4, rng);  // 72 channels: an 8-column tail
}

// Called from inside a parallel region (two OpenMP threads each asking for 3 or 4): without
// nesting every inner region gets a team of one, which must still run all the workers' shares
// (partial weight gradients, pixel groups, padded rows, packing) rather than skip them.
TEST_F(ConvBackwardTest, CalledFromInsideAParallelRegion) {
  std::mt19937 rngs[2] = {std::mt19937(11), std::mt19937(12)};
#pragma omp parallel for num_threads(2)
  for (int t = 0; t < 2; ++t) {
    check_backward({4, 32, 32, 4, 8, 3, 3, 1, 1, 1}, 4, rngs[t]);   // direct, pixel groups
    check_backward({2, 9, 11, 16, 37, 3, 3, 1, 1, 1}, 3, rngs[t]);  // im2col chunks
  }
}

// Input gradients by phases: strided filters larger than 1×1 (each phase its own sub-filter,
// some phases without taps when the filter is smaller than the stride), and stride 1 with more
// padding than the filter reaches (the transposed problem's padding would be negative). Phases
// read dy in place with an asymmetric zero border (resnet's 3×3/2: one row below, one column
// right), or, where a phase skips dy's first rows (padding 3 below; a padded 1×1 at stride 2),
// a bordered copy.
TEST_F(ConvBackwardTest, InputGradientByPhases) {
  check_backward({2, 11, 12, 16, 24, 3, 3, 2, 1, 1}, 2, rng);  // resnet's 3×3 stride 2, odd H
  check_backward({1, 11, 11, 4, 8, 3, 3, 2, 2, 2}, 1, rng);    // dilation 2
  check_backward({1, 10, 9, 6, 7, 2, 2, 3, 0, 1}, 2, rng);     // 2×2 stride 3: empty phases
  check_backward({1, 6, 6, 4, 8, 3, 3, 1, 3, 1}, 1, rng);      // padding 3 > dilation·(K−1)
  check_backward({2, 15, 15, 8, 16, 7, 7, 2, 3, 1}, 3, rng);   // a 7×7 stride-2 stem of 8 channels
  check_backward({2, 9, 10, 8, 12, 1, 1, 2, 1, 1}, 2, rng);    // 1×1 stride 2 padded: cropping
}

TEST_F(ConvBackwardTest, WhatEachDirectionSupports) {
  Conv2dParams q = params_of({1, 8, 8, 4, 4, 3, 3, 2, 1, 1});
  EXPECT_TRUE(conv2d_backward_input_supported(q));
  EXPECT_TRUE(conv2d_backward_weight_supported(q));
  q.groups = 2;
  EXPECT_FALSE(conv2d_backward_input_supported(q));
  EXPECT_FALSE(conv2d_backward_weight_supported(q));
  std::vector<float> buf(4096);
  EXPECT_THROW(conv2d_backward_weight_nhwc_f32(buf.data(), buf.data(), buf.data(), nullptr, q, 1),
               std::invalid_argument);
  EXPECT_THROW(conv2d_backward_input_nhwc_f32(buf.data(), buf.data(), buf.data(), q, 1),
               std::invalid_argument);
}

}  // namespace
}  // namespace inductor_cpp::matrix
