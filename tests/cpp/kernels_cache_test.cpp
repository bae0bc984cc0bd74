/// \file
/// Tests of the kernel cache store: hit/miss protocol, round-trips and meta.json, corruption
/// detection and rebuild, the directory safety check, key validation, LRU eviction, clear(),
/// configuration from the environment, and cross-process build exclusion (fork).
///
/// Every test uses a fresh temp dir as root. Tests may run as root (geteuid() == 0), so
/// permission cases are set up with mode bits, never relying on access() failing.

#include "kernels_cache/fs_util.h"
#include "kernels_cache/store.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utime.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>
#include <vector>

#include "kernels_cache/sha256.h"
#include "knobs/knobs.h"

namespace kc = inductor_cpp::kernels_cache;
namespace knobs = inductor_cpp::knobs;
namespace fs = std::filesystem;
using kc::Artifacts;
using kc::Outcome;

namespace {

std::string key_of(const std::string& seed) {
  return kc::sha256_hex(seed);
}

mode_t mode_of(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

void write_file(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f << bytes;
}

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// Set the mtime (and atime) of `p` to `secs_ago` seconds before now.
void set_age(const fs::path& p, int secs_ago) {
  const time_t t = ::time(nullptr) - secs_ago;
  struct utimbuf times {
    t, t
  };
  ASSERT_EQ(::utime(p.c_str(), &times), 0) << p;
}

class KernelsCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "kernels_cache_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    base_ = tmpl;
    root_ = base_ / "cache";  // does not exist yet: the store creates it
  }
  void TearDown() override {
    std::error_code ec;
    ::chmod(root_.c_str(), 0700);
    fs::remove_all(base_, ec);
  }

  kc::CacheConfig config(uint64_t max_bytes = 1ull << 30) const {
    kc::CacheConfig c;
    c.root = root_;
    c.max_bytes = max_bytes;
    return c;
  }

  /// A build function counting its calls.
  std::function<Artifacts()> builder(const Artifacts& files) {
    return [this, files] {
      ++builds_;
      return files;
    };
  }

  fs::path base_, root_;
  int builds_ = 0;
  const Artifacts files_{{"graph.so", std::string("\x7f"
                                                  "ELF\0binary\xff",
                                                  12)},
                         {"graph.json", "{\"nodes\": 3}"}};
};

TEST_F(KernelsCacheTest, MissBuildThenHit) {
  kc::Store store(config());
  const std::string key = key_of("miss-then-hit");
  EXPECT_FALSE(store.lookup(key).has_value());

  kc::LookupResult first = store.get_or_build(key, builder(files_));
  EXPECT_EQ(first.outcome, Outcome::Built);
  EXPECT_EQ(first.note, "");
  EXPECT_EQ(first.entry.dir, root_ / key.substr(0, 2) / key);
  EXPECT_EQ(builds_, 1);

  kc::LookupResult second = store.get_or_build(key, builder(files_));
  EXPECT_EQ(second.outcome, Outcome::Hit);
  EXPECT_EQ(builds_, 1);
  EXPECT_EQ(second.entry.dir, first.entry.dir);
  EXPECT_TRUE(store.lookup(key).has_value());
}

// An entry that verifies but that its user cannot load is discarded; the next round rebuilds.
// Only the store's own entry directories are removed.
TEST_F(KernelsCacheTest, DiscardedEntryIsRebuilt) {
  kc::Store store(config());
  const std::string key = key_of("discarded");
  kc::LookupResult first = store.get_or_build(key, builder(files_));
  kc::Entry elsewhere = first.entry;
  elsewhere.dir = root_ / "not-an-entry";
  EXPECT_NE(store.discard(elsewhere), "");
  EXPECT_EQ(store.discard(first.entry), "");
  EXPECT_FALSE(store.lookup(key).has_value());
  EXPECT_EQ(store.get_or_build(key, builder(files_)).outcome, Outcome::Built);
  EXPECT_EQ(builds_, 2);
}

TEST_F(KernelsCacheTest, ArtifactsRoundTripAndDirsArePrivate) {
  ::mode_t old = ::umask(0);  // creation must not depend on the umask
  kc::Store store(config());
  kc::LookupResult r = store.get_or_build(key_of("roundtrip"), builder(files_));
  ::umask(old);
  for (const auto& [name, bytes] : files_) {
    EXPECT_EQ(r.entry.read(name), bytes) << name;
    EXPECT_EQ(read_file(r.entry.path(name)), bytes) << name;
  }
  EXPECT_THROW(r.entry.read("nope"), std::runtime_error);
  EXPECT_EQ(mode_of(root_), 0700u);
  EXPECT_EQ(mode_of(r.entry.dir), 0700u);
  EXPECT_EQ(mode_of(r.entry.dir.parent_path()), 0700u);
  EXPECT_EQ(mode_of(root_ / "tmp"), 0700u);
  EXPECT_EQ(mode_of(root_ / "locks"), 0700u);
  EXPECT_TRUE(fs::is_empty(root_ / "tmp"));  // staging dir was renamed away
}

TEST_F(KernelsCacheTest, MetaJsonContent) {
  kc::Store store(config());
  const std::string key = key_of("meta");
  const nlohmann::json extra = {{"torch", "2.11.0"}, {"graph", "g0"}};
  kc::LookupResult r = store.get_or_build(key, builder(files_), extra);
  const nlohmann::json m = nlohmann::json::parse(read_file(r.entry.dir / "meta.json"));
  EXPECT_EQ(m, r.entry.meta);
  EXPECT_EQ(m["format"], 1);
  EXPECT_EQ(m["key"], key);
  EXPECT_TRUE(m["created_unix"].is_number_integer());
  EXPECT_NEAR(m["created_unix"].get<double>(), double(::time(nullptr)), 60.0);
  EXPECT_EQ(m["extra"], extra);
  ASSERT_EQ(m["files"].size(), files_.size());
  for (const auto& [name, bytes] : files_) {
    EXPECT_EQ(m["files"][name]["size"], bytes.size());
    EXPECT_EQ(m["files"][name]["sha256"], kc::sha256_hex(bytes));
  }
  // No extra -> {}.
  kc::LookupResult r2 = store.get_or_build(key_of("meta2"), builder(files_));
  EXPECT_EQ(r2.entry.meta["extra"], nlohmann::json::object());
}

TEST_F(KernelsCacheTest, TruncatedArtifactIsRebuilt) {
  kc::Store store(config());
  const std::string key = key_of("truncated");
  kc::LookupResult r = store.get_or_build(key, builder(files_));
  fs::resize_file(r.entry.path("graph.so"), 3);

  kc::LookupResult again = store.get_or_build(key, builder(files_));
  EXPECT_EQ(again.outcome, Outcome::RebuiltCorrupt);
  EXPECT_NE(again.note.find("graph.so"), std::string::npos) << again.note;
  EXPECT_NE(again.note.find("size"), std::string::npos) << again.note;
  EXPECT_EQ(builds_, 2);
  EXPECT_EQ(again.entry.read("graph.so"), files_.at("graph.so"));
  EXPECT_EQ(store.get_or_build(key, builder(files_)).outcome, Outcome::Hit);
}

TEST_F(KernelsCacheTest, ModifiedByteSameSizeIsDetected) {
  kc::Store store(config());
  const std::string key = key_of("modified");
  kc::LookupResult r = store.get_or_build(key, builder(files_));
  std::string bytes = files_.at("graph.json");
  bytes[0] ^= 1;
  write_file(r.entry.path("graph.json"), bytes);

  std::string why;
  EXPECT_FALSE(store.lookup(key, &why).has_value());
  EXPECT_NE(why.find("graph.json"), std::string::npos) << why;
  EXPECT_NE(why.find("sha256"), std::string::npos) << why;
  EXPECT_FALSE(fs::exists(r.entry.dir));  // removed
  EXPECT_FALSE(store.lookup(key, &why).has_value());
  EXPECT_EQ(why, "");  // now a plain miss
  EXPECT_EQ(store.get_or_build(key, builder(files_)).outcome, Outcome::Built);
}

TEST_F(KernelsCacheTest, MissingOrBadMetaIsRebuilt) {
  kc::Store store(config());
  const std::string key = key_of("meta-bad");
  struct Case {
    const char* what;
    std::function<void(const fs::path&)> damage;
    const char* reason;
  };
  const Case cases[] = {
      {"missing", [](const fs::path& d) { fs::remove(d / "meta.json"); }, "missing"},
      {"garbage", [](const fs::path& d) { write_file(d / "meta.json", "{not json"); }, "JSON"},
      {"format",
       [](const fs::path& d) {
         auto m = nlohmann::json::parse(read_file(d / "meta.json"));
         m["format"] = 2;
         write_file(d / "meta.json", m.dump());
       },
       "format"},
      {"listed file missing", [](const fs::path& d) { fs::remove(d / "graph.so"); }, "missing"},
  };
  for (const Case& c : cases) {
    kc::LookupResult r = store.get_or_build(key, builder(files_));
    c.damage(r.entry.dir);
    const int before = builds_;
    kc::LookupResult again = store.get_or_build(key, builder(files_));
    EXPECT_EQ(again.outcome, Outcome::RebuiltCorrupt) << c.what;
    EXPECT_NE(again.note.find(c.reason), std::string::npos) << c.what << ": " << again.note;
    EXPECT_EQ(builds_, before + 1) << c.what;
    EXPECT_EQ(again.entry.read("graph.so"), files_.at("graph.so")) << c.what;
  }
}

TEST_F(KernelsCacheTest, BadRootPermissionsMeansUncached) {
  kc::Store store(config());
  const std::string key = key_of("perm");
  store.get_or_build(key, builder(files_));
  ASSERT_EQ(::chmod(root_.c_str(), 0777), 0);

  kc::LookupResult r = store.get_or_build(key, builder(files_));
  EXPECT_EQ(r.outcome, Outcome::Uncached);
  EXPECT_NE(r.note.find(root_.string()), std::string::npos) << r.note;
  EXPECT_NE(r.note.find("0777"), std::string::npos) << r.note;
  EXPECT_EQ(builds_, 2);
  EXPECT_EQ(r.entry.read("graph.so"), files_.at("graph.so"));
  EXPECT_FALSE(fs::equivalent(r.entry.dir.parent_path().parent_path(), root_));
  EXPECT_EQ(mode_of(root_), 0777u);  // not silently fixed
  std::string why;
  EXPECT_FALSE(store.lookup(key, &why).has_value());
  EXPECT_NE(why.find("0777"), std::string::npos) << why;
  EXPECT_THROW(store.publish(key, files_, {}), std::runtime_error);
  fs::remove_all(r.entry.dir);
}

TEST_F(KernelsCacheTest, RootOwnedByAnotherUserMeansUncached) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to chown";
  fs::create_directories(root_);
  ASSERT_EQ(::chmod(root_.c_str(), 0700), 0);
  ASSERT_EQ(::chown(root_.c_str(), 65534, 65534), 0);
  kc::Store store(config());
  kc::LookupResult r = store.get_or_build(key_of("owner"), builder(files_));
  EXPECT_EQ(r.outcome, Outcome::Uncached);
  EXPECT_NE(r.note.find("owned by uid 65534"), std::string::npos) << r.note;
  EXPECT_EQ(r.entry.read("graph.so"), files_.at("graph.so"));
  fs::remove_all(r.entry.dir);
}

TEST_F(KernelsCacheTest, BadShardPermissionsMeansUncached) {
  kc::Store store(config());
  const std::string key = key_of("shard-perm");
  kc::LookupResult r = store.get_or_build(key, builder(files_));
  ASSERT_EQ(::chmod(r.entry.dir.parent_path().c_str(), 0770), 0);
  kc::LookupResult again = store.get_or_build(key, builder(files_));
  EXPECT_EQ(again.outcome, Outcome::Uncached);
  EXPECT_NE(again.note.find("0770"), std::string::npos) << again.note;
  fs::remove_all(again.entry.dir);
}

TEST_F(KernelsCacheTest, BadEntryPermissionsMeansRebuilt) {
  kc::Store store(config());
  const std::string key = key_of("entry-perm");
  kc::LookupResult r = store.get_or_build(key, builder(files_));
  ASSERT_EQ(::chmod(r.entry.dir.c_str(), 0757), 0);
  kc::LookupResult again = store.get_or_build(key, builder(files_));
  EXPECT_EQ(again.outcome, Outcome::RebuiltCorrupt);
  EXPECT_NE(again.note.find("0757"), std::string::npos) << again.note;
  EXPECT_EQ(mode_of(again.entry.dir), 0700u);
}

TEST_F(KernelsCacheTest, DisabledCacheIsUncachedAndTouchesNothing) {
  kc::CacheConfig c = config();
  c.enabled = false;
  kc::Store store(c);
  kc::LookupResult r = store.get_or_build(key_of("disabled"), builder(files_));
  EXPECT_EQ(r.outcome, Outcome::Uncached);
  EXPECT_NE(r.note.find("disabled"), std::string::npos);
  EXPECT_EQ(r.entry.read("graph.json"), files_.at("graph.json"));
  EXPECT_EQ(r.entry.meta["files"].size(), files_.size());
  EXPECT_FALSE(fs::exists(root_));
  fs::remove_all(r.entry.dir);
}

TEST_F(KernelsCacheTest, InvalidKeysAndNamesThrow) {
  kc::Store store(config());
  const std::string good = key_of("x");
  std::string upper = good;
  upper[0] = 'A';
  for (const std::string& bad : {std::string(""), std::string("abc"), good.substr(1), good + "0",
                                 upper, std::string("../") + good.substr(3)}) {
    EXPECT_FALSE(kc::is_valid_key(bad)) << bad;
    EXPECT_THROW(store.lookup(bad), std::invalid_argument) << bad;
    EXPECT_THROW(store.get_or_build(bad, builder(files_)), std::invalid_argument) << bad;
    EXPECT_THROW(store.publish(bad, files_, {}), std::invalid_argument) << bad;
  }
  EXPECT_EQ(builds_, 0);
  for (const char* name : {"", "a/b", "meta.json", "last_used", ".", ".."}) {
    EXPECT_THROW(store.publish(good, {{name, "x"}}, {}), std::invalid_argument) << name;
  }
  EXPECT_THROW(store.get_or_build(good, builder({{"../evil", "x"}})), std::invalid_argument);
}

TEST_F(KernelsCacheTest, BuildExceptionsPropagate) {
  kc::Store store(config());
  const std::string key = key_of("throws");
  auto failing = []() -> Artifacts { throw std::logic_error("compiler failed"); };
  EXPECT_THROW(store.get_or_build(key, failing), std::logic_error);
  // The lock was released: the next attempt builds.
  EXPECT_EQ(store.get_or_build(key, builder(files_)).outcome, Outcome::Built);
}

TEST_F(KernelsCacheTest, PublishOverExistingVerifiedEntryKeepsIt) {
  kc::Store store(config());
  const std::string key = key_of("publish-twice");
  kc::Entry a = store.publish(key, files_, {{"n", 1}});
  kc::Entry b = store.publish(key, files_, {{"n", 2}});
  EXPECT_EQ(b.dir, a.dir);
  EXPECT_EQ(b.meta["extra"]["n"], 1);  // the existing entry won
  EXPECT_TRUE(fs::is_empty(root_ / "tmp"));
}

TEST_F(KernelsCacheTest, EvictsLeastRecentlyUsedFirst) {
  kc::Store store(config());
  const std::string a = key_of("a"), b = key_of("b"), c = key_of("c");
  const Artifacts payload{{"blob", std::string(1000, 'x')}};
  for (const std::string& k : {a, b, c}) store.get_or_build(k, builder(payload));
  set_age(root_ / a.substr(0, 2) / a / "last_used", 300);
  set_age(root_ / b.substr(0, 2) / b / "last_used", 200);
  set_age(root_ / c.substr(0, 2) / c / "last_used", 100);

  const kc::Store::Summary s = store.summary();
  EXPECT_EQ(s.entries, 3u);
  EXPECT_GT(s.bytes, 3000u);

  kc::Store capped(config(s.bytes - 1));  // room for two of three
  capped.evict_to_cap();
  EXPECT_FALSE(fs::exists(root_ / a.substr(0, 2) / a));
  EXPECT_EQ(capped.summary().entries, 2u);

  // A hit makes b the most recently used; c (100 s old) goes next.
  ASSERT_TRUE(capped.lookup(b).has_value());
  kc::Store tighter(config(s.bytes / 2));
  tighter.evict_to_cap();
  EXPECT_FALSE(fs::exists(root_ / c.substr(0, 2) / c));
  EXPECT_TRUE(fs::exists(root_ / b.substr(0, 2) / b));
}

TEST_F(KernelsCacheTest, FreshlyBuiltEntryIsNeverEvicted) {
  kc::Store store(config(10));  // smaller than any entry
  const std::string a = key_of("first"), b = key_of("second");
  EXPECT_EQ(store.get_or_build(a, builder(files_)).outcome, Outcome::Built);
  kc::LookupResult r = store.get_or_build(b, builder(files_));
  EXPECT_EQ(r.outcome, Outcome::Built);
  EXPECT_EQ(r.entry.read("graph.so"), files_.at("graph.so"));
  EXPECT_FALSE(store.lookup(a).has_value());  // evicted to make room
  EXPECT_EQ(store.summary().entries, 1u);
}

TEST_F(KernelsCacheTest, EvictionSweepsStaleTmpLeftovers) {
  kc::Store store(config());
  store.get_or_build(key_of("tmp-sweep"), builder(files_));
  const fs::path old_dir = root_ / "tmp" / (key_of("crashed") + ".123.abc");
  const fs::path new_dir = root_ / "tmp" / (key_of("inflight") + ".456.def");
  const fs::path users_file = root_ / "tmp" / "notes.txt";  // the root may be a user's dir
  fs::create_directories(old_dir);
  fs::create_directories(new_dir);
  write_file(users_file, "mine");
  set_age(old_dir, 2 * 3600);
  set_age(users_file, 2 * 3600);
  store.evict_to_cap();
  EXPECT_FALSE(fs::exists(old_dir));
  EXPECT_TRUE(fs::exists(new_dir));
  EXPECT_EQ(read_file(users_file), "mine");
  EXPECT_EQ(store.summary().entries, 1u);
}

TEST_F(KernelsCacheTest, ClearKeepsUnrelatedFilesInTmpAndLocks) {
  kc::Store store(config());
  store.get_or_build(key_of("a"), builder(files_));
  write_file(root_ / "tmp" / "notes.txt", "mine");
  write_file(root_ / "locks" / "other.lock", "mine too");
  EXPECT_EQ(store.clear(), 1u);
  EXPECT_EQ(read_file(root_ / "tmp" / "notes.txt"), "mine");
  EXPECT_EQ(read_file(root_ / "locks" / "other.lock"), "mine too");
  EXPECT_FALSE(fs::exists(root_ / "locks" / (key_of("a") + ".lock")));
}

TEST_F(KernelsCacheTest, AStuckLockHolderDoesNotHangOthers) {
  kc::CacheConfig cfg = config();
  cfg.lock_timeout_ms = 100;
  kc::Store store(cfg);
  store.get_or_build(key_of("warm-up"), builder(files_));  // creates locks/
  const std::string key = key_of("stuck");
  kc::detail::FileLock held(root_ / "locks" / (key + ".lock"),
                            kc::detail::FileLock::Mode::Blocking);
  ASSERT_TRUE(held.held());
  const auto t0 = std::chrono::steady_clock::now();
  const kc::LookupResult r = store.get_or_build(key, builder(files_));
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(r.outcome, Outcome::Built);
  EXPECT_EQ(r.entry.read("graph.so"), files_.at("graph.so"));
  EXPECT_LT(waited, std::chrono::seconds(5));
  EXPECT_GE(waited, std::chrono::milliseconds(90));
}

TEST_F(KernelsCacheTest, EvictionRemovesLockFilesOfEvictedEntries) {
  kc::CacheConfig cfg = config();
  cfg.max_bytes = 1;  // every publish evicts everything else
  kc::Store store(cfg);
  for (const char* seed : {"l1", "l2", "l3"}) store.get_or_build(key_of(seed), builder(files_));
  EXPECT_EQ(store.summary().entries, 1u);
  EXPECT_FALSE(fs::exists(root_ / "locks" / (key_of("l1") + ".lock")));
  EXPECT_FALSE(fs::exists(root_ / "locks" / (key_of("l2") + ".lock")));
}

TEST_F(KernelsCacheTest, ClearRemovesEntriesButNotUnrelatedFiles) {
  kc::Store store(config());
  for (const char* seed : {"1", "2", "3"}) store.get_or_build(key_of(seed), builder(files_));
  // Unrelated things that happen to live in the root.
  fs::create_directories(root_ / "venv" / "bin");
  write_file(root_ / "venv" / "bin" / "python", "#!");
  write_file(root_ / "notes.txt", "keep me");
  fs::create_directories(root_ / "ab");
  write_file(root_ / "ab" / "README", "not an entry");
  fs::create_directories(root_ / "zz" / key_of("1"));  // not a hex shard

  EXPECT_EQ(store.clear(), 3u);
  EXPECT_EQ(store.summary().entries, 0u);
  EXPECT_TRUE(fs::exists(root_ / "venv" / "bin" / "python"));
  EXPECT_EQ(read_file(root_ / "notes.txt"), "keep me");
  EXPECT_TRUE(fs::exists(root_ / "ab" / "README"));
  EXPECT_TRUE(fs::exists(root_ / "zz" / key_of("1")));
  EXPECT_FALSE(fs::exists(root_ / "tmp"));
  EXPECT_FALSE(fs::exists(root_ / "locks"));
  EXPECT_FALSE(fs::exists(root_ / key_of("1").substr(0, 2)));  // emptied shard removed
  // Still usable afterwards.
  EXPECT_EQ(store.get_or_build(key_of("1"), builder(files_)).outcome, Outcome::Built);
  EXPECT_EQ(kc::Store(config()).clear(), 1u);
}

TEST_F(KernelsCacheTest, ConfigFromEnv) {
  const char* vars[] = {"INDUCTOR_CPP_CACHE_DIR", "INDUCTOR_CPP_CACHE_MAX_BYTES",
                        "INDUCTOR_CPP_CACHE", "HOME"};
  std::map<std::string, std::optional<std::string>> saved;
  for (const char* v : vars) saved[v] = knobs::host_env(v);
  ::setenv("HOME", "/home/someone", 1);
  ::unsetenv("INDUCTOR_CPP_CACHE_DIR");
  ::unsetenv("INDUCTOR_CPP_CACHE_MAX_BYTES");
  ::unsetenv("INDUCTOR_CPP_CACHE");
  kc::CacheConfig c = kc::cache_config_from_env();
  EXPECT_EQ(c.root, fs::path("/home/someone/.cache/inductor_cpp"));
  EXPECT_EQ(c.max_bytes, 1ull << 30);
  EXPECT_TRUE(c.enabled);

  ::setenv("INDUCTOR_CPP_CACHE_DIR", "", 1);  // empty: ignored
  EXPECT_EQ(kc::cache_config_from_env().root, fs::path("/home/someone/.cache/inductor_cpp"));
  ::setenv("INDUCTOR_CPP_CACHE_DIR", root_.c_str(), 1);
  ::setenv("INDUCTOR_CPP_CACHE_MAX_BYTES", "12345", 1);
  ::setenv("INDUCTOR_CPP_CACHE", "0", 1);
  c = kc::cache_config_from_env();
  EXPECT_EQ(c.root, root_);
  EXPECT_EQ(c.max_bytes, 12345u);
  EXPECT_FALSE(c.enabled);
  ::setenv("INDUCTOR_CPP_CACHE_MAX_BYTES", "12k", 1);  // not an integer: default
  ::setenv("INDUCTOR_CPP_CACHE", "1", 1);
  c = kc::cache_config_from_env();
  EXPECT_EQ(c.max_bytes, 1ull << 30);
  EXPECT_TRUE(c.enabled);

  for (const auto& [name, value] : saved) {
    if (value)
      ::setenv(name.c_str(), value->c_str(), 1);
    else
      ::unsetenv(name.c_str());
  }
}

TEST_F(KernelsCacheTest, ConcurrentProcessesBuildOnce) {
  const std::string key = key_of("concurrent");
  const fs::path counter = base_ / "builds.txt";
  const kc::CacheConfig cfg = config();
  auto child = [&]() -> int {
    try {
      kc::Store store(cfg);
      kc::LookupResult r = store.get_or_build(key, [&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        const int fd = ::open(counter.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
        if (fd >= 0) {
          (void)!::write(fd, "built\n", 6);
          ::close(fd);
        }
        return Artifacts{{"graph.so", "payload"}};
      });
      if (r.entry.read("graph.so") != "payload") return 3;
      if (r.outcome == Outcome::Built) return 10;
      if (r.outcome == Outcome::Hit) return 11;
      return 2;
    } catch (...) {
      return 1;
    }
  };
  pid_t pids[2];
  for (pid_t& pid : pids) {
    pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) ::_exit(child());
  }
  std::vector<int> codes;
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    codes.push_back(WEXITSTATUS(status));
  }
  std::sort(codes.begin(), codes.end());
  EXPECT_EQ(codes, (std::vector<int>{10, 11}));
  EXPECT_EQ(read_file(counter), "built\n");
}

}  // namespace
