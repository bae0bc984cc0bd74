/// \file
/// On-disk format of one cache entry: name rules, meta.json, writing and verifying an entry
/// directory, and walking the root for entry directories (see entry_format.h).

#include "kernels_cache/entry_format.h"

#include <sys/stat.h>

#include <chrono>
#include <stdexcept>
#include <system_error>

#include "kernels_cache/fs_util.h"
#include "kernels_cache/sha256.h"

namespace inductor_cpp::kernels_cache::detail {

void require_valid_key(const std::string& key) {
  if (is_valid_key(key)) return;
  const std::string shown = key.size() > 80 ? key.substr(0, 80) + "..." : key;
  throw std::invalid_argument("kernels_cache: invalid key '" + shown +
                              "' (expected 64 lowercase hex chars)");
}

bool is_valid_artifact_name(const std::string& name) {
  if (name.empty() || name.size() > 255) return false;
  if (name == "." || name == ".." || name == kMetaFile || name == kLastUsedFile) return false;
  return name.find('/') == std::string::npos && name.find('\0') == std::string::npos;
}

void require_valid_artifacts(const Artifacts& files) {
  for (const auto& [name, bytes] : files) {
    if (is_valid_artifact_name(name)) continue;
    throw std::invalid_argument("kernels_cache: invalid artifact name '" + name + "'");
  }
}

namespace {

int64_t now_unix() {
  using namespace std::chrono;
  return duration_cast<seconds>(system_clock::now().time_since_epoch()).count();
}

/// Check one listed file against its meta.json record; "" if it matches.
std::string verify_file(const fs::path& dir, const std::string& name, const nlohmann::json& rec) {
  if (!is_valid_artifact_name(name)) return "meta.json lists an invalid file name '" + name + "'";
  if (!rec.is_object() || !rec.contains("size") || !rec["size"].is_number_unsigned() ||
      !rec.contains("sha256") || !rec["sha256"].is_string()) {
    return "meta.json has a malformed record for '" + name + "'";
  }
  const fs::path p = dir / name;
  struct stat st {};
  if (::lstat(p.c_str(), &st) != 0) return "artifact '" + name + "' is missing";
  if (!S_ISREG(st.st_mode)) return "artifact '" + name + "' is not a regular file";
  const uint64_t want = rec["size"].get<uint64_t>();
  if (uint64_t(st.st_size) != want) {
    return "artifact '" + name + "' has size " + std::to_string(st.st_size) + ", meta.json says " +
           std::to_string(want);
  }
  if (sha256_file_hex(p) != rec["sha256"].get<std::string>()) {
    return "artifact '" + name + "' fails its sha256 check";
  }
  return "";
}

}  // namespace

nlohmann::json make_meta(const std::string& key, const Artifacts& files,
                         const nlohmann::json& extra_meta) {
  nlohmann::json listed = nlohmann::json::object();
  for (const auto& [name, bytes] : files) {
    listed[name] = {{"size", bytes.size()}, {"sha256", sha256_hex(bytes)}};
  }
  return {{"format", kFormatVersion},
          {"key", key},
          {"created_unix", now_unix()},
          {"files", listed},
          {"extra", extra_meta.is_null() ? nlohmann::json::object() : extra_meta}};
}

Entry write_entry_dir(const fs::path& dir, const std::string& key, const Artifacts& files,
                      const nlohmann::json& extra_meta) {
  Entry e{key, dir, make_meta(key, files, extra_meta)};
  for (const auto& [name, bytes] : files) write_new_file(dir / name, bytes);
  write_new_file(dir / kMetaFile, e.meta.dump(2) + "\n");
  write_new_file(dir / kLastUsedFile, "");
  return e;
}

std::string verify_entry(const fs::path& dir, const std::string& key, nlohmann::json* meta) {
  const DirCheck dc = check_private_dir(dir, /*follow_symlinks=*/false);
  if (!dc.ok()) return dc.reason;
  struct stat st {};
  const fs::path meta_path = dir / kMetaFile;
  if (::lstat(meta_path.c_str(), &st) != 0) return "meta.json is missing";
  if (!S_ISREG(st.st_mode)) return "meta.json is not a regular file";
  nlohmann::json m = nlohmann::json::parse(read_whole_file(meta_path), nullptr, false);
  if (m.is_discarded() || !m.is_object()) return "meta.json is not valid JSON";
  if (!m.contains("format") || m["format"] != kFormatVersion) {
    return "meta.json format is " + (m.contains("format") ? m["format"].dump() : "missing") +
           ", expected " + std::to_string(kFormatVersion);
  }
  if (!m.contains("key") || m["key"] != key) return "meta.json names a different key";
  if (!m.contains("files") || !m["files"].is_object()) return "meta.json has no file list";
  for (const auto& [name, rec] : m["files"].items()) {
    std::string why = verify_file(dir, name, rec);
    if (!why.empty()) return why;
  }
  *meta = std::move(m);
  return "";
}

bool is_real_dir(const fs::path& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::vector<fs::path> list_entry_dirs(const fs::path& root) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator s(root, ec); !ec && s != fs::directory_iterator(); s.increment(ec)) {
    const std::string shard = s->path().filename().string();
    if (!is_lower_hex(shard, 2) || !is_real_dir(s->path())) continue;
    std::error_code ec2;
    for (fs::directory_iterator e(s->path(), ec2); !ec2 && e != fs::directory_iterator();
         e.increment(ec2)) {
      const std::string key = e->path().filename().string();
      if (!is_valid_key(key) || key.compare(0, 2, shard) != 0) continue;
      if (is_real_dir(e->path())) out.push_back(e->path());
    }
  }
  return out;
}

std::vector<EntryInfo> collect_entries(const fs::path& root) {
  std::vector<EntryInfo> out;
  for (const fs::path& dir : list_entry_dirs(root)) {
    std::optional<int64_t> t = mtime_ns(dir / kLastUsedFile);
    if (!t) t = mtime_ns(dir / kMetaFile);
    if (!t) t = mtime_ns(dir);
    out.push_back({dir.filename().string(), dir, tree_bytes(dir), t.value_or(0)});
  }
  return out;
}

}  // namespace inductor_cpp::kernels_cache::detail
