/// \file matrix_attention_backward_test.cpp
/// \brief The gradients of scaled dot-product attention (matrix/attention_backward.h)
/// against an fp64 reference: head and value dimensions on and off the register tiles, query
/// lengths around the query block (64) and key lengths around the 32-key tiles, causal with
/// q_len below, at and above kv_len, the strided q / k / v of a packed qkv projection, additive
/// masks (broadcast padding; full, with a fully hidden query), 1-3 threads, canaries after every
/// gradient row.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "matrix/jit/cpu_features.h"
#include "matrix/attention_backward.h"
#include "tests/cpp/attention_test_inputs.h"

namespace inductor_cpp::matrix {
namespace {

constexpr float kCanary = 1234.5f;
constexpr double kInf = std::numeric_limits<double>::infinity();

using Case = testing::AttentionCase;

/// A [batch, len, heads, cols + 1] buffer read as [batch, heads, len, cols]: a canary after each
/// row.
struct RowsWithCanaries {
  std::vector<float> data;
  std::array<int64_t, 3> stride;
  int64_t cols;
  RowsWithCanaries(const Case& c, int64_t len, int64_t cols_) : cols(cols_) {
    const int64_t row = cols + 1;
    stride = {len * c.heads * row, row, c.heads * row};
    data.assign(size_t(c.batch * len * c.heads * row), kCanary);
  }
  float* at(int64_t b, int64_t h, int64_t i) {
    return data.data() + b * stride[0] + h * stride[1] + i * stride[2];
  }
};

/// Random inputs, the forward in fp64 (out and logsumexp rounded to float, as the forward's
/// outputs the backward reads), then attention_backward_f32 against fp64 gradients: each within
/// 2e-5 of the sum of its terms' magnitudes.
void check_backward(const Case& c, int threads, std::mt19937& rng) {
  SCOPED_TRACE(::testing::Message()
               << "b" << c.batch << " h" << c.heads << " q" << c.q_len << " kv" << c.kv_len << " d"
               << c.head_dim << " dv" << c.value_dim << (c.causal ? " causal" : "")
               << (c.packed_qkv ? " packed" : "") << " mask " << c.mask << " threads " << threads);
  testing::AttentionInputs in;
  testing::make_attention_inputs(c, rng, in);
  AttentionParams& p = in.p;
  const float *qp = in.qp, *kp = in.kp, *vp = in.vp;
  std::uniform_real_distribution<float> dist(-2, 2);
  const auto row_of = [&in](const float* base, const std::array<int64_t, 3>& s, int64_t b,
                            int64_t h, int64_t i) { return in.row(base, s, b, h, i); };

  RowsWithCanaries out(c, c.q_len, c.value_dim), grad_out(c, c.q_len, c.value_dim);
  RowsWithCanaries dq(c, c.q_len, c.head_dim), dk(c, c.kv_len, c.head_dim),
      dv(c, c.kv_len, c.value_dim);
  std::vector<float> lse(size_t(c.batch * c.heads * c.q_len));
  // fp64 probabilities per (batch, head): [q_len][kv_len], 0 where hidden.
  std::vector<std::vector<double>> probs(size_t(c.batch * c.heads));
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.heads; ++h) {
      std::vector<double>& P = probs[size_t(b * c.heads + h)];
      P.assign(size_t(c.q_len * c.kv_len), 0.0);
      for (int64_t i = 0; i < c.q_len; ++i) {
        double m = -kInf;
        for (int64_t j = 0; j < c.kv_len; ++j) {
          double s = -kInf;
          if (!c.causal || j <= i) {
            double dot = 0;
            for (int64_t d = 0; d < c.head_dim; ++d)
              dot +=
                  double(row_of(qp, p.q_stride, b, h, i)[d]) * row_of(kp, p.k_stride, b, h, j)[d];
            s = dot * p.scale;
            s += in.mask_at(b, h, i, j);
          }
          P[size_t(i * c.kv_len + j)] = s;
          m = std::max(m, s);
        }
        double l = 0;
        for (int64_t j = 0; j < c.kv_len; ++j) {
          double& e = P[size_t(i * c.kv_len + j)];
          e = std::isinf(m) ? 0.0 : std::exp(e - m);
          l += e;
        }
        for (int64_t j = 0; j < c.kv_len && l > 0; ++j) P[size_t(i * c.kv_len + j)] /= l;
        lse[size_t((b * c.heads + h) * c.q_len + i)] = l > 0 ? float(m + std::log(l)) : 0.0f;
        for (int64_t d = 0; d < c.value_dim; ++d) {
          double o = 0;
          for (int64_t j = 0; j < c.kv_len; ++j)
            o += P[size_t(i * c.kv_len + j)] * row_of(vp, p.v_stride, b, h, j)[d];
          out.at(b, h, i)[d] = float(o);
          grad_out.at(b, h, i)[d] = dist(rng);
        }
      }
    }

  p.out_stride = out.stride;
  AttentionBackwardArgs args;
  args.q = qp, args.k = kp, args.v = vp, args.out = out.data.data();
  args.grad_out = grad_out.data.data(), args.grad_out_stride = grad_out.stride;
  args.logsumexp = lse.data(), args.lse_stride = {c.heads * c.q_len, c.q_len, 1};
  args.grad_q = dq.data.data(), args.grad_q_stride = dq.stride;
  args.grad_k = dk.data.data(), args.grad_k_stride = dk.stride;
  args.grad_v = dv.data.data(), args.grad_v_stride = dv.stride;
  ASSERT_TRUE(attention_supported(p));
  attention_backward_f32(p, args, threads);

  const auto expect_near = [](float got, double want, double magnitude, const char* what, int64_t b,
                              int64_t h, int64_t i, int64_t d) {
    if (magnitude == 0) {  // a query that sees no key, or a key no query sees: exactly 0
      ASSERT_EQ(got, 0.0f) << what << " b" << b << " h" << h << " row " << i << " d " << d;
    }
    ASSERT_NEAR(got, want, 2e-5 * magnitude + 1e-6)
        << what << " b" << b << " h" << h << " row " << i << " d " << d;
  };
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.heads; ++h) {
      const std::vector<double>& P = probs[size_t(b * c.heads + h)];
      // dS = P ∘ (dO·vᵀ − Σ dO ∘ O)·scale, and its magnitude bound.
      std::vector<double> dS(P.size()), dS_mag(P.size());
      for (int64_t i = 0; i < c.q_len; ++i) {
        const float *go = grad_out.at(b, h, i), *o = out.at(b, h, i);
        double di = 0, di_mag = 0;
        for (int64_t d = 0; d < c.value_dim; ++d) {
          di += double(go[d]) * o[d];
          di_mag += std::fabs(double(go[d]) * o[d]);
        }
        for (int64_t j = 0; j < c.kv_len; ++j) {
          const float* vj = row_of(vp, p.v_stride, b, h, j);
          double dp = 0, dp_mag = 0;
          for (int64_t d = 0; d < c.value_dim; ++d) {
            dp += double(go[d]) * vj[d];
            dp_mag += std::fabs(double(go[d]) * vj[d]);
          }
          const double pij = P[size_t(i * c.kv_len + j)];
          dS[size_t(i * c.kv_len + j)] = pij * (dp - di) * p.scale;
          dS_mag[size_t(i * c.kv_len + j)] = pij * (dp_mag + di_mag + 1) * p.scale;
        }
      }
      for (int64_t i = 0; i < c.q_len; ++i) {  // grad_q = dS · k
        for (int64_t d = 0; d < c.head_dim; ++d) {
          double want = 0, mag = 0;
          for (int64_t j = 0; j < c.kv_len; ++j) {
            const double kjd = row_of(kp, p.k_stride, b, h, j)[d];
            want += dS[size_t(i * c.kv_len + j)] * kjd;
            mag += dS_mag[size_t(i * c.kv_len + j)] * std::fabs(kjd);
          }
          expect_near(dq.at(b, h, i)[d], want, mag, "grad_q", b, h, i, d);
        }
        ASSERT_EQ(dq.at(b, h, i)[c.head_dim], kCanary) << "grad_q wrote past row " << i;
      }
      for (int64_t j = 0; j < c.kv_len; ++j) {  // grad_k = dSᵀ · q, grad_v = Pᵀ · dO
        for (int64_t d = 0; d < c.head_dim; ++d) {
          double want = 0, mag = 0;
          for (int64_t i = 0; i < c.q_len; ++i) {
            const double qid = row_of(qp, p.q_stride, b, h, i)[d];
            want += dS[size_t(i * c.kv_len + j)] * qid;
            mag += dS_mag[size_t(i * c.kv_len + j)] * std::fabs(qid);
          }
          expect_near(dk.at(b, h, j)[d], want, mag, "grad_k", b, h, j, d);
        }
        for (int64_t d = 0; d < c.value_dim; ++d) {
          double want = 0, mag = 0;
          for (int64_t i = 0; i < c.q_len; ++i) {
            const double pij = P[size_t(i * c.kv_len + j)], go = grad_out.at(b, h, i)[d];
            want += pij * go;
            mag += pij * std::fabs(go);
          }
          expect_near(dv.at(b, h, j)[d], want, mag, "grad_v", b, h, j, d);
        }
        ASSERT_EQ(dk.at(b, h, j)[c.head_dim], kCanary) << "grad_k wrote past row " << j;
        ASSERT_EQ(dv.at(b, h, j)[c.value_dim], kCanary) << "grad_v wrote past row " << j;
      }
    }
}

class AttentionBackwardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!xbyak::cpu_features().avx512) GTEST_SKIP() << "attention needs AVX-512";
  }
  std::mt19937 rng{11};
};

// BERT's heads (64 wide) from a packed qkv projection: one and two query blocks, ragged tails.
TEST_F(AttentionBackwardTest, PackedQkvHeads) {
  for (int threads : {1, 2, 3}) check_backward({2, 3, 128, 128, 64, 64, false, true}, threads, rng);
  check_backward({1, 2, 77, 77, 64, 64, false, true}, 2, rng);
  check_backward({1, 2, 77, 77, 64, 64, true, true}, 2, rng);
}

// Dimensions off the tiles: head and value dimensions under, at and over 64, a head dimension
// of 1, key counts off the 32-key tiles, one query and one key.
TEST_F(AttentionBackwardTest, DimensionsOffTheTiles) {
  check_backward({1, 2, 9, 13, 40, 24, false, false}, 1, rng);
  check_backward({2, 1, 20, 33, 1, 100, false, false}, 2, rng);
  check_backward({1, 1, 65, 31, 80, 130, false, false}, 3, rng);
  check_backward({1, 1, 1, 1, 16, 16, false, false}, 1, rng);
}

// Causal with fewer, as many and more queries than keys: query blocks see growing key ranges
// (off the 32-key tiles), and keys no query sees get zero gradients.
TEST_F(AttentionBackwardTest, Causal) {
  check_backward({1, 2, 130, 130, 16, 16, true, false}, 2, rng);
  check_backward({1, 1, 40, 100, 24, 24, true, false}, 1, rng);
  check_backward({1, 1, 150, 70, 32, 48, true, false}, 3, rng);
  check_backward({1, 1, 300, 520, 16, 16, true, false}, 2, rng);
}

// Additive masks: a padding mask broadcast over heads and queries, and a full random mask with
// a query whose keys are all hidden (its logsumexp 0, its gradients 0).
TEST_F(AttentionBackwardTest, AdditiveMasks) {
  for (int threads : {1, 2}) {
    check_backward({3, 2, 70, 70, 64, 64, false, true, 1}, threads, rng);
    check_backward({2, 2, 9, 40, 16, 24, false, false, 2}, threads, rng);
  }
  check_backward({1, 1, 20, 300, 16, 16, false, false, 2}, 2, rng);
}

TEST_F(AttentionBackwardTest, RejectsWhatItDoesNotHandle) {
  AttentionParams p;
  p.q_len = p.kv_len = 4, p.head_dim = kMaxHeadDim + 1, p.value_dim = 8;
  std::vector<float> x(64);
  AttentionBackwardArgs a;
  a.q = a.k = a.v = a.out = a.grad_out = a.logsumexp = x.data();
  a.grad_q = a.grad_k = a.grad_v = x.data();
  EXPECT_THROW(attention_backward_f32(p, a, 1), std::invalid_argument);
  p.head_dim = 8, p.mask = x.data(), p.mask_stride = {0, 0, 4, 2};
  EXPECT_THROW(attention_backward_f32(p, a, 1), std::invalid_argument);
}

}  // namespace
}  // namespace inductor_cpp::matrix
