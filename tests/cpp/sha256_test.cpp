/// \file
/// Tests of the kernel cache's SHA-256: FIPS 180-4 / NIST test vectors, padding boundaries,
/// streaming in odd chunk sizes, digest reuse after finish, and file hashing.

#include "kernels_cache/sha256.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

namespace kc = inductor_cpp::kernels_cache;
namespace fs = std::filesystem;

namespace {

const char* const k448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
const char* const k896 =
    "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlm"
    "nopqrsmnopqrstnopqrstu";

/// Bytes i % 251 for i in [0, n): a non-periodic-in-64 pattern.
std::string pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = char(i % 251);
  return s;
}

/// A fresh private temp directory, removed on destruction.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "sha256_test.XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

}  // namespace

TEST(Sha256, FipsVectors) {
  EXPECT_EQ(kc::sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(kc::sha256_hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(kc::sha256_hex(k448),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(kc::sha256_hex(k896),
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

TEST(Sha256, OneMillionAInChunks) {
  kc::Sha256 h;
  const std::string chunk(1000, 'a');
  for (int i = 0; i < 1000; ++i) h.update(chunk);
  EXPECT_EQ(h.finish_hex(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, PaddingBoundaries) {
  // Reference digests from Python's hashlib for pattern(n).
  const std::pair<size_t, const char*> cases[] = {
      {55, "463eb28e72f82e0a96c0a4cc53690c571281131f672aa229e0d45ae59b598b59"},
      {56, "da2ae4d6b36748f2a318f23e7ab1dfdf45acdc9d049bd80e59de82a60895f562"},
      {63, "29af2686fd53374a36b0846694cc342177e428d1647515f078784d69cdb9e488"},
      {64, "fdeab9acf3710362bd2658cdc9a29e8f9c757fcf9811603a8c447cd1d9151108"},
      {65, "4bfd2c8b6f1eec7a2afeb48b934ee4b2694182027e6d0fc075074f2fabb31781"},
      {119, "da18797ed7c3a777f0847f429724a2d8cd5138e6ed2895c3fa1a6d39d18f7ec6"},
      {120, "f52b23db1fbb6ded89ef42a23ce0c8922c45f25c50b568a93bf1c075420bbb7c"},
  };
  for (const auto& [n, want] : cases) EXPECT_EQ(kc::sha256_hex(pattern(n)), want) << "n=" << n;
}

TEST(Sha256, StreamingOddChunksMatchesOneShot) {
  for (size_t n : {0, 1, 63, 64, 65, 127, 128, 129, 1000, 4099}) {
    const std::string msg = pattern(n);
    const std::string want = kc::sha256_hex(msg);
    for (size_t chunk : {1, 3, 7, 13, 63, 64, 65, 200}) {
      kc::Sha256 h;
      for (size_t off = 0; off < n; off += chunk) {
        h.update(msg.data() + off, std::min(chunk, n - off));
      }
      EXPECT_EQ(h.finish_hex(), want) << "n=" << n << " chunk=" << chunk;
    }
  }
}

TEST(Sha256, FinishResetsForReuse) {
  kc::Sha256 h;
  h.update("garbage that must not leak into the next digest");
  (void)h.finish_hex();
  h.update(nullptr, 0);
  h.update("abc");
  EXPECT_EQ(h.finish_hex(), kc::sha256_hex("abc"));
  EXPECT_EQ(h.finish_hex(), kc::sha256_hex(""));
}

TEST(Sha256, FileHashing) {
  TempDir tmp;
  const fs::path p = tmp.path / "blob.bin";
  const std::string data = pattern(200000);  // several read() chunks
  { std::ofstream(p, std::ios::binary) << data; }
  EXPECT_EQ(kc::sha256_file_hex(p), kc::sha256_hex(data));

  const fs::path empty = tmp.path / "empty";
  { std::ofstream f(empty); }
  EXPECT_EQ(kc::sha256_file_hex(empty), kc::sha256_hex(""));
}

TEST(Sha256, FileErrorsNameThePath) {
  TempDir tmp;
  const fs::path missing = tmp.path / "no_such_file";
  try {
    kc::sha256_file_hex(missing);
    FAIL() << "expected std::runtime_error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(missing.string()), std::string::npos) << e.what();
  }
  EXPECT_THROW(kc::sha256_file_hex(tmp.path), std::runtime_error);  // a directory
}
