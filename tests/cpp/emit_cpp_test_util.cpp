/// \file
/// The CPU emitter tests' fixture (one compile per target for the whole suite, cached next to
/// the test binary) and shared helpers: see emit_cpp_test_util.h.
#include "tests/cpp/emit_cpp_test_util.h"

#include <immintrin.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <random>
#include <stdexcept>
#include <thread>

namespace inductor_cpp::codegen::emit_test {

std::vector<ir::Kernel> all_kernels() {
  std::vector<ir::Kernel> kernels;
  for (auto topic : {all_ops_kernels, math_kernels, memory_kernels, reduction_kernels,
                     kept_value_kernels, constant_length_kernels}) {
    for (ir::Kernel& k : topic()) kernels.push_back(std::move(k));
  }
  return kernels;
}

ir::Kernel test_kernel(const std::string& name) {
  for (ir::Kernel& k : all_kernels()) {
    if (k.name == name) return std::move(k);
  }
  throw std::invalid_argument("no kernel " + name);
}

std::string row_reduction(const std::string& op, const std::string& in_type,
                          const std::string& out_type) {
  const bool indexed = op == "argmax" || op == "argmin";
  return "kernel red_" + op + "(%a: " + in_type + " in, %o: " + out_type +
         " out) symbols(s0, s1) {\n  for x0 in 0..s0 parallel {\n    acc = accumulator " + op +
         " " + in_type + "\n    for r0 in 0..s1 vector(16) {\n      acc += load(%a, [x0*s1 + r0])" +
         (indexed ? " at r0" : "") + "\n    }\n    %o[x0] = local(acc, " + out_type + ")\n  }\n}\n";
}

namespace {

/// Where `isa`'s library built from `source` is cached: <cache>/<isa>_<hash of the source,
/// the runtime header and the compiler flags>.
std::string cached_library_dir(const std::filesystem::path& cache, CpuIsa isa,
                               const std::string& source) {
  std::string flags;
  for (const std::string& f : runtime::CppCompileOptions{}.flags) flags += " " + f;
  const size_t key = std::hash<std::string>()(source + runtime_header_text() + flags);
  char name[64];
  std::snprintf(name, sizeof(name), "%s_%016zx", cpu_isa_name(isa), key);
  return (cache / name).string();
}

/// Builds `t` in a fresh directory and publishes it with one rename (parallel ctest runs), then
/// removes the libraries of its ISA built from older sources.
void compile_target(Target& t, const std::vector<ir::Kernel>& kernels,
                    const std::filesystem::path& cache) {
  std::string scratch = (cache / "build_XXXXXX").string();
  if (!mkdtemp(scratch.data())) return;
  t.compiled =
      runtime::compile_shared_library(scratch, emit_cpp(kernels, t.target), runtime_header_text());
  std::error_code error;
  std::filesystem::rename(scratch, t.dir, error);
  if (error) std::filesystem::remove_all(scratch, error);  // another process won
  const std::string prefix = std::string(cpu_isa_name(t.target.isa)) + "_";
  for (const auto& old : std::filesystem::directory_iterator(cache, error)) {
    const std::string old_name = old.path().filename().string();
    if (old_name.rfind(prefix, 0) == 0 && old.path().string() != t.dir) {
      std::filesystem::remove_all(old.path(), error);  // built from older sources
    }
  }
  std::printf("%s: compiled in %.2f s\n", cpu_isa_name(t.target.isa), t.compiled.seconds);
}

}  // namespace

std::vector<Target>* EmitCppTest::targets_ = nullptr;

void EmitCppTest::SetUpTestSuite() {
  const std::filesystem::path cache =
      std::filesystem::read_symlink("/proc/self/exe").parent_path() / "emit_cpp_test_kernels";
  std::filesystem::create_directories(cache);
  const std::vector<ir::Kernel> kernels = all_kernels();
  targets_ = new std::vector<Target>();
  for (CpuIsa isa : {CpuIsa::Avx512, CpuIsa::Avx2, CpuIsa::Scalar}) {
    if (isa == CpuIsa::Avx512 && detect_host_isa() != CpuIsa::Avx512) continue;
    if (isa == CpuIsa::Avx2 && detect_host_isa() == CpuIsa::Scalar) continue;
    Target t;
    t.target.isa = isa;
    t.dir = cached_library_dir(cache, isa, emit_cpp(kernels, t.target));
    targets_->push_back(t);
  }
  std::vector<std::thread> threads;
  for (Target& t : *targets_) {
    if (std::filesystem::exists(t.dir + "/kernels.so")) {
      t.compiled.ok = true;
      continue;
    }
    threads.emplace_back([&t, &kernels, &cache] { compile_target(t, kernels, cache); });
  }
  for (std::thread& th : threads) th.join();
  for (Target& t : *targets_) {
    if (t.compiled.ok) t.library = runtime::KernelLibrary::open(t.dir + "/kernels.so");
  }
}

void EmitCppTest::TearDownTestSuite() {
  delete targets_;
}

void EmitCppTest::SetUp() {
  for (const Target& t : *targets_) {
    ASSERT_TRUE(t.compiled.ok) << cpu_isa_name(t.target.isa) << ":\n"
                               << t.compiled.output.substr(0, 4000);
  }
}

std::vector<float> random_floats(size_t n, float lo, float hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

__attribute__((target("f16c"))) uint16_t f16c_half(float f) {
  return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
}

__attribute__((target("f16c"))) float f16c_float(uint16_t h) {
  return _cvtsh_ss(h);
}

uint16_t reference_bfloat16(float f) {
  if (std::isnan(f)) return 0x7FC0;
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if (std::isinf(f)) return static_cast<uint16_t>(u >> 16);
  const uint32_t lo = u & 0xFFFF0000u, hi = lo + 0x10000u;
  float flo, fhi;
  std::memcpy(&flo, &lo, 4);
  std::memcpy(&fhi, &hi, 4);
  // Past the largest finite value, the upper neighbour is 2^128 (it rounds to infinity).
  const double dhi_value = std::isinf(fhi) ? std::copysign(std::ldexp(1.0, 128), f) : fhi;
  const double dlo = std::fabs(static_cast<double>(f) - flo);
  const double dhi = std::fabs(dhi_value - f);
  if (dlo < dhi || (dlo == dhi && ((lo >> 16) & 1) == 0)) return static_cast<uint16_t>(lo >> 16);
  return static_cast<uint16_t>(hi >> 16);
}

}  // namespace inductor_cpp::codegen::emit_test
