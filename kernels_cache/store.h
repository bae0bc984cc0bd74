/// \file
/// Content-addressed on-disk store for compiled graph artifacts.
///
/// The compiler hashes everything that determines a compiled graph into a 64-hex-char key;
/// this store maps such a key to a directory of artifact files plus a meta.json listing each
/// file's size and SHA-256. It knows nothing about kernels, libtorch or Python: it stores
/// bytes, verifies them on every lookup, publishes atomically (temp dir + rename), serializes
/// builds of one key across processes with flock(), and keeps the total size under a cap by
/// evicting least-recently-used entries. User-facing description: docs/cache.md.
///
/// Layout under the root (all directories 0700, owned by the current effective user):
///   <root>/<key[0:2]>/<key>/meta.json      {"format":1,"key":..,"created_unix":..,
///                                            "files":{name:{"size":N,"sha256":hex}},"extra":..}
///   <root>/<key[0:2]>/<key>/last_used      empty; its mtime is the entry's last use
///   <root>/<key[0:2]>/<key>/<artifact>...  the artifact files
///   <root>/tmp/                            publish staging and removal trash
///   <root>/locks/<key>.lock                per-key flock() files
///
/// Thread/process safety: a Store holds no mutable state; all coordination goes through the
/// file system (rename, flock), so any number of threads and processes may use one root.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace inductor_cpp::kernels_cache {

/// Version written to and required in meta.json's "format". Entries of any other format are
/// treated as corrupt and rebuilt.
inline constexpr int kFormatVersion = 1;

/// Where the cache lives and how big it may grow.
struct CacheConfig {
  std::filesystem::path root;       ///< e.g. ~/.cache/inductor_cpp
  uint64_t max_bytes = 1ull << 30;  ///< LRU cap over all entries (bytes of their files)
  bool enabled = true;              ///< false: get_or_build() never touches the disk cache
  /// How long get_or_build() waits for another process building the same key before it
  /// builds too (publishing is atomic, so the second build is only wasted work).
  uint32_t lock_timeout_ms = 120000;
};

/// Configuration from the environment:
///  - root: $INDUCTOR_CPP_CACHE_DIR if set and non-empty, else $HOME/.cache/inductor_cpp
///    (home from the password database if $HOME is unset; if no home can be found the cache
///    is disabled);
///  - max_bytes: $INDUCTOR_CPP_CACHE_MAX_BYTES if set to a decimal integer (else the default);
///  - enabled: false if $INDUCTOR_CPP_CACHE is "0", "false", "off" or "no" (any case);
///  - lock_timeout_ms: $INDUCTOR_CPP_CACHE_LOCK_TIMEOUT_MS if set to a decimal integer.
CacheConfig cache_config_from_env();

/// One verified cache entry (or, for Outcome::Uncached, a private temp directory laid out the
/// same way).
struct Entry {
  std::string key;
  std::filesystem::path dir;  ///< <root>/<key[0:2]>/<key>
  nlohmann::json meta;        ///< parsed meta.json

  /// The bytes of artifact `name`. Throws std::runtime_error if it cannot be read.
  std::string read(const std::string& name) const;
  /// dir / name (no check that it exists).
  std::filesystem::path path(const std::string& name) const;
};

/// How get_or_build() produced its entry.
enum class Outcome {
  Hit,             ///< a verified entry was already in the cache; build() not called
  Built,           ///< cache miss; build() called and its artifacts published
  RebuiltCorrupt,  ///< a corrupt/partial entry was removed; build() called and published
  Uncached,        ///< cache disabled or unusable; build() called, artifacts in a temp dir
};

/// Result of get_or_build().
struct LookupResult {
  Entry entry;
  Outcome outcome;
  /// Why, for RebuiltCorrupt / Uncached (e.g. which file failed its checksum, which directory
  /// has bad permissions). Empty for Hit / Built.
  std::string note;
};

/// Files of one entry: artifact name -> bytes. A name is a plain file name: non-empty, no '/'
/// or NUL, not "." / "..", and not one of the store's own files "meta.json" / "last_used".
using Artifacts = std::map<std::string, std::string>;

/// Human-readable name of an Outcome ("hit", "built", "rebuilt_corrupt", "uncached").
const char* outcome_name(Outcome o);

/// True iff `key` is exactly 64 lowercase hex chars.
bool is_valid_key(const std::string& key);

/// The on-disk cache. Cheap to construct; creates nothing until first used.
///
/// Every method taking a key throws std::invalid_argument if the key is not 64 lowercase hex
/// chars, and every method taking artifacts throws std::invalid_argument on a bad name.
class Store {
 public:
  explicit Store(CacheConfig config);

  const CacheConfig& config() const { return config_; }

  /// A verified entry, or nullopt. Verification: root, shard dir and entry dir pass the
  /// safety check (directories owned by geteuid(), not group/other-writable), meta.json parses
  /// with the right format and key, and every listed file is a regular file of the recorded
  /// size and SHA-256. A corrupt/partial entry is removed and nullopt returned; `why` (if
  /// non-null) receives the reason. On a plain miss `why` is set to "". On a hit the entry's
  /// last_used mtime is set to now. Does not create the root.
  std::optional<Entry> lookup(const std::string& key, std::string* why = nullptr);

  /// The whole protocol: lookup; on a miss take the per-key lock (blocking flock on
  /// <root>/locks/<key>.lock), lookup again (another process may have published meanwhile ->
  /// Hit), else call build(), publish its artifacts atomically, evict to the cap (never the
  /// entry just built) and release the lock. If the cache is disabled or unusable (root fails
  /// the safety check, IO errors), build() is called and its artifacts are returned in an
  /// Entry written to a fresh private temp dir (Outcome::Uncached, note says why); that dir
  /// is the caller's to delete. Never throws for cache problems; propagates exceptions from
  /// build(), and std::invalid_argument for a bad key or artifact name.
  LookupResult get_or_build(const std::string& key, const std::function<Artifacts()>& build,
                            const nlohmann::json& extra_meta = {});

  /// Write artifacts + meta.json into <root>/tmp/<key>.<pid>.<random>/, then rename() it to
  /// the final dir. If the final dir already exists and verifies, the temp dir is discarded
  /// and the existing entry returned; if it exists but fails verification it is replaced.
  /// `extra_meta` is stored as meta["extra"] (null becomes {}). Creates the root if missing.
  /// Does not take the per-key lock (get_or_build does). Throws std::runtime_error if the root
  /// is unsafe or on IO errors.
  Entry publish(const std::string& key, const Artifacts& files, const nlohmann::json& extra_meta);

  /// Removes an entry that verified but that its user could not load (a plan that fails
  /// validation: its checksums alone do not make it safe, whoever can write the entry can
  /// rewrite meta.json too). The next get_or_build rebuilds it. Returns "" or why it could not
  /// remove it. Never throws.
  std::string discard(const Entry& entry);

  /// Remove least-recently-used entries until the total size is <= max_bytes. Last use = mtime
  /// of the entry's `last_used` file, touched on every hit. Also deletes leftovers older than
  /// an hour in tmp/ (from crashed processes). Skips the work if another process is evicting.
  /// Never throws for IO problems (best effort).
  void evict_to_cap() { evict_to_cap_except(""); }

  /// Remove every entry the store owns (entry dirs with 64-hex-char names inside two-hex-char
  /// shard dirs; the shard dirs once empty; tmp/; locks/). Never removes other files or dirs
  /// in the root, which may hold unrelated things. Never follows symlinks. Returns the number
  /// of entries removed. Meant for an idle cache: builds running concurrently fall back to
  /// Uncached or rebuild.
  /// `refused` (if non-null) receives the entry dirs it could not remove (another user's).
  size_t clear(std::vector<std::string>* refused = nullptr);

  /// One finding of verify_entries(): an entry (key set) or a leftover in tmp/ (key empty);
  /// `problem` is "" for a good entry, else starts with what kind: "unsafe" (a root or shard
  /// dir of another user or writable by others), "corrupt" (meta.json, a missing file, a
  /// size or SHA-256 that does not match, a symlink) or "stale" (a build directory older than
  /// an hour left by a process that died).
  struct Finding {
    std::string key;
    std::filesystem::path path;
    std::string problem;
    nlohmann::json meta;  ///< meta.json of a good entry
  };
  /// Every entry and tmp/ leftover, checked as lookup() checks an entry, but nothing is
  /// removed, touched or created (`python -m inductor_cpp.cache verify`). Never throws.
  std::vector<Finding> verify_entries() const;

  /// Entry count and total bytes (files of entry dirs, including meta.json), without
  /// verifying checksums.
  struct Summary {
    size_t entries;
    uint64_t bytes;
  };
  Summary summary() const;

 private:
  enum class Probe { Found, Missing, Removed, Unusable };
  struct ProbeResult {
    Probe status;
    std::optional<Entry> entry;
    std::string reason;
  };

  /// lookup() with the miss/corrupt/unusable distinction get_or_build() needs.
  ProbeResult probe(const std::string& key);
  /// Create the root (0700, with parents) and tmp/, locks/ if missing; "" if all are safe to
  /// use, else the reason.
  std::string prepare_root() const;
  /// Write already-built artifacts into a fresh private temp dir (the Outcome::Uncached
  /// path). Throws std::runtime_error only if even that fails.
  LookupResult uncached(const std::string& key, const Artifacts& files,
                        const nlohmann::json& extra_meta, const std::string& why) const;
  void evict_to_cap_except(const std::string& protected_key);

  std::filesystem::path shard_dir(const std::string& key) const;
  std::filesystem::path entry_dir(const std::string& key) const;
  std::filesystem::path tmp_dir() const { return config_.root / "tmp"; }
  std::filesystem::path locks_dir() const { return config_.root / "locks"; }

  CacheConfig config_;
};

}  // namespace inductor_cpp::kernels_cache
