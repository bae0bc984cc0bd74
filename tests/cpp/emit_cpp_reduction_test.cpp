/// \file
/// CPU emitter, reductions over symbolic extents: every row reduction against a float64
/// reference (NaN, ties, tails, unrolled accumulator copies, one or two threads bit for bit),
/// long sums, reductions across columns, and a layer norm.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "ir/ir_text.h"
#include "tests/cpp/emit_cpp_test_util.h"

namespace inductor_cpp::codegen::emit_test {
namespace {

const char* const kKernels[] = {
    R"(kernel outer_sum(%in0: float32 in, %1: float32 out, %2: int64 out, %3: float32 out) symbols(s0, s1) {
  for x0_blk in 0..(s0 + 63) // 64 parallel {
    for x0_in in 0..min(x0_blk*-64 + s0, 64) vector(16) {
      t0 = accumulator sum float32
      t1 = accumulator argmax float32
      t2 = accumulator welford_m2 float32
      for y0 in 0..s1 {
        t0 += load(%in0, [x0_blk*64 + x0_in + y0*s0])
        t1 += load(%in0, [x0_blk*64 + x0_in + y0*s0]) at y0
        t2 += load(%in0, [x0_blk*64 + x0_in + y0*s0])
      }
      %1[x0_blk*64 + x0_in] = local(t0, float32)
      %2[x0_blk*64 + x0_in] = local(t1, int64)
      %3[x0_blk*64 + x0_in] = local(t2, float32)
    }
  }
})",
    R"(kernel layernorm(%in0: float32 in, %3: float32 out, %4: float32 out) {
  for x0 in 0..32 parallel {
    t0 = accumulator sum float32
    t1 = accumulator welford_m2 float32
    for y0 in 0..500 vector(16) {
      t0 += load(%in0, [x0*500 + y0])
      t1 += load(%in0, [x0*500 + y0])
    }
    let t2 = rsqrt(add(div(local(t1, float32), 500.0:float32), 1e-05:float32))
    %3[x0] = local(t2, float32)
    for y0 in 0..500 vector(16) {
      let t3 = mul(sub(load(%in0, [x0*500 + y0]), div(local(t0, float32), 500.0:float32)), local(t2, float32))
      %4[x0*500 + y0] = local(t3, float32)
    }
  }
})",
};

/// Reference row reductions in double.
struct RowStats {
  double sum = 0, prod = 1, max = -INFINITY, min = INFINITY, m2 = 0;
  int64_t argmax = 0, argmin = 0;
};
RowStats row_stats(const float* x, int64_t n) {
  RowStats s;
  bool max_nan = false, min_nan = false;
  double mean = 0;
  for (int64_t i = 0; i < n; ++i) mean += x[i] / static_cast<double>(n);
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    s.sum += v;
    s.prod *= v;
    s.m2 += (v - mean) * (v - mean);
    if (std::isnan(v)) {
      if (!max_nan) s.argmax = i;
      if (!min_nan) s.argmin = i;
      max_nan = min_nan = true;
      continue;
    }
    if (!max_nan && v > s.max) s.max = v, s.argmax = i;
    if (!min_nan && v < s.min) s.min = v, s.argmin = i;
  }
  if (max_nan) s.max = s.min = NAN;
  return s;
}

TEST_F(EmitCppTest, RowReductions) {
  for (const Target& t : *targets_) {
    for (int64_t len : kSizes) {
      const int64_t rows = 3;
      std::vector<float> a = random_floats(rows * len, 0.5f, 1.5f, 8);
      if (len > 1) a[rows * len - 2] = a[rows * len - 3];  // a tie
      if (len >= 15) a[len + 5] = NAN, a[len + 9] = NAN;   // row 1 has NaNs
      std::vector<float> sum(rows), prod(rows), mx(rows), mn(rows), m2(rows);
      std::vector<int64_t> amax(rows), amin(rows);
      const std::vector<int64_t> sym = {rows, len};
      ASSERT_EQ(run(t, "red_sum", sym, 2, a, sum), 0);
      ASSERT_EQ(run(t, "red_prod", sym, 2, a, prod), 0);
      ASSERT_EQ(run(t, "red_max", sym, 2, a, mx), 0);
      ASSERT_EQ(run(t, "red_min", sym, 2, a, mn), 0);
      ASSERT_EQ(run(t, "red_welford_m2", sym, 2, a, m2), 0);
      ASSERT_EQ(run(t, "red_argmax", sym, 2, a, amax), 0);
      ASSERT_EQ(run(t, "red_argmin", sym, 2, a, amin), 0);
      for (int64_t r = 0; r < rows; ++r) {
        const RowStats s = row_stats(a.data() + r * len, len);
        const std::string what = std::string(cpu_isa_name(t.target.isa)) +
                                 " len=" + std::to_string(len) + " row " + std::to_string(r);
        expect_close(std::vector<float>{sum[r]}, {s.sum}, 1e-5, 0, "sum " + what);
        expect_close(std::vector<float>{prod[r]}, {s.prod}, 1e-4, 0, "prod " + what);
        expect_close(std::vector<float>{mx[r]}, {s.max}, 0, 0, "max " + what);
        expect_close(std::vector<float>{mn[r]}, {s.min}, 0, 0, "min " + what);
        expect_close(std::vector<float>{m2[r]}, {s.m2}, 1e-4, 1e-6, "welford " + what);
        EXPECT_EQ(amax[r], s.argmax) << "argmax " << what;
        EXPECT_EQ(amin[r], s.argmin) << "argmin " << what;
      }
      // Deterministic: one thread or two, bit for bit.
      std::vector<float> sum1(rows);
      ASSERT_EQ(run(t, "red_sum", sym, 1, a, sum1), 0);
      EXPECT_EQ(std::memcmp(sum1.data(), sum.data(), rows * sizeof(float)), 0);
    }
  }
}

/// Runs red_<op> over `rows` rows of a (rows x len) with 1 and 2 threads; the results must be
/// bit for bit the same (the combine order depends only on len). Returns the 2-thread result.
template <class Out>
std::vector<Out> run_deterministic(const Target& t, const std::string& op, std::vector<float>& a,
                                   int64_t rows, int64_t len) {
  std::vector<Out> one(rows), two(rows);
  const std::vector<int64_t> sym = {rows, len};
  EXPECT_EQ(run(t, "red_" + op, sym, 1, a, one), 0);
  EXPECT_EQ(run(t, "red_" + op, sym, 2, a, two), 0);
  EXPECT_EQ(std::memcmp(one.data(), two.data(), rows * sizeof(Out)), 0)
      << op << " len " << len << ": 1 and 2 threads differ";
  return two;
}

// Lengths around multiples of the unrolled groups (64 floats, 32 for argmax/argmin), with a
// remainder of full vectors and a tail, and one long enough for the two-level sum's blocks.
TEST_F(EmitCppTest, UnrolledRowReductions) {
  for (const Target& t : *targets_) {
    for (int64_t len : {31, 32, 33, 63, 64, 65, 127, 128, 129, 200, 4096 + 64 * 3 + 16 + 1}) {
      const int64_t rows = 5;
      std::vector<float> a = random_floats(rows * len, 0.9f, 1.1f, 15);
      a[len + len / 2] = a[len + len - 1] = 1.5f;  // row 1: a tie, the later in the tail
      a[2 * len + len - 1] = 0.5f;                 // row 2: the minimum is the last element
      const std::vector<float> sum = run_deterministic<float>(t, "sum", a, rows, len);
      const std::vector<float> prod = run_deterministic<float>(t, "prod", a, rows, len);
      const std::vector<float> mx = run_deterministic<float>(t, "max", a, rows, len);
      const std::vector<float> mn = run_deterministic<float>(t, "min", a, rows, len);
      const std::vector<float> m2 = run_deterministic<float>(t, "welford_m2", a, rows, len);
      const std::vector<int64_t> amax = run_deterministic<int64_t>(t, "argmax", a, rows, len);
      const std::vector<int64_t> amin = run_deterministic<int64_t>(t, "argmin", a, rows, len);
      for (int64_t r = 0; r < rows; ++r) {
        const RowStats s = row_stats(a.data() + r * len, len);
        const std::string what = std::string(cpu_isa_name(t.target.isa)) +
                                 " len=" + std::to_string(len) + " row " + std::to_string(r);
        expect_close(std::vector<float>{sum[r]}, {s.sum}, 1e-6, 0, "sum " + what);
        expect_close(std::vector<float>{prod[r]}, {s.prod}, 2e-5, 0, "prod " + what);
        expect_close(std::vector<float>{mx[r]}, {s.max}, 0, 0, "max " + what);
        expect_close(std::vector<float>{mn[r]}, {s.min}, 0, 0, "min " + what);
        expect_close(std::vector<float>{m2[r]}, {s.m2}, 1e-4, 1e-6, "welford " + what);
        EXPECT_EQ(amax[r], s.argmax) << "argmax " << what;
        EXPECT_EQ(amin[r], s.argmin) << "argmin " << what;
      }
      std::vector<uint8_t> q(rows * len, 1), any(rows), all(rows);
      q[len - 1] = 0;        // row 0: only the last element false
      q[len + len / 3] = 0;  // row 1: one in the unrolled part
      std::fill(q.begin() + 2 * len, q.begin() + 3 * len, 0);
      q[2 * len + len - 1] = 1;  // row 2: only the last element true
      std::fill(q.begin() + 3 * len, q.begin() + 4 * len, 0);
      q[3 * len + len / 2] = 1;  // row 3: one in the middle true
      ASSERT_EQ(run(t, "red_any", {rows, len}, 2, q, any), 0);
      ASSERT_EQ(run(t, "red_all", {rows, len}, 2, q, all), 0);
      EXPECT_EQ(any, (std::vector<uint8_t>{1, 1, 1, 1, 1})) << len;
      EXPECT_EQ(all, (std::vector<uint8_t>{0, 0, 0, 0, 1})) << len;
    }
  }
}

// NaN anywhere (each unrolled copy, the remainder of full vectors, the tail) makes max/min NaN
// and argmax/argmin its first index, whichever copy holds the earlier one.
TEST_F(EmitCppTest, UnrolledReductionsPropagateNaN) {
  const int64_t len = 64 * 3 + 16 + 5;  // three groups, one more full vector, a tail of 5
  const std::vector<std::vector<int64_t>> nan_sets = {
      {0},       {20}, {40}, {63}, {64 + 50}, {192}, {200}, {len - 1}, {70, 40}, {150, 130, 100},
      {210, 195}};
  for (const Target& t : *targets_) {
    const int64_t rows = static_cast<int64_t>(nan_sets.size());
    std::vector<float> a = random_floats(rows * len, -1, 1, 16);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t at : nan_sets[r]) a[r * len + at] = NAN;
    }
    const std::vector<float> mx = run_deterministic<float>(t, "max", a, rows, len);
    const std::vector<float> mn = run_deterministic<float>(t, "min", a, rows, len);
    const std::vector<int64_t> amax = run_deterministic<int64_t>(t, "argmax", a, rows, len);
    const std::vector<int64_t> amin = run_deterministic<int64_t>(t, "argmin", a, rows, len);
    const std::vector<float> sum = run_deterministic<float>(t, "sum", a, rows, len);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t first = *std::min_element(nan_sets[r].begin(), nan_sets[r].end());
      const std::string what =
          std::string(cpu_isa_name(t.target.isa)) + " first NaN at " + std::to_string(first);
      EXPECT_TRUE(std::isnan(mx[r])) << "max " << what;
      EXPECT_TRUE(std::isnan(mn[r])) << "min " << what;
      EXPECT_TRUE(std::isnan(sum[r])) << "sum " << what;
      EXPECT_EQ(amax[r], first) << "argmax " << what;
      EXPECT_EQ(amin[r], first) << "argmin " << what;
    }
  }
}

// Ties across copies: the first index wins, in whichever copy or lane it sits.
TEST_F(EmitCppTest, UnrolledArgReductionsTakeTheFirstTie) {
  const int64_t len = 32 * 4 + 8 + 3;  // argmax lanes: 8, groups of 32
  for (const Target& t : *targets_) {
    for (int64_t first : {int64_t(0), int64_t(9), int64_t(27), int64_t(33), int64_t(100)}) {
      for (int64_t later : {int64_t(130), int64_t(len - 1), first + 8, first + 1}) {
        if (later >= len || later <= first) continue;
        std::vector<float> a = random_floats(len, -1, 1, 17);
        a[later] = a[first] = 5;
        std::vector<int64_t> amax(1), amin(1);
        ASSERT_EQ(run(t, "red_argmax", {1, len}, 1, a, amax), 0);
        EXPECT_EQ(amax[0], first) << cpu_isa_name(t.target.isa) << " later " << later;
        a[later] = a[first] = -5;
        ASSERT_EQ(run(t, "red_argmin", {1, len}, 1, a, amin), 0);
        EXPECT_EQ(amin[0], first) << cpu_isa_name(t.target.isa) << " later " << later;
      }
    }
  }
}

TEST_F(EmitCppTest, LongSumsStayAccurate) {
  const int64_t n = int64_t(1) << 20;
  const std::vector<float> a = random_floats(n, 0.5f, 1.5f, 13);
  double want = 0;
  for (float x : a) want += x;
  for (const Target& t : *targets_) {
    std::vector<float> sum(1);
    ASSERT_EQ(run(t, "red_sum", {1, n}, 1, a, sum), 0);
    EXPECT_NEAR(sum[0], want, 2e-6 * want) << cpu_isa_name(t.target.isa);
  }
}

TEST_F(EmitCppTest, ArgmaxTiesAndNaNFollowTorch) {
  for (const Target& t : *targets_) {
    std::vector<float> a = {1, NAN, 0, 3, 3, NAN};  // torch: argmax 1, argmin 1
    std::vector<int64_t> amax(1), amin(1);
    ASSERT_EQ(run(t, "red_argmax", {1, 6}, 1, a, amax), 0);
    ASSERT_EQ(run(t, "red_argmin", {1, 6}, 1, a, amin), 0);
    EXPECT_EQ(amax[0], 1);
    EXPECT_EQ(amin[0], 1);
    std::vector<float> ties(40, -INFINITY);
    ASSERT_EQ(run(t, "red_argmax", {1, 40}, 1, ties, amax), 0);
    EXPECT_EQ(amax[0], 0);
    ties[33] = 2, ties[17] = 2;
    ASSERT_EQ(run(t, "red_argmax", {1, 40}, 1, ties, amax), 0);
    EXPECT_EQ(amax[0], 17);
  }
}

TEST_F(EmitCppTest, AnyAll) {
  for (const Target& t : *targets_) {
    for (int64_t len : kSizes) {
      std::vector<uint8_t> a(2 * len, 1), any(2), all(2);
      a[len + len - 1] = 0;  // row 1: last element false
      ASSERT_EQ(run(t, "red_any", {2, len}, 1, a, any), 0);
      ASSERT_EQ(run(t, "red_all", {2, len}, 1, a, all), 0);
      EXPECT_EQ(any, (std::vector<uint8_t>{1, static_cast<uint8_t>(len > 1)}));
      EXPECT_EQ(all, (std::vector<uint8_t>{1, 0}));
      std::fill(a.begin(), a.end(), 0);
      a[len - 1] = 1;
      ASSERT_EQ(run(t, "red_any", {2, len}, 1, a, any), 0);
      EXPECT_EQ(any, (std::vector<uint8_t>{1, 0}));
    }
  }
}

TEST_F(EmitCppTest, OuterDimReductionVectorizesAcrossColumns) {
  for (const Target& t : *targets_) {
    for (int64_t cols : {int64_t(1), int64_t(70), int64_t(1000)}) {
      const int64_t rows = 37;
      std::vector<float> a = random_floats(rows * cols, -1, 1, 9);
      std::vector<float> sum(cols), m2(cols);
      std::vector<int64_t> amax(cols);
      ASSERT_EQ(run(t, "outer_sum", {cols, rows}, 2, a, sum, amax, m2), 0);
      for (int64_t c = 0; c < cols; ++c) {
        std::vector<float> column(rows);
        for (int64_t r = 0; r < rows; ++r) column[r] = a[r * cols + c];
        const RowStats s = row_stats(column.data(), rows);
        expect_close(std::vector<float>{sum[c]}, {s.sum}, 1e-5, 1e-6, "outer sum");
        expect_close(std::vector<float>{m2[c]}, {s.m2}, 1e-5, 1e-6, "outer welford");
        EXPECT_EQ(amax[c], s.argmax) << "outer argmax column " << c;
      }
      // The argmax updates there are ordered (ic::argmax_update_ordered): ties keep the first,
      // the first NaN wins, an all -inf column answers 0.
      for (int64_t c = 0; c < cols; ++c) {
        switch (c % 4) {
          case 0: a[5 * cols + c] = a[20 * cols + c] = 5; break;
          case 1: a[7 * cols + c] = a[30 * cols + c] = NAN; break;
          case 2: a[c] = 10; break;
          default:
            for (int64_t r = 0; r < rows; ++r) a[r * cols + c] = -INFINITY;
        }
      }
      ASSERT_EQ(run(t, "outer_sum", {cols, rows}, 2, a, sum, amax, m2), 0);
      for (int64_t c = 0; c < cols; ++c) {
        EXPECT_EQ(amax[c], (std::vector<int64_t>{5, 7, 0, 0})[c % 4]) << "ties/NaN column " << c;
      }
    }
  }
}

TEST_F(EmitCppTest, LayerNormKernel) {
  std::vector<float> in = random_floats(32 * 500, -2, 2, 10);
  for (const Target& t : *targets_) {
    std::vector<float> rstd(32), out(32 * 500);
    ASSERT_EQ(run(t, "layernorm", {}, 2, in, rstd, out), 0);
    for (int64_t r = 0; r < 32; ++r) {
      const RowStats s = row_stats(in.data() + r * 500, 500);
      const double want_rstd = 1 / std::sqrt(s.m2 / 500 + 1e-5);
      expect_close(std::vector<float>{rstd[r]}, {want_rstd}, 1e-5, 0, "rstd");
      for (int64_t c = 0; c < 500; c += 37) {
        const double want = (in[r * 500 + c] - s.sum / 500) * want_rstd;
        expect_close(std::vector<float>{out[r * 500 + c]}, {want}, 1e-4, 1e-5, "normalized");
      }
    }
  }
}

}  // namespace

std::vector<ir::Kernel> reduction_kernels() {
  std::vector<ir::Kernel> kernels = parse_kernels(kKernels);
  for (const char* op : {"sum", "prod", "max", "min", "welford_m2"}) {
    kernels.push_back(ir::parse_kernel(row_reduction(op, "float32", "float32")));
  }
  kernels.push_back(ir::parse_kernel(row_reduction("argmax", "float32", "int64")));
  kernels.push_back(ir::parse_kernel(row_reduction("argmin", "float32", "int64")));
  kernels.push_back(ir::parse_kernel(row_reduction("any", "bool", "bool")));
  kernels.push_back(ir::parse_kernel(row_reduction("all", "bool", "bool")));
  return kernels;
}

}  // namespace inductor_cpp::codegen::emit_test
