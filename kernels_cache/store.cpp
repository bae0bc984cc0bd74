/// \file
/// The kernel cache protocol: verify-on-lookup, lock-then-recheck-then-build, atomic publish
/// by rename, LRU eviction and clearing. See store.h for the contract and docs/cache.md for
/// the user-facing description.

#include "kernels_cache/store.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <system_error>
#include <vector>

#include "kernels_cache/entry_format.h"
#include "kernels_cache/fs_util.h"
#include "knobs/knobs.h"

namespace inductor_cpp::kernels_cache {
namespace {

namespace fs = std::filesystem;
using detail::DirCheck;
using detail::EntryInfo;
using detail::kLastUsedFile;
constexpr int64_t kStaleTmpNs = int64_t(3600) * 1000000000;  // tmp/ leftovers older than 1 h

/// Whether a name in tmp/ or locks/ is one the store makes: "<key>.<...>" (staging dirs,
/// trash dirs, lock files) or "evict.lock". The root may be a directory the user also keeps
/// other things in (a project, $HOME), so nothing else there is ever deleted.
bool is_store_owned_name(const std::string& name) {
  if (name == "evict.lock") return true;
  return name.size() > 65 && name[64] == '.' && detail::is_lower_hex(name.substr(0, 64), 64);
}

/// Delete our own names in `dir`, then `dir` itself if that left it empty.
void remove_owned_contents(const fs::path& dir) {
  if (!detail::is_real_dir(dir)) return;
  std::vector<fs::path> owned;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    if (is_store_owned_name(it->path().filename().string())) owned.push_back(it->path());
  }
  for (const fs::path& p : owned) fs::remove_all(p, ec);
  ::rmdir(dir.c_str());
}

/// Delete leftovers in tmp/ (staging or trash dirs of crashed processes) older than an hour.
void remove_stale_tmp(const fs::path& tmp) {
  const int64_t cutoff = std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count() -
                         kStaleTmpNs;
  std::vector<fs::path> stale;
  std::error_code ec;
  for (fs::directory_iterator it(tmp, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    if (!is_store_owned_name(it->path().filename().string())) continue;
    const std::optional<int64_t> t = detail::mtime_ns(it->path());
    if (t && *t < cutoff) stale.push_back(it->path());
  }
  for (const fs::path& p : stale) fs::remove_all(p, ec);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Free functions

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::Hit:
      return "hit";
    case Outcome::Built:
      return "built";
    case Outcome::RebuiltCorrupt:
      return "rebuilt_corrupt";
    case Outcome::Uncached:
      return "uncached";
  }
  return "unknown";
}

bool is_valid_key(const std::string& key) {
  return detail::is_lower_hex(key, 64);
}

CacheConfig cache_config_from_env() {
  CacheConfig c;
  if (const auto dir = knobs::raw(knobs::Knob::CacheDir)) {
    std::error_code ec;
    const fs::path abs = fs::absolute(*dir, ec);
    c.root = ec ? fs::path(*dir) : abs;
  } else {
    std::string home = knobs::host_env("HOME").value_or("");
    if (home.empty()) {
      struct passwd pw {};
      struct passwd* found = nullptr;
      std::vector<char> buf(16384);
      if (::getpwuid_r(::geteuid(), &pw, buf.data(), buf.size(), &found) == 0 && found &&
          found->pw_dir != nullptr) {
        home = found->pw_dir;
      }
    }
    if (home.empty())
      c.enabled = false;
    else
      c.root = fs::path(home) / ".cache" / "inductor_cpp";
  }
  c.max_bytes = knobs::get_count(knobs::Knob::CacheMaxBytes).value();
  c.lock_timeout_ms = uint32_t(
      std::min<uint64_t>(knobs::get_count(knobs::Knob::CacheLockTimeoutMs).value(), UINT32_MAX));
  if (!knobs::get_bool(knobs::Knob::Cache)) c.enabled = false;
  return c;
}

// ---------------------------------------------------------------------------------------------
// Entry

std::string Entry::read(const std::string& name) const {
  return detail::read_whole_file(path(name));
}

fs::path Entry::path(const std::string& name) const {
  return dir / name;
}

// ---------------------------------------------------------------------------------------------
// Store

Store::Store(CacheConfig config) : config_(std::move(config)) {}

fs::path Store::shard_dir(const std::string& key) const {
  return config_.root / key.substr(0, 2);
}

fs::path Store::entry_dir(const std::string& key) const {
  return shard_dir(key) / key;
}

std::string Store::prepare_root() const {
  if (config_.root.empty()) return "cache root is not set";
  DirCheck c = detail::ensure_private_dir(config_.root, /*parents=*/true, /*follow=*/true);
  if (!c.ok()) return "cache root unusable: " + c.reason;
  for (const fs::path& sub : {tmp_dir(), locks_dir()}) {
    c = detail::ensure_private_dir(sub, false, false);
    if (!c.ok()) return "cache unusable: " + c.reason;
  }
  return "";
}

Store::ProbeResult Store::probe(const std::string& key) {
  detail::require_valid_key(key);
  if (config_.root.empty()) return {Probe::Unusable, std::nullopt, "cache root is not set"};
  DirCheck c = detail::check_private_dir(config_.root, /*follow=*/true);
  if (c.status == DirCheck::Missing) return {Probe::Missing, std::nullopt, ""};
  if (!c.ok()) return {Probe::Unusable, std::nullopt, "cache root unusable: " + c.reason};
  c = detail::check_private_dir(shard_dir(key), false);
  if (c.status == DirCheck::Missing) return {Probe::Missing, std::nullopt, ""};
  if (!c.ok()) return {Probe::Unusable, std::nullopt, "cache unusable: " + c.reason};

  const fs::path dir = entry_dir(key);
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return {Probe::Missing, std::nullopt, ""};

  nlohmann::json meta;
  std::string why;
  try {
    why = detail::verify_entry(dir, key, &meta);
  } catch (const std::exception& e) {
    why = e.what();
  }
  if (why.empty()) {
    detail::touch_now(dir / kLastUsedFile);
    return {Probe::Found, Entry{key, dir, std::move(meta)}, ""};
  }
  // Removed concurrently (eviction, clear) while we looked: a plain miss.
  if (::lstat(dir.c_str(), &st) != 0) return {Probe::Missing, std::nullopt, ""};
  const bool tmp_ok = detail::ensure_private_dir(tmp_dir(), false, false).ok();
  const std::string err = detail::remove_tree(dir, tmp_ok ? tmp_dir() : fs::path());
  const std::string reason = "corrupt entry " + dir.string() + ": " + why;
  if (!err.empty()) return {Probe::Unusable, std::nullopt, reason + "; cannot remove it: " + err};
  return {Probe::Removed, std::nullopt, reason};
}

std::string Store::discard(const Entry& entry) {
  try {
    if (entry.dir != entry_dir(entry.key)) return "not an entry of this store: " + entry.dir.string();
    const bool tmp_ok = detail::ensure_private_dir(tmp_dir(), false, false).ok();
    return detail::remove_tree(entry.dir, tmp_ok ? tmp_dir() : fs::path());
  } catch (const std::exception& e) {
    return e.what();
  }
}

std::optional<Entry> Store::lookup(const std::string& key, std::string* why) {
  ProbeResult r = probe(key);
  if (why != nullptr) *why = r.reason;
  return std::move(r.entry);
}

LookupResult Store::uncached(const std::string& key, const Artifacts& files,
                             const nlohmann::json& extra_meta, const std::string& why) const {
  std::error_code ec;
  fs::path base = fs::temp_directory_path(ec);
  if (ec) base = "/tmp";
  const fs::path dir = detail::make_unique_dir(base, "inductor_cpp_uncached_" + key.substr(0, 16));
  try {
    return {detail::write_entry_dir(dir, key, files, extra_meta), Outcome::Uncached, why};
  } catch (...) {
    fs::remove_all(dir, ec);
    throw;
  }
}

LookupResult Store::get_or_build(const std::string& key, const std::function<Artifacts()>& build,
                                 const nlohmann::json& extra_meta) {
  detail::require_valid_key(key);
  auto build_checked = [&build] {
    Artifacts files = build();
    detail::require_valid_artifacts(files);
    return files;
  };
  if (!config_.enabled) {
    return uncached(key, build_checked(), extra_meta,
                    "cache disabled (config / INDUCTOR_CPP_CACHE=0)");
  }

  // Phase 1: look up, lock, look up again. Any cache problem ends in `problem`.
  std::optional<detail::FileLock> lock;
  std::string corrupt;  // reason a corrupt entry was removed, if one was
  std::string problem;
  try {
    problem = prepare_root();
    for (int pass = 0; problem.empty() && pass < 2; ++pass) {
      ProbeResult r = probe(key);
      if (r.status == Probe::Found) return {std::move(*r.entry), Outcome::Hit, ""};
      if (r.status == Probe::Unusable) problem = r.reason;
      if (r.status == Probe::Removed) corrupt = r.reason;
      if (pass == 0 && problem.empty()) {
        lock.emplace(locks_dir() / (key + ".lock"), detail::FileLock::Mode::Timed,
                     std::chrono::milliseconds(config_.lock_timeout_ms));
        if (!lock->held()) break;  // timed out: build without it (publish stays atomic)
      }
    }
  } catch (const std::invalid_argument&) {
    throw;
  } catch (const std::exception& e) {
    problem = e.what();
  }
  if (!problem.empty()) {
    lock.reset();
    return uncached(key, build_checked(), extra_meta, problem);
  }

  // Phase 2: build (exceptions propagate, the lock is released by RAII) and publish.
  Artifacts files = build_checked();
  try {
    Entry e = publish(key, files, extra_meta);
    evict_to_cap_except(key);
    const Outcome o = corrupt.empty() ? Outcome::Built : Outcome::RebuiltCorrupt;
    return {std::move(e), o, corrupt};
  } catch (const std::exception& e) {
    lock.reset();
    return uncached(key, files, extra_meta, std::string("cannot publish to cache: ") + e.what());
  }
}

Entry Store::publish(const std::string& key, const Artifacts& files,
                     const nlohmann::json& extra_meta) {
  detail::require_valid_key(key);
  detail::require_valid_artifacts(files);
  if (std::string err = prepare_root(); !err.empty()) throw std::runtime_error(err);
  const DirCheck shard = detail::ensure_private_dir(shard_dir(key), false, false);
  if (!shard.ok()) throw std::runtime_error("cache unusable: " + shard.reason);

  const fs::path staging = detail::make_unique_dir(tmp_dir(), key);
  auto discard_staging = [&staging] { detail::remove_tree(staging, fs::path()); };
  Entry e;
  try {
    e = detail::write_entry_dir(staging, key, files, extra_meta);
  } catch (...) {
    discard_staging();
    throw;
  }
  const fs::path final_dir = entry_dir(key);
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (::rename(staging.c_str(), final_dir.c_str()) == 0) {
      e.dir = final_dir;
      return e;
    }
    const int err = errno;
    if (err != EEXIST && err != ENOTEMPTY) {
      discard_staging();
      throw std::runtime_error("kernels_cache: cannot rename " + staging.string() + " to " +
                               final_dir.string() + ": " + std::strerror(err));
    }
    // The final dir exists: keep it if it verifies, else probe() removed it and we retry.
    ProbeResult r = probe(key);
    if (r.status == Probe::Found || r.status == Probe::Unusable) {
      discard_staging();
      if (r.status == Probe::Unusable) throw std::runtime_error(r.reason);
      return std::move(*r.entry);
    }
  }
  discard_staging();
  throw std::runtime_error("kernels_cache: cannot publish " + final_dir.string());
}

void Store::evict_to_cap_except(const std::string& protected_key) {
  try {
    if (!detail::check_private_dir(config_.root, true).ok()) return;
    if (!detail::check_private_dir(locks_dir(), false).ok()) return;
    detail::FileLock lock(locks_dir() / "evict.lock", detail::FileLock::Mode::TryOnce);
    if (!lock.held()) return;  // another process is evicting right now

    const bool tmp_ok = detail::check_private_dir(tmp_dir(), false).ok();
    if (tmp_ok) remove_stale_tmp(tmp_dir());
    std::vector<EntryInfo> entries = detail::collect_entries(config_.root);
    uint64_t total = 0;
    for (const EntryInfo& e : entries) total += e.bytes;
    if (total <= config_.max_bytes) return;

    std::sort(entries.begin(), entries.end(), [](const EntryInfo& a, const EntryInfo& b) {
      return a.last_used_ns != b.last_used_ns ? a.last_used_ns < b.last_used_ns : a.key < b.key;
    });
    for (const EntryInfo& e : entries) {
      if (total <= config_.max_bytes) break;
      if (e.key == protected_key) continue;
      if (!detail::remove_tree(e.dir, tmp_ok ? tmp_dir() : fs::path()).empty()) continue;
      total -= e.bytes;
      // Its lock file too, or locks/ grows by one file per key ever compiled. A process
      // waiting on it re-takes the lock on a fresh file (FileLock).
      ::unlink((locks_dir() / (e.key + ".lock")).c_str());
    }
  } catch (const std::exception&) {
    // Best effort: a failed eviction leaves the cache over its cap until the next one.
  }
}

size_t Store::clear(std::vector<std::string>* refused) {
  if (config_.root.empty() || !fs::is_directory(config_.root)) return 0;
  const bool tmp_ok = detail::check_private_dir(tmp_dir(), false).ok();
  size_t removed = 0;
  for (const fs::path& dir : detail::list_entry_dirs(config_.root)) {
    const std::string err = detail::remove_tree(dir, tmp_ok ? tmp_dir() : fs::path());
    if (err.empty()) {
      ++removed;
    } else if (refused != nullptr) {
      refused->push_back(dir.string() + ": " + err);
    }
  }
  // Shard dirs go only once empty (rmdir fails otherwise, keeping anything unrelated).
  std::error_code ec;
  std::vector<fs::path> shards;
  for (fs::directory_iterator s(config_.root, ec); !ec && s != fs::directory_iterator();
       s.increment(ec)) {
    if (detail::is_lower_hex(s->path().filename().string(), 2) && detail::is_real_dir(s->path())) {
      shards.push_back(s->path());
    }
  }
  for (const fs::path& s : shards) ::rmdir(s.c_str());
  for (const fs::path& sub : {tmp_dir(), locks_dir()}) remove_owned_contents(sub);
  return removed;
}

std::vector<Store::Finding> Store::verify_entries() const {
  std::vector<Finding> out;
  try {
    if (config_.root.empty()) return out;
    const DirCheck root = detail::check_private_dir(config_.root, /*follow=*/true);
    if (root.status == DirCheck::Missing) return out;
    if (!root.ok()) return {{"", config_.root, "unsafe root: " + root.reason, {}}};
    for (const fs::path& dir : detail::list_entry_dirs(config_.root)) {
      Finding f{dir.filename().string(), dir, "", {}};
      const DirCheck shard = detail::check_private_dir(dir.parent_path(), false);
      if (!shard.ok()) {
        f.problem = "unsafe shard dir: " + shard.reason;
      } else {
        try {
          f.problem = detail::verify_entry(dir, f.key, &f.meta);
        } catch (const std::exception& e) {
          f.problem = e.what();
        }
        if (!f.problem.empty()) f.problem = "corrupt: " + f.problem;
      }
      out.push_back(std::move(f));
    }
    const int64_t cutoff = std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count() -
                           kStaleTmpNs;
    std::error_code ec;
    if (detail::is_real_dir(tmp_dir())) {
      for (fs::directory_iterator it(tmp_dir(), ec); !ec && it != fs::directory_iterator();
           it.increment(ec)) {
        const std::optional<int64_t> t = detail::mtime_ns(it->path());
        if (t && *t < cutoff)
          out.push_back({"", it->path(), "stale: left in tmp/ by a process that died", {}});
      }
    }
  } catch (const std::exception& e) {
    out.push_back({"", config_.root, std::string("unreadable: ") + e.what(), {}});
  }
  return out;
}

Store::Summary Store::summary() const {
  Summary s{0, 0};
  if (config_.root.empty()) return s;
  for (const EntryInfo& e : detail::collect_entries(config_.root)) {
    ++s.entries;
    s.bytes += e.bytes;
  }
  return s;
}

}  // namespace inductor_cpp::kernels_cache
