/// \file attention_backward.cpp
/// \brief The gradients of scaled dot-product attention on the FMA micro-kernels (see
/// attention_backward.h).
#include "matrix/attention_backward.h"

#include <immintrin.h>
#include <omp.h>

// GCC 12 warns inside its own avx512fintrin.h (_mm512_undefined_ps) under target attributes.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "matrix/jit/microkernel.h"
#include "matrix/attention_tiles.h"
#include "matrix/gemm_config.h"
#include "matrix/pack.h"
#include "matrix/scratch.h"
#include "matrix/vector_math.h"

namespace inductor_cpp::matrix {
namespace {

using attention_tiles::KernelTable;
using attention_tiles::make_kernels;
using attention_tiles::tiled;

constexpr int64_t kQueryBlock = 64;              ///< query rows per block
constexpr int kScoreRows = 14, kScoreCols = 32;  ///< S and dP register tiles (kᵀ / vᵀ panels)
constexpr int kGradRows = 6, kGradCols = 64;     ///< grad_q / grad_k / grad_v register tiles
/// Keys per pass of grad_q = dS·k: 128 rows of a 64-column k panel (32 KiB) stay in L1 across the
/// block's row tiles.
constexpr int64_t kQueryKeysPerPass = 128;

/// Row i of a query block, in place: s becomes p = exp(s·scale [+ mask] − lse) over the `valid`
/// keys the row sees (0 for the others, up to `cols`), dp becomes dS = p·(dp − di)·scale, di
/// being the row's Σ dO ∘ O. A -inf from the mask gives p = 0 exactly.
INDUCTOR_CPP_AVX512_FN void gradient_row(float* s, float* dp, int64_t cols, int64_t valid,
                                         float scale, const float* mask, float lse, float di) {
  const __m512 vscale = _mm512_set1_ps(scale), vlse = _mm512_set1_ps(lse), vdi = _mm512_set1_ps(di),
               neg_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  int64_t j = 0;
  for (; j < valid; j += 16) {
    __mmask16 lanes = valid - j >= 16 ? __mmask16(0xffff) : __mmask16((1u << (valid - j)) - 1);
    const __m512 scores = _mm512_maskz_loadu_ps(lanes, s + j);
    __m512 x;
    if (mask) {
      x = _mm512_fmadd_ps(scores, vscale, _mm512_maskz_loadu_ps(lanes, mask + j));
      lanes = _mm512_mask_cmp_ps_mask(lanes, x, neg_inf, _CMP_NEQ_UQ);
      x = _mm512_sub_ps(x, vlse);
    } else {
      x = _mm512_fmsub_ps(scores, vscale, vlse);
    }
    const __m512 p = _mm512_maskz_mov_ps(lanes, simd::exp_ps(x));
    const __m512 dps = _mm512_sub_ps(_mm512_maskz_loadu_ps(lanes, dp + j), vdi);
    _mm512_storeu_ps(s + j, p);  // whole vectors: rows have room up to cols rounded to 16
    _mm512_storeu_ps(dp + j, _mm512_maskz_mul_ps(lanes, _mm512_mul_ps(p, dps), vscale));
  }
  for (; j < cols; ++j) s[j] = dp[j] = 0.0f;
}

/// Σ_d a[d]·b[d] over n floats.
INDUCTOR_CPP_AVX512_FN float dot(const float* a, const float* b, int64_t n) {
  __m512 acc = _mm512_setzero_ps();
  for (int64_t d = 0; d < n; d += 16) {
    const __mmask16 lanes = n - d >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - d)) - 1);
    acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(lanes, a + d), _mm512_maskz_loadu_ps(lanes, b + d),
                          acc);
  }
  return _mm512_reduce_add_ps(acc);
}

/// Zeroes rows × cols floats at row stride ld.
void zero_rows(float* x, int64_t rows, int64_t cols, int64_t ld) {
  for (int64_t i = 0; i < rows; ++i) std::fill(x + i * ld, x + i * ld + cols, 0.0f);
}

/// Score-shaped kernels (S = q·kᵀ, dP = dO·vᵀ): 14 × 32 tiles over packed 32-key panels of a
/// reduction of `k`, A rows at `a_row_stride`, into rows of `ld_scores`.
KernelTable score_kernels(int64_t k, int64_t a_row_stride, int64_t ld_scores, int64_t kv_len) {
  xbyak::MicroKernelDesc d;
  d.isa = xbyak::Isa::Avx512;
  d.k = k;
  d.a_row_stride = a_row_stride, d.a_k_stride = 1;
  d.ldb = kScoreCols, d.ldc = ld_scores;
  d.b_layout = xbyak::BLayout::Packed;
  return make_kernels(d, kScoreRows, kScoreCols, int(kv_len % kScoreCols));
}

/// Gradient-shaped kernels: 6 × 64 tiles over `cols` columns of a plain B (rows at ldb), runtime
/// reduction length, A at (row, k) strides, C rows at ldc, accumulating or not.
KernelTable grad_kernels(int64_t cols, int64_t a_row_stride, int64_t a_k_stride, int64_t ldb,
                         int64_t ldc, bool accumulate, bool packed_b = false) {
  xbyak::MicroKernelDesc d;
  d.isa = xbyak::Isa::Avx512;
  d.k = 0;
  d.a_row_stride = a_row_stride, d.a_k_stride = a_k_stride;
  d.ldb = ldb, d.ldc = ldc;
  d.b_layout = packed_b ? xbyak::BLayout::Packed : xbyak::BLayout::Plain;
  d.accumulate = accumulate;
  return make_kernels(d, kGradRows, int(std::min<int64_t>(kGradCols, cols)), int(cols % kGradCols));
}

}  // namespace

void attention_backward_f32(const AttentionParams& p, const AttentionBackwardArgs& a,
                            int num_threads) {
  if (p.mask && p.mask_stride[3] != 1 && p.kv_len != 1)
    throw std::invalid_argument(
        "attention_backward_f32: the mask's key dimension must be contiguous");
  if (!attention_supported(p))
    throw std::invalid_argument("attention_backward_f32: unsupported parameters");
  const int64_t items = p.batch * p.heads;
  // Rows of S / dP hold whole vectors; 16 more floats keep a power-of-two key count from
  // mapping the rows that Pᵀ and dSᵀ walk down onto the same L1 sets.
  const int64_t ld = (p.kv_len + 15) / 16 * 16 + 16;
  const int64_t key_panels = (p.kv_len + kScoreCols - 1) / kScoreCols;
  const int64_t kt_panel = p.head_dim * kScoreCols, vt_panel = p.value_dim * kScoreCols;

  const KernelTable s_kernels = score_kernels(p.head_dim, p.q_stride[2], ld, p.kv_len);
  const KernelTable dp_kernels = score_kernels(p.value_dim, a.grad_out_stride[2], ld, p.kv_len);
  // grad_v += Pᵀ·dO and grad_k += dSᵀ·q: tile rows are keys (Pᵀ row j is P's column j).
  // Keys a block is the first to see are overwritten, the rest accumulated into.
  const KernelTable dv_first =
      grad_kernels(p.value_dim, 1, ld, a.grad_out_stride[2], a.grad_v_stride[2], false);
  const KernelTable dv_next =
      grad_kernels(p.value_dim, 1, ld, a.grad_out_stride[2], a.grad_v_stride[2], true);
  const KernelTable dk_first =
      grad_kernels(p.head_dim, 1, ld, p.q_stride[2], a.grad_k_stride[2], false);
  const KernelTable dk_next =
      grad_kernels(p.head_dim, 1, ld, p.q_stride[2], a.grad_k_stride[2], true);
  // grad_q = dS·k: tile rows are queries; k copied into panels of kGradCols columns (a head's
  // k rows lie a whole token apart in a packed qkv projection: one page per row read in place).
  const int k_panel_cols = int(std::min<int64_t>(kGradCols, (p.head_dim + 15) / 16 * 16));
  const int64_t k_panel = p.kv_len * k_panel_cols;
  const int64_t k_panels = (p.head_dim + k_panel_cols - 1) / k_panel_cols;
  const KernelTable dq_first =
      grad_kernels(p.head_dim, ld, 1, k_panel_cols, a.grad_q_stride[2], false, true);
  const KernelTable dq_next =
      grad_kernels(p.head_dim, ld, 1, k_panel_cols, a.grad_q_stride[2], true, true);

  const int threads = int(std::clamp<int64_t>(items, 1, std::max(num_threads, 1)));
  auto worker = [&](int t) {
    thread_local ScratchVector<float> kt_buffer, vt_buffer, k_buffer, s_buffer, dp_buffer;
    float* kt = kt_buffer.get(size_t(key_panels * kt_panel));
    float* vt = vt_buffer.get(size_t(key_panels * vt_panel));
    float* k_packed = k_buffer.get(size_t(k_panels * k_panel));
    float* s = s_buffer.get(size_t(kQueryBlock * ld));
    float* dp = dp_buffer.get(size_t(kQueryBlock * ld));
    for (int64_t item = items * t / threads; item < items * (t + 1) / threads; ++item) {
      const int64_t b = item / p.heads, h = item % p.heads;
      const auto at = [b, h](auto* base, const std::array<int64_t, 3>& stride) {
        return base + b * stride[0] + h * stride[1];
      };
      const float *qh = at(a.q, p.q_stride), *kh = at(a.k, p.k_stride), *vh = at(a.v, p.v_stride),
                  *oh = at(a.out, p.out_stride), *doh = at(a.grad_out, a.grad_out_stride),
                  *lse = at(a.logsumexp, a.lse_stride);
      float *dqh = at(a.grad_q, a.grad_q_stride), *dkh = at(a.grad_k, a.grad_k_stride),
            *dvh = at(a.grad_v, a.grad_v_stride);
      pack_b_panels(kh, p.k_stride[2], /*trans_b=*/true, 0, p.head_dim, 0, p.kv_len, kScoreCols,
                    kt_panel, kt);
      pack_b_panels(vh, p.v_stride[2], /*trans_b=*/true, 0, p.value_dim, 0, p.kv_len, kScoreCols,
                    vt_panel, vt);
      pack_b_panels(kh, p.k_stride[2], /*trans_b=*/false, 0, p.kv_len, 0, p.head_dim, k_panel_cols,
                    k_panel, k_packed);
      int64_t seen = 0;  // keys [0, seen) have gradient rows written by an earlier block
      for (int64_t q0 = 0; q0 < p.q_len; q0 += kQueryBlock) {
        const int64_t rows = std::min(kQueryBlock, p.q_len - q0);
        // Causal: keys past the block's last query are invisible to all of its rows. Scores
        // are computed over whole 32-key tiles up to there (or to kv_len, its tail).
        const int64_t key_end = p.causal ? std::min(p.kv_len, q0 + rows) : p.kv_len;
        const int64_t cols =
            std::min(p.kv_len, (key_end + kScoreCols - 1) / kScoreCols * kScoreCols);
        const float *q_blk = qh + q0 * p.q_stride[2], *do_blk = doh + q0 * a.grad_out_stride[2];
        tiled(s_kernels, rows, cols, kScoreRows, kScoreCols, q_blk, p.q_stride[2], kt, kt_panel, s,
              ld, p.head_dim);
        tiled(dp_kernels, rows, cols, kScoreRows, kScoreCols, do_blk, a.grad_out_stride[2], vt,
              vt_panel, dp, ld, p.value_dim);
        for (int64_t i = 0; i < rows; ++i) {
          const int64_t query = q0 + i;
          const int64_t valid = p.causal ? std::min(cols, query + 1) : cols;
          const float* mask_row = p.mask ? p.mask + b * p.mask_stride[0] + h * p.mask_stride[1] +
                                               query * p.mask_stride[2]
                                         : nullptr;
          const float di =
              dot(do_blk + i * a.grad_out_stride[2], oh + query * p.out_stride[2], p.value_dim);
          gradient_row(s + i * ld, dp + i * ld, cols, valid, p.scale, mask_row,
                       lse[query * a.lse_stride[2]], di);
        }
        const int64_t old_keys = std::min(seen, key_end);
        tiled(dv_next, old_keys, p.value_dim, kGradRows, kGradCols, s, 1, do_blk, kGradCols, dvh,
              a.grad_v_stride[2], rows);
        tiled(dv_first, key_end - old_keys, p.value_dim, kGradRows, kGradCols, s + old_keys, 1,
              do_blk, kGradCols, dvh + old_keys * a.grad_v_stride[2], a.grad_v_stride[2], rows);
        tiled(dk_next, old_keys, p.head_dim, kGradRows, kGradCols, dp, 1, q_blk, kGradCols, dkh,
              a.grad_k_stride[2], rows);
        tiled(dk_first, key_end - old_keys, p.head_dim, kGradRows, kGradCols, dp + old_keys, 1,
              q_blk, kGradCols, dkh + old_keys * a.grad_k_stride[2], a.grad_k_stride[2], rows);
        seen = std::max(seen, key_end);
        for (int64_t kb = 0; kb < key_end; kb += kQueryKeysPerPass)
          tiled(kb == 0 ? dq_first : dq_next, rows, p.head_dim, kGradRows, kGradCols, dp + kb, ld,
                k_packed + kb * k_panel_cols, k_panel, dqh + q0 * a.grad_q_stride[2],
                a.grad_q_stride[2], std::min(kQueryKeysPerPass, key_end - kb));
      }
      // Keys no query sees (causal, more keys than queries): zero gradients.
      zero_rows(dkh + seen * a.grad_k_stride[2], p.kv_len - seen, p.head_dim, a.grad_k_stride[2]);
      zero_rows(dvh + seen * a.grad_v_stride[2], p.kv_len - seen, p.value_dim, a.grad_v_stride[2]);
    }
  };
  if (threads == 1) return worker(0);
#pragma omp parallel num_threads(std::max(num_threads, threads))  // the whole team
  for_each_worker(threads, worker);
}

}  // namespace inductor_cpp::matrix
