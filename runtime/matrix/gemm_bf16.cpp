/// \file gemm_bf16.cpp
/// \brief bf16 GEMM driver: AMX tiles (VNNI-packed B, padded A copies, 32×32 C blocks, K blocks
/// up to 2048, N blocks of 128 per thread) or the fp32 fallback (see gemm_bf16.h).
#include "runtime/matrix/gemm_bf16.h"

#include <immintrin.h>
#include <omp.h>
#include <xmmintrin.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "codegen/xbyak/amx_kernel.h"
#include "codegen/xbyak/cpu_features.h"
#include "runtime/matrix/epilogue.h"
#include "runtime/matrix/gemm_config.h"

namespace inductor_cpp::matrix {
namespace {

constexpr int64_t kTile = 32, kKc = 2048, kNc = 128;

int64_t round_up(int64_t x, int64_t to) {
  return (x + to - 1) / to * to;
}

uint16_t a_at(const GemmBf16Problem& p, int64_t i, int64_t kk) {
  return p.trans_a ? p.a[kk * p.lda + i] : p.a[i * p.lda + kk];
}
uint16_t b_at(const GemmBf16Problem& p, int64_t kk, int64_t j) {
  return p.trans_b ? p.b[j * p.ldb + kk] : p.b[kk * p.ldb + j];
}

/// The cast stage: dst (bf16, ld_dst) = round(c) for a rows × cols tile.
void cast_tile(const float* c, int64_t ldc, int64_t rows, int64_t cols, uint16_t* dst,
               int64_t ld_dst) {
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

/// Panels of 32 columns [n0, n1), each two VNNI groups of (kpad/2) × 16 × 2 bf16, zero-padded.
/// k pairs outer, column groups inner: B is read along its rows (contiguous, prefetchable).
void pack_b_vnni(const GemmBf16Problem& p, int64_t n0, int64_t n1, int64_t kpad, uint16_t* dst) {
  const int64_t group = kpad * 16;  // elements per 16-column group
  for (int64_t kp = 0; kp < kpad / 2; ++kp) {
    const int64_t k_even = 2 * kp, k_odd = 2 * kp + 1;
    for (int64_t jg = n0; jg < n0 + round_up(n1 - n0, kTile); jg += 16) {
      const int64_t g = (jg - n0) / 16;  // groups are laid out panel by panel, two per panel
      uint16_t* out = dst + g * group + kp * 32;
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

/// op(A) rows [m0, m1) padded to a multiple of 32 rows and kpad columns, leading dim lda_pad.
void copy_a_padded(const GemmBf16Problem& p, int64_t m0, int64_t m1, int64_t kpad, int64_t lda_pad,
                   uint16_t* dst) {
  const int64_t rows = round_up(m1 - m0, kTile);
  for (int64_t r = 0; r < rows; ++r) {
    uint16_t* out = dst + r * lda_pad;
    const int64_t i = m0 + r;
    if (i < m1 && !p.trans_a) {
      std::memcpy(out, p.a + i * p.lda, p.k * 2);
    } else {
      for (int64_t kk = 0; kk < p.k; ++kk) out[kk] = i < m1 ? a_at(p, i, kk) : 0;
    }
    std::fill(out + p.k, out + kpad, 0);
  }
}

template <class T>
T* grow(std::vector<T>& v, size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

int64_t padded_k(int64_t k) {
  return round_up(std::max<int64_t>(k, 1), kTile);
}

/// prepacked: all of B in VNNI panels (pack_b_bf16), or null to pack this thread's columns.
void run_amx_block(const GemmBf16Problem& p, const uint16_t* prepacked, int64_t m0, int64_t m1,
                   int64_t n0, int64_t n1) {
  thread_local std::vector<uint16_t> a_buf, b_buf;
  const int64_t kpad = padded_k(p.k), lda_pad = kpad + 32;
  uint16_t* a = grow(a_buf, size_t(round_up(m1 - m0, kTile) * lda_pad));
  copy_a_padded(p, m0, m1, kpad, lda_pad, a);
  const uint16_t* b = nullptr;
  if (prepacked) {
    b = prepacked + n0 / kTile * 2 * kpad * 16;  // n0 is a multiple of 32: a panel start
  } else {
    uint16_t* packed = grow(b_buf, size_t(round_up(n1 - n0, kTile) * kpad));
    pack_b_vnni(p, n0, n1, kpad, packed);
    b = packed;
  }
  float scratch[kTile * kTile];
  xbyak::amx_configure_tiles();
  const int64_t group_bytes = kpad * 16 * 2;
  // Loop order: each kernel call runs a whole K block (up to 2048) so C is loaded/stored once
  // per block (C rows are often a power of two apart: a strip of C would thrash L1/L2 sets).
  // The A slice (32 × kc) is reused across the nc/32 panels of one N block, the B block
  // (kc × nc) across all row blocks; both stay in L2.
  for (int64_t k0 = 0; k0 < kpad; k0 += kKc) {
    const int64_t kc = std::min(kKc, kpad - k0);
    const bool accumulate = k0 > 0 || p.accumulate, last = k0 + kc >= kpad;
    const auto full = xbyak::get_amx_bf16_kernel(lda_pad, p.ldc, accumulate);
    const auto tail = xbyak::get_amx_bf16_kernel(lda_pad, kTile, true);
    for (int64_t nc0 = n0; nc0 < n1; nc0 += kNc)
      for (int64_t i = m0; i < m1; i += kTile)
        for (int64_t j = nc0; j < std::min(n1, nc0 + kNc); j += kTile) {
          const int64_t rows = std::min(kTile, m1 - i), cols = std::min(kTile, n1 - j);
          xbyak::AmxKernelArgs args;
          args.a = a + (i - m0) * lda_pad + k0;
          args.b = b + (j - n0) / kTile * 2 * kpad * 16 + k0 * 16;
          args.b_group_stride = group_bytes;
          args.k = kc;
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
  xbyak::amx_release_tiles();
}

void run_amx(const GemmBf16Problem& p, const uint16_t* prepacked, int num_threads) {
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
  GemmProblem q;
  q.m = p.m, q.n = p.n, q.k = p.k;
  q.a = a.data(), q.lda = p.lda, q.trans_a = p.trans_a;
  q.c = p.c, q.ldc = p.ldc, q.accumulate = p.accumulate, q.epilogue = p.epilogue;
  q.flush_denormals = p.flush_denormals;
  if (packed_b) {
    gemm_f32_packed(q, *packed_b, num_threads);
  } else {
    const std::vector<float> b = widen(p.b, p.trans_b ? p.n : p.k, p.trans_b ? p.k : p.n, p.ldb);
    q.b = b.data(), q.ldb = p.ldb, q.trans_b = p.trans_b;
    gemm_f32(q, num_threads);
  }
  if (p.c_bf16) cast_tile(p.c, p.ldc, p.m, p.n, p.c_bf16, p.ldc_bf16);
}

void check_problem(const GemmBf16Problem& p, bool needs_b) {
  if (p.m < 0 || p.n < 0 || p.k < 0 || !p.c || p.ldc < p.n)
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

void convert_f32_to_bf16(const float* src, uint16_t* dst, int64_t count) {
  for (int64_t i = 0; i < count; ++i) dst[i] = f32_to_bf16(src[i]);
}

}  // namespace inductor_cpp::matrix
