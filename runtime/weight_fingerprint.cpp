/// \file
/// weight_fingerprint: keyed multiply-accumulate sums of a weight's bytes, per 64 KiB chunk (see
/// the header for why, and for what it is guaranteed to see).
///
/// The inner step is xxHash3's accumulate: for each 64-bit word x, with a key k that differs per
/// word position, lane j gets lo32(x ^ k) · hi32(x ^ k) and lane j ^ 1 (its neighbour) gets x
/// itself. A chunk keeps four lanes (the words' positions mod 4): a change to one word moves
/// its neighbour lane by exactly x' − x ≠ 0, so it is always seen; the products make every
/// other change land on an unrelated 64-bit value per lane.
#include "runtime/weight_fingerprint.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstring>

#include "matrix/gemm_config.h"

namespace inductor_cpp::runtime {
namespace {

constexpr int64_t kChunkBytes = 64 * 1024;
constexpr int64_t kBlockBytes = 128;  ///< four ymm words per step: four independent sums
/// Bytes per worker: one thread under this; a 4 MiB weight (a 1024² Linear) on 16 workers at
/// 16 threads, where 1 MiB a worker left 12 of the team idle while 4 read from L3.
constexpr int64_t kBytesPerThread = 256 << 10;

#define AVX2_FN __attribute__((target("avx2")))

/// The four lane sums of one chunk of `bytes` bytes (a multiple of kBlockBytes).
AVX2_FN void hash_blocks(const unsigned char* p, int64_t bytes, uint64_t* lanes) {
  // Keys: an arithmetic progression per lane with odd, unrelated steps (so no two word
  // positions of a chunk share a key).
  const __m256i step = _mm256_set_epi64x(0x9E3779B97F4A7C15ull, 0xC2B2AE3D27D4EB4Full,
                                         0x165667B19E3779F9ull, 0x85EBCA77C2B2AE63ull);
  const __m256i step4 = _mm256_slli_epi64(step, 2);
  __m256i k[4];
  k[0] = _mm256_set_epi64x(0x27D4EB2F165667C5ull, 0xFF51AFD7ED558CCDull, 0xC4CEB9FE1A85EC53ull,
                           0x94D049BB133111EBull);
  for (int j = 1; j < 4; ++j) k[j] = _mm256_add_epi64(k[j - 1], step);
  __m256i acc[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                    _mm256_setzero_si256()};
  for (int64_t i = 0; i < bytes; i += kBlockBytes) {
    for (int j = 0; j < 4; ++j) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 32 * j));
      const __m256i d = _mm256_xor_si256(v, k[j]);
      const __m256i product = _mm256_mul_epu32(d, _mm256_srli_epi64(d, 32));
      acc[j] = _mm256_add_epi64(acc[j], _mm256_add_epi64(_mm256_shuffle_epi32(v, 0x4e), product));
      k[j] = _mm256_add_epi64(k[j], step4);
    }
  }
  const __m256i sum = _mm256_add_epi64(_mm256_add_epi64(acc[0], acc[1]), _mm256_add_epi64(acc[2], acc[3]));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(lanes), sum);
}

/// One chunk: whole blocks in place, a last partial block zero-padded (its length is in the
/// fingerprint's size, so padding cannot alias real zeros).
void hash_chunk(const unsigned char* p, int64_t bytes, uint64_t* lanes) {
  const int64_t whole = bytes / kBlockBytes * kBlockBytes;
  hash_blocks(p, whole, lanes);
  if (whole == bytes) return;
  alignas(32) unsigned char tail[kBlockBytes] = {};
  std::memcpy(tail, p + whole, static_cast<size_t>(bytes - whole));
  uint64_t more[4];
  hash_blocks(tail, kBlockBytes, more);
  for (int j = 0; j < 4; ++j) lanes[j] += more[j] * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(j);
}

}  // namespace

std::optional<WeightFingerprint> weight_fingerprint(const at::Tensor& w, int threads) {
  if (!w.has_storage() || !w.is_non_overlapping_and_dense()) return std::nullopt;
  // Dense and non-overlapping with non-negative strides: the elements fill
  // [data_ptr, data_ptr + numel) exactly, in some order.
  const auto* base = static_cast<const unsigned char*>(w.data_ptr());
  const int64_t bytes = w.numel() * w.element_size();
  const int64_t chunks = (bytes + kChunkBytes - 1) / kChunkBytes;
  WeightFingerprint lanes(static_cast<size_t>(4 * chunks + 1));
  lanes.back() = static_cast<uint64_t>(bytes);
  const int workers = static_cast<int>(std::clamp<int64_t>(bytes / kBytesPerThread, 1, std::max(threads, 1)));
  const auto worker = [&](int t) {
    for (int64_t c = chunks * t / workers; c < chunks * (t + 1) / workers; ++c)
      hash_chunk(base + c * kChunkBytes, std::min(kChunkBytes, bytes - c * kChunkBytes), lanes.data() + 4 * c);
  };
  if (workers == 1) {
    worker(0);
  } else {
    // The whole team, idle workers skipping (gemm_config.h for_each_worker): with a smaller team
    // the other threads go idle and the GEMM's full-team region right after this waits for them
    // (H100 host, 16 threads: compiled relu(addmm) 1024³ 3.16 ms against the library's 2.01).
#pragma omp parallel num_threads(std::max(threads, workers))
    matrix::for_each_worker(workers, worker);
  }
  return lanes;
}

}  // namespace inductor_cpp::runtime
