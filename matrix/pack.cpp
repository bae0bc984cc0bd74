/// \file pack.cpp
/// \brief Packing B into panels and A into row tiles (see pack.h). Transposing copies (Bᵀ, and A
/// into its [k][row] tiles) go through 16×16 blocks: with AVX-512 a block is 16 masked row loads,
/// an in-register transpose (8 + 8 + 16 shuffles) and 16 stores, so both sides stay within a few
/// cache lines; the AVX2 path transposes the blocks' whole 8×8 parts in registers and walks the
/// rest element by element.
#include "matrix/pack.h"

#include <immintrin.h>
#include <omp.h>

// GCC 12 warns inside its own avx512fintrin.h (_mm512_undefined_ps) under target attributes.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>

#include "matrix/jit/cpu_features.h"
#include "matrix/gemm.h"
#include "matrix/gemm_config.h"

namespace inductor_cpp::matrix {
namespace {

#define AVX512_FN __attribute__((target("avx512f")))

bool use_avx512() {
  return gemm_blocking().isa == xbyak::Isa::Avx512;
}

__mmask16 first_lanes(int64_t n) {
  return n >= 16 ? __mmask16(0xffff) : __mmask16((1u << n) - 1);
}

/// In place: r[j][i] ← r[i][j] for a 16×16 block held in 16 registers.
AVX512_FN void transpose16(__m512 r[16]) {
  __m512 t[16], u[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  // u[4i + c], 128-bit lane L: column 4L + c of rows 4i .. 4i+3.
  for (int i = 0; i < 4; ++i) {
    u[4 * i + 0] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
    u[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xee);
    u[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
    u[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xee);
  }
  for (int c = 0; c < 4; ++c) {
    const __m512 v0 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x88);
    const __m512 v1 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xdd);
    const __m512 v2 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x88);
    const __m512 v3 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xdd);
    r[c] = _mm512_shuffle_f32x4(v0, v2, 0x88);
    r[8 + c] = _mm512_shuffle_f32x4(v0, v2, 0xdd);
    r[4 + c] = _mm512_shuffle_f32x4(v1, v3, 0x88);
    r[12 + c] = _mm512_shuffle_f32x4(v1, v3, 0xdd);
  }
}

/// dst[r·ld_dst + c] = src[c·ld_src + r] for r < rows, c < cols, with rows ≤ 16 and c < 16: loads
/// `cols` source rows (masked to `rows` elements), transposes, and stores `rows` destination rows
/// of `store_width` ≤ 16 floats each, zero-filled past cols.
AVX512_FN void transpose_block16(const float* src, int64_t ld_src, int64_t rows, int64_t cols,
                                 float* dst, int64_t ld_dst, int64_t store_width) {
  __m512 r[16];
  const __mmask16 load_mask = first_lanes(rows), store_mask = first_lanes(store_width);
  for (int64_t c = 0; c < 16; ++c)
    r[c] = c < cols ? _mm512_maskz_loadu_ps(load_mask, src + c * ld_src) : _mm512_setzero_ps();
  transpose16(r);
  for (int64_t i = 0; i < rows; ++i) _mm512_mask_storeu_ps(dst + i * ld_dst, store_mask, r[i]);
}

AVX512_FN void pack_b_rows_avx512(const float* b, int64_t ldb, int64_t k0, int64_t kc, int64_t n0,
                                  int64_t ncols, int nr, int64_t panel_stride, float* dst) {
  const int64_t panels = (ncols + nr - 1) / nr;
  for (int64_t kk = 0; kk < kc; ++kk) {
    const float* row = b + (k0 + kk) * ldb + n0;
    for (int64_t p = 0; p < panels; ++p) {
      float* out = dst + p * panel_stride + kk * nr;
      const float* in = row + p * nr;
      const int64_t w = std::min<int64_t>(nr, ncols - p * nr);
      for (int64_t c = 0; c < nr; c += 16)
        _mm512_storeu_ps(out + c,
                         _mm512_maskz_loadu_ps(first_lanes(std::max<int64_t>(0, w - c)), in + c));
    }
  }
}

AVX512_FN void pack_b_transposed_avx512(const float* b, int64_t ldb, int64_t k0, int64_t kc,
                                        int64_t n0, int64_t ncols, int nr, int64_t panel_stride,
                                        float* dst) {
  const int64_t panels = (ncols + nr - 1) / nr;
  for (int64_t p = 0; p < panels; ++p) {
    float* panel = dst + p * panel_stride;
    const int64_t j0 = n0 + p * nr, w = std::min<int64_t>(nr, ncols - p * nr);
    for (int64_t c0 = 0; c0 < nr; c0 += 16)
      for (int64_t kk = 0; kk < kc; kk += 16)
        transpose_block16(b + (j0 + c0) * ldb + k0 + kk, ldb, std::min<int64_t>(16, kc - kk),
                          std::clamp<int64_t>(w - c0, 0, 16), panel + kk * nr + c0, nr, 16);
  }
}

AVX512_FN void pack_a_tiles_avx512(const float* a, int64_t lda, bool trans_a, int64_t m0,
                                   int64_t rows, int64_t k0, int64_t kc, int mr, float* dst) {
  for (int64_t t = 0; t * mr < rows; ++t) {
    float* tile = dst + t * kc * mr;
    const int64_t i0 = m0 + t * mr, rr = std::min<int64_t>(mr, rows - t * mr);
    if (trans_a) {
      const __mmask16 mask = first_lanes(rr);
      for (int64_t kk = 0; kk < kc; ++kk)
        _mm512_mask_storeu_ps(tile + kk * mr, mask,
                              _mm512_maskz_loadu_ps(mask, a + (k0 + kk) * lda + i0));
      continue;
    }
    const float* src = a + i0 * lda + k0;
    for (int64_t kk = 0; kk < kc; kk += 16)
      transpose_block16(src + kk, lda, std::min<int64_t>(16, kc - kk), rr, tile + kk * mr, mr, rr);
  }
}

/// transpose_f32 on AVX-512: per 16×16 block, 16 masked row loads, the register transpose and
/// up to 16 masked stores (adding the destination's old values first with `accumulate`).
AVX512_FN void transpose_avx512(const float* src, int64_t ld_src, int64_t rows, int64_t cols,
                                float* dst, int64_t ld_dst, bool accumulate) {
  for (int64_t r0 = 0; r0 < rows; r0 += 16) {
    const int64_t rr = std::min<int64_t>(16, rows - r0);
    const __mmask16 store_mask = first_lanes(rr);
    for (int64_t c0 = 0; c0 < cols; c0 += 16) {
      const int64_t cc = std::min<int64_t>(16, cols - c0);
      const __mmask16 load_mask = first_lanes(cc);
      __m512 r[16];
      for (int64_t i = 0; i < 16; ++i)
        r[i] = i < rr ? _mm512_maskz_loadu_ps(load_mask, src + (r0 + i) * ld_src + c0)
                      : _mm512_setzero_ps();
      transpose16(r);
      for (int64_t j = 0; j < cc; ++j) {
        float* out = dst + (c0 + j) * ld_dst + r0;
        const __m512 v =
            accumulate ? _mm512_add_ps(r[j], _mm512_maskz_loadu_ps(store_mask, out)) : r[j];
        _mm512_mask_storeu_ps(out, store_mask, v);
      }
    }
  }
}

/// dst[r·ld_dst + c] = src[c·ld_src + r] for an 8×8 block: 8 row loads, the in-register
/// transpose (unpack, shuffle, 128-bit permute), 8 stores.
__attribute__((target("avx2"))) void transpose8(const float* src, int64_t ld_src, float* dst,
                                                int64_t ld_dst) {
  __m256 r[8], t[8], u[8];
  for (int c = 0; c < 8; ++c) r[c] = _mm256_loadu_ps(src + c * ld_src);
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int h = 0; h < 2; ++h) {  // rows 4h .. 4h+3 of the source
    u[4 * h + 0] = _mm256_shuffle_ps(t[4 * h], t[4 * h + 2], 0x44);
    u[4 * h + 1] = _mm256_shuffle_ps(t[4 * h], t[4 * h + 2], 0xee);
    u[4 * h + 2] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], 0x44);
    u[4 * h + 3] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], 0xee);
  }
  for (int i = 0; i < 4; ++i) {
    _mm256_storeu_ps(dst + i * ld_dst, _mm256_permute2f128_ps(u[i], u[4 + i], 0x20));
    _mm256_storeu_ps(dst + (4 + i) * ld_dst, _mm256_permute2f128_ps(u[i], u[4 + i], 0x31));
  }
}

/// dst[r·ld_dst + c] = src[c·ld_src + r] for r < rows, c < cols, in 16×16 blocks; whole 8×8
/// blocks through transpose8 where AVX2 is available (a weight transposed for packing per
/// call, as every training step's convolutions and Linear layers do, went element by element).
void transpose_copy(const float* src, int64_t ld_src, int64_t rows, int64_t cols, float* dst,
                    int64_t ld_dst) {
  constexpr int64_t kBlock = 16;
  static const bool avx2 = xbyak::cpu_features().avx2;
  for (int64_t r0 = 0; r0 < rows; r0 += kBlock)
    for (int64_t c0 = 0; c0 < cols; c0 += kBlock) {
      const int64_t r1 = std::min(rows, r0 + kBlock), c1 = std::min(cols, c0 + kBlock);
      int64_t r8 = r0, c8 = c0;  // the part covered by whole 8×8 blocks: [r0, r8) × [c0, c8)
      if (avx2) {
        r8 = r0 + (r1 - r0) / 8 * 8, c8 = c0 + (c1 - c0) / 8 * 8;
        for (int64_t r = r0; r < r8; r += 8)
          for (int64_t c = c0; c < c8; c += 8)
            transpose8(src + c * ld_src + r, ld_src, dst + r * ld_dst + c, ld_dst);
      }
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = (r < r8 ? c8 : c0); c < c1; ++c) dst[r * ld_dst + c] = src[c * ld_src + r];
    }
}

}  // namespace

void pack_b_panels(const float* b, int64_t ldb, bool trans_b, int64_t k0, int64_t kc, int64_t n0,
                   int64_t ncols, int nr, int64_t panel_stride, float* dst) {
  if (use_avx512() && nr % 16 == 0) {
    if (trans_b) return pack_b_transposed_avx512(b, ldb, k0, kc, n0, ncols, nr, panel_stride, dst);
    return pack_b_rows_avx512(b, ldb, k0, kc, n0, ncols, nr, panel_stride, dst);
  }
  const int64_t panels = (ncols + nr - 1) / nr;
  if (!trans_b) {
    // Row by row across all panels: B is read contiguously (rows are often 4 KiB apart, so
    // walking down one panel would touch a new page per row).
    for (int64_t kk = 0; kk < kc; ++kk) {
      const float* row = b + (k0 + kk) * ldb + n0;
      for (int64_t p = 0; p < panels; ++p) {
        float* out = dst + p * panel_stride + kk * nr;
        const int64_t w = std::min<int64_t>(nr, ncols - p * nr);
        std::memcpy(out, row + p * nr, w * sizeof(float));
        if (w < nr) std::fill(out + w, out + nr, 0.0f);
      }
    }
    return;
  }
  for (int64_t p = 0; p < panels; ++p) {
    float* panel = dst + p * panel_stride;
    const int64_t j0 = n0 + p * nr;
    const int64_t w = std::min<int64_t>(nr, ncols - p * nr);
    transpose_copy(b + j0 * ldb + k0, ldb, kc, w, panel, nr);
    if (w < nr)
      for (int64_t kk = 0; kk < kc; ++kk)
        std::fill(panel + kk * nr + w, panel + (kk + 1) * nr, 0.0f);
  }
}

void pack_a_tiles(const float* a, int64_t lda, bool trans_a, int64_t m0, int64_t rows, int64_t k0,
                  int64_t kc, int mr, float* dst) {
  if (use_avx512() && mr <= 16)
    return pack_a_tiles_avx512(a, lda, trans_a, m0, rows, k0, kc, mr, dst);
  for (int64_t t = 0; t * mr < rows; ++t) {
    float* tile = dst + t * kc * mr;
    const int64_t i0 = m0 + t * mr, rr = std::min<int64_t>(mr, rows - t * mr);
    if (trans_a) {
      for (int64_t kk = 0; kk < kc; ++kk)
        std::memcpy(tile + kk * mr, a + (k0 + kk) * lda + i0, rr * sizeof(float));
      continue;
    }
    // k outer, rows inner: contiguous writes; the rr source rows stay in L1 across k.
    const float* src = a + i0 * lda + k0;
    for (int64_t kk = 0; kk < kc; ++kk)
      for (int64_t r = 0; r < rr; ++r) tile[kk * mr + r] = src[r * lda + kk];
  }
}

void transpose_f32(const float* src, int64_t ld_src, int64_t rows, int64_t cols, float* dst,
                   int64_t ld_dst, bool accumulate) {
  if (use_avx512()) return transpose_avx512(src, ld_src, rows, cols, dst, ld_dst, accumulate);
  for (int64_t c = 0; c < cols; ++c)
    for (int64_t r = 0; r < rows; ++r) {
      const float v = src[r * ld_src + c];
      dst[c * ld_dst + r] = accumulate ? dst[c * ld_dst + r] + v : v;
    }
}

namespace {
std::shared_ptr<float> alloc_aligned(size_t floats) {
  const size_t bytes = std::max<size_t>(64, (floats * sizeof(float) + 63) / 64 * 64);
  float* data = static_cast<float*>(std::aligned_alloc(64, bytes));
  if (!data) throw std::bad_alloc();
  return std::shared_ptr<float>(data, [](float* p) { std::free(p); });
}
}  // namespace

void for_panel_ranges(int64_t panels, int64_t floats, int num_threads,
                      const std::function<void(int64_t, int64_t)>& pack) {
  constexpr int64_t kMinFloatsPerThread = int64_t(32) << 10;
  const int workers = int(
      std::max<int64_t>(1, std::min<int64_t>({num_threads, panels, floats / kMinFloatsPerThread})));
  if (workers == 1 || num_threads <= 1) return pack(0, panels);
#pragma omp parallel num_threads(num_threads)  // the whole team (for_each_worker)
  for_each_worker(workers,
                  [&](int64_t t) { pack(t * panels / workers, (t + 1) * panels / workers); });
}

PackedB::PackedB(int64_t k, int64_t n, int panel_width, const PackedStorage& storage)
    : k_(k), n_(n), nr_(panel_width) {
  const size_t floats =
      size_t(std::max<int64_t>(1, (n + panel_width - 1) / panel_width * k * panel_width));
  data_ = storage ? storage(floats) : alloc_aligned(floats);
  if (!data_ || reinterpret_cast<uintptr_t>(data_.get()) % 64 != 0)
    throw std::invalid_argument("PackedB: storage must be 64-byte aligned");
}

}  // namespace inductor_cpp::matrix
