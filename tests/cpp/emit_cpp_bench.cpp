/// \file
/// Microbenchmark of the CPU emitter's reduction kernels (not a ctest test).
///
/// Kernels written in scheduled kernel IR exactly as ir/passes/schedule.h produces them for
/// x.sum(-1), x.amax(-1), x.argmax(-1), x.var(-1) (welford_m2), softmax(x, -1) and
/// layer_norm(x, w, b) over the last dim, are emitted, compiled with the production flags
/// (runtime/loader/cpp_compiler.h) and timed: the median of many runs with 1 and 2 threads,
/// interleaved so that a load from other processes hits both alike. GB/s counts each tensor
/// read or written once (what a perfectly fused kernel must move).
///
///   emit_cpp_bench [--reps N] [--only NAME] [--dump DIR]
///
/// --dump writes the generated source (kernels.cpp) and header there. Each kernel also runs
/// once with 1 and once with 2 threads on the same input and must give the same bits (the
/// reductions are deterministic); a mismatch is reported and makes the exit status 1.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "codegen/cpu/emit_cpp.h"
#include "ir/ir_text.h"
#include "runtime/loader/cpp_compiler.h"
#include "runtime/loader/kernel_library.h"

namespace {

using namespace inductor_cpp;

struct BenchKernel {
  std::string name;
  int64_t rows = 0, cols = 0;
  std::string text;            ///< kernel IR
  std::vector<int64_t> sizes;  ///< element counts of its parameters, in order
  std::vector<int> elem_bytes;
};

std::string str(int64_t v) {
  return std::to_string(v);
}

/// x.<op>(-1) over a rows x cols float32 tensor: the schedule's inner-dim reduction.
BenchKernel row_reduction(const std::string& op, int64_t rows, int64_t cols) {
  const bool indexed = op == "argmax";
  const std::string out_type = indexed ? "int64" : "float32";
  BenchKernel k;
  k.name = op + "_" + str(rows) + "x" + str(cols);
  k.rows = rows, k.cols = cols;
  k.text = "kernel " + op + "(%in0: float32 in, %0: " + out_type + " out) {\n  for x0 in 0.." +
           str(rows) + " parallel {\n    t0 = accumulator " + op + " float32\n    for y0 in 0.." +
           str(cols) + " vector(16) {\n      t0 += load(%in0, [x0*" + str(cols) + " + y0])" +
           (indexed ? " at y0" : "") + "\n    }\n    %0[x0] = local(t0, " + out_type +
           ")\n  }\n}\n";
  k.sizes = {rows * cols, rows};
  k.elem_bytes = {4, indexed ? 8 : 4};
  return k;
}

BenchKernel softmax(int64_t rows, int64_t cols) {
  const std::string c = str(cols), at = "[x0*" + c + " + y0]";
  BenchKernel k;
  k.name = "softmax_" + str(rows) + "x" + c;
  k.rows = rows, k.cols = cols;
  k.text = "kernel softmax(%in0: float32 in, %4: float32 out) {\n  for x0 in 0.." + str(rows) +
           " parallel {\n    t0 = accumulator max float32\n    for y0 in 0.." + c +
           " vector(16) {\n      t0 += load(%in0, " + at +
           ")\n    }\n    t1 = accumulator sum float32\n    for y0 in 0.." + c +
           " vector(16) {\n      t1 += exp(sub(load(%in0, " + at +
           "), local(t0, float32)))\n    }\n    for y0 in 0.." + c +
           " vector(16) {\n      let t2 = div(exp(sub(load(%in0, " + at +
           "), local(t0, float32))), local(t1, float32))\n      %4" + at +
           " = local(t2, float32)\n    }\n  }\n}\n";
  k.sizes = {rows * cols, rows * cols};
  k.elem_bytes = {4, 4};
  return k;
}

BenchKernel layernorm(int64_t rows, int64_t cols) {
  const std::string c = str(cols), at = "[x0*" + c + " + y0]";
  BenchKernel k;
  k.name = "layernorm_" + str(rows) + "x" + c;
  k.rows = rows, k.cols = cols;
  k.text =
      "kernel layernorm(%in0: float32 in, %in1: float32 in, %in2: float32 in, %6: float32 "
      "out) {\n  for x0 in 0.." +
      str(rows) +
      " parallel {\n    t0 = accumulator welford_m2 float32\n    t1 = accumulator sum "
      "float32\n    for y0 in 0.." +
      c + " vector(16) {\n      t0 += load(%in0, " + at + ")\n      t1 += load(%in0, " + at +
      ")\n    }\n    for y0 in 0.." + c +
      " vector(16) {\n      let t2 = add(mul(mul(sub(load(%in0, " + at +
      "), div(local(t1, float32), " + c + ".0:float32)), rsqrt(add(div(local(t0, float32), " + c +
      ".0:float32), 1e-05:float32))), load(%in1, [y0])), load(%in2, [y0]))\n      %6" + at +
      " = local(t2, float32)\n    }\n  }\n}\n";
  k.sizes = {rows * cols, cols, cols, rows * cols};
  k.elem_bytes = {4, 4, 4, 4};
  return k;
}

std::vector<BenchKernel> bench_kernels() {
  std::vector<BenchKernel> ks;
  for (const char* op : {"sum", "max", "argmax", "welford_m2"}) {
    ks.push_back(row_reduction(op, 1024, 4096));
  }
  ks.push_back(row_reduction("sum", 256, 1024));  // 1 MiB: from L2, where latency shows
  ks.push_back(row_reduction("max", 256, 1024));
  ks.push_back(row_reduction("sum", 8192, 8192));
  ks.push_back(row_reduction("sum", 4096, 1000));  // rows not a multiple of the unroll
  ks.push_back(softmax(1024, 4096));
  ks.push_back(layernorm(1024, 4096));
  ks.push_back(softmax(8192, 1000));
  ks.push_back(layernorm(8192, 1000));
  return ks;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 0;  // 0: by size
  std::string only, dump;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--reps" && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else if (a == "--only" && i + 1 < argc) {
      only = argv[++i];
    } else if (a == "--dump" && i + 1 < argc) {
      dump = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--reps N] [--only NAME] [--dump DIR]\n", argv[0]);
      return 2;
    }
  }
  std::vector<BenchKernel> kernels;
  for (BenchKernel& k : bench_kernels()) {
    if (only.empty() || k.name.find(only) != std::string::npos) kernels.push_back(std::move(k));
  }
  std::vector<ir::Kernel> parsed;
  for (size_t i = 0; i < kernels.size(); ++i) {
    ir::Kernel k = ir::parse_kernel(kernels[i].text);
    k.name = "k" + std::to_string(i);
    parsed.push_back(k);
  }
  const codegen::CppTarget target{codegen::detect_host_isa(), true};
  const std::string source = codegen::emit_cpp(parsed, target);
  std::string dir = dump;
  if (dir.empty()) {
    char pattern[] = "/tmp/emit_cpp_bench_XXXXXX";
    dir = mkdtemp(pattern);
  }
  std::filesystem::create_directories(dir);
  const runtime::CppCompileResult compiled =
      runtime::compile_shared_library(dir, source, codegen::runtime_header_text());
  if (!compiled.ok) {
    std::fprintf(stderr, "compile failed:\n%s\n", compiled.output.c_str());
    return 1;
  }
  auto library = runtime::KernelLibrary::open(dir + "/kernels.so");
  std::printf("target %s, compile %.2f s\n", codegen::cpu_isa_name(target.isa), compiled.seconds);
  std::printf("%-26s %7s %10s %10s %8s\n", "kernel", "threads", "median ms", "min ms", "GB/s");
  bool deterministic = true;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-2, 2);
  for (size_t i = 0; i < kernels.size(); ++i) {
    const BenchKernel& k = kernels[i];
    std::vector<std::vector<char>> bufs;
    double bytes = 0;
    for (size_t p = 0; p < k.sizes.size(); ++p) {
      bufs.emplace_back(k.sizes[p] * k.elem_bytes[p]);
      bytes += static_cast<double>(bufs.back().size());
    }
    for (size_t p = 0; p + 1 < bufs.size(); ++p) {  // inputs: random floats
      float* f = reinterpret_cast<float*>(bufs[p].data());
      for (int64_t e = 0; e < k.sizes[p]; ++e) f[e] = dist(rng);
    }
    std::vector<char*> ptrs;
    for (auto& b : bufs) ptrs.push_back(b.data());
    const runtime::KernelFn fn = library->kernel(parsed[i].name);
    std::vector<char> one_thread;
    for (int threads : {1, 2}) {
      if (fn(ptrs.data(), nullptr, threads) != 0)
        std::fprintf(stderr, "%s failed\n", k.name.c_str());
      if (threads == 1) {
        one_thread = bufs.back();
      } else if (one_thread != bufs.back()) {
        std::printf("%s: 1 and 2 threads give different results\n", k.name.c_str());
        deterministic = false;
      }
    }
    const int n = reps > 0 ? reps : std::max(10, static_cast<int>(2e9 / bytes));
    std::vector<double> times[2];
    for (int r = 0; r < n; ++r) {
      for (int threads : {1, 2}) {
        const auto start = std::chrono::steady_clock::now();
        fn(ptrs.data(), nullptr, threads);
        times[threads - 1].push_back(seconds_since(start));
      }
    }
    for (int threads : {1, 2}) {
      const double med = median(times[threads - 1]);
      const double best = *std::min_element(times[threads - 1].begin(), times[threads - 1].end());
      std::printf("%-26s %7d %10.3f %10.3f %8.1f\n", k.name.c_str(), threads, med * 1e3, best * 1e3,
                  bytes / med * 1e-9);
    }
  }
  if (dump.empty()) std::filesystem::remove_all(dir);
  return deterministic ? 0 : 1;
}
