/// \file
/// build_id() and host_toolchain() (see fingerprint.h).
#include "inductor/fingerprint.h"

#include <dlfcn.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "kernels_cache/sha256.h"

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

std::string first_line_of(const std::string& command) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) return "";
  std::array<char, 512> buf{};
  if (!fgets(buf.data(), buf.size(), pipe.get())) return "";
  std::string line(buf.data());
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  return line;
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
  static const nlohmann::json toolchain = [] {
    const char* env_cxx = std::getenv("CXX");
    const std::string cxx = env_cxx && *env_cxx ? env_cxx : "c++";
    return nlohmann::json{{"cxx", cxx},
                          {"cxx_version", first_line_of(cxx + " --version 2>/dev/null")},
                          {"cxx_flags", "-O3 -march=native -fopenmp -shared -fPIC"},
                          {"isa", host_isa()}};
  }();
  return toolchain;
}

}  // namespace inductor_cpp::inductor
