/// \file
/// CPU emitter, arithmetic: float32 / float64 pointwise functions against libm (the inline
/// exp, tanh and erf over ulp sweeps), integer division as Python defines it, division by a
/// row-invariant divisor, and wrapping small integers and bool logic.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "tests/cpp/emit_cpp_test_util.h"

namespace inductor_cpp::codegen::emit_test {
namespace {

const char* const kKernels[] = {
    R"(kernel pw_f32(%a: float32 in, %b: float32 in, %add: float32 out, %exp: float32 out, %tanh: float32 out, %erf: float32 out, %sig: float32 out, %misc: float32 out) symbols(s0) {
  for x0 in 0..s0 parallel vector(16) {
    %add[x0] = add(load(%a, [x0]), load(%b, [x0]))
    %exp[x0] = exp(load(%a, [x0]))
    %tanh[x0] = tanh(load(%a, [x0]))
    %erf[x0] = erf(load(%a, [x0]))
    %sig[x0] = sigmoid(load(%a, [x0]))
    %misc[x0] = where(gt(load(%a, [x0]), 0.0:float32), maximum(load(%a, [x0]), load(%b, [x0])), floordiv(load(%a, [x0]), load(%b, [x0])))
  }
})",
    R"(kernel pw_f64(%a: float64 in, %exp: float64 out, %log1p: float64 out, %sqrt: float64 out, %round: float64 out, %iota: float64 out) symbols(s0) {
  for x0 in 0..s0 vector(8) {
    %exp[x0] = exp(load(%a, [x0]))
    %log1p[x0] = log1p(abs(load(%a, [x0])))
    %sqrt[x0] = sqrt(abs(load(%a, [x0])))
    %round[x0] = round(mul(load(%a, [x0]), 2.0:float64))
    %iota[x0] = cast(index(x0*3 - 5, int64), float64)
  }
})",
    R"(kernel int_ops(%a: int64 in, %b: int64 in, %fd: int64 out, %rem: int64 out, %td: int64 out, %fm: int64 out) symbols(s0) {
  for x0 in 0..s0 vector(16) {
    %fd[x0] = floordiv(load(%a, [x0]), load(%b, [x0]))
    %rem[x0] = remainder(load(%a, [x0]), load(%b, [x0]))
    %td[x0] = truncdiv(load(%a, [x0]), load(%b, [x0]))
    %fm[x0] = fmod(load(%a, [x0]), load(%b, [x0]))
  }
})",
    R"(kernel div_by_row(%a: float32 in, %s: float32 in, %o: float32 out, %h: bfloat16 in, %ho: bfloat16 out) symbols(s0, s1) {
  for x0 in 0..s1 parallel {
    for x1 in 0..s0 vector(16) {
      %o[x0*s0 + x1] = div(load(%a, [x0*s0 + x1]), load(%s, [x0]))
      %ho[x0*s0 + x1] = cast(div(cast(load(%h, [x0*s0 + x1]), float32), load(%s, [x0])), bfloat16)
    }
  }
})",
    R"(kernel exp_f32(%a: float32 in, %e: float32 out) symbols(s0) {
  for x0 in 0..s0 parallel vector(16) {
    %e[x0] = exp(load(%a, [x0]))
  }
})",
    R"(kernel erf_f32(%a: float32 in, %e: float32 out) symbols(s0) {
  for x0 in 0..s0 parallel vector(16) {
    %e[x0] = erf(load(%a, [x0]))
  }
})",
    R"(kernel tanh_f32(%a: float32 in, %e: float32 out) symbols(s0) {
  for x0 in 0..s0 parallel vector(16) {
    %e[x0] = tanh(load(%a, [x0]))
  }
})",
    R"(kernel small_ints(%a: int8 in, %b: int8 in, %o: int8 out, %l: bool out) symbols(s0) {
  for x0 in 0..s0 vector(16) {
    %o[x0] = add(load(%a, [x0]), load(%b, [x0]))
    %l[x0] = logical_and(gt(load(%a, [x0]), 0:int8), logical_not(eq(load(%b, [x0]), 0:int8)))
  }
})",
};

TEST_F(EmitCppTest, PointwiseFloat32) {
  for (const Target& t : *targets_) {
    for (int64_t n : kSizes) {
      const std::string what = std::string(cpu_isa_name(t.target.isa)) + " n=" + std::to_string(n);
      std::vector<float> a = random_floats(n, -4, 4, 1), b = random_floats(n, -3, 3, 2);
      if (n > 3) b[3] = std::numeric_limits<float>::quiet_NaN();
      std::vector<float> add(n), exp(n), tanh(n), erf(n), sig(n), misc(n);
      ASSERT_EQ(run(t, "pw_f32", {n}, 2, a, b, add, exp, tanh, erf, sig, misc), 0);
      std::vector<double> r_add(n), r_exp(n), r_tanh(n), r_erf(n), r_sig(n), r_misc(n);
      for (int64_t i = 0; i < n; ++i) {
        const double x = a[i], y = b[i];
        r_add[i] = static_cast<float>(a[i] + b[i]);
        r_exp[i] = std::exp(x);
        r_tanh[i] = std::tanh(x);
        r_erf[i] = std::erf(x);
        r_sig[i] = 1 / (1 + std::exp(-x));
        r_misc[i] = x > 0 ? (std::isnan(y) ? y : std::max(x, y)) : std::floor(x / y);
      }
      expect_close(add, r_add, 0, 0, "add " + what);
      expect_close(exp, r_exp, 2e-6, 0, "exp " + what);
      expect_close(tanh, r_tanh, 2e-6, 1e-7, "tanh " + what);
      expect_close(erf, r_erf, 2e-6, 1e-7, "erf " + what);
      expect_close(sig, r_sig, 2e-6, 0, "sigmoid " + what);
      expect_close(misc, r_misc, 1e-6, 0, "where/maximum/floordiv " + what);
    }
  }
}

/// Inputs for a float function's ulp sweep: `specials`, the 128 floats around each of `edges`,
/// and every 509th float bit pattern within [lo, hi] (NaN patterns too when the range is all).
std::vector<float> ulp_sweep_inputs(std::initializer_list<float> specials,
                                    std::initializer_list<float> edges, float lo, float hi) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> a(specials);
  for (float edge : edges) {
    float x = edge;  // 64 floats either side
    for (int i = 0; i < 64; ++i) x = std::nextafter(x, -inf);
    for (int i = 0; i < 128; ++i, x = std::nextafter(x, inf)) a.push_back(x);
  }
  const bool all = lo == -inf && hi == inf;
  for (uint64_t bits = 0; bits <= 0xFFFFFFFFull; bits += 509) {
    const uint32_t b = static_cast<uint32_t>(bits);
    float x;
    std::memcpy(&x, &b, 4);
    if (all || (x >= lo && x <= hi)) a.push_back(x);
  }
  return a;
}

// float exp is inline code on AVX2 / AVX-512 (ic_runtime_math.h, exp_f32_256 / _512), not
// Sleef: within 1 ulp of the correctly rounded e^x (an exhaustive check of every float in
// [-105, 90] found no more; here every 509th float bit pattern there, and the edges), with
// inf / 0 / NaN and the overflow and subnormal boundaries as e^x gives them.
TEST_F(EmitCppTest, ExpIsWithinOneUlpEverywhere) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> a =
      ulp_sweep_inputs({std::nanf(""), -std::nanf(""), inf, -inf, 0.0f, -0.0f, 1e-45f, -1e-45f,
                        88.0f, 89.0f, 100.0f, -104.0f, -110.0f, 1e30f, -1e30f},
                       {88.72283935546875f, -87.33654022216797f, -103.27892303466797f, 0.0f,
                        -88.72283935546875f, 0.34657359f, -0.34657359f},
                       -105.0f, 90.0f);
  const int64_t n = static_cast<int64_t>(a.size());
  for (const Target& t : *targets_) {
    std::vector<float> e(n);
    ASSERT_EQ(run(t, "exp_f32", {n}, 2, a, e), 0);
    int failures = 0;
    for (int64_t i = 0; i < n && failures < 10; ++i) {
      const float want = static_cast<float>(std::exp(static_cast<double>(a[i])));
      bool ok;
      if (std::isnan(want) || std::isinf(want) || want == 0) {
        ok = std::isnan(want) ? std::isnan(e[i]) : e[i] == want;
      } else if (std::fpclassify(want) == FP_SUBNORMAL) {
        ok = std::fabs(e[i] - want) <= std::ldexp(1.0f, -149);
      } else {
        ok = std::fabs(e[i] - want) <= std::fabs(std::nextafter(want, inf) - want);  // 1 ulp
      }
      if (ok) continue;
      ++failures;
      ADD_FAILURE() << cpu_isa_name(t.target.isa) << " exp(" << a[i] << ") = " << e[i] << ", want "
                    << want;
    }
  }
}

/// Runs kernel `name` (one float32 function of x) on every 509th float bit pattern, ±0, ±inf,
/// NaN, tiny and huge values and the 128 floats around each of `edges`; expects each result
/// within `max_ulp` ulp of the correctly rounded `reference` (float64), with its sign, and NaN
/// for NaN.
void expect_within_ulp(const std::vector<Target>* targets, const std::string& name,
                       double (*reference)(double), int max_ulp,
                       std::initializer_list<float> edges) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> a = ulp_sweep_inputs({std::nanf(""), -std::nanf(""), inf, -inf, 0.0f,
                                                 -0.0f, 1e-45f, -1e-45f, 1e-30f, 1e30f, -1e30f},
                                                edges, -inf, inf);
  const int64_t n = static_cast<int64_t>(a.size());
  for (const Target& t : *targets) {
    std::vector<float> e(n);
    ASSERT_EQ(run(t, name, {n}, 2, a, e), 0);
    int failures = 0;
    for (int64_t i = 0; i < n && failures < 10; ++i) {
      const float want = static_cast<float>(reference(static_cast<double>(a[i])));
      bool ok;
      if (std::isnan(want)) {
        ok = std::isnan(e[i]);
      } else {
        const float ulp = std::fpclassify(want) == FP_SUBNORMAL || want == 0
                              ? std::ldexp(1.0f, -149)
                              : std::fabs(std::nextafter(want, inf) - want);
        ok = std::fabs(e[i] - want) <= max_ulp * ulp && std::signbit(e[i]) == std::signbit(want);
      }
      if (ok) continue;
      ++failures;
      ADD_FAILURE() << cpu_isa_name(t.target.isa) << " " << name << "(" << a[i] << ") = " << e[i]
                    << ", want " << want;
    }
  }
}

// float tanh is inline code on AVX2 / AVX-512 (ic_runtime_math.h, tanh_fast_256 / _512; Sleef
// builds only, as erf): within 2 ulp of the correctly rounded tanh (every 61st float bit
// pattern: at most 1.65 ulp from the exact value, at |x| ≈ 0.628 where the exponential form
// takes over), here every 509th, the branch and saturation edges, ±0, ±inf and NaN.
TEST_F(EmitCppTest, TanhIsWithinTwoUlpEverywhere) {
  expect_within_ulp(targets_, "tanh_f32", [](double x) { return std::tanh(x); }, 2,
                    {0.625f, -0.625f, 9.01f, -9.01f, 10.0f});
}

// float erf is inline code on AVX2 / AVX-512 (ic_runtime_math.h, erf_fast_256 / _512; Sleef
// builds only): Eigen's rational approximation, at most 6.5 ulp from the exact value over every
// 61st float (near |x| = 3.9); here every 509th, the clamp at ±4, ±0, ±inf, NaN.
TEST_F(EmitCppTest, ErfIsWithinSevenUlpEverywhere) {
  expect_within_ulp(targets_, "erf_f32", [](double x) { return std::erf(x); }, 7,
                    {4.0f, -4.0f, 3.9f, 0.5f, 1e-20f});
}

TEST_F(EmitCppTest, PointwiseFloat64AndIndexValues) {
  for (const Target& t : *targets_) {
    const int64_t n = 19;
    std::vector<double> a(n);
    for (int64_t i = 0; i < n; ++i) a[i] = (i - 9) * 0.75 + 0.25 * (i == 4);  // has x.5 cases
    std::vector<double> exp(n), log1p(n), sqrt(n), round(n), iota(n);
    ASSERT_EQ(run(t, "pw_f64", {n}, 1, a, exp, log1p, sqrt, round, iota), 0);
    std::vector<double> r_exp(n), r_log1p(n), r_sqrt(n), r_round(n), r_iota(n);
    for (int64_t i = 0; i < n; ++i) {
      r_exp[i] = std::exp(a[i]);
      r_log1p[i] = std::log1p(std::fabs(a[i]));
      r_sqrt[i] = std::sqrt(std::fabs(a[i]));
      r_round[i] = std::nearbyint(a[i] * 2);
      r_iota[i] = static_cast<double>(i * 3 - 5);
    }
    const std::string what = cpu_isa_name(t.target.isa);
    expect_close(exp, r_exp, 1e-14, 0, "exp " + what);
    expect_close(log1p, r_log1p, 1e-14, 0, "log1p " + what);
    expect_close(sqrt, r_sqrt, 0, 0, "sqrt " + what);
    expect_close(round, r_round, 0, 0, "round " + what);
    expect_close(iota, r_iota, 0, 0, "index " + what);
  }
}

TEST_F(EmitCppTest, IntegerDivisionFollowsPython) {
  const std::vector<int64_t> a = {7, -7, 7, -7, 0, 5, INT64_MIN, 9, -9, 3, -1, 100, 6, -6, 1, 2, 3};
  const std::vector<int64_t> b = {2, 2, -2, -2, 3, 0, -1, 3, 4, -4, 5, 7, 6, -6, 1, 2, 5};
  const int64_t n = static_cast<int64_t>(a.size());
  for (const Target& t : *targets_) {
    std::vector<int64_t> fd(n), rem(n), td(n), fm(n), A = a, B = b;
    ASSERT_EQ(run(t, "int_ops", {n}, 1, A, B, fd, rem, td, fm), 0);
    for (int64_t i = 0; i < n; ++i) {
      const std::string what = std::string(cpu_isa_name(t.target.isa)) + " " +
                               std::to_string(a[i]) + " / " + std::to_string(b[i]);
      if (b[i] == 0) {  // torch raises; a kernel yields 0 instead of trapping
        EXPECT_EQ(fd[i], 0) << what;
        continue;
      }
      if (b[i] == -1) {  // INT64_MIN / -1 wraps
        EXPECT_EQ(fd[i], static_cast<int64_t>(0 - static_cast<uint64_t>(a[i]))) << what;
        EXPECT_EQ(rem[i], 0) << what;
        continue;
      }
      const int64_t q = a[i] / b[i], r = a[i] % b[i];
      const bool adjust = r != 0 && ((r < 0) != (b[i] < 0));
      EXPECT_EQ(fd[i], adjust ? q - 1 : q) << what;
      EXPECT_EQ(rem[i], adjust ? r + b[i] : r) << what;
      EXPECT_EQ(td[i], q) << what;
      EXPECT_EQ(fm[i], r) << what;
    }
  }
}

// A divisor the same for a whole vector loop (softmax's row sum) is one reciprocal and a
// correction step per lane (ic::div_by_invariant): bit-identical to IEEE division wherever
// the quotient is normal, with zero signs, infinities and NaNs as division gives them, and
// division itself for divisors whose reciprocal would lose range.
TEST_F(EmitCppTest, DivisionByARowInvariantDivisorIsCorrectlyRounded) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  const std::vector<float> divisors = {3.0f,
                                       -7.3f,
                                       0.1f,
                                       1e30f,
                                       -1e-30f,
                                       0.0f,
                                       -0.0f,
                                       inf,
                                       -inf,
                                       nan,
                                       1e-40f,
                                       std::ldexp(1.0f, -101),
                                       std::ldexp(1.0f, 101),
                                       std::ldexp(1.0f, -100),
                                       1.0f / 3,
                                       255.0f,
                                       65536.5f};
  const int64_t cols = 203;  // 12 vectors and a tail
  const int64_t rows = static_cast<int64_t>(divisors.size());
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(-140, 127);
  std::vector<float> a(rows * cols), s = divisors, o(rows * cols);
  std::vector<uint16_t> h(rows * cols), ho(rows * cols);
  const std::vector<float> specials = {0.0f,    -0.0f,    inf,    -inf, nan,
                                       3.4e38f, -3.4e38f, 1e-45f, 1.0f};
  for (int64_t i = 0; i < rows * cols; ++i) {
    const int64_t col = i % cols;
    a[i] = col < static_cast<int64_t>(specials.size())
               ? specials[col]
               : std::ldexp(mantissa(rng), exponent(rng)) * (col % 2 ? -1.0f : 1.0f);
    float hf = a[i];
    uint32_t bits;
    std::memcpy(&bits, &hf, 4);
    h[i] = static_cast<uint16_t>(bits >> 16);  // truncation: any bfloat16 value will do
  }
  for (const Target& t : *targets_) {
    ASSERT_EQ(run(t, "div_by_row", {cols, rows}, 2, a, s, o, h, ho), 0);
    for (int64_t i = 0; i < rows * cols; ++i) {
      const float want = a[i] / s[i / cols];
      const std::string what = std::string(cpu_isa_name(t.target.isa)) + " " +
                               std::to_string(a[i]) + " / " + std::to_string(s[i / cols]);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(o[i])) << what << " = " << o[i];
      } else if (std::fpclassify(want) == FP_SUBNORMAL) {
        EXPECT_LE(std::fabs(o[i] - want), std::ldexp(1.0f, -149)) << what;  // 1 ulp there
      } else {
        EXPECT_EQ(o[i], want) << what;
        EXPECT_EQ(std::signbit(o[i]), std::signbit(want)) << what;
      }
      // The bfloat16 path (widened to float32, divided, rounded to nearest even).
      uint32_t hb = uint32_t{h[i]} << 16, qb;
      float hf;
      std::memcpy(&hf, &hb, 4);
      const float q = hf / s[i / cols];
      std::memcpy(&qb, &q, 4);
      const uint16_t expected =
          std::isnan(q) ? 0x7FC0 : static_cast<uint16_t>((qb + 0x7FFF + ((qb >> 16) & 1)) >> 16);
      if (std::fpclassify(q) == FP_NORMAL || q == 0 || std::isinf(q)) {
        EXPECT_EQ(ho[i], expected) << what << " (bfloat16)";
      }
    }
  }
}

TEST_F(EmitCppTest, SmallIntegersWrapAndBoolLogic) {
  const int64_t n = 20;
  for (const Target& t : *targets_) {
    std::vector<int8_t> a(n), b(n), o(n);
    std::vector<uint8_t> l(n);  // bool storage
    for (int64_t i = 0; i < n; ++i) {
      a[i] = static_cast<int8_t>(120 - 13 * i);
      b[i] = static_cast<int8_t>(i % 3 == 0 ? 0 : 100 - 7 * i);
    }
    ASSERT_EQ(run(t, "small_ints", {n}, 1, a, b, o, l), 0);
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_EQ(o[i], static_cast<int8_t>(static_cast<uint8_t>(a[i]) + static_cast<uint8_t>(b[i])));
      EXPECT_EQ(l[i], (a[i] > 0 && b[i] != 0) ? 1 : 0) << i;
    }
  }
}

}  // namespace

std::vector<ir::Kernel> math_kernels() {
  return parse_kernels(kKernels);
}

}  // namespace inductor_cpp::codegen::emit_test
