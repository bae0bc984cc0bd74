/// \file
/// The GEMM driver tests' helpers: see matrix_gemm_test_util.h.
#include "tests/cpp/matrix_gemm_test_util.h"

#include <cmath>

#include "matrix/jit/cpu_features.h"
#include "matrix/pack.h"

namespace inductor_cpp::matrix::gemm_test {

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
    case EpilogueKind::Tile:  // HalfMinusRowTile
      return 0.5 * x - op.data[i];
  }
  return x;
}

namespace {

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

}  // namespace

Fixture::Fixture(int64_t m, int64_t n, int64_t k, bool ta, bool tb, std::mt19937& rng,
                 int64_t pad) {
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

EpilogueOp Fixture::op(EpilogueKind kind, float x, float y) const {
  EpilogueOp e{kind};
  e.a = x, e.b = y;
  if (kind == EpilogueKind::BiasRow) e.data = bias_row.data();
  if (kind == EpilogueKind::BiasCol) e.data = bias_col.data();
  if (is_residual_op(kind)) e.data = residual.data(), e.ld = p.n + 1;
  return e;
}

void Fixture::check() const {
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
    for (int64_t j = q.n; j < q.ldc; ++j) ASSERT_EQ(q.c[i * q.ldc + j], kCanary) << "past column n";
}

HalfMinusRowTile::HalfMinusRowTile(const Fixture& f, int64_t fail_at_row)
    : hits(f.p.m * f.p.n, 0),
      context{f.p.c, f.p.ldc, f.p.n, f.bias_row.data(), &hits, fail_at_row},
      bufs{reinterpret_cast<char*>(&context)} {
  kernel.fn = tile_half_minus_row;
  kernel.bufs = bufs;
}

EpilogueOp HalfMinusRowTile::op(const Fixture& f) {
  EpilogueOp op = f.op(EpilogueKind::Tile);
  op.data = f.bias_row.data();
  op.tile = &kernel;
  return op;
}

void run_gemm(Fixture& f, int threads, bool prepacked) {
  if (!prepacked) return gemm_f32(f.p, threads);
  const PackedB packed = pack_b_f32(f.p.b, f.p.k, f.p.n, f.p.ldb, f.p.trans_b);
  gemm_f32_packed(f.p, packed, threads);
}

void GemmTest::SetUp() {
  if (!xbyak::cpu_features().avx2) GTEST_SKIP() << "needs AVX2 or AVX-512";
}

}  // namespace inductor_cpp::matrix::gemm_test
