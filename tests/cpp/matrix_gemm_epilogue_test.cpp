/// \file
/// GEMM driver, epilogues: every op alone, chains across the JIT micro-kernels and the C++
/// pass, tanh and sigmoid across their ranges, and NaN / ±inf as eager gives them.
#include <cmath>
#include <limits>

#include "tests/cpp/matrix_gemm_test_util.h"

namespace inductor_cpp::matrix::gemm_test {
namespace {

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

}  // namespace
}  // namespace inductor_cpp::matrix::gemm_test
