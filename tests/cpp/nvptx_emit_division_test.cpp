/// \file
/// NVPTX emitter, division: div.full per element, one reciprocal per row for a loop-invariant
/// divisor (with an emulation of it checked within 1 ulp), multiplication for constants,
/// IEEE float64.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>

#include "tests/cpp/nvptx_emit_test_util.h"

namespace inductor_cpp::codegen::nvptx::emit_test {
namespace {

// float32 division: div.full.f32 per element for a changing divisor, one reciprocal per row
// for a divisor fixed in the loop (softmax), an exact multiplication for 2^k; float64 IEEE.
// Multiplies and adds contract to fma (no `.rn` multiply/add is left that would stop ptxas).
TEST_F(NvptxEmit, DivisionForms) {
  const std::string inputs = R"(  buffer %in0: float32[64, 1000]{1000, 1} input 0 cuda
  buffer %in1: float32[64, 1000]{1000, 1} input 1 cuda
  buffer %1: float32[64, 1000]{1000, 1} computed cuda
)";
  auto ptx_of = [&](const std::string& lines, const std::string& name) {
    const auto kernels = gpu_kernels(inputs + lines);
    EXPECT_EQ(kernels.size(), 1u) << kernels_text(kernels);
    return kernels_text(kernels) + emit_and_assemble(kernels, name).ptx;
  };
  const std::string variable = ptx_of(
      R"(  compute %1 (node 1) pointwise[64, 1000] = add(div(load(%in0, [i0, i1]), load(%in1, [i0, i1])), mul(load(%in0, [i0, i1]), load(%in1, [i0, i1])))
  output %1
)",
      "division_variable");
  EXPECT_NE(variable.find("div.full.f32"), std::string::npos) << variable;
  EXPECT_EQ(variable.find("div.rn.f32"), std::string::npos) << variable;
  EXPECT_NE(variable.find("fma.rn.f32"), std::string::npos) << "a / b + a * b contracts";
  EXPECT_EQ(variable.find("mul.rn.f32"), std::string::npos) << variable;
  const std::string constant = ptx_of(
      R"(  compute %1 (node 1) pointwise[64, 1000] = add(div(load(%in0, [i0, i1]), 3.0:float32), div(load(%in1, [i0, i1]), 0.25:float32))
  output %1
)",
      "division_constant");
  EXPECT_EQ(constant.find("div."), std::string::npos) << "constant divisors multiply\n" << constant;
  EXPECT_EQ(constant.find("rcp."), std::string::npos) << constant;
  // The row's divisor (its sum, scaled into the subnormal range) is inverted once per version
  // of the row body (persistent or not), never per element.
  const std::string row = ptx_of(R"(  buffer %2: float32[64]{1} computed cuda
  compute %2 (node 2) reduce sum[64] over [1000] = abs(load(%in1, [i0, r0]))
  compute %1 (node 1) pointwise[64, 1000] = div(load(%in0, [i0, i1]), mul(load(%2, [i0]), 1e-40:float32))
  output %1
)",
                                 "division_row");
  EXPECT_EQ(row.find("div.full.f32"), std::string::npos) << row;
  EXPECT_EQ(row.find("div.rn.f32"), std::string::npos) << row;
  EXPECT_GE(occurrences(row, "rcp.rn.f32"), 1u) << row;
  EXPECT_LE(occurrences(row, "rcp.rn.f32"), 2u) << row;
  const auto f64 = gpu_kernels(R"(  buffer %in2: float64[1000]{1} input 0 cuda
  buffer %3: float64[1000]{1} computed cuda
  compute %3 (node 3) pointwise[1000] = div(load(%in2, [i0]), add(load(%in2, [i0]), 3.0:float64))
  output %3
)");
  const std::string f64_ptx = emit_and_assemble(f64, "division_f64").ptx;
  EXPECT_NE(f64_ptx.find("div.rn.f64"), std::string::npos) << f64_ptx;
}

// The emitter's a * (1 / b) for a loop-invariant divisor b (emit_division_nvptx.cpp), emulated
// in float32: within 1 ulp of the correctly rounded quotient wherever that is a normal float,
// and the special values of IEEE division, over divisors from subnormal to huge.
float divide_by_invariant_emulated(float a, float b) {
  const float magnitude = std::fabs(b);
  const float scale = magnitude < std::ldexp(1.0f, -100)  ? std::ldexp(1.0f, 64)
                      : magnitude > std::ldexp(1.0f, 100) ? std::ldexp(1.0f, -64)
                                                          : 1.0f;
  volatile float reciprocal = 1.0f / (b * scale);  // volatile: no contraction, no folding
  volatile float product = a * reciprocal;
  return product * scale;
}

int64_t ulp_distance(float x, float y) {
  auto ordered = [](float f) {
    int32_t i;
    std::memcpy(&i, &f, sizeof i);
    return i < 0 ? int64_t{INT32_MIN} - i : int64_t{i};
  };
  return std::llabs(ordered(x) - ordered(y));
}

TEST(NvptxDivision, InvariantReciprocalIsWithinOneUlp) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  int64_t worst = 0;
  for (int eb = -149; eb <= 127; ++eb) {
    for (int ea = -149; ea <= 127; ea += 3) {
      for (int k = 0; k < 4; ++k) {
        const float a = std::ldexp(mantissa(rng), ea) * (k % 2 ? -1.0f : 1.0f);
        const float b = std::ldexp(eb < -126 ? 1.0f : mantissa(rng), eb);
        const float exact = static_cast<float>(static_cast<double>(a) / b);
        if (std::fabs(exact) < std::numeric_limits<float>::min()) continue;  // subnormal result
        const int64_t d = ulp_distance(divide_by_invariant_emulated(a, b), exact);
        worst = std::max(worst, d);
        ASSERT_LE(d, 1) << a << " / " << b;
      }
    }
  }
  EXPECT_LE(worst, 1);
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(std::isnan(divide_by_invariant_emulated(0.0f, 0.0f)));
  EXPECT_TRUE(std::isnan(divide_by_invariant_emulated(inf, inf)));
  EXPECT_TRUE(std::isnan(divide_by_invariant_emulated(1.0f, std::nanf(""))));
  EXPECT_EQ(divide_by_invariant_emulated(1.0f, 0.0f), inf);
  EXPECT_EQ(divide_by_invariant_emulated(-1.0f, 0.0f), -inf);
  EXPECT_EQ(divide_by_invariant_emulated(5.0f, inf), 0.0f);
  EXPECT_EQ(divide_by_invariant_emulated(1e-45f, 1e-45f), 1.0f);  // subnormal / subnormal
  EXPECT_EQ(divide_by_invariant_emulated(3e38f, 1e-30f), inf);    // overflows like a / b
}

}  // namespace
}  // namespace inductor_cpp::codegen::nvptx::emit_test
