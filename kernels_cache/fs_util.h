/// \file
/// POSIX file-system helpers for the kernel cache (internal; not part of the public API).
///
/// The cache loads compiled code from disk, so it must only trust directories that the
/// current user owns and nobody else can write, must create them private regardless of the
/// umask, and must coordinate processes with flock(). These helpers keep that POSIX detail
/// out of store.cpp. None of them hold global state.
#pragma once

#include <chrono>

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace inductor_cpp::kernels_cache::detail {

namespace fs = std::filesystem;

/// True iff `s` is exactly `len` chars of [0-9a-f].
bool is_lower_hex(std::string_view s, size_t len);

/// Permission bits of `mode` as 4 octal digits, e.g. "0700".
std::string mode_octal(mode_t mode);

/// Outcome of a directory safety check.
struct DirCheck {
  enum Status { Ok, Missing, Bad } status;
  std::string reason;  ///< for Missing / Bad: names the path (and its owner or mode)
  bool ok() const { return status == Ok; }
};

/// Is `p` a directory owned by geteuid() and not writable by group or others?
/// `follow_symlinks` = true uses stat() (for the user-chosen root), false uses lstat() (inside
/// the root a symlink never counts as a directory). Checks mode bits, not access().
DirCheck check_private_dir(const fs::path& p, bool follow_symlinks);

/// Create `p` if missing with mode 0700 (mkdir then chmod, so the umask does not matter; with
/// `parents`, missing ancestors are created 0700 too), then check_private_dir(). An existing
/// directory is never modified, only checked.
DirCheck ensure_private_dir(const fs::path& p, bool parents, bool follow_symlinks);

/// Create a new private (0700) directory parent/<stem>.<pid>.<random>. Throws
/// std::runtime_error on failure.
fs::path make_unique_dir(const fs::path& parent, const std::string& stem);

/// Create a new file `p` (must not exist; O_EXCL|O_NOFOLLOW, mode 0600) holding `bytes`.
/// Throws std::runtime_error naming the path on failure.
void write_new_file(const fs::path& p, std::string_view bytes);

/// The whole contents of the file `p`. Throws std::runtime_error naming the path on failure.
std::string read_whole_file(const fs::path& p);

/// Set the mtime of `p` to now, creating it (empty, 0600) if missing. Best effort: returns
/// false on failure.
bool touch_now(const fs::path& p) noexcept;

/// mtime of `p` (lstat) in nanoseconds since the epoch, or nullopt if it cannot be stat'ed.
std::optional<int64_t> mtime_ns(const fs::path& p) noexcept;

/// Sum of the sizes of the regular files under `dir` (recursively, symlinks not followed).
uint64_t tree_bytes(const fs::path& dir) noexcept;

/// Remove the directory tree `dir` so that no reader ever sees it half-deleted: rename it
/// into `trash_parent` (unique name) first, then delete it there. With an empty
/// `trash_parent` it is deleted in place. Returns "" on success or if `dir` is already gone,
/// else the reason.
std::string remove_tree(const fs::path& dir, const fs::path& trash_parent) noexcept;

/// `n` random lowercase hex chars (std::random_device).
std::string random_hex(size_t n);

/// Exclusive flock() on a lock file, released on destruction (RAII).
///
/// The lock file is created (0600, O_NOFOLLOW) if missing and never deleted by the lock
/// itself. If it is deleted or replaced while we wait (e.g. by Store::clear()), the lock is
/// retaken on the new file, so holders of one path always exclude each other.
class FileLock {
 public:
  enum class Mode { Blocking, TryOnce, Timed };

  /// Takes the lock. Blocking waits for it; TryOnce gives up at once if another holder has it;
  /// Timed polls until `timeout` has passed (a holder that is stopped, e.g. in a debugger,
  /// must not hang every other process). When it gives up, held() is false. Throws
  /// std::runtime_error on IO errors.
  FileLock(const fs::path& p, Mode mode,
           std::chrono::milliseconds timeout = std::chrono::milliseconds(0));
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

}  // namespace inductor_cpp::kernels_cache::detail
