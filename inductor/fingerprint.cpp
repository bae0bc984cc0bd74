/// \file
/// build_id() and host_toolchain() (see fingerprint.h).
#include "inductor/fingerprint.h"

#include <dlfcn.h>

#include <array>
#include <fstream>
#include <map>
#include <mutex>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "inductor/build_plan_gpu.h"
#include "kernels_cache/sha256.h"
#include "knobs/knobs.h"
#include "runtime/loader/cpp_compiler.h"

namespace inductor_cpp::inductor {

namespace {

std::string compute_build_id() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&compute_build_id), &info) == 0 || info.dli_fname == nullptr)
    return "unknown-build";
  try {
    return kernels_cache::sha256_file_hex(info.dli_fname);
  } catch (const std::exception&) {
    return "unknown-build";
  }
}

/// The CPU's model name and feature flags (from /proc/cpuinfo): kernels are built with
/// -march=native, so a cache shared between machines must never hand one CPU's code to another.
std::string cpu_identity() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, model, flags;
  while (std::getline(in, line) && (model.empty() || flags.empty())) {
    if (model.empty() && line.rfind("model name", 0) == 0) model = line.substr(line.find(':') + 1);
    if (flags.empty() && line.rfind("flags", 0) == 0) flags = line.substr(line.find(':') + 1);
  }
  return model + " / flags sha256 " + kernels_cache::sha256_hex(flags).substr(0, 16);
}

nlohmann::json host_isa() {
  nlohmann::json isa = nlohmann::json::array();
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2")) isa.push_back("avx2");
  if (__builtin_cpu_supports("fma")) isa.push_back("fma");
  if (__builtin_cpu_supports("avx512f")) isa.push_back("avx512f");
  if (__builtin_cpu_supports("avx512bw")) isa.push_back("avx512bw");
  if (__builtin_cpu_supports("avx512vl")) isa.push_back("avx512vl");
#elif defined(__aarch64__)
  isa.push_back("aarch64");
#endif
  return isa;
}

}  // namespace

const std::string& build_id() {
  static const std::string id = compute_build_id();
  return id;
}

const nlohmann::json& host_toolchain() {
  // Computed once per value of $CXX (which selects the compiler) in this process.
  static std::mutex mutex;
  static std::map<std::string, nlohmann::json> by_cxx;
  const std::string cxx = knobs::host_env("CXX").value_or("");
  std::lock_guard<std::mutex> lock(mutex);
  auto it = by_cxx.find(cxx);
  if (it != by_cxx.end()) return it->second;
  const runtime::CppCompileOptions options;
  std::string flags;
  for (const std::string& f : options.flags) flags += (flags.empty() ? "" : " ") + f;
  for (const std::string& l : options.libraries) flags += " " + l;
  return by_cxx[cxx] = nlohmann::json{{"cxx", runtime::compiler_identity(options)},
                                      {"cxx_flags", flags},
                                      {"isa", host_isa()},
                                      {"cpu", cpu_identity()}};
}

nlohmann::json toolchain_for(const std::string& gpu_device) {
  nlohmann::json out = host_toolchain();
  if (!gpu_device.empty()) out["gpu"] = gpu_toolchain(gpu_device);
  return out;
}

}  // namespace inductor_cpp::inductor
