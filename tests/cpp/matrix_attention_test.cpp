/// \file matrix_attention_test.cpp
/// \brief Scaled dot-product attention (matrix/attention.h) against an fp64 reference:
/// head and value dimensions on and off the register tiles, query and key lengths around the
/// query block (64) and key block (512), causal and not, q_len ≠ kv_len, the strided q / k / v
/// of a packed qkv projection, additive masks (broadcast padding, full, a fully hidden row), 1-3
/// threads, logsumexp, canaries between output rows.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "matrix/jit/cpu_features.h"
#include "matrix/attention.h"
#include "tests/cpp/attention_test_inputs.h"

namespace inductor_cpp::matrix {
namespace {

constexpr float kCanary = 1234.5f;

using Case = testing::AttentionCase;

/// Checks attention_f32 on random inputs against fp64 sums: each output within 1e-5 of
/// eager-scale error (relative to the row's Σ p·|v|), logsumexp within 1e-5.
void check_attention(const Case& c, int threads, std::mt19937& rng) {
  SCOPED_TRACE(::testing::Message()
               << "b" << c.batch << " h" << c.heads << " q" << c.q_len << " kv" << c.kv_len << " d"
               << c.head_dim << " dv" << c.value_dim << (c.causal ? " causal" : "")
               << (c.packed_qkv ? " packed" : "") << " threads " << threads);
  testing::AttentionInputs in;
  testing::make_attention_inputs(c, rng, in);
  AttentionParams& p = in.p;
  const float *qp = in.qp, *kp = in.kp, *vp = in.vp;
  const auto mask_at = [&in](int64_t b, int64_t h, int64_t i, int64_t j) {
    return in.mask_at(b, h, i, j);
  };
  // Output [batch, q_len, heads, value_dim + 1]: a canary after every row.
  const int64_t out_row = c.value_dim + 1;
  p.out_stride = {c.q_len * c.heads * out_row, out_row, c.heads * out_row};
  std::vector<float> out(size_t(c.batch * c.q_len * c.heads * out_row), kCanary);
  std::vector<float> lse(size_t(c.batch * c.heads * c.q_len) + 1, kCanary);
  ASSERT_TRUE(attention_supported(p));
  attention_f32(qp, kp, vp, out.data(), p, threads, lse.data(), {c.heads * c.q_len, c.q_len, 1});

  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t i = 0; i < c.q_len; ++i) {
        const float* qi = qp + b * p.q_stride[0] + h * p.q_stride[1] + i * p.q_stride[2];
        const int64_t visible = c.causal ? std::min(c.kv_len, i + 1) : c.kv_len;
        std::vector<double> s(static_cast<size_t>(visible));
        double m = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < visible; ++j) {
          const float* kj = kp + b * p.k_stride[0] + h * p.k_stride[1] + j * p.k_stride[2];
          double dot = 0;
          for (int64_t d = 0; d < c.head_dim; ++d) dot += double(qi[d]) * kj[d];
          s[size_t(j)] = dot * p.scale + mask_at(b, h, i, j);
          m = std::max(m, s[size_t(j)]);
        }
        const float* o =
            out.data() + b * p.out_stride[0] + h * p.out_stride[1] + i * p.out_stride[2];
        if (std::isinf(m)) {  // every key hidden: zeros and a logsumexp of 0, as ATen's kernel
          for (int64_t d = 0; d < c.value_dim; ++d) ASSERT_EQ(o[d], 0.0f) << "hidden row " << i;
          ASSERT_EQ(o[c.value_dim], kCanary) << "wrote past row " << i;
          ASSERT_EQ(lse[size_t((b * c.heads + h) * c.q_len + i)], 0.0f) << "hidden row " << i;
          continue;
        }
        double l = 0;
        for (double& e : s) l += (e = std::exp(e - m));
        for (int64_t d = 0; d < c.value_dim; ++d) {
          double want = 0, mag = 0;
          for (int64_t j = 0; j < visible; ++j) {
            const double vj = vp[b * p.v_stride[0] + h * p.v_stride[1] + j * p.v_stride[2] + d];
            want += s[size_t(j)] * vj;
            mag += s[size_t(j)] * std::fabs(vj);
          }
          ASSERT_NEAR(o[d], want / l, 2e-6 * mag / l + 1e-7)
              << "b" << b << " h" << h << " row " << i << " d " << d;
        }
        ASSERT_EQ(o[c.value_dim], kCanary) << "wrote past row " << i;
        ASSERT_NEAR(lse[size_t((b * c.heads + h) * c.q_len + i)], m + std::log(l),
                    1e-5 * (1 + std::fabs(m)));
      }
  ASSERT_EQ(lse.back(), kCanary) << "wrote past logsumexp";
}

class AttentionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!xbyak::cpu_features().avx512) GTEST_SKIP() << "attention needs AVX-512";
  }
  std::mt19937 rng{7};
};

// BERT's heads (64 wide) from a packed qkv projection, one and two query blocks.
TEST_F(AttentionTest, PackedQkvHeads) {
  for (int threads : {1, 2, 3})
    check_attention({2, 3, 128, 128, 64, 64, false, true}, threads, rng);
  check_attention({1, 2, 77, 77, 64, 64, false, true}, 2, rng);  // ragged query and key tails
  check_attention({1, 2, 77, 77, 64, 64, true, true}, 2, rng);
}

// Dimensions off the tiles: value tails (< 64, > 64), a head dimension of 1, odd lengths.
TEST_F(AttentionTest, DimensionsOffTheTiles) {
  check_attention({1, 2, 9, 13, 40, 24, false, false}, 1, rng);
  check_attention({2, 1, 20, 33, 1, 100, false, false}, 2, rng);
  check_attention({1, 1, 5, 3, 80, 130, true, false}, 3, rng);  // more queries than keys, causal
  check_attention({1, 1, 1, 1, 16, 16, false, false}, 1, rng);
}

// Several key blocks (512 keys each) and query blocks, causal skipping whole key blocks.
TEST_F(AttentionTest, ManyKeyBlocks) {
  check_attention({1, 2, 70, 1100, 32, 48, false, false}, 2, rng);
  check_attention({1, 1, 600, 600, 16, 16, true, false}, 3, rng);
}

// Additive masks: BERT's padding mask broadcast over heads and queries (the last keys of each
// sequence hidden), and a full random mask with a query row whose keys are all hidden (zeros).
TEST_F(AttentionTest, AdditiveMasks) {
  for (int threads : {1, 2}) {
    check_attention({3, 2, 70, 70, 64, 64, false, true, 1}, threads, rng);
    check_attention({2, 2, 9, 40, 16, 24, false, false, 2}, threads, rng);
  }
  check_attention({1, 1, 20, 600, 16, 16, false, false, 2}, 2, rng);  // two key blocks
}

TEST_F(AttentionTest, RejectsWhatItDoesNotHandle) {
  AttentionParams p;
  p.q_len = p.kv_len = 4, p.head_dim = 8, p.value_dim = 8;
  EXPECT_TRUE(attention_supported(p));
  p.head_dim = kMaxHeadDim + 1;
  EXPECT_FALSE(attention_supported(p));
  p.head_dim = 8, p.kv_len = 0;
  EXPECT_FALSE(attention_supported(p));
  std::vector<float> x(64);
  EXPECT_THROW(attention_f32(x.data(), x.data(), x.data(), x.data(), p, 1), std::invalid_argument);
}

}  // namespace
}  // namespace inductor_cpp::matrix
