/// \file
/// SHA-256 (FIPS 180-4) for the kernel cache.
///
/// The cache verifies every artifact against the digest recorded in its meta.json on each
/// lookup, and callers use the same hash to build cache keys. A small self-contained
/// implementation keeps the cache free of OpenSSL and libtorch.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace inductor_cpp::kernels_cache {

/// Streaming SHA-256 hasher.
///
/// Feed bytes with update() in any chunking; finish_hex() returns the digest of everything fed
/// since construction (or since the previous finish_hex()) and resets the hasher to its
/// initial state, so one object can hash several messages in turn.
class Sha256 {
 public:
  Sha256();

  /// Append `n` bytes at `data` to the message. `data` may be null when `n` is 0.
  void update(const void* data, size_t n);

  /// Append the bytes of `s` to the message.
  void update(std::string_view s);

  /// Finish the message; returns the 64-char lowercase hex digest and resets the hasher.
  std::string finish_hex();

 private:
  void reset();
  void compress(const uint8_t* block);

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_;
  size_t buffered_;       // bytes pending in buffer_ (< 64)
  uint64_t total_bytes_;  // message length so far
};

/// SHA-256 of `bytes` as 64 lowercase hex chars.
std::string sha256_hex(std::string_view bytes);

/// SHA-256 of the contents of the file at `p` as 64 lowercase hex chars.
/// Throws std::runtime_error naming the path if the file cannot be opened or read.
std::string sha256_file_hex(const std::filesystem::path& p);

}  // namespace inductor_cpp::kernels_cache
