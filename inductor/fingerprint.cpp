/// \file
/// build_id() and host_toolchain() (see fingerprint.h).
#include "inductor/fingerprint.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <optional>
#include <fstream>
#include <map>
#include <mutex>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "inductor/build_plan_gpu.h"
#include "kernels_cache/fs_util.h"
#include "kernels_cache/sha256.h"
#include "kernels_cache/store.h"
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

namespace {

/// <cache root>/toolchains/<sha256($CXX)[:16]>.json, when the cache is on and its root private.
/// Creates the root (0700) when missing, as the store's first build would.
std::filesystem::path toolchain_record_path(const std::string& cxx) {
  const kernels_cache::CacheConfig config = kernels_cache::cache_config_from_env();
  const std::filesystem::path& root = config.root;
  if (root.empty() || !config.enabled ||
      !kernels_cache::detail::ensure_private_dir(root, /*parents=*/true, /*follow=*/true).ok())
    return {};
  return root / "toolchains" / (kernels_cache::sha256_hex(cxx).substr(0, 16) + ".json");
}

/// The record, if it is ours, a regular file, inside a private directory, and parses.
std::optional<nlohmann::json> read_toolchain_record(const std::filesystem::path& path) {
  struct stat st {};
  if (path.empty() || !kernels_cache::detail::check_private_dir(path.parent_path(), false).ok() ||
      ::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid())
    return std::nullopt;
  try {
    nlohmann::json j = nlohmann::json::parse(kernels_cache::detail::read_whole_file(path));
    if (j.is_object() && j.value("identity", std::string()).size() > 0) return j;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

/// The compiler's file as the record keeps it: path, size, mtime (nullopt when missing).
std::optional<nlohmann::json> compiler_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  return nlohmann::json{{"path", path}, {"size", static_cast<int64_t>(st.st_size)},
                        {"mtime_ns", static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec}};
}

/// The compiler identity for the cache key. Recorded next to the cache with the compiler's
/// path, size and mtime: while those match, it is taken from the record without running the
/// compiler; and where no compiler can be run (an image without g++, an empty PATH), the
/// recorded one is used, so entries built with it still load and run their kernels (a miss then
/// fails to compile and runs as ATen calls, as before). Recording is best effort.
std::string cxx_identity(const runtime::CppCompileOptions& options, const std::string& cxx) {
  const std::filesystem::path record_path = toolchain_record_path(cxx);
  const std::optional<nlohmann::json> record = read_toolchain_record(record_path);
  const std::optional<nlohmann::json> file = compiler_file(runtime::compiler_path(options));
  if (record && file && record->value("file", nlohmann::json()) == *file)
    return record->at("identity").get<std::string>();
  std::string identity;
  try {
    identity = runtime::compiler_identity(options);
  } catch (const std::exception&) {
    if (record) return record->at("identity").get<std::string>();
    throw;
  }
  if (!record_path.empty() && file) {
    try {
      const std::filesystem::path dir = record_path.parent_path();
      if (kernels_cache::detail::ensure_private_dir(dir, false, false).ok()) {
        const std::filesystem::path staged =
            dir / (record_path.filename().string() + "." + kernels_cache::detail::random_hex(8));
        kernels_cache::detail::write_new_file(
            staged, nlohmann::json{{"identity", identity}, {"file", *file}}.dump());
        std::filesystem::rename(staged, record_path);
      }
    } catch (const std::exception&) {
    }
  }
  return identity;
}

}  // namespace

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
  return by_cxx[cxx] = nlohmann::json{{"cxx", cxx_identity(options, cxx)},
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
