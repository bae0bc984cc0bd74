/// \file xbyak_microkernel_test.cpp
/// \brief Tests of the JIT micro-kernels called directly: every tile shape and tail, plain and
/// packed B, baked and runtime K, batch-reduce, alpha/accumulate, every JIT epilogue op, canaries
/// around C, the kernel cache, and ABI hygiene (callee-saved registers and MXCSR preserved,
/// checked through an xbyak thunk that plants known values around the call).
#include <gtest/gtest.h>
#include <xbyak/xbyak.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "matrix/jit/cpu_features.h"
#include "matrix/jit/microkernel.h"

namespace inductor_cpp::xbyak {
namespace {

constexpr float kCanary = -777.25f;

/// Calls fn(args) with rbx, rbp, r12–r15 holding known values; returns a bit set of the
/// registers (and bit 6: MXCSR) that differ afterwards.
class AbiThunk : public Xbyak::CodeGenerator {
 public:
  AbiThunk() : CodeGenerator(4096, Xbyak::DontSetProtectRWE) {
    using namespace Xbyak;
    const Reg64 saved[] = {rbx, rbp, r12, r13, r14, r15};
    for (const Reg64& r : saved) push(r);
    sub(rsp, 24);  // 16-byte alignment at the call + 8 bytes for MXCSR
    stmxcsr(ptr[rsp]);
    for (int i = 0; i < 6; ++i) mov(saved[i], 0x1111111111111111ull * uint64_t(i + 1));
    call(rsi);  // fn in rsi, args already in rdi
    xor_(eax, eax);
    for (int i = 0; i < 6; ++i) {
      Label ok;
      mov(rcx, 0x1111111111111111ull * uint64_t(i + 1));
      cmp(saved[i], rcx);
      je(ok);
      or_(eax, 1 << i);
      L(ok);
    }
    stmxcsr(ptr[rsp + 8]);
    mov(ecx, ptr[rsp]);
    Label mxcsr_ok;
    cmp(ecx, ptr[rsp + 8]);
    je(mxcsr_ok);
    or_(eax, 1 << 6);
    L(mxcsr_ok);
    add(rsp, 24);
    for (int i = 5; i >= 0; --i) pop(saved[i]);
    ret();
    ready();
    setProtectModeRE();  // write-xor-execute: no longer writable from here on
  }
  int run(MicroKernelFn fn, const MicroKernelArgs* args) const {
    return getCode<int (*)(const MicroKernelArgs*, MicroKernelFn)>()(args, fn);
  }
};

struct Case {
  int mr, nr;
  int64_t k;
  bool baked_k, packed, accumulate;
  int batch;
  float alpha;
  std::vector<KernelEpilogueOp> epilogue;
  int panel_cols = 0;  ///< Packed B over two panels (desc.b_panel_cols), apart in memory.
};

/// Runs one kernel on random data and compares with a double-precision reference.
void check_case(Isa isa, const Case& c, std::mt19937& rng) {
  SCOPED_TRACE(::testing::Message()
               << (isa == Isa::Avx512 ? "avx512 " : "avx2 ") << c.mr << "x" << c.nr << " k=" << c.k << " packed=" << c.packed
               << " acc=" << c.accumulate << " batch=" << c.batch << " epi=" << c.epilogue.size());
  std::uniform_real_distribution<float> dist(-1, 1);
  const int64_t lda = c.k + 3, ldb = c.packed ? 64 : c.nr + 5, ldc = c.nr + 7;
  // Two panels: the second starts after the first plus a gap (its stride is a runtime argument).
  const int64_t panel_stride = c.panel_cols ? c.k * ldb + 96 : 0;
  std::vector<std::vector<float>> a(c.batch, std::vector<float>(c.mr * lda)),
      b(c.batch, std::vector<float>(panel_stride + c.k * ldb + 64));
  auto b_at = [&](int t, int64_t kk, int j) {
    return c.panel_cols && j >= c.panel_cols ? b[t][panel_stride + kk * ldb + j - c.panel_cols]
                                             : b[t][kk * ldb + j];
  };
  std::vector<const float*> a_ptrs, b_ptrs;
  for (int t = 0; t < c.batch; ++t) {
    for (float& x : a[t]) x = dist(rng);
    for (float& x : b[t]) x = dist(rng);
    a_ptrs.push_back(a[t].data());
    b_ptrs.push_back(b[t].data());
  }
  // C with a canary border: one row above and below, ldc - nr columns to the right.
  std::vector<float> c_buf((c.mr + 2) * ldc, kCanary);
  float* cm = c_buf.data() + ldc;
  std::vector<float> c_init(c.mr * c.nr);
  for (int i = 0; i < c.mr; ++i)
    for (int j = 0; j < c.nr; ++j) cm[i * ldc + j] = c_init[i * c.nr + j] = dist(rng);
  std::vector<float> bias_row(c.mr), bias_col(c.nr), scale_col(c.nr), residual(c.mr * (c.nr + 2));
  for (float& x : bias_row) x = dist(rng);
  for (float& x : bias_col) x = dist(rng);
  for (float& x : scale_col) x = dist(rng);
  for (float& x : residual) x = dist(rng);

  MicroKernelDesc d;
  d.isa = isa;
  d.mr = c.mr;
  d.nr = c.nr;
  d.k = c.baked_k ? c.k : 0;
  d.a_row_stride = lda;
  d.ldb = ldb;
  d.ldc = ldc;
  d.b_layout = c.packed ? BLayout::Packed : BLayout::Plain;
  d.accumulate = c.accumulate;
  d.alpha = c.alpha;
  d.epilogue = c.epilogue;
  d.b_panel_cols = c.panel_cols;
  std::vector<const float*> epi_data;
  for (auto& op : d.epilogue) {
    if (op.kind == KernelEpilogueKind::AddResidual || op.kind == KernelEpilogueKind::MulResidual)
      op.ld = c.nr + 2;
    epi_data.push_back(op.kind == KernelEpilogueKind::BiasRow    ? bias_row.data()
                       : op.kind == KernelEpilogueKind::BiasCol  ? bias_col.data()
                       : op.kind == KernelEpilogueKind::ScaleCol ? scale_col.data()
                                                                 : residual.data());
  }
  MicroKernelArgs args;
  args.a = a_ptrs.data();
  args.b = b_ptrs.data();
  args.batch = c.batch;
  args.c = cm;
  args.k = c.baked_k && c.k > 0 ? 12345 : c.k;  // must be ignored when K is baked
  args.epilogue_data = epi_data.data();
  args.b_panel_stride = panel_stride * int64_t(sizeof(float));
  static const AbiThunk thunk;
  ASSERT_EQ(thunk.run(get_microkernel(d), &args), 0) << "callee-saved register or MXCSR clobbered";

  for (int i = 0; i < c.mr; ++i)
    for (int j = 0; j < c.nr; ++j) {
      double acc = 0, mag = 0;
      for (int t = 0; t < c.batch; ++t)
        for (int64_t kk = 0; kk < c.k; ++kk) {
          const double p = double(a[t][i * lda + kk]) * b_at(t, kk, j);
          acc += p;
          mag += std::fabs(p);
        }
      double x = c.alpha * acc + (c.accumulate ? c_init[i * c.nr + j] : 0.0);
      for (const auto& op : d.epilogue) {
        switch (op.kind) {
          case KernelEpilogueKind::BiasRow:
            x += bias_row[i];
            break;
          case KernelEpilogueKind::BiasCol:
            x += bias_col[j];
            break;
          case KernelEpilogueKind::Scale:
            x *= op.a;
            break;
          case KernelEpilogueKind::ScaleCol:
            x *= scale_col[j];
            break;
          case KernelEpilogueKind::Relu:
            x = std::max(x, 0.0);
            break;
          case KernelEpilogueKind::Clamp:
            x = std::min(std::max(x, double(op.a)), double(op.b));
            break;
          case KernelEpilogueKind::AddResidual:
            x += residual[i * op.ld + j];
            break;
          case KernelEpilogueKind::MulResidual:
            x *= residual[i * op.ld + j];
            break;
        }
      }
      ASSERT_NEAR(cm[i * ldc + j], x, 1e-5 * (mag + 4) + 1e-6) << "at " << i << "," << j;
    }
  for (int j = 0; j < ldc; ++j) {
    ASSERT_EQ(c_buf[j], kCanary) << "row above C overwritten at " << j;
    ASSERT_EQ(c_buf[(c.mr + 1) * ldc + j], kCanary) << "row below C overwritten at " << j;
  }
  for (int i = 0; i < c.mr; ++i)
    for (int j = c.nr; j < ldc; ++j)
      ASSERT_EQ(cm[i * ldc + j], kCanary) << "column tail overwritten";
}

/// Every test runs once per ISA the CPU has (an AVX-512 host runs the AVX2 kernels too).
/// Tile shapes are given for AVX-512 and scaled by the vector width for AVX2 (`cols`), with
/// rows cut to what fits the registers (`rows`).
class MicroKernelTest : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (isa() == Isa::Avx512 && !cpu_features().avx512) GTEST_SKIP() << "no AVX-512 on this CPU";
    if (isa() == Isa::Avx2 && !cpu_features().avx2) GTEST_SKIP() << "no AVX2/FMA on this CPU";
  }
  static Isa isa() { return GetParam(); }
  /// An AVX-512 column count for this ISA: as many vectors, a column tail where it had one.
  static int cols(int avx512_cols) {
    if (isa() == Isa::Avx512) return avx512_cols;
    const int tail = avx512_cols % 16;
    return avx512_cols / 16 * 8 + (tail ? std::max(1, tail / 2) : 0);
  }
  static int rows(int mr, int nr) { return std::min(mr, max_rows(isa(), nr)); }
  void check(const Case& c) { check_case(isa(), c, rng); }
  std::mt19937 rng{1234};
};

TEST_P(MicroKernelTest, EveryTileShapeAndTail) {
  for (int nr : {1, 5, 16, 17, 31, 32, 33, 48, 64})
    for (int mr = 1; mr <= max_rows(isa(), cols(nr)); mr += (mr < 4 ? 1 : 3))
      for (bool packed : {false, true}) check({mr, cols(nr), 7, false, packed, false, 1, 1.0f, {}});
}

TEST_P(MicroKernelTest, TileOverTwoPanels) {
  // A tile over two packed panels (the AVX-512 wide tile, 6 × 64 over two 32-column panels) and
  // its column tails: runtime and baked K, unrolled remainders, batch-reduce, accumulate, and an
  // epilogue that reads per column.
  using K = KernelEpilogueKind;
  const int panel = cols(32);
  for (int nr : {33, 40, 48, 63, 64})
    for (int64_t k : {1, 5, 64})
      for (int mr : {1, 4, 6})
        check({rows(mr, cols(nr)),
               cols(nr),
               k,
               k == 5,
               true,
               k == 64,
               k == 64 ? 2 : 1,
               1.0f,
               {{K::BiasCol}, {K::Relu}},
               panel});
  // One FMA scale+shift pair and a residual on the wide tile.
  check({rows(6, cols(64)),
         cols(64),
         9,
         false,
         true,
         false,
         1,
         1.0f,
         {{K::ScaleCol}, {K::BiasCol}, {K::AddResidual}},
         panel});
  MicroKernelDesc bad;
  bad.isa = isa();
  bad.mr = 1, bad.nr = cols(64), bad.b_panel_cols = cols(16);  // would need three panels
  EXPECT_THROW(get_microkernel(bad), std::invalid_argument);
  bad.b_panel_cols = panel, bad.b_layout = BLayout::Plain;
  EXPECT_THROW(get_microkernel(bad), std::invalid_argument);
}

TEST_P(MicroKernelTest, KLengthsBakedAndRuntime) {
  for (int64_t k : {0, 1, 3, 4, 5, 8, 33, 256})
    for (bool baked : {false, true})
      check({rows(14, cols(32)), cols(32), k, baked, true, false, 1, 1.0f, {}});
}

TEST_P(MicroKernelTest, AlphaAccumulateAndBatchReduce) {
  check({rows(6, cols(64)), cols(64), 17, false, false, true, 1, 1.0f, {}});
  check({rows(6, cols(64)), cols(64), 17, true, true, true, 3, -0.5f, {}});
  check({rows(14, cols(23)), cols(23), 9, false, false, true, 4, 2.0f, {}});
  check({3, cols(32), 5, false, true, false, 0, 1.0f, {}});  // empty batch: C = 0 (+ epilogue)
}

TEST_P(MicroKernelTest, EveryEpilogueOp) {
  using K = KernelEpilogueKind;
  const std::vector<std::vector<KernelEpilogueOp>> lists = {
      {{K::BiasRow}},
      {{K::BiasCol}},
      {{K::Scale, 0.25f}},
      {{K::Relu}},
      {{K::Clamp, -0.3f, 0.4f}},
      {{K::AddResidual}},
      {{K::MulResidual}},
      {{K::BiasCol}, {K::MulResidual}, {K::AddResidual}},  // a gate, then a residual
      {{K::ScaleCol}},
      {{K::ScaleCol}, {K::BiasCol}},                                             // one FMA
      {{K::BiasCol}, {K::ScaleCol}, {K::BiasCol}, {K::AddResidual}, {K::Relu}},  // conv+BN+add+relu
      {{K::BiasCol}, {K::Relu}, {K::AddResidual}, {K::Scale, 3.0f}, {K::Clamp, -1, 1}}};
  for (const auto& list : lists)
    for (int nr : {32, 21}) check({rows(5, cols(nr)), cols(nr), 11, false, false, true, 1, 1.5f, list});
}

/// ScaleCol directly followed by BiasCol is one FMA: bit-identical to std::fma(acc, s, t) where
/// acc is the kernel's own accumulation (K = 1, so acc = a·b exactly rounded once), and differs
/// from the two-rounding x·s + t somewhere (checks the fusion really happened).
TEST_P(MicroKernelTest, ScaleColThenBiasColIsOneFusedMultiplyAdd) {
  {
    const int nr = cols(37), mr = rows(4, nr);  // a column tail
    std::uniform_real_distribution<float> dist(-3, 3);
    std::vector<float> a(mr), b(nr), s(nr), t(nr), c(mr * nr);
    for (auto* v : {&a, &b, &s, &t})
      for (float& x : *v) x = dist(rng);
    MicroKernelDesc d;
    d.isa = isa();
    d.mr = mr;
    d.nr = nr;
    d.k = 1;
    d.a_row_stride = 1;
    d.ldb = nr;
    d.ldc = nr;
    d.b_layout = BLayout::Plain;
    d.epilogue = {{KernelEpilogueKind::ScaleCol}, {KernelEpilogueKind::BiasCol}};
    const float* ap = a.data();
    const float* bp = b.data();
    const float* ep[] = {s.data(), t.data()};
    MicroKernelArgs args;
    args.a = &ap;
    args.b = &bp;
    args.c = c.data();
    args.epilogue_data = ep;
    get_microkernel(d)(&args);
    int differs_from_two_roundings = 0;
    for (int i = 0; i < mr; ++i)
      for (int j = 0; j < nr; ++j) {
        const float acc = a[i] * b[j];
        ASSERT_EQ(c[i * nr + j], std::fma(acc, s[j], t[j])) << i << "," << j;
        volatile float product = acc * s[j];  // volatile: no contraction into an FMA
        differs_from_two_roundings += c[i * nr + j] != product + t[j];
      }
    EXPECT_GT(differs_from_two_roundings, 0);
  }
}

TEST_P(MicroKernelTest, TransposedAStridesAndCache) {
  // A stored k-major (row stride 1, k stride lda): the kernel just uses other strides.
  const int mr = 4, nr = 16, k = 5, lda = 9;
  std::vector<float> a(k * lda), b(k * nr), c(mr * nr);
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(i % 7) - 3;
  for (size_t i = 0; i < b.size(); ++i) b[i] = float(i % 5) - 2;
  MicroKernelDesc d;
  d.isa = isa();
  d.mr = mr;
  d.nr = nr;
  d.k = k;
  d.a_row_stride = 1;
  d.a_k_stride = lda;
  d.ldb = nr;
  d.ldc = nr;
  const size_t before = microkernel_cache_size();
  MicroKernelFn fn = get_microkernel(d);
  EXPECT_EQ(get_microkernel(d), fn);
  EXPECT_EQ(microkernel_cache_size(), before + 1);
  const float* ap = a.data();
  const float* bp = b.data();
  MicroKernelArgs args;
  args.a = &ap;
  args.b = &bp;
  args.c = c.data();
  fn(&args);
  for (int i = 0; i < mr; ++i)
    for (int j = 0; j < nr; ++j) {
      float ref = 0;
      for (int kk = 0; kk < k; ++kk) ref += a[kk * lda + i] * b[kk * nr + j];
      EXPECT_EQ(c[i * nr + j], ref);
    }
}

TEST_P(MicroKernelTest, RejectsTilesThatDoNotFit) {
  MicroKernelDesc d;
  d.isa = isa();
  d.nr = cols(32);
  d.mr = max_rows(isa(), d.nr) + 1;
  EXPECT_THROW(get_microkernel(d), std::invalid_argument);
  if (isa() == Isa::Avx512) {
    EXPECT_EQ(max_rows(Isa::Avx512, 32), 14);
    EXPECT_EQ(max_rows(Isa::Avx512, 64), 6);
  } else {
    EXPECT_EQ(max_rows(Isa::Avx2, 16), 6);
    EXPECT_EQ(max_rows(Isa::Avx2, 32), 2);
  }
}

INSTANTIATE_TEST_SUITE_P(Isas, MicroKernelTest, ::testing::Values(Isa::Avx512, Isa::Avx2),
                         [](const ::testing::TestParamInfo<Isa>& info) {
                           return info.param == Isa::Avx512 ? "Avx512" : "Avx2";
                         });

}  // namespace
}  // namespace inductor_cpp::xbyak
