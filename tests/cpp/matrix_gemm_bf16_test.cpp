/// \file matrix_gemm_bf16_test.cpp
/// \brief bf16 GEMM (AMX tiles where usable, and the forced fp32 fallback) against an fp64
/// reference from the same bf16 inputs: tails around the 32×32 AMX tile and K = 32, transposes,
/// accumulate, epilogues; and the bf16 rounding helpers.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include "matrix/jit/cpu_features.h"
#include "matrix/gemm_bf16.h"

namespace inductor_cpp::matrix {
namespace {

void check_bf16(int64_t m, int64_t n, int64_t k, bool ta, bool tb, bool accumulate, bool amx,
                std::mt19937& rng) {
  SCOPED_TRACE(::testing::Message()
               << m << "x" << n << "x" << k << " ta=" << ta << " tb=" << tb << " amx=" << amx);
  std::uniform_real_distribution<float> dist(-1, 1);
  GemmBf16Problem p;
  p.m = m, p.n = n, p.k = k, p.trans_a = ta, p.trans_b = tb, p.accumulate = accumulate,
  p.allow_amx = amx;
  p.lda = (ta ? m : k) + 2, p.ldb = (tb ? k : n) + 1, p.ldc = n + 3;
  std::vector<uint16_t> a((ta ? k : m) * p.lda), b((tb ? n : k) * p.ldb);
  for (auto& x : a) x = f32_to_bf16(dist(rng));
  for (auto& x : b) x = f32_to_bf16(dist(rng));
  std::vector<float> c((m + 1) * p.ldc, -9.0f), c0(c), bias(n);
  for (auto& x : bias) x = dist(rng);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) c[i * p.ldc + j] = c0[i * p.ldc + j] = dist(rng);
  p.a = a.data(), p.b = b.data(), p.c = c.data();
  p.epilogue = {{EpilogueKind::BiasCol, bias.data()}, {EpilogueKind::Gelu}};
  gemm_bf16(p, 2);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0, mag = 0;
      for (int64_t kk = 0; kk < k; ++kk) {
        const double x = bf16_to_f32(ta ? a[kk * p.lda + i] : a[i * p.lda + kk]);
        const double y = bf16_to_f32(tb ? b[j * p.ldb + kk] : b[kk * p.ldb + j]);
        acc += x * y;
        mag += std::fabs(x * y);
      }
      double r = acc + (accumulate ? c0[i * p.ldc + j] : 0.0) + bias[j];
      r = 0.5 * r * (1 + std::erf(r / std::sqrt(2.0)));
      ASSERT_NEAR(c[i * p.ldc + j], r, 2e-6 * (mag + 8)) << i << "," << j;
    }
  for (int64_t i = 0; i <= m; ++i)
    for (int64_t j = (i < m ? n : 0); j < p.ldc; ++j)
      ASSERT_EQ(c[i * p.ldc + j], -9.0f) << "outside C";
}

TEST(GemmBf16Test, ShapesAroundTheAmxTile) {
  if (!xbyak::cpu_features().avx2) GTEST_SKIP();
  std::mt19937 rng(3);
  for (bool amx : {true, false})
    for (auto s : std::vector<std::array<int64_t, 3>>{
             {32, 32, 32}, {1, 1, 1}, {33, 31, 65}, {64, 96, 600}, {5, 70, 31}})
      check_bf16(s[0], s[1], s[2], false, false, false, amx, rng);
  check_bf16(40, 50, 70, true, true, true, true, rng);
  check_bf16(40, 50, 70, true, true, true, false, rng);
}

TEST(GemmBf16Test, PrepackedBMatchesPerCallPacking) {
  if (!xbyak::cpu_features().avx2) GTEST_SKIP();
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (bool amx : {true, false})
    for (bool tb : {false, true}) {
      const int64_t m = 70, n = 150, k = 300;  // several 32-column panels per thread, tails
      GemmBf16Problem p;
      p.m = m, p.n = n, p.k = k, p.lda = k, p.trans_b = tb, p.ldb = tb ? k : n, p.ldc = n,
      p.allow_amx = amx;
      std::vector<uint16_t> a(m * k), b(k * n);
      for (auto& x : a) x = f32_to_bf16(dist(rng));
      for (auto& x : b) x = f32_to_bf16(dist(rng));
      std::vector<float> c1(m * n), c2(m * n, 5.0f);
      p.a = a.data(), p.b = b.data(), p.c = c1.data();
      gemm_bf16(p, 2);
      const PackedBBf16 packed = pack_b_bf16(b.data(), k, n, p.ldb, tb, amx);
      EXPECT_EQ(packed.amx, amx && gemm_bf16_uses_amx());
      p.b = nullptr, p.c = c2.data();
      gemm_bf16_packed(p, packed, 2);
      for (int64_t i = 0; i < m * n; ++i)
        ASSERT_EQ(c1[i], c2[i]) << "element " << i << " amx=" << amx;
      p.k = k - 1;
      EXPECT_THROW(gemm_bf16_packed(p, packed, 1), std::invalid_argument);
    }
}

TEST(GemmBf16Test, CastStageWritesRoundedOutput) {
  if (!xbyak::cpu_features().avx2) GTEST_SKIP();
  for (bool amx : {true, false}) {
    const int64_t m = 37, n = 45, k = 40;
    std::vector<uint16_t> a(m * k), b(k * n), out(m * (n + 2), 0xdead);
    for (size_t i = 0; i < a.size(); ++i) a[i] = f32_to_bf16(float(i % 9) * 0.37f - 1.1f);
    for (size_t i = 0; i < b.size(); ++i) b[i] = f32_to_bf16(float(i % 7) * 0.21f - 0.5f);
    std::vector<float> c(m * n);
    GemmBf16Problem p;
    p.m = m, p.n = n, p.k = k, p.a = a.data(), p.lda = k, p.b = b.data(), p.ldb = n;
    p.c = c.data(), p.ldc = n, p.allow_amx = amx, p.c_bf16 = out.data(), p.ldc_bf16 = n + 2;
    p.epilogue = {{EpilogueKind::Relu}};
    gemm_bf16(p, 2);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j)
        ASSERT_EQ(out[i * (n + 2) + j], f32_to_bf16(c[i * n + j])) << i << "," << j;
      ASSERT_EQ(out[i * (n + 2) + n], 0xdead) << "cast wrote past n";
    }
  }
}

// Without C (a bf16-only result, as compiled bf16 matmuls ask for) the output is the one the
// fp32 C would have given through the cast stage, bit for bit: one K block (tiles finished in
// cache) and several (K > 4096: the fp32 sums carried in a C of the driver's own), row and
// column tails, a padded output leading dimension, B pre-packed or not.
TEST(GemmBf16Test, BfloatOnlyOutputMatchesTheCastOfC) {
  if (!xbyak::cpu_features().avx2) GTEST_SKIP();
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (bool amx : {true, false}) {
    for (const std::array<int64_t, 3>& mnk :
         {std::array<int64_t, 3>{37, 45, 40}, std::array<int64_t, 3>{64, 96, 4200},
          std::array<int64_t, 3>{1, 33, 70}}) {
      const auto [m, n, k] = mnk;
      SCOPED_TRACE(::testing::Message() << m << "x" << n << "x" << k << " amx=" << amx);
      std::vector<uint16_t> a(m * k), b(k * n), want(m * (n + 3), 0xdead), got(want);
      for (auto& x : a) x = f32_to_bf16(dist(rng));
      for (auto& x : b) x = f32_to_bf16(dist(rng));
      std::vector<float> c(m * n), bias(m);
      for (auto& x : bias) x = dist(rng);
      GemmBf16Problem p;
      p.m = m, p.n = n, p.k = k, p.a = a.data(), p.lda = k, p.b = b.data(), p.ldb = n;
      p.c = c.data(), p.ldc = n, p.allow_amx = amx, p.c_bf16 = want.data(), p.ldc_bf16 = n + 3;
      p.epilogue = {{EpilogueKind::BiasRow, bias.data()}, {EpilogueKind::Relu}};
      gemm_bf16(p, 2);
      p.c = nullptr, p.c_bf16 = got.data();
      gemm_bf16(p, 2);
      ASSERT_EQ(got, want);
      std::fill(got.begin(), got.end(), 0xdead);
      gemm_bf16_packed(p, pack_b_bf16(b.data(), k, n, n, false, amx), 2);
      ASSERT_EQ(got, want);
    }
  }
}

// A transposed B (a Linear weight) is packed 16 columns × 32 k at a time by an AVX-512
// transpose, the column and k tails element by element: the packed copy must give the result of
// the plain B with the same values, bit for bit, for full blocks, tails and a padded ldb. (VNNI
// packing is AMX's; the fp32 fallback sums a transposed B in another order.)
TEST(GemmBf16Test, TransposedBPacksLikeThePlainOne) {
  if (!gemm_bf16_uses_amx()) GTEST_SKIP() << "no usable AMX";
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (bool amx : {true}) {
    for (const std::array<int64_t, 3>& mnk :
         {std::array<int64_t, 3>{20, 64, 96}, std::array<int64_t, 3>{33, 50, 100},
          std::array<int64_t, 3>{5, 15, 31}}) {
      const auto [m, n, k] = mnk;
      SCOPED_TRACE(::testing::Message() << m << "x" << n << "x" << k << " amx=" << amx);
      const int64_t ldw = k + 5;  // W = Bᵀ, [n, k] with padded rows
      std::vector<uint16_t> a(m * k), w(n * ldw, 0x7fc0), b(k * n);  // pads: NaN, never read
      for (auto& x : a) x = f32_to_bf16(dist(rng));
      for (int64_t j = 0; j < n; ++j)
        for (int64_t kk = 0; kk < k; ++kk) b[kk * n + j] = w[j * ldw + kk] = f32_to_bf16(dist(rng));
      std::vector<float> want(m * n), got(m * n);
      GemmBf16Problem p;
      p.m = m, p.n = n, p.k = k, p.a = a.data(), p.lda = k, p.allow_amx = amx;
      p.b = b.data(), p.ldb = n, p.c = want.data(), p.ldc = n;
      gemm_bf16(p, 2);
      p.b = w.data(), p.ldb = ldw, p.trans_b = true, p.c = got.data();
      gemm_bf16(p, 2);
      ASSERT_EQ(got, want);
      std::fill(got.begin(), got.end(), 0.0f);
      gemm_bf16_packed(p, pack_b_bf16(w.data(), k, n, ldw, true, amx), 2);
      ASSERT_EQ(got, want);
    }
  }
}

TEST(GemmBf16Test, OutputWithoutCMustNotAccumulate) {
  std::vector<uint16_t> a(4, 0), b(4, 0), out(4);
  GemmBf16Problem p;
  p.m = p.n = p.k = 2, p.a = a.data(), p.lda = 2, p.b = b.data(), p.ldb = 2;
  p.c_bf16 = out.data(), p.ldc_bf16 = 2, p.accumulate = true;
  EXPECT_THROW(gemm_bf16(p, 1), std::invalid_argument);
  p.c_bf16 = nullptr, p.accumulate = false;
  EXPECT_THROW(gemm_bf16(p, 1), std::invalid_argument);
}

TEST(Bf16ConversionTest, VectorConversionMatchesScalar) {
  std::vector<float> src = {0.0f,         -0.0f,         1.0f,    1.00390625f, 1.01171875f,
                            -3.99609375f, 65504.0f,      3.0e38f, -3.4e38f,    INFINITY,
                            -INFINITY,    std::nanf(""), 1e-30f,  5e-39f};
  std::mt19937 rng(3);
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 1000; ++i) {
    const uint32_t v = bits(rng);
    float f;
    std::memcpy(&f, &v, 4);
    src.push_back(f);
  }
  for (size_t count : {src.size(), size_t(15), size_t(1)}) {
    std::vector<uint16_t> out(count + 1, 0xbeef);
    convert_f32_to_bf16(src.data(), out.data(), int64_t(count));
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(out[i], f32_to_bf16(src[i])) << i << " " << src[i];
    ASSERT_EQ(out[count], 0xbeef);
  }
}

TEST(GemmBf16Test, ReportsAmxOnlyWhenUsable) {
  EXPECT_EQ(gemm_bf16_uses_amx(), xbyak::cpu_features().amx_usable);
  if (xbyak::cpu_features().amx_usable) {
    EXPECT_TRUE(xbyak::cpu_features().amx_bf16);
  }
}

TEST(Bf16ConversionTest, RoundsToNearestEven) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16_to_f32(0x3f80), 1.0f);
  EXPECT_EQ(f32_to_bf16(1.00390625f), 0x3f80);  // halfway, even below: stays
  EXPECT_EQ(f32_to_bf16(1.01171875f), 0x3f82);  // halfway, odd below: rounds up
  EXPECT_EQ(f32_to_bf16(-2.0f), 0xc000);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(std::nanf("")))));
  EXPECT_EQ(f32_to_bf16(INFINITY), 0x7f80);
}

}  // namespace
}  // namespace inductor_cpp::matrix
