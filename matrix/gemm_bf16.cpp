/// \file gemm_bf16.cpp
/// \brief bf16 GEMM driver: AMX tiles (VNNI-packed B, padded 32-row A strips, 32×32 C blocks, K
/// blocks up to 4096, N blocks of 1 MiB of B per thread) or the fp32 fallback (see gemm_bf16.h).
#include "matrix/gemm_bf16.h"

#include <immintrin.h>
#include <omp.h>
#include <xmmintrin.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "matrix/epilogue.h"
#include "matrix/gemm_config.h"
#include "matrix/jit/amx_kernel.h"
#include "matrix/jit/cpu_features.h"
#include "matrix/scratch.h"

namespace inductor_cpp::matrix {
namespace {

/// kKc: K per kernel call. 4096 (A strip 256 KiB, next to the 1 MiB B block in a 2 MiB L2)
/// keeps BERT's K = 3072 in one block: no fp32 C round trip (2048 measured 0.94x oneDNN on
/// 512 × 768 × 3072 against 1.04x;
/// docs/decisions/019-bf16-on-amx-only-frozen-and-up-to-256-rows.md).
constexpr int64_t kTile = 32, kKc = 4096;

int64_t round_up(int64_t x, int64_t to) {
  return (x + to - 1) / to * to;
}

uint16_t a_at(const GemmBf16Problem& p, int64_t i, int64_t kk) {
  return p.trans_a ? p.a[kk * p.lda + i] : p.a[i * p.lda + kk];
}
uint16_t b_at(const GemmBf16Problem& p, int64_t kk, int64_t j) {
  return p.trans_b ? p.b[j * p.ldb + kk] : p.b[kk * p.ldb + j];
}

/// cast_tile with VCVTNE2PS2BF16 (32 values an instruction): round to nearest even like
/// f32_to_bf16, except that fp32 denormals become zero (as in oneDNN's bf16 matmul outputs).
__attribute__((target("avx512f,avx512bw,avx512bf16"))) void cast_tile_avx512_bf16(
    const float* c, int64_t ldc, int64_t rows, int64_t cols, uint16_t* dst, int64_t ld_dst) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* src = c + r * ldc;
    uint16_t* out = dst + r * ld_dst;
    for (int64_t j = 0; j < cols; j += 32) {
      const int64_t left = std::min<int64_t>(32, cols - j);
      const __mmask32 mask = left == 32 ? ~__mmask32(0) : __mmask32((1ull << left) - 1);
      const __m512 lo = _mm512_maskz_loadu_ps(__mmask16(mask), src + j);
      const __m512 hi = _mm512_maskz_loadu_ps(__mmask16(mask >> 16), src + j + 16);
      _mm512_mask_storeu_epi16(out + j, mask, __m512i(_mm512_cvtne2ps_pbh(hi, lo)));
    }
  }
}

/// The cast stage: dst (bf16, ld_dst) = round(c) for a rows × cols tile.
void cast_tile(const float* c, int64_t ldc, int64_t rows, int64_t cols, uint16_t* dst,
               int64_t ld_dst) {
  if (xbyak::cpu_features().avx512_bf16)
    return cast_tile_avx512_bf16(c, ldc, rows, cols, dst, ld_dst);
  for (int64_t r = 0; r < rows; ++r) convert_f32_to_bf16(c + r * ldc, dst + r * ld_dst, cols);
}

/// out[2j] = r0[j], out[2j + 1] = r1[j] for j < 16 (one VNNI row: 64 bytes).
__attribute__((target("avx512f,avx512bw"))) void interleave_rows_avx512(const uint16_t* r0,
                                                                        const uint16_t* r1,
                                                                        uint16_t* out) {
  alignas(64) static const uint16_t kIndex[32] = {0,  32, 1,  33, 2,  34, 3,  35, 4,  36, 5,
                                                  37, 6,  38, 7,  39, 8,  40, 9,  41, 10, 42,
                                                  11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
  const __m512i a =
      _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(r0)));
  const __m512i b =
      _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(r1)));
  const __m512i idx = _mm512_load_si512(kIndex);
  _mm512_storeu_si512(out, _mm512_permutex2var_epi16(a, idx, b));
}

void interleave_rows(const uint16_t* r0, const uint16_t* r1, uint16_t* out) {
  // AMX hosts all have AVX-512BW; the scalar loop is for the (unused there) general case.
  if (xbyak::cpu_features().avx512) return interleave_rows_avx512(r0, r1, out);
  for (int jj = 0; jj < 16; ++jj) out[2 * jj] = r0[jj], out[2 * jj + 1] = r1[jj];
}

/// One VNNI group block from a transposed B (a Linear weight W = Bᵀ, [n, k] row-major): 16
/// rows of W (columns j of B) × 32 k. Each W row's 64 bytes are 16 (k even, k odd) pairs, i.e.
/// 16 dwords, and the group wants them column-major: out row kp (64 bytes) = dword kp of each
/// of the 16 rows. A 16 × 16 dword transpose: unpack 32- and 64-bit within 128-bit lanes,
/// then two rounds of lane shuffles (64 shuffles for 1 KiB).
__attribute__((target("avx512f"))) void transpose_group_avx512(const uint16_t* w, int64_t ldw,
                                                               uint16_t* out) {
  __m512i r[16], t[16], u[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_si512(w + i * ldw);
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
  }
  for (int q = 0; q < 16; q += 4) {  // u[q + c], lane L: column 4L + c of rows q .. q + 3
    u[q] = _mm512_unpacklo_epi64(t[q], t[q + 2]);
    u[q + 1] = _mm512_unpackhi_epi64(t[q], t[q + 2]);
    u[q + 2] = _mm512_unpacklo_epi64(t[q + 1], t[q + 3]);
    u[q + 3] = _mm512_unpackhi_epi64(t[q + 1], t[q + 3]);
  }
  for (int c = 0; c < 4; ++c) {
    const __m512i x_lo = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x44);
    const __m512i x_hi = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xee);
    const __m512i y_lo = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x44);
    const __m512i y_hi = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xee);
    _mm512_storeu_si512(out + (0 + c) * 32, _mm512_shuffle_i32x4(x_lo, y_lo, 0x88));
    _mm512_storeu_si512(out + (4 + c) * 32, _mm512_shuffle_i32x4(x_lo, y_lo, 0xdd));
    _mm512_storeu_si512(out + (8 + c) * 32, _mm512_shuffle_i32x4(x_hi, y_hi, 0x88));
    _mm512_storeu_si512(out + (12 + c) * 32, _mm512_shuffle_i32x4(x_hi, y_hi, 0xdd));
  }
}

/// Panels of 32 columns [n0, n1), each two VNNI groups of (kpad/2) × 16 × 2 bf16, zero-padded.
/// k pairs outer, column groups inner: B is read along its rows (contiguous, prefetchable). A
/// transposed B (a Linear weight) goes 16 columns × 32 k at a time through
/// transpose_group_avx512, the edges through the element loop below.
void pack_b_vnni(const GemmBf16Problem& p, int64_t n0, int64_t n1, int64_t kpad, uint16_t* dst) {
  const int64_t group = kpad * 16;  // elements per 16-column group
  int64_t kp_done = 0;  // k pairs packed by the transposing fast path (all groups but tails)
  if (p.trans_b && xbyak::cpu_features().avx512) {
    kp_done = p.k / 32 * 16;
    for (int64_t jg = n0; jg + 16 <= n1; jg += 16) {
      uint16_t* out = dst + (jg - n0) / 16 * group;
      for (int64_t kp = 0; kp < kp_done; kp += 16)
        transpose_group_avx512(p.b + jg * p.ldb + 2 * kp, p.ldb, out + kp * 32);
    }
  }
  for (int64_t kp = 0; kp < kpad / 2; ++kp) {
    const int64_t k_even = 2 * kp, k_odd = 2 * kp + 1;
    for (int64_t jg = n0; jg < n0 + round_up(n1 - n0, kTile); jg += 16) {
      const int64_t g = (jg - n0) / 16;  // groups are laid out panel by panel, two per panel
      uint16_t* out = dst + g * group + kp * 32;
      if (kp < kp_done && jg + 16 <= n1) continue;       // transposed above
      if (!p.trans_b && jg + 16 <= n1 && k_odd < p.k) {  // fast path: interleave two rows
        const uint16_t* r0 = p.b + k_even * p.ldb + jg;
        interleave_rows(r0, r0 + p.ldb, out);
        continue;
      }
      for (int64_t jj = 0; jj < 16; ++jj) {
        const int64_t j = jg + jj;
        out[2 * jj] = (k_even < p.k && j < n1) ? b_at(p, k_even, j) : 0;
        out[2 * jj + 1] = (k_odd < p.k && j < n1) ? b_at(p, k_odd, j) : 0;
      }
    }
  }
}

/// op(A) rows [i0, i0 + 32) × columns [k0, k0 + kc) into a 32-row strip with leading dim
/// lda_strip, rows past m and columns past k zero (the tile kernel reads whole 32 × 32 blocks).
void copy_a_strip(const GemmBf16Problem& p, int64_t i0, int64_t k0, int64_t kc, int64_t lda_strip,
                  uint16_t* dst) {
  const int64_t cols = std::clamp<int64_t>(p.k - k0, 0, kc);
  for (int64_t r = 0; r < kTile; ++r) {
    uint16_t* out = dst + r * lda_strip;
    const int64_t i = i0 + r;
    if (i >= p.m) {
      std::fill(out, out + kc, 0);
      continue;
    }
    if (!p.trans_a) {
      std::memcpy(out, p.a + i * p.lda + k0, cols * 2);
    } else {
      for (int64_t kk = 0; kk < cols; ++kk) out[kk] = a_at(p, i, k0 + kk);
    }
    std::fill(out + cols, out + kc, 0);
  }
}

int64_t padded_k(int64_t k) {
  return round_up(std::max<int64_t>(k, 1), kTile);
}

/// B block bytes (kc rows × nc columns) kept in L2 while the row strips of the thread pass over
/// it; 1 MiB leaves the other half of a 2 MiB L2 to the A strip and C.
constexpr int64_t kBBlockBytes = int64_t(1) << 20;

/// prepacked: all of B in VNNI panels (pack_b_bf16), or null to pack this thread's columns.
void run_amx_block(const GemmBf16Problem& p, const uint16_t* prepacked, int64_t m0, int64_t m1,
                   int64_t n0, int64_t n1) {
  thread_local ScratchVector<uint16_t> a_buf, b_buf;
  const int64_t kpad = padded_k(p.k);
  const uint16_t* b = nullptr;
  if (prepacked) {
    b = prepacked + n0 / kTile * 2 * kpad * 16;  // n0 is a multiple of 32: a panel start
  } else {
    uint16_t* packed = b_buf.get(size_t(round_up(n1 - n0, kTile) * kpad));
    pack_b_vnni(p, n0, n1, kpad, packed);
    b = packed;
  }
  alignas(64) float scratch[kTile * kTile];
  // No C (a bf16-only result, one K block): every tile is computed in `scratch`, finished there
  // and cast straight to c_bf16.
  const bool tiles_only = p.c == nullptr;
  xbyak::amx_configure_tiles();
  const int64_t group_bytes = kpad * 16 * 2;
  // Loop order: each kernel call runs a whole K block (up to kKc) so C is loaded/stored once
  // per block (C rows are often a power of two apart: a strip of C would thrash L1/L2 sets).
  // The B block (kc × nc, kBBlockBytes) stays in L2 across the thread's row strips; each A
  // strip (32 × kc) is copied (zero-padded, its rows kc + 32 apart: no set conflicts) right
  // before the nc/32 panels that reuse it, so A is read once per B block and never written
  // out whole (a copy of all of A per thread cost more than the product on the encoder).
  for (int64_t k0 = 0; k0 < kpad; k0 += kKc) {
    const int64_t kc = std::min(kKc, kpad - k0), lda_strip = kc + 32;
    uint16_t* a = a_buf.get(size_t(kTile * lda_strip));
    const int64_t nc = std::max<int64_t>(kTile, kBBlockBytes / (kc * 2) / kTile * kTile);
    const bool accumulate = k0 > 0 || p.accumulate, last = k0 + kc >= kpad;
    const auto full =
        tiles_only ? nullptr : xbyak::get_amx_bf16_kernel(lda_strip, p.ldc, accumulate);
    const auto tail = xbyak::get_amx_bf16_kernel(lda_strip, kTile, !tiles_only);
    for (int64_t nc0 = n0; nc0 < n1; nc0 += nc)
      for (int64_t i = m0; i < m1; i += kTile) {
        copy_a_strip(p, i, k0, kc, lda_strip, a);
        for (int64_t j = nc0; j < std::min(n1, nc0 + nc); j += kTile) {
          const int64_t rows = std::min(kTile, m1 - i), cols = std::min(kTile, n1 - j);
          xbyak::AmxKernelArgs args;
          args.a = a;
          args.b = b + (j - n0) / kTile * 2 * kpad * 16 + k0 * 16;
          args.b_group_stride = group_bytes;
          args.k = kc;
          if (tiles_only) {
            args.c = scratch;
            tail(&args);
            apply_epilogue_tile(scratch, kTile, rows, cols, i, j, p.epilogue, 0);
            cast_tile(scratch, kTile, rows, cols, p.c_bf16 + i * p.ldc_bf16 + j, p.ldc_bf16);
            continue;
          }
          float* c = p.c + i * p.ldc + j;
          if (rows == kTile && cols == kTile) {
            args.c = c;
            full(&args);
          } else {  // Tail: go through a 32×32 scratch tile.
            std::fill(scratch, scratch + kTile * kTile, 0.0f);
            if (accumulate)
              for (int64_t r = 0; r < rows; ++r)
                std::memcpy(scratch + r * kTile, c + r * p.ldc, cols * 4);
            args.c = scratch;
            tail(&args);
            for (int64_t r = 0; r < rows; ++r)
              std::memcpy(c + r * p.ldc, scratch + r * kTile, cols * 4);
          }
          if (!last) continue;
          apply_epilogue_tile(c, p.ldc, rows, cols, i, j, p.epilogue, 0);
          if (p.c_bf16) cast_tile(c, p.ldc, rows, cols, p.c_bf16 + i * p.ldc_bf16 + j, p.ldc_bf16);
        }
      }
  }
  xbyak::amx_release_tiles();
}

void run_amx(const GemmBf16Problem& p_in, const uint16_t* prepacked, int num_threads) {
  // A bf16-only result over several K blocks needs an fp32 C to carry the sums between them.
  // Overwritten by the first K block (zeroed only when it grows) and kept per calling thread
  // (scratch.h), so that a layer called in a loop does not fault fresh pages in on every call.
  thread_local ScratchVector<float> c_sums;
  GemmBf16Problem with_c;
  const bool needs_c = p_in.c == nullptr && padded_k(p_in.k) > kKc;
  if (needs_c) {
    with_c = p_in;
    with_c.c = c_sums.get(size_t(p_in.m * p_in.n)), with_c.ldc = p_in.n;
  }
  const GemmBf16Problem& p = needs_c ? with_c : p_in;
  const int64_t tiles_m = (p.m + kTile - 1) / kTile, tiles_n = (p.n + kTile - 1) / kTile;
  int threads = int(std::max<int64_t>(1, std::min<int64_t>(num_threads, tiles_m * tiles_n)));
  if (p.m * p.n * p.k < gemm_blocking().serial_macs) threads = 1;
  int tm = 1, tn = 1;
  choose_grid(tiles_m, tiles_n, threads, tm, tn, /*prefer_split_n=*/true);
  auto worker = [&](int t) {
    const unsigned saved_csr = _mm_getcsr();
    if (p.flush_denormals) _mm_setcsr(saved_csr | 0x8040);
    const int64_t ti = t / tn, tj = t % tn;
    const int64_t m0 = std::min(p.m, ti * tiles_m / tm * kTile),
                  m1 = std::min(p.m, (ti + 1) * tiles_m / tm * kTile);
    const int64_t n0 = std::min(p.n, tj * tiles_n / tn * kTile),
                  n1 = std::min(p.n, (tj + 1) * tiles_n / tn * kTile);
    if (m0 < m1 && n0 < n1) run_amx_block(p, prepacked, m0, m1, n0, n1);
    _mm_setcsr(saved_csr);
  };
  if (threads == 1) return worker(0);
#pragma omp parallel num_threads(threads)
  worker(omp_get_thread_num());
}

std::vector<float> widen(const uint16_t* src, int64_t rows, int64_t cols, int64_t ld) {
  std::vector<float> out(size_t(rows * ld));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) out[r * ld + c] = bf16_to_f32(src[r * ld + c]);
  return out;
}

/// Up-converts A (and B unless packed_b is given) to fp32 and runs gemm_f32(_packed).
void run_fp32_fallback(const GemmBf16Problem& p, const PackedB* packed_b, int num_threads) {
  const std::vector<float> a = widen(p.a, p.trans_a ? p.k : p.m, p.trans_a ? p.m : p.k, p.lda);
  std::vector<float> c_local;  // a bf16-only result: the fp32 C before the cast
  if (!p.c) c_local.resize(size_t(p.m * p.n));
  GemmProblem q;
  q.m = p.m, q.n = p.n, q.k = p.k;
  q.a = a.data(), q.lda = p.lda, q.trans_a = p.trans_a;
  q.c = p.c ? p.c : c_local.data(), q.ldc = p.c ? p.ldc : p.n;
  q.accumulate = p.accumulate, q.epilogue = p.epilogue;
  q.flush_denormals = p.flush_denormals;
  if (packed_b) {
    gemm_f32_packed(q, *packed_b, num_threads);
  } else {
    const std::vector<float> b = widen(p.b, p.trans_b ? p.n : p.k, p.trans_b ? p.k : p.n, p.ldb);
    q.b = b.data(), q.ldb = p.ldb, q.trans_b = p.trans_b;
    gemm_f32(q, num_threads);
  }
  if (p.c_bf16) cast_tile(q.c, q.ldc, p.m, p.n, p.c_bf16, p.ldc_bf16);
}

void check_problem(const GemmBf16Problem& p, bool needs_b) {
  if (p.m < 0 || p.n < 0 || p.k < 0 || (p.c ? p.ldc < p.n : !p.c_bf16 || p.accumulate))
    throw std::invalid_argument("gemm_bf16: bad C / sizes");
  if (p.c_bf16 && p.ldc_bf16 < p.n) throw std::invalid_argument("gemm_bf16: bad ldc_bf16");
  if (p.k > 0 && (!p.a || p.lda < (p.trans_a ? p.m : p.k)))
    throw std::invalid_argument("gemm_bf16: bad A");
  if (needs_b && p.k > 0 && (!p.b || p.ldb < (p.trans_b ? p.k : p.n)))
    throw std::invalid_argument("gemm_bf16: bad B");
}

}  // namespace

bool gemm_bf16_uses_amx() {
  return xbyak::cpu_features().amx_usable;
}

void gemm_bf16(const GemmBf16Problem& p, int num_threads) {
  check_problem(p, true);
  if (p.m == 0 || p.n == 0) return;
  if (p.allow_amx && gemm_bf16_uses_amx()) return run_amx(p, nullptr, num_threads);
  run_fp32_fallback(p, nullptr, num_threads);
}

PackedBBf16 pack_b_bf16(const uint16_t* b, int64_t k, int64_t n, int64_t ldb, bool trans_b,
                        bool allow_amx) {
  if (k < 0 || n < 0 || (k > 0 && n > 0 && !b)) throw std::invalid_argument("pack_b_bf16: bad B");
  PackedBBf16 packed;
  packed.k = k, packed.n = n, packed.amx = allow_amx && gemm_bf16_uses_amx();
  if (packed.amx) {
    GemmBf16Problem p;
    p.k = k, p.n = n, p.b = b, p.ldb = ldb, p.trans_b = trans_b;
    const int64_t kpad = padded_k(k);
    packed.vnni.resize(size_t(round_up(std::max<int64_t>(n, 1), kTile) * kpad));
    if (n > 0) pack_b_vnni(p, 0, n, kpad, packed.vnni.data());
    return packed;
  }
  const std::vector<float> wide = widen(b, trans_b ? n : k, trans_b ? k : n, ldb);
  packed.f32 = std::make_shared<const PackedB>(pack_b_f32(wide.data(), k, n, ldb, trans_b));
  return packed;
}

void gemm_bf16_packed(const GemmBf16Problem& p, const PackedBBf16& packed, int num_threads) {
  check_problem(p, false);
  if (packed.k != p.k || packed.n != p.n)
    throw std::invalid_argument("gemm_bf16: PackedBBf16 shape mismatch");
  if (p.m == 0 || p.n == 0) return;
  if (packed.amx) return run_amx(p, packed.vnni.data(), num_threads);
  run_fp32_fallback(p, packed.f32.get(), num_threads);
}

uint16_t f32_to_bf16(float f) {
  uint32_t bits;
  __builtin_memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return uint16_t((bits >> 16) | 0x40);  // quiet NaN
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return uint16_t(bits >> 16);
}

namespace {

/// 16 floats to bf16 as f32_to_bf16 does (round to nearest even, NaN stays a quiet NaN); `mask`
/// selects the lanes read and written.
__attribute__((target("avx512f"))) void convert_16_avx512(const float* src, uint16_t* dst,
                                                          __mmask16 mask) {
  const __m512i bits = _mm512_castps_si512(_mm512_maskz_loadu_ps(mask, src));
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_srli_epi32(
      _mm512_add_epi32(bits, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
  const __m512i quiet = _mm512_or_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(0x40));
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(
      _mm512_and_si512(bits, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
  _mm512_mask_cvtepi32_storeu_epi16(dst, mask, _mm512_mask_blend_epi32(nan, rounded, quiet));
}

__attribute__((target("avx512f"))) void convert_avx512(const float* src, uint16_t* dst,
                                                       int64_t count) {
  int64_t i = 0;
  for (; i + 16 <= count; i += 16) convert_16_avx512(src + i, dst + i, 0xffff);
  if (i < count) convert_16_avx512(src + i, dst + i, __mmask16((1u << (count - i)) - 1));
}

}  // namespace

void convert_f32_to_bf16(const float* src, uint16_t* dst, int64_t count) {
  if (xbyak::cpu_features().avx512) return convert_avx512(src, dst, count);
  for (int64_t i = 0; i < count; ++i) dst[i] = f32_to_bf16(src[i]);
}

}  // namespace inductor_cpp::matrix
