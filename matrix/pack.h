/// \file pack.h
/// \brief Private to matrix: copying B panels and A blocks into the kernels' layouts.
/// Both packers have an AVX-512 path (16×16 register transposes, masked tails) used when the
/// blocking's ISA is AVX-512 (gemm_config.h), and a scalar path otherwise (AVX2 hosts and the
/// INDUCTOR_CPP_MATRIX_ISA=avx2 test run, which thereby covers it).
#pragma once

#include <cstdint>
#include <functional>

namespace inductor_cpp::matrix {

/// Packs op(B)[k0, k0+kc) × [n0, n0+ncols) into ceil(ncols/nr) panels laid out back to back,
/// each kc rows × nr floats (zero-padded on the right). op(B)(k, j) = trans_b ? b[j·ldb + k]
/// : b[k·ldb + j]. panel_stride is the distance between panels in floats (≥ kc·nr).
void pack_b_panels(const float* b, int64_t ldb, bool trans_b, int64_t k0, int64_t kc, int64_t n0,
                   int64_t ncols, int nr, int64_t panel_stride, float* dst);

/// Runs pack(p0, p1) on panel ranges [p0, p1) that split [0, panels) evenly over up to
/// num_threads OpenMP threads (one range on the caller's thread when the packed size, `floats`,
/// is under 32K floats a thread). Packing a weight that changes every call (training) on one
/// thread cost 0.5 ms a convolution on average in a 16-thread resnet18 step.
void for_panel_ranges(int64_t panels, int64_t floats, int num_threads,
                      const std::function<void(int64_t, int64_t)>& pack);

/// Packs op(A)[m0, m0+rows) × [k0, k0+kc) into row tiles of mr rows: tile t starts at
/// dst + t·kc·mr and holds element (k, r) at k·mr + r, so the micro-kernel reads it with row
/// stride 1 and k stride mr (one contiguous stream per call). A last partial tile is not padded.
/// op(A)(i, k) = trans_a ? a[k·lda + i] : a[i·lda + k].
void pack_a_tiles(const float* a, int64_t lda, bool trans_a, int64_t m0, int64_t rows, int64_t k0,
                  int64_t kc, int mr, float* dst);

/// dst[c·ld_dst + r] = src[r·ld_src + c] for r < rows, c < cols, or += with `accumulate`: a
/// transposing copy through 16×16 register blocks (AVX-512) or element by element (otherwise).
/// The swapped product's output pass (gemm_swapped.h) turns its Cᵀ into C with it.
void transpose_f32(const float* src, int64_t ld_src, int64_t rows, int64_t cols, float* dst,
                   int64_t ld_dst, bool accumulate);

}  // namespace inductor_cpp::matrix
