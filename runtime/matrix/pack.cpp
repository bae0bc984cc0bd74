/// \file pack.cpp
/// \brief Packing B into panels and A into row tiles (see pack.h). Transposed B is moved through
/// 16×16 blocks so both the reads and the writes stay within a few cache lines.
#include "runtime/matrix/pack.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "runtime/matrix/gemm.h"

namespace inductor_cpp::matrix {
namespace {

/// dst[r·ld_dst + c] = src[c·ld_src + r] for r < rows, c < cols, in 16×16 blocks.
void transpose_copy(const float* src, int64_t ld_src, int64_t rows, int64_t cols, float* dst,
                    int64_t ld_dst) {
  constexpr int64_t kBlock = 16;
  for (int64_t r0 = 0; r0 < rows; r0 += kBlock)
    for (int64_t c0 = 0; c0 < cols; c0 += kBlock) {
      const int64_t r1 = std::min(rows, r0 + kBlock), c1 = std::min(cols, c0 + kBlock);
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c) dst[r * ld_dst + c] = src[c * ld_src + r];
    }
}

}  // namespace

void pack_b_panels(const float* b, int64_t ldb, bool trans_b, int64_t k0, int64_t kc, int64_t n0,
                   int64_t ncols, int nr, int64_t panel_stride, float* dst) {
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

namespace {
void free_aligned(float* p) {
  std::free(p);
}
float* alloc_aligned(size_t floats) {
  const size_t bytes = std::max<size_t>(64, (floats * sizeof(float) + 63) / 64 * 64);
  return static_cast<float*>(std::aligned_alloc(64, bytes));
}
}  // namespace

PackedB::PackedB(int64_t k, int64_t n, int panel_width)
    : k_(k),
      n_(n),
      nr_(panel_width),
      data_(alloc_aligned(size_t((n + panel_width - 1) / panel_width) * k * panel_width),
            free_aligned) {}

}  // namespace inductor_cpp::matrix
