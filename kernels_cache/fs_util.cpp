/// \file
/// POSIX helpers of the kernel cache: private-directory checks and creation, exclusive file
/// writes, mtimes, tree sizes, atomic-looking removal and flock()-based locking.

#include "kernels_cache/fs_util.h"

#include <thread>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utime.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>
#include <system_error>
#include <vector>

namespace inductor_cpp::kernels_cache::detail {
namespace {

std::string errno_text(int err) {
  return std::strerror(err);
}

std::runtime_error io_error(const std::string& what, const fs::path& p, int err) {
  return std::runtime_error("kernels_cache: " + what + " " + p.string() + ": " + errno_text(err));
}

/// mkdir(p, 0700) + chmod 0700. Returns 0, or the errno (EEXIST included).
int mkdir_private(const fs::path& p) {
  if (::mkdir(p.c_str(), 0700) != 0) return errno;
  // The umask may have removed bits we want (never added any); make the mode exact.
  if (::chmod(p.c_str(), 0700) != 0) return errno;
  return 0;
}

/// Write all of `bytes` to `fd`; returns 0 or the errno.
int write_all(int fd, std::string_view bytes) {
  const char* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    p += n;
    left -= size_t(n);
  }
  return 0;
}

}  // namespace

bool is_lower_hex(std::string_view s, size_t len) {
  if (s.size() != len) return false;
  for (char c : s) {
    const bool digit = c >= '0' && c <= '9';
    const bool letter = c >= 'a' && c <= 'f';
    if (!digit && !letter) return false;
  }
  return true;
}

std::string mode_octal(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", unsigned(mode & 07777));
  return buf;
}

DirCheck check_private_dir(const fs::path& p, bool follow_symlinks) {
  struct stat st {};
  const int rc = follow_symlinks ? ::stat(p.c_str(), &st) : ::lstat(p.c_str(), &st);
  if (rc != 0 && errno == ENOENT) return {DirCheck::Missing, p.string() + " does not exist"};
  if (rc != 0) return {DirCheck::Bad, "cannot stat " + p.string() + ": " + errno_text(errno)};
  if (!S_ISDIR(st.st_mode)) {
    return {DirCheck::Bad, p.string() + " is not a directory" +
                               (S_ISLNK(st.st_mode) ? std::string(" (symlink)") : "")};
  }
  const uid_t me = ::geteuid();
  if (st.st_uid != me) {
    return {DirCheck::Bad, p.string() + " is owned by uid " + std::to_string(st.st_uid) +
                               ", not by the current user (uid " + std::to_string(me) + ")"};
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return {DirCheck::Bad, p.string() + " has mode " + mode_octal(st.st_mode) +
                               " (writable by group or others; expected 0700)"};
  }
  return {DirCheck::Ok, ""};
}

DirCheck ensure_private_dir(const fs::path& p, bool parents, bool follow_symlinks) {
  DirCheck c = check_private_dir(p, follow_symlinks);
  if (c.status != DirCheck::Missing) return c;
  if (parents && p.has_parent_path() && p.parent_path() != p) {
    const fs::path parent = p.parent_path();
    struct stat st {};
    if (::stat(parent.c_str(), &st) != 0 && errno == ENOENT) {
      // Ancestors only need to exist; the safety check applies to `p` itself.
      const DirCheck pc = ensure_private_dir(parent, true, true);
      if (::stat(parent.c_str(), &st) != 0) return pc;
    }
  }
  const int err = mkdir_private(p);
  if (err != 0 && err != EEXIST) {
    return {DirCheck::Bad, "cannot create " + p.string() + ": " + errno_text(err)};
  }
  return check_private_dir(p, follow_symlinks);
}

fs::path make_unique_dir(const fs::path& parent, const std::string& stem) {
  for (int attempt = 0; attempt < 16; ++attempt) {
    const fs::path p = parent / (stem + "." + std::to_string(::getpid()) + "." + random_hex(12));
    const int err = mkdir_private(p);
    if (err == 0) return p;
    if (err != EEXIST) throw io_error("cannot create directory", p, err);
  }
  throw std::runtime_error("kernels_cache: cannot create a unique directory in " + parent.string());
}

void write_new_file(const fs::path& p, std::string_view bytes) {
  const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) throw io_error("cannot create", p, errno);
  const int err = write_all(fd, bytes);
  const int close_err = ::close(fd) != 0 ? errno : 0;
  if (err != 0) throw io_error("cannot write", p, err);
  if (close_err != 0) throw io_error("cannot close", p, close_err);
}

std::string read_whole_file(const fs::path& p) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw io_error("cannot open", p, errno);
  std::string out;
  std::vector<char> buf(1 << 16);
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n == 0) break;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw io_error("cannot read", p, err);
    }
    out.append(buf.data(), size_t(n));
  }
  ::close(fd);
  return out;
}

bool touch_now(const fs::path& p) noexcept {
  if (::utime(p.c_str(), nullptr) == 0) return true;
  if (errno != ENOENT) return false;
  const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  ::close(fd);
  return ::utime(p.c_str(), nullptr) == 0;
}

std::optional<int64_t> mtime_ns(const fs::path& p) noexcept {
  struct stat st {};
  if (::lstat(p.c_str(), &st) != 0) return std::nullopt;
  return int64_t(st.st_mtim.tv_sec) * 1000000000 + int64_t(st.st_mtim.tv_nsec);
}

uint64_t tree_bytes(const fs::path& dir) noexcept {
  std::error_code ec;
  uint64_t total = 0;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code sec;
    if (!it->is_regular_file(sec) || it->is_symlink(sec)) continue;
    const uintmax_t n = it->file_size(sec);
    if (!sec) total += n;
  }
  return total;
}

std::string remove_tree(const fs::path& dir, const fs::path& trash_parent) noexcept {
  try {
    fs::path victim = dir;
    if (!trash_parent.empty()) {
      const fs::path trash = trash_parent / (dir.filename().string() + ".trash." +
                                             std::to_string(::getpid()) + "." + random_hex(12));
      if (::rename(dir.c_str(), trash.c_str()) != 0) {
        if (errno == ENOENT) return "";  // someone else removed it first
        return "cannot move " + dir.string() + " to " + trash.string() + ": " + errno_text(errno);
      }
      victim = trash;
    }
    std::error_code ec;
    fs::remove_all(victim, ec);
    if (ec && ec != std::errc::no_such_file_or_directory) {
      return "cannot remove " + victim.string() + ": " + ec.message();
    }
    return "";
  } catch (const std::exception& e) {
    return std::string("cannot remove ") + dir.string() + ": " + e.what();
  }
}

std::string random_hex(size_t n) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::random_device rd;
  std::string out;
  out.reserve(n);
  while (out.size() < n) {
    uint32_t r = rd();
    for (int i = 0; i < 8 && out.size() < n; ++i, r >>= 4) out.push_back(kHex[r & 0xf]);
  }
  return out;
}

FileLock::FileLock(const fs::path& p, Mode mode, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  // Retry if the lock file was unlinked/replaced between open() and flock(): a lock on an
  // orphaned inode would not exclude a process that opens the new file.
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int fd = ::open(p.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) throw io_error("cannot open lock file", p, errno);
    const int op = LOCK_EX | (mode == Mode::Blocking ? 0 : LOCK_NB);
    int rc;
    for (;;) {
      rc = ::flock(fd, op);
      if (rc == 0 || errno == EINTR) {
        if (rc == 0) break;
        continue;
      }
      if (errno != EWOULDBLOCK || mode != Mode::Timed ||
          std::chrono::steady_clock::now() >= deadline)
        break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (rc != 0) {
      const int err = errno;
      ::close(fd);
      if (err == EWOULDBLOCK && mode != Mode::Blocking) return;
      throw io_error("cannot lock", p, err);
    }
    struct stat held {
    }, now{};
    const bool same = ::fstat(fd, &held) == 0 && ::lstat(p.c_str(), &now) == 0 &&
                      held.st_dev == now.st_dev && held.st_ino == now.st_ino;
    if (same) {
      fd_ = fd;
      return;
    }
    ::close(fd);
  }
  throw std::runtime_error("kernels_cache: lock file keeps changing: " + p.string());
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the flock
}

}  // namespace inductor_cpp::kernels_cache::detail
