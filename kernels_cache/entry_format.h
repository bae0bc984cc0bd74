/// \file
/// On-disk format of one cache entry (internal; not part of the public API): name rules,
/// meta.json creation, writing an entry directory, verifying one, and walking the root for
/// entry directories. Split out of store.cpp so the protocol there stays readable; the
/// functions here take explicit paths and hold no state.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels_cache/store.h"

namespace inductor_cpp::kernels_cache::detail {

namespace fs = std::filesystem;

/// The store's own files inside an entry directory (never artifact names).
inline constexpr const char* kMetaFile = "meta.json";
inline constexpr const char* kLastUsedFile = "last_used";

/// Throws std::invalid_argument unless is_valid_key(key).
void require_valid_key(const std::string& key);

/// A plain file name: non-empty, <= 255 bytes, no '/' or NUL, not "."/"..", not kMetaFile or
/// kLastUsedFile.
bool is_valid_artifact_name(const std::string& name);

/// Throws std::invalid_argument naming the first invalid artifact name.
void require_valid_artifacts(const Artifacts& files);

/// meta.json content for `files` (see store.h); a null `extra_meta` is stored as {}.
nlohmann::json make_meta(const std::string& key, const Artifacts& files,
                         const nlohmann::json& extra_meta);

/// Write the artifacts, meta.json and an empty last_used into the existing empty directory
/// `dir`; returns the Entry (dir = `dir`). Throws std::runtime_error on IO errors.
Entry write_entry_dir(const fs::path& dir, const std::string& key, const Artifacts& files,
                      const nlohmann::json& extra_meta);

/// Verify the entry directory `dir` for `key`: private directory, meta.json parses with the
/// right format and key, every listed file is a regular file of the recorded size and sha256.
/// Returns "" and fills `*meta` if intact, else the reason (naming the failing file).
/// Throws std::runtime_error only on unexpected IO errors.
std::string verify_entry(const fs::path& dir, const std::string& key, nlohmann::json* meta);

/// True iff `p` is a directory and not a symlink (lstat).
bool is_real_dir(const fs::path& p);

/// Entry directories under `root`: <root>/<2 hex>/<64 hex key starting with those 2>, real
/// directories only. Unreadable parts are skipped.
std::vector<fs::path> list_entry_dirs(const fs::path& root);

/// An entry directory found by walking the root (not verified).
struct EntryInfo {
  std::string key;
  fs::path dir;
  uint64_t bytes;        ///< sum of its regular files
  int64_t last_used_ns;  ///< mtime of last_used (else meta.json, else the dir), ns since epoch
};

/// list_entry_dirs() with sizes and last-use times.
std::vector<EntryInfo> collect_entries(const fs::path& root);

}  // namespace inductor_cpp::kernels_cache::detail
