/// \file
/// Shared by the CPU emitter tests (emit_cpp_*_test.cpp, one executable: emit_cpp_test). Kernels
/// are written as IR text (or built), emitted, compiled with the system compiler, loaded and
/// run on buffers from std::vector, against references computed in the tests.
///
/// Each topic file lists its kernels; the EmitCppTest fixture puts all of them into one
/// translation unit per target (AVX-512, AVX2, scalar), compiled once for the whole suite (in
/// parallel), so the suite costs three compiles.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "codegen/cpu/emit_cpp.h"
#include "ir/ir_text.h"
#include "ir/loop_ir.h"
#include "runtime/loader/cpp_compiler.h"
#include "runtime/loader/kernel_library.h"

namespace inductor_cpp::codegen::emit_test {

// Each topic file's kernels, defined there.
std::vector<ir::Kernel> math_kernels();             // emit_cpp_math_test.cpp
std::vector<ir::Kernel> memory_kernels();           // emit_cpp_memory_test.cpp
std::vector<ir::Kernel> reduction_kernels();        // emit_cpp_reduction_test.cpp
std::vector<ir::Kernel> constant_length_kernels();  // emit_cpp_constant_length_test.cpp
std::vector<ir::Kernel> kept_value_kernels();       // emit_cpp_kept_values_test.cpp
std::vector<ir::Kernel> all_ops_kernels();          // emit_cpp_all_ops_test.cpp

/// Every kernel of the suite: what the fixture compiles.
std::vector<ir::Kernel> all_kernels();

/// The suite's kernel called `name` (throws std::invalid_argument when there is none).
ir::Kernel test_kernel(const std::string& name);

/// Kernels parsed from their IR text.
template <size_t N>
std::vector<ir::Kernel> parse_kernels(const char* const (&texts)[N]) {
  std::vector<ir::Kernel> kernels;
  for (const char* text : texts) kernels.push_back(ir::parse_kernel(text));
  return kernels;
}

/// Row reductions: `red_<op>` reduces rows of s1 elements.
std::string row_reduction(const std::string& op, const std::string& in_type,
                          const std::string& out_type);

/// One compiled target: the suite's kernels built for `target`.
struct Target {
  CppTarget target;
  std::string dir;
  runtime::CppCompileResult compiled;
  std::shared_ptr<runtime::KernelLibrary> library;
};

class EmitCppTest : public ::testing::Test {
 protected:
  /// Compiles each target's translation unit, or reuses the library built from the same text
  /// by an earlier run: ctest runs every test in its own process, and this keeps the suite to
  /// three compiles. The cache sits next to the test binary, keyed by a hash of the source
  /// and the compiler flags.
  static void SetUpTestSuite();
  static void TearDownTestSuite();
  void SetUp() override;

  static std::vector<Target>* targets_;
};

/// Runs kernel `name` of library `t` on `bufs` (data pointers) with `symbols`.
template <class... B>
int32_t run(const Target& t, const std::string& name, std::vector<int64_t> symbols, int32_t threads,
            B&... bufs) {
  std::vector<char*> ptrs = {const_cast<char*>(reinterpret_cast<const char*>(bufs.data()))...};
  return t.library->kernel(name)(ptrs.data(), symbols.data(), threads);
}

template <class T>
void expect_close(const std::vector<T>& got, const std::vector<double>& want, double rtol,
                  double atol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = static_cast<double>(got[i]);
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(g)) << what << " [" << i << "]";
      continue;
    }
    EXPECT_NEAR(g, want[i], atol + rtol * std::fabs(want[i])) << what << " [" << i << "]";
  }
}

std::vector<float> random_floats(size_t n, float lo, float hi, unsigned seed);

/// Sizes of the symbolic-extent tests: one element, a tail only, a vector and a tail, many.
inline constexpr int64_t kSizes[] = {1, 15, 17, 1000};

/// float -> binary16 by the F16C instruction (round to nearest even), the reference.
__attribute__((target("f16c"))) uint16_t f16c_half(float f);
__attribute__((target("f16c"))) float f16c_float(uint16_t h);

/// float -> bfloat16 bits: the nearer of the two neighbours, ties to even.
uint16_t reference_bfloat16(float f);

}  // namespace inductor_cpp::codegen::emit_test
