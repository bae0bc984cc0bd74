/// \file matrix_conv_test.cpp
/// \brief NHWC convolution against an fp64 direct reference: 3×3/1×1/7×7 filters, stride,
/// padding, dilation, channel and width tails, batch > 1, bias/relu/residual epilogues, the
/// 1×1-as-GEMM path, per-channel scale (eval batch norm) epilogues, small maps, and groups > 1
/// rejected.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <vector>

#include "knobs/knobs.h"
#include "matrix/jit/cpu_features.h"
#include "matrix/conv.h"
#include "matrix/gemm_config.h"

namespace inductor_cpp::matrix {
namespace {

struct ConvCase {
  int64_t n, h, w, c, oc, k, stride, pad, dilation;
};

/// Epilogues check_conv can put on the convolution.
enum class Epi { None, BiasResidualRelu, BatchNorm, SiluThenScaleShift, BiasReluTile };

/// The tile kernel of Epi::BiasReluTile: y(p, o) = y(p, o) / 2 - residual(p, o), counting hits.
struct TileContext {
  float* y = nullptr;
  const float* residual = nullptr;
  int64_t oc = 0;
  std::vector<int>* hits = nullptr;
};

int32_t half_minus_residual(char* const* bufs, const int64_t* symbols, int32_t /*threads*/) {
  const auto* t = reinterpret_cast<const TileContext*>(bufs[0]);
  for (int64_t p = symbols[0]; p < symbols[0] + symbols[1]; ++p)
    for (int64_t o = symbols[2]; o < symbols[2] + symbols[3]; ++o) {
      t->y[p * t->oc + o] = 0.5f * t->y[p * t->oc + o] - t->residual[p * t->oc + o];
      ++(*t->hits)[p * t->oc + o];
    }
  return 0;
}

void check_conv(const ConvCase& cc, Epi epi, int threads, std::mt19937& rng) {
  SCOPED_TRACE(::testing::Message()
               << "n" << cc.n << " " << cc.h << "x" << cc.w << "x" << cc.c << " -> " << cc.oc
               << " k" << cc.k << " s" << cc.stride << " p" << cc.pad << " d" << cc.dilation);
  Conv2dParams q;
  q.n = cc.n, q.h = cc.h, q.w = cc.w, q.c = cc.c, q.oc = cc.oc, q.kh = q.kw = cc.k;
  q.stride_h = q.stride_w = cc.stride, q.pad_h = q.pad_w = cc.pad,
  q.dilation_h = q.dilation_w = cc.dilation;
  const int64_t oh = q.out_h(), ow = q.out_w(), pixels = cc.n * oh * ow;
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> x(cc.n * cc.h * cc.w * cc.c), wt(cc.oc * cc.c * cc.k * cc.k), bias(cc.oc),
      scale(cc.oc), shift(cc.oc), residual(pixels * cc.oc), y(pixels * cc.oc + 16, 1234.5f);
  for (auto* v : {&x, &wt, &bias, &scale, &shift, &residual})
    for (float& e : *v) e = dist(rng);
  if (epi == Epi::BiasResidualRelu)
    q.epilogue = {{EpilogueKind::BiasCol, bias.data()},
                  {EpilogueKind::AddResidual, residual.data(), cc.oc},
                  {EpilogueKind::Relu}};
  if (epi == Epi::BatchNorm)  // conv bias, then eval batch norm's x·s[c] + t[c], residual, relu
    q.epilogue = {{EpilogueKind::BiasCol, bias.data()},
                  {EpilogueKind::ScaleCol, scale.data()},
                  {EpilogueKind::BiasCol, shift.data()},
                  {EpilogueKind::AddResidual, residual.data(), cc.oc},
                  {EpilogueKind::Relu}};
  if (epi == Epi::SiluThenScaleShift)  // scale and shift in the C++ pass after the SiLU
    q.epilogue = {{EpilogueKind::Silu},
                  {EpilogueKind::ScaleCol, scale.data()},
                  {EpilogueKind::BiasCol, shift.data()}};
  std::vector<int> hits(pixels * cc.oc, 0);
  TileContext context{y.data(), residual.data(), cc.oc, &hits};
  char* bufs[1] = {reinterpret_cast<char*>(&context)};
  TileKernel tile;
  tile.fn = half_minus_residual;
  tile.bufs = bufs;
  if (epi == Epi::BiasReluTile) {
    EpilogueOp op{EpilogueKind::Tile};
    op.tile = &tile;
    q.epilogue = {{EpilogueKind::BiasCol, bias.data()}, {EpilogueKind::Relu}, op};
  }
  const PackedConvWeight pw = pack_conv_weight_f32(wt.data(), q);
  conv2d_nhwc_f32(x.data(), pw, y.data(), q, threads);
  if (epi == Epi::BiasReluTile) {
    for (size_t e = 0; e < hits.size(); ++e) ASSERT_EQ(hits[e], 1) << "element " << e;
  }
  for (int64_t img = 0; img < cc.n; ++img)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox)
        for (int64_t o = 0; o < cc.oc; ++o) {
          double acc = 0, mag = 0;
          for (int64_t fy = 0; fy < cc.k; ++fy)
            for (int64_t fx = 0; fx < cc.k; ++fx) {
              const int64_t iy = oy * cc.stride - cc.pad + fy * cc.dilation;
              const int64_t ix = ox * cc.stride - cc.pad + fx * cc.dilation;
              if (iy < 0 || iy >= cc.h || ix < 0 || ix >= cc.w) continue;
              for (int64_t ci = 0; ci < cc.c; ++ci) {
                const double p = double(x[((img * cc.h + iy) * cc.w + ix) * cc.c + ci]) *
                                 wt[((o * cc.c + ci) * cc.k + fy) * cc.k + fx];
                acc += p;
                mag += std::fabs(p);
              }
            }
          const int64_t pix = (img * oh + oy) * ow + ox;
          if (epi == Epi::BiasResidualRelu)
            acc = std::max(acc + bias[o] + residual[pix * cc.oc + o], 0.0);
          if (epi == Epi::BatchNorm) {
            acc = std::max((acc + bias[o]) * scale[o] + shift[o] + residual[pix * cc.oc + o], 0.0);
            mag *= std::fabs(scale[o]);
          }
          if (epi == Epi::BiasReluTile)
            acc = 0.5 * std::max(acc + bias[o], 0.0) - residual[pix * cc.oc + o];
          if (epi == Epi::SiluThenScaleShift) {
            acc = acc / (1 + std::exp(-acc)) * scale[o] + shift[o];
            mag *= std::fabs(scale[o]);
          }
          ASSERT_NEAR(y[pix * cc.oc + o], acc, 2e-6 * (mag + 4))
              << "pixel " << pix << " channel " << o;
        }
  for (int i = 0; i < 16; ++i) ASSERT_EQ(y[pixels * cc.oc + i], 1234.5f) << "wrote past the output";
}

class ConvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!xbyak::cpu_features().avx2) GTEST_SKIP() << "needs AVX2 or AVX-512";
  }
  std::mt19937 rng{5};
};

/// Which register tile the direct method picks (conv.cpp "two_panel_tiles_pay"): two panels
/// only on AVX-512, where an output row splits into near-full 6-pixel tiles and the batch has
/// enough tile rows for the threads.
TEST_F(ConvTest, TwoPanelTilesWhereRowsSplitIntoNearFullSixPixelTiles) {
  if (knobs::raw(knobs::Knob::MatrixConvTile)) GTEST_SKIP() << "tile forced by the knob";
  auto tile = [](int64_t n, int64_t c, int64_t oc, int64_t hw, int64_t k, int64_t stride,
                 int threads) {
    Conv2dParams q;
    q.n = n, q.h = hw, q.w = hw, q.c = c, q.oc = oc, q.kh = k, q.kw = k;
    q.stride_h = q.stride_w = stride, q.pad_h = q.pad_w = k / 2;
    const Conv2dTile t = conv2d_tile(q, threads);
    return std::pair<int, int>(t.pixels, t.panels);
  };
  using Tile = std::pair<int, int>;
  if (gemm_blocking().isa != xbyak::Isa::Avx512) {
    EXPECT_EQ(tile(32, 64, 64, 56, 3, 1, 16), Tile(6, 1));
    EXPECT_EQ(tile(32, 256, 256, 14, 3, 1, 16), Tile(6, 1));
    return;
  }
  EXPECT_EQ(tile(32, 64, 64, 56, 3, 1, 16), Tile(6, 2));     // 56 = 6 × 6 + 4 × 5
  EXPECT_EQ(tile(32, 128, 128, 28, 3, 1, 16), Tile(6, 2));   // 28 = 3 × 6 + 2 × 5
  EXPECT_EQ(tile(32, 3, 64, 224, 7, 2, 16), Tile(6, 2));     // the stem, 112 pixels a row
  EXPECT_EQ(tile(32, 256, 256, 14, 3, 1, 16), Tile(14, 1));  // 6-pixel tiles: 5 + 5 + 4
  EXPECT_EQ(tile(32, 512, 512, 7, 3, 1, 16), Tile(14, 1));   // 4 + 3
  EXPECT_EQ(tile(32, 64, 32, 56, 3, 1, 16), Tile(14, 1));    // one panel
  EXPECT_EQ(tile(1, 64, 64, 56, 3, 1, 16), Tile(14, 1));     // 56 tile rows for 16 threads
  EXPECT_EQ(tile(1, 64, 64, 56, 3, 1, 2), Tile(6, 2));
}

TEST_F(ConvTest, ThreeByThreePaddedWithTails) {
  check_conv({1, 9, 17, 16, 37, 3, 1, 1, 1}, Epi::None, 1, rng);
  check_conv({2, 8, 30, 8, 64, 3, 1, 1, 1}, Epi::BiasResidualRelu, 2, rng);
}

// An output row is cut into balanced tiles (tile_rows and tile_rows - 1 pixels): widths that
// give two sizes and one size per ISA (AVX2 6-row tiles: 7 = 4 + 3, 15 = 5 + 5 + 5, 29 =
// 4 × 6 + 5; AVX-512 14-row tiles: 7, 15 = 8 + 7, 29 = 10 + 10 + 9).
TEST_F(ConvTest, RowsSplitIntoBalancedTiles) {
  check_conv({2, 7, 7, 16, 40, 3, 1, 1, 1}, Epi::BiasResidualRelu, 2, rng);
  check_conv({1, 5, 15, 8, 24, 3, 1, 1, 1}, Epi::None, 1, rng);
  check_conv({1, 4, 29, 8, 33, 3, 1, 1, 1}, Epi::BatchNorm, 2, rng);
}

// Small maps at a batch: a block of output rows spans several images, each image's rows
// padded with their own halo. Sized past the one-thread threshold: with 3 threads the rows
// split 8 / 8 / 9 of 25 (or 10 / 10 / 10 of 30), so blocks also start inside an image.
TEST_F(ConvTest, BlocksSpanImages) {
  check_conv({4, 5, 5, 8, 16, 3, 1, 1, 1}, Epi::BiasResidualRelu, 1, rng);
  check_conv({5, 5, 5, 32, 64, 3, 1, 1, 1}, Epi::BiasResidualRelu, 3, rng);
  check_conv({6, 9, 9, 32, 64, 3, 2, 1, 1}, Epi::BatchNorm, 3, rng);  // stride 2
  check_conv({5, 6, 6, 32, 64, 3, 1, 2, 2}, Epi::None, 3, rng);       // dilation: tap by tap
  check_conv({5, 4, 7, 32, 64, 2, 1, 0, 1}, Epi::None, 3, rng);       // no padding
}

// Small maps (resnet's last layers at 112² input): 4×4 and 7×7 maps with channel tails, rows
// cut inside images by 3 threads, no padding, a padded 1×1 (direct path), every epilogue.
TEST_F(ConvTest, SmallMapsAndRowEnds) {
  check_conv({3, 4, 4, 24, 40, 3, 1, 1, 1}, Epi::BiasResidualRelu, 3, rng);
  check_conv({2, 7, 7, 16, 33, 3, 1, 1, 1}, Epi::BatchNorm, 2, rng);
  check_conv({3, 6, 5, 8, 16, 3, 1, 0, 1}, Epi::BiasReluTile, 2, rng);
  check_conv({2, 5, 5, 8, 16, 1, 1, 1, 1}, Epi::BiasResidualRelu, 1, rng);
  check_conv({2, 4, 4, 32, 48, 3, 1, 1, 1}, Epi::SiluThenScaleShift, 2, rng);
}

// A generated tile kernel (EpilogueKind::Tile) runs once on every output element, after the
// other ops: direct path (blocks within and across images, two threads), the 1×1 GEMM path.
TEST_F(ConvTest, TileKernelOnceOnEveryElement) {
  check_conv({2, 8, 30, 8, 64, 3, 1, 1, 1}, Epi::BiasReluTile, 2, rng);
  check_conv({5, 5, 5, 32, 64, 3, 1, 1, 1}, Epi::BiasReluTile, 3, rng);
  check_conv({1, 4, 29, 8, 33, 3, 1, 1, 1}, Epi::BiasReluTile, 1, rng);
  check_conv({2, 7, 9, 24, 40, 1, 1, 0, 1}, Epi::BiasReluTile, 2, rng);
}

TEST_F(ConvTest, StrideAndDilation) {
  check_conv({1, 11, 13, 5, 20, 3, 2, 1, 1}, Epi::BiasResidualRelu, 2, rng);
  check_conv({1, 12, 12, 4, 33, 3, 1, 2, 2}, Epi::None, 2,
             rng);  // dilation 2: every tap a batch entry
  check_conv({1, 10, 9, 6, 7, 2, 3, 0, 1}, Epi::None, 1, rng);  // even filter, stride 3
}

TEST_F(ConvTest, OneByOneAsGemmAndStrided) {
  check_conv({2, 7, 9, 24, 40, 1, 1, 0, 1}, Epi::BiasResidualRelu, 2, rng);  // GEMM path
  check_conv({1, 14, 14, 16, 32, 1, 2, 0, 1}, Epi::BiasResidualRelu, 2,
             rng);  // strided 1×1: direct path
}

TEST_F(ConvTest, BatchNormScaleAndShiftPerChannel) {
  check_conv({2, 8, 30, 8, 64, 3, 1, 1, 1}, Epi::BatchNorm, 2, rng);   // 3×3, whole panels
  check_conv({1, 11, 13, 5, 37, 3, 2, 1, 1}, Epi::BatchNorm, 1, rng);  // channel tail
  check_conv({2, 7, 9, 24, 40, 1, 1, 0, 1}, Epi::BatchNorm, 2, rng);   // 1×1 stride 1
  check_conv({1, 9, 17, 16, 37, 3, 1, 1, 1}, Epi::SiluThenScaleShift, 1, rng);
}

// Output strides (Conv2dParams::out_*_stride, what the input gradient's phases write dx with):
// the same values as the dense output at the strided places, nothing written between them,
// including for a 1×1 filter (the direct path: the single-GEMM path needs a dense output).
TEST_F(ConvTest, StridedOutputWritesOnlyItsPixels) {
  for (const ConvCase& cc :
       {ConvCase{2, 9, 11, 8, 40, 3, 1, 1, 1}, ConvCase{1, 6, 7, 16, 24, 1, 1, 0, 1}}) {
    SCOPED_TRACE(::testing::Message() << "k" << cc.k);
    Conv2dParams q;
    q.n = cc.n, q.h = cc.h, q.w = cc.w, q.c = cc.c, q.oc = cc.oc, q.kh = q.kw = cc.k;
    q.pad_h = q.pad_w = cc.pad;
    const int64_t oh = q.out_h(), ow = q.out_w();
    std::uniform_real_distribution<float> dist(-1, 1);
    std::vector<float> x(cc.n * cc.h * cc.w * cc.c), wt(cc.oc * cc.c * cc.k * cc.k);
    for (auto* v : {&x, &wt})
      for (float& e : *v) e = dist(rng);
    const PackedConvWeight pw = pack_conv_weight_f32(wt.data(), q);
    std::vector<float> dense(cc.n * oh * ow * cc.oc);
    conv2d_nhwc_f32(x.data(), pw, dense.data(), q, 2);
    Conv2dParams s = q;  // pixels 3 channels-widths apart, rows 2 rows apart, images 1 apart
    s.out_pixel_stride = 3 * cc.oc + 5, s.out_row_stride = 2 * ow * s.out_pixel_stride;
    s.out_image_stride = oh * s.out_row_stride + 7;
    std::vector<float> strided(cc.n * s.out_image_stride + 16, 1234.5f);
    conv2d_nhwc_f32(x.data(), pw, strided.data(), s, 2);
    std::vector<char> written(strided.size(), 0);
    for (int64_t img = 0; img < cc.n; ++img)
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox)
          for (int64_t o = 0; o < cc.oc; ++o) {
            const int64_t at =
                img * s.out_image_stride + oy * s.out_row_stride + ox * s.out_pixel_stride + o;
            written[at] = 1;
            ASSERT_EQ(strided[at], dense[((img * oh + oy) * ow + ox) * cc.oc + o]);
          }
    for (size_t e = 0; e < strided.size(); ++e)
      if (!written[e])
        ASSERT_EQ(strided[e], 1234.5f) << "wrote between the strided pixels at " << e;
    Conv2dParams with_relu = s;
    with_relu.epilogue = {{EpilogueKind::Relu}};
    EXPECT_THROW(conv2d_nhwc_f32(x.data(), pw, strided.data(), with_relu, 2),
                 std::invalid_argument);
  }
}

TEST_F(ConvTest, StemSevenBySeven) {
  check_conv({1, 32, 32, 3, 16, 7, 2, 3, 1}, Epi::BiasResidualRelu, 2, rng);
}

// Called from inside a parallel region (two OpenMP threads each asking for 3): without nesting
// the inner region gets a team of one, which must still compute every worker's tiles.
TEST_F(ConvTest, CalledFromInsideAParallelRegion) {
  std::mt19937 rngs[2] = {std::mt19937(21), std::mt19937(22)};
#pragma omp parallel for num_threads(2)
  for (int t = 0; t < 2; ++t)
    check_conv({5, 5, 5, 32, 64, 3, 1, 1, 1}, Epi::BiasResidualRelu, 3, rngs[t]);
}

TEST_F(ConvTest, GroupsRejected) {
  Conv2dParams q;
  q.h = q.w = 8, q.c = 4, q.oc = 4, q.kh = q.kw = 3, q.groups = 2;
  EXPECT_FALSE(conv2d_supported(q));
  q.groups = 1;
  EXPECT_TRUE(conv2d_supported(q));
  std::vector<float> w(4 * 4 * 9, 0.0f), x(8 * 8 * 4), y(6 * 6 * 4);
  const PackedConvWeight pw = pack_conv_weight_f32(w.data(), q);
  q.groups = 2;
  EXPECT_THROW(conv2d_nhwc_f32(x.data(), pw, y.data(), q, 1), std::invalid_argument);
  q.groups = 1;
  q.oc = 8;
  EXPECT_THROW(conv2d_nhwc_f32(x.data(), pw, y.data(), q, 1), std::invalid_argument);
}

}  // namespace
}  // namespace inductor_cpp::matrix
