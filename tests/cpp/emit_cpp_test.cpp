/// \file
/// CPU emitter: the emitted text (each target's vector forms, where accumulators are unrolled,
/// how wide column reductions get) and the system compiler (one compile's time, errors, builds
/// without Sleef, a compiler given with flags). The kernels that run are tested by topic in
/// emit_cpp_*_test.cpp, all in this executable; emit_cpp_test_util.h says how.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "ir/ir_text.h"
#include "tests/cpp/emit_cpp_test_util.h"

namespace inductor_cpp::codegen::emit_test {
namespace {

// Unrolled accumulator copies only for small bodies: index arithmetic counts towards the size
// (swin_t's window-mask index expressions made five kernels of 200 KB each).
TEST(EmitCppSource, LargeReductionBodiesAreNotUnrolled) {
  const auto source_of = [](const std::string& index) {
    const ir::Kernel k = ir::parse_kernel(R"(kernel k(%a: float32 in, %o: float32 out) {
  for x0 in 0..4 {
    t0 = accumulator max float32
    for y0 in 0..200 vector(16) {
      t0 += load(%a, [)" + index + R"(])
    }
    %o[x0] = local(t0, float32)
  }
})");
    return emit_cpp({k}, CppTarget{CpuIsa::Avx512, true});
  };
  EXPECT_NE(source_of("x0*200 + y0").find("y0_unrolled"), std::string::npos);
  std::string big = "x0*200 + y0";  // not run: only the text is checked
  for (int k = 2; k < 40; ++k)
    big += " + (y0 // " + std::to_string(k) + ") % " + std::to_string(k + 1);
  const std::string source = source_of(big);
  EXPECT_EQ(source.find("y0_unrolled"), std::string::npos) << source;
}

// A column reduction the scheduler asks 64 lanes of (four registers side by side) gets them
// when its vectors hold float32 only; one reading int64 argmax indices (max_pool2d's backward
// fused with batch norm's sums) gets one register's worth: int64 vectors and their masks four
// registers wide ran 7x slower on AVX-512 (codegen/cpu/loop_plan.cpp).
TEST_F(EmitCppTest, WideColumnReductionsKeepInt64LanesInOneRegister) {
  const char* const text =
      R"(kernel column_sums(%x: float32 in, %idx: int64 in, %1: float32 out, %2: float32 out) {
  for x0 in 0..64 vector(64) {
    t0 = accumulator sum float32
    for y0 in 0..1000 {
      t0 += load(%x, [x0 + y0*64])
    }
    %1[x0] = local(t0, float32)
  }
  for x0 in 0..64 vector(64) {
    t1 = accumulator sum float32
    for y0 in 0..1000 {
      t1 += where(eq(load(%idx, [x0 + y0*64]), index(y0, int64)), load(%x, [x0 + y0*64]), 0.0:float32)
    }
    %2[x0] = local(t1, float32)
  }
})";
  const std::vector<ir::Kernel> kernels = {ir::parse_kernel(text)};
  const std::string avx512 = emit_cpp(kernels, CppTarget{CpuIsa::Avx512, true});
  const std::string avx2 = emit_cpp(kernels, CppTarget{CpuIsa::Avx2, true});
  EXPECT_NE(avx512.find("ic::Vec<float, 64> t0"), std::string::npos) << avx512;
  EXPECT_NE(avx512.find("ic::Vec<float, 8> t1"), std::string::npos) << avx512;
  EXPECT_EQ(avx512.find("ic::Vec<int64_t, 32>"), std::string::npos) << avx512;
  EXPECT_NE(avx2.find("ic::Vec<float, 32> t0"), std::string::npos) << avx2;
  EXPECT_NE(avx2.find("ic::Vec<float, 4> t1"), std::string::npos) << avx2;
}

TEST_F(EmitCppTest, EmittedSourceUsesTheTargetsVectorForms) {
  const std::vector<ir::Kernel> kernels = {test_kernel("pw_f32")};
  const std::string avx512 = emit_cpp(kernels, CppTarget{CpuIsa::Avx512, true});
  EXPECT_NE(avx512.find("#define IC_TARGET_ISA 2"), std::string::npos);
  EXPECT_NE(avx512.find("ic::loadu<16>(buf0 + x0)"), std::string::npos) << avx512;
  EXPECT_NE(avx512.find("ic::loadu_n<16>"), std::string::npos);
  EXPECT_NE(avx512.find("#pragma omp parallel for num_threads(num_threads)"), std::string::npos);
  EXPECT_NE(avx512.find("if(num_threads > 1)"), std::string::npos);
  const std::string scalar = emit_cpp(kernels, CppTarget{CpuIsa::Scalar, true});
  EXPECT_EQ(scalar.find("ic::Vec<"), std::string::npos) << scalar;
  EXPECT_NE(scalar.find("#define IC_TARGET_ISA 0"), std::string::npos);
}

TEST(CppCompilerTest, OneCompileIsFastAndErrorsAreReported) {
  char pattern[] = "/tmp/emit_cpp_compile_XXXXXX";
  const std::string dir = mkdtemp(pattern);
  const std::vector<ir::Kernel> kernels = {test_kernel("pw_f32")};
  const auto start = std::chrono::steady_clock::now();
  const runtime::CppCompileResult r =
      runtime::compile_shared_library(dir, emit_cpp(kernels, CppTarget{}), runtime_header_text());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(r.ok) << r.output;
  std::printf("one-kernel compile: %.2f s (compiler reports %.2f s)\n", seconds, r.seconds);
  EXPECT_LT(seconds, 30.0);
  EXPECT_NE(r.command.find("-fopenmp"), std::string::npos);
  auto library = runtime::KernelLibrary::open(dir + "/kernels.so");
  EXPECT_NE(library->kernel("pw_f32"), nullptr);
  // Without Sleef: libm per lane (but for the inline float exp).
  const std::string no_sleef_dir = dir + "/no_sleef";
  std::filesystem::create_directories(no_sleef_dir);
  const runtime::CppCompileResult libm = runtime::compile_shared_library(
      no_sleef_dir, emit_cpp(kernels, CppTarget{CpuIsa::Avx512, false}), runtime_header_text());
  ASSERT_TRUE(libm.ok) << libm.output;
  auto libm_library = runtime::KernelLibrary::open(no_sleef_dir + "/kernels.so");
  std::vector<float> a = random_floats(20, -3, 3, 14), b(20, 1.0f), out(20 * 6);
  std::vector<char*> ptrs = {reinterpret_cast<char*>(a.data()), reinterpret_cast<char*>(b.data())};
  for (int k = 0; k < 6; ++k) ptrs.push_back(reinterpret_cast<char*>(out.data() + 20 * k));
  const int64_t twenty = 20;
  ASSERT_EQ(libm_library->kernel("pw_f32")(ptrs.data(), &twenty, 1), 0);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(out[40 + i], std::tanh(a[i])) << "libm tanh";
    // float exp is inline vector code with or without Sleef (ExpIsWithinOneUlpEverywhere)
    EXPECT_NEAR(out[20 + i], std::exp(a[i]), 2.4e-7f * std::exp(a[i])) << "inline exp";
  }
  EXPECT_THROW(library->kernel("no_such_kernel"), std::runtime_error);
  EXPECT_THROW(runtime::KernelLibrary::open(dir + "/missing.so"), std::runtime_error);

  const runtime::CppCompileResult bad =
      runtime::compile_shared_library(dir, "int broken(", runtime_header_text());
  EXPECT_FALSE(bad.ok);
  EXPECT_NE(bad.output.find("error"), std::string::npos) << bad.output;
  runtime::CppCompileOptions missing;
  missing.compiler = "/nonexistent/compiler";
  EXPECT_THROW(runtime::compile_shared_library(dir, "", "", missing), std::runtime_error);
  const std::string identity = runtime::compiler_identity();
  EXPECT_NE(identity.find('.'), std::string::npos) << identity;  // a version number
  std::printf("compiler identity: %s\n", identity.c_str());
  // A compiler with flags (as $CXX may give it): the flags reach the compile and the identity,
  // and the version is asked of the compiler, not of a flag.
  runtime::CppCompileOptions with_flags;
  with_flags.compiler = "g++ -DIC_FROM_CXX=7";
  with_flags.flags = {"-shared", "-fPIC"};
  const runtime::CppCompileResult flagged = runtime::compile_shared_library(
      dir, "#if IC_FROM_CXX != 7\n#error flag lost\n#endif\nint f() { return 1; }\n", "",
      with_flags);
  EXPECT_TRUE(flagged.ok) << flagged.output;
  const std::string flagged_identity = runtime::compiler_identity(with_flags);
  EXPECT_EQ(flagged_identity.rfind("g++ ", 0), 0u) << flagged_identity;
  EXPECT_NE(flagged_identity.find('.'), std::string::npos) << flagged_identity;
  EXPECT_NE(flagged_identity.find("-DIC_FROM_CXX=7"), std::string::npos) << flagged_identity;
  EXPECT_NE(flagged_identity, identity);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace inductor_cpp::codegen::emit_test
