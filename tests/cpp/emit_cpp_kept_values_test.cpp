/// \file
/// CPU emitter, kept values: a value a later loop of the same kernel reads again (softmax's
/// exp(x - max)) is computed once and reloaded, but never across a write to what it reads.
#include <algorithm>
#include <cmath>

#include "tests/cpp/emit_cpp_test_util.h"

namespace inductor_cpp::codegen::emit_test {
namespace {

const char* const kKernels[] = {
    R"(kernel softmax_rows(%in0: float32 in, %o: float32 out, %e: float32 out) {
  for x0 in 0..3 parallel {
    t0 = accumulator max float32
    for y0 in 0..100 vector(16) {
      t0 += load(%in0, [x0*100 + y0])
    }
    t1 = accumulator sum float32
    for y0 in 0..100 vector(16) {
      t1 += exp(sub(load(%in0, [x0*100 + y0]), local(t0, float32)))
    }
    for y0 in 0..100 vector(16) {
      let t2 = div(exp(sub(load(%in0, [x0*100 + y0]), local(t0, float32))), local(t1, float32))
      %o[x0*100 + y0] = local(t2, float32)
    }
    for y0 in 0..100 vector(16) {
      %e[x0*100 + y0] = exp(sub(load(%in0, [x0*100 + y0]), local(t0, float32)))
    }
  }
})",
    R"(kernel keep_invalidated(%a: float32 out, %b: float32 in, %s: float32 out, %o1: float32 out, %o2: float32 out) {
  t0 = accumulator sum float32
  for y0 in 0..40 vector(16) {
    t0 += load(%b, [y0])
  }
  t1 = accumulator sum float32
  for y0 in 0..40 vector(16) {
    t1 += exp(sub(load(%a, [y0]), local(t0, float32)))
  }
  %s[0] = local(t1, float32)
  for y0 in 0..40 vector(16) {
    t0 += load(%b, [y0])
  }
  for y0 in 0..40 vector(16) {
    %o1[y0] = exp(sub(load(%a, [y0]), local(t0, float32)))
  }
  t2 = accumulator sum float32
  for y0 in 0..40 vector(16) {
    t2 += exp(load(%a, [y0]))
  }
  %s[1] = local(t2, float32)
  for y0 in 0..40 vector(16) {
    %a[y0] = mul(load(%b, [y0]), 2.0:float32)
  }
  for y0 in 0..40 vector(16) {
    %o2[y0] = exp(load(%a, [y0]))
  }
})",
};

// exp(x - max) is computed once per element and reloaded by the later loops (kept values).
TEST_F(EmitCppTest, SoftmaxKeepsItsExponentials) {
  const int64_t rows = 3, cols = 100;
  std::vector<float> in = random_floats(rows * cols, -3, 3, 18);
  in[cols + 99] = 7;  // row 1: the maximum in the tail
  for (const Target& t : *targets_) {
    std::vector<float> o(rows * cols), e(rows * cols);
    ASSERT_EQ(run(t, "softmax_rows", {}, 2, in, o, e), 0);
    for (int64_t r = 0; r < rows; ++r) {
      float mx = -INFINITY;
      double sum = 0;
      for (int64_t c = 0; c < cols; ++c) mx = std::max(mx, in[r * cols + c]);
      for (int64_t c = 0; c < cols; ++c) sum += std::exp(double(in[r * cols + c] - mx));
      for (int64_t c = 0; c < cols; ++c) {
        const double want = std::exp(double(in[r * cols + c] - mx));  // float subtraction
        const std::string what = std::string(cpu_isa_name(t.target.isa)) + " row " +
                                 std::to_string(r) + " col " + std::to_string(c);
        expect_close(std::vector<float>{e[r * cols + c]}, {want}, 3e-7, 0, "exp " + what);
        expect_close(std::vector<float>{o[r * cols + c]}, {want / sum}, 2e-6, 0, "softmax " + what);
      }
    }
  }
}

// A value is not kept across a write to what it reads: a store to its buffer, or an update
// of an accumulator it reads.
TEST_F(EmitCppTest, KeptValuesSeeWritesInBetween) {
  const int64_t n = 40;
  const std::vector<float> a0 = random_floats(n, -1, 1, 19), b = random_floats(n, -0.1f, 0.1f, 20);
  double sum_b = 0, s0 = 0, s1 = 0;
  for (float x : b) sum_b += x;
  for (float x : a0) s0 += std::exp(x - static_cast<float>(sum_b)), s1 += std::exp(x);
  for (const Target& t : *targets_) {
    std::vector<float> a = a0, s(2), o1(n), o2(n);
    ASSERT_EQ(run(t, "keep_invalidated", {}, 1, a, b, s, o1, o2), 0);
    const std::string what = cpu_isa_name(t.target.isa);
    expect_close(s, {s0, s1}, 1e-5, 0, "sums " + what);
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_NEAR(o1[i], std::exp(a0[i] - 2 * sum_b), 1e-5) << "new accumulator " << what;
      EXPECT_NEAR(o2[i], std::exp(2.0 * b[i]), 1e-6) << "new buffer " << what;
    }
  }
}

TEST(EmitCppSourceTest, LaterLoopsReloadKeptValues) {
  const std::string kept = emit_cpp({test_kernel("softmax_rows")}, CppTarget{});
  EXPECT_NE(kept.find("alignas(64) float y0_keep[100];"), std::string::npos) << kept;
  EXPECT_NE(kept.find("ic::storeu(y0_keep + y0, "), std::string::npos) << kept;
  EXPECT_NE(kept.find("ic::loadu_n<16>(y0_keep + y0, "), std::string::npos) << kept;
  // The second and third loops reload: the first stores once, with no second array.
  EXPECT_EQ(kept.find("y0_keep_"), std::string::npos) << kept;
  const std::string fresh = emit_cpp({test_kernel("keep_invalidated")}, CppTarget{});
  EXPECT_EQ(fresh.find("_keep"), std::string::npos) << fresh;
}

}  // namespace

std::vector<ir::Kernel> kept_value_kernels() {
  return parse_kernels(kKernels);
}

}  // namespace inductor_cpp::codegen::emit_test
