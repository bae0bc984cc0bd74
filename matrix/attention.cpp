/// \file attention.cpp
/// \brief Flash-style scaled dot-product attention on the FMA micro-kernels (see attention.h).
#include "matrix/attention.h"

#include <immintrin.h>
#include <omp.h>

// GCC 12 warns inside its own avx512fintrin.h (_mm512_undefined_ps) under target attributes.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "matrix/jit/cpu_features.h"
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

constexpr int64_t kQueryBlock = 64;  ///< query rows per work item
constexpr int64_t kKeyBlock = 512;   ///< keys per scores block (64 × 512 floats: 128 KiB, in L2)
constexpr int kScoreRows = 14, kScoreCols = 32;  ///< q·kᵀ register tile
constexpr int kValueRows = 6, kValueCols = 64;   ///< p·v register tile

/// Online-softmax update of one query row for a block of `cols` scores (`valid` of them
/// visible, the rest masked; `mask`, when not null, added to the visible scaled scores): updates
/// m and l, rescales the output row `o` (value_dim floats; not touched while m = -inf, the
/// row's first block with a visible score, whose p · v then overwrites it), and turns the
/// scores into p = exp(s·scale [+ mask] − m') in place (0 where masked).
INDUCTOR_CPP_AVX512_FN void softmax_row(float* s, int64_t cols, int64_t valid, float scale,
                                        const float* mask, float& m, float& l, float* o,
                                        int64_t value_dim) {
  if (mask) {  // s·scale + mask in place; the exponent below then takes a scale of 1
    const __m512 vscale = _mm512_set1_ps(scale);
    for (int64_t j = 0; j < valid; j += 16) {
      const __mmask16 lanes =
          valid - j >= 16 ? __mmask16(0xffff) : __mmask16((1u << (valid - j)) - 1);
      _mm512_mask_storeu_ps(s + j, lanes,
                            _mm512_fmadd_ps(_mm512_maskz_loadu_ps(lanes, s + j), vscale,
                                            _mm512_maskz_loadu_ps(lanes, mask + j)));
    }
    scale = 1.0f;
  }
  const __m512 vscale = _mm512_set1_ps(scale);
  __m512 vmax = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  int64_t j = 0;
  for (; j + 16 <= valid; j += 16) vmax = _mm512_max_ps(vmax, _mm512_loadu_ps(s + j));
  if (j < valid) {
    const __mmask16 lanes = __mmask16((1u << (valid - j)) - 1);
    vmax = _mm512_mask_max_ps(vmax, lanes, vmax, _mm512_maskz_loadu_ps(lanes, s + j));
  }
  // scale > 0 keeps the order, so max(s·scale) = max(s)·scale; a NaN score gives NaN as eager.
  const float block_max =
      valid > 0 ? _mm512_reduce_max_ps(vmax) * scale : -std::numeric_limits<float>::infinity();
  const float m_new = std::max(m, block_max);
  if (std::isinf(m_new) && m_new < 0) {  // nothing visible so far: p = 0, m, l and o unchanged
    std::fill(s, s + cols, 0.0f);
    return;
  }
  if (std::isinf(m)) {  // the row's first block with a visible score: o and l not started yet
    m = m_new;
  } else if (m != m_new) {
    const float correction = std::exp(m - m_new);
    l *= correction;
    const __m512 vc = _mm512_set1_ps(correction);
    int64_t d = 0;
    for (; d + 16 <= value_dim; d += 16)
      _mm512_storeu_ps(o + d, _mm512_mul_ps(_mm512_loadu_ps(o + d), vc));
    for (; d < value_dim; ++d) o[d] *= correction;
    m = m_new;
  }
  const __m512 neg_m = _mm512_set1_ps(-m);
  __m512 vsum = _mm512_setzero_ps();
  for (j = 0; j + 16 <= valid; j += 16) {
    const __m512 p = simd::exp_ps(_mm512_fmadd_ps(_mm512_loadu_ps(s + j), vscale, neg_m));
    _mm512_storeu_ps(s + j, p);
    vsum = _mm512_add_ps(vsum, p);
  }
  if (j < valid) {
    const __mmask16 lanes = __mmask16((1u << (valid - j)) - 1);
    const __m512 p = _mm512_maskz_mov_ps(
        lanes, simd::exp_ps(_mm512_fmadd_ps(_mm512_maskz_loadu_ps(lanes, s + j), vscale, neg_m)));
    _mm512_storeu_ps(s + j, p);  // zeros past `valid` (the row has room: cols rounded up)
    vsum = _mm512_add_ps(vsum, p);
    j += 16;
  }
  std::fill(s + std::min(j, cols), s + cols, 0.0f);  // masked keys
  l += _mm512_reduce_add_ps(vsum);
}

/// out row = o / l; a row that saw no key (every score masked) gets zeros, as ATen's kernel.
INDUCTOR_CPP_AVX512_FN void finish_row(const float* o, float l, float* out, int64_t value_dim) {
  if (l == 0) return std::fill(out, out + value_dim, 0.0f);
  const __m512 inv = _mm512_set1_ps(1.0f / l);
  int64_t d = 0;
  for (; d + 16 <= value_dim; d += 16)
    _mm512_storeu_ps(out + d, _mm512_mul_ps(_mm512_loadu_ps(o + d), inv));
  for (; d < value_dim; ++d) out[d] = o[d] / l;
}

}  // namespace

bool attention_supported(const AttentionParams& p) {
  return xbyak::cpu_features().avx512 && p.batch > 0 && p.heads > 0 && p.q_len > 0 &&
         p.kv_len > 0 && p.head_dim > 0 && p.value_dim > 0 && p.head_dim <= kMaxHeadDim &&
         p.value_dim <= kMaxHeadDim;
}

void attention_f32(const float* q, const float* k, const float* v, float* out,
                   const AttentionParams& p, int num_threads, float* logsumexp,
                   std::array<int64_t, 3> lse_stride) {
  if (p.mask && p.mask_stride[3] != 1 && p.kv_len != 1)
    throw std::invalid_argument("attention_f32: the mask's key dimension must be contiguous");
  if (!attention_supported(p)) throw std::invalid_argument("attention_f32: unsupported parameters");
  const int64_t q_blocks = (p.q_len + kQueryBlock - 1) / kQueryBlock;
  const int64_t items = p.batch * p.heads * q_blocks;
  const int64_t key_block = std::min(kKeyBlock, p.kv_len);
  // Scores rows hold whole vectors (softmax_row writes the masked tail's lanes).
  const int64_t ld_scores = (key_block + 15) / 16 * 16;
  // kᵀ of a head in the GEMM's packed-B panels: kScoreCols keys × head_dim each.
  const int64_t panel_floats = p.head_dim * kScoreCols;
  const int64_t kt_floats = (p.kv_len + kScoreCols - 1) / kScoreCols * panel_floats;

  xbyak::MicroKernelDesc scores_desc;
  scores_desc.isa = xbyak::Isa::Avx512;
  scores_desc.k = p.head_dim;
  scores_desc.a_row_stride = p.q_stride[2], scores_desc.a_k_stride = 1;
  scores_desc.ldb = kScoreCols, scores_desc.ldc = ld_scores;
  scores_desc.b_layout = xbyak::BLayout::Packed;
  // Every key block but the last is kKeyBlock wide (a multiple of the tile): only the last
  // one's width can leave a column tail.
  const int64_t last_keys = p.kv_len - (p.kv_len - 1) / key_block * key_block;
  const KernelTable score_kernels =
      make_kernels(scores_desc, kScoreRows, kScoreCols, int(last_keys % kScoreCols));

  xbyak::MicroKernelDesc value_desc;
  value_desc.isa = xbyak::Isa::Avx512;
  value_desc.k = 0;  // the block's key count, per call
  value_desc.a_row_stride = ld_scores, value_desc.a_k_stride = 1;
  value_desc.ldb = p.v_stride[2], value_desc.ldc = p.value_dim;
  value_desc.b_layout = xbyak::BLayout::Plain;
  const int value_cols = int(std::min<int64_t>(kValueCols, p.value_dim));
  // The first key block overwrites the output accumulator, later ones add to it.
  const KernelTable value_first =
      make_kernels(value_desc, kValueRows, value_cols, int(p.value_dim % kValueCols));
  value_desc.accumulate = true;
  const KernelTable value_next =
      make_kernels(value_desc, kValueRows, value_cols, int(p.value_dim % kValueCols));

  const int threads = int(std::clamp<int64_t>(items, 1, std::max(num_threads, 1)));
  auto worker = [&](int t) {
    thread_local ScratchVector<float> kt_buffer, scores_buffer, o_buffer, stats_buffer;
    float* kt = kt_buffer.get(size_t(kt_floats));
    float* scores = scores_buffer.get(size_t(kQueryBlock * ld_scores));
    float* o_acc = o_buffer.get(size_t(kQueryBlock * p.value_dim));
    float* stats = stats_buffer.get(size_t(2 * kQueryBlock));  // m, then l, per row
    int64_t packed_head = -1;
    for (int64_t item = items * t / threads; item < items * (t + 1) / threads; ++item) {
      const int64_t head_index = item / q_blocks, qb = item % q_blocks;
      const int64_t b = head_index / p.heads, h = head_index % p.heads;
      const float* kh = k + b * p.k_stride[0] + h * p.k_stride[1];
      const float* vh = v + b * p.v_stride[0] + h * p.v_stride[1];
      if (head_index != packed_head) {  // kᵀ of this head (op(B)(d, j) = k[j][d])
        pack_b_panels(kh, p.k_stride[2], /*trans_b=*/true, 0, p.head_dim, 0, p.kv_len, kScoreCols,
                      panel_floats, kt);
        packed_head = head_index;
      }
      const int64_t q0 = qb * kQueryBlock, rows = std::min(kQueryBlock, p.q_len - q0);
      const float* qh = q + b * p.q_stride[0] + h * p.q_stride[1] + q0 * p.q_stride[2];
      float *m = stats, *l = stats + kQueryBlock;
      std::fill(m, m + rows, -std::numeric_limits<float>::infinity());
      std::fill(l, l + rows, 0.0f);
      // Causal: keys past the block's last query are invisible to all of its rows.
      const int64_t key_end = p.causal ? std::min(p.kv_len, q0 + rows) : p.kv_len;
      for (int64_t kv0 = 0; kv0 < key_end; kv0 += key_block) {
        const int64_t cols = std::min(key_block, p.kv_len - kv0);
        tiled(score_kernels, rows, cols, kScoreRows, kScoreCols, qh, p.q_stride[2],
              kt + kv0 / kScoreCols * panel_floats, panel_floats, scores, ld_scores, p.head_dim);
        for (int64_t i = 0; i < rows; ++i) {
          const int64_t valid = p.causal ? std::min(cols, q0 + i + 1 - kv0) : cols;
          const float* mask_row = p.mask ? p.mask + b * p.mask_stride[0] + h * p.mask_stride[1] +
                                               (q0 + i) * p.mask_stride[2] + kv0
                                         : nullptr;
          softmax_row(scores + i * ld_scores, cols, valid, p.scale, mask_row, m[i], l[i],
                      o_acc + i * p.value_dim, p.value_dim);
        }
        tiled(kv0 == 0 ? value_first : value_next, rows, p.value_dim, kValueRows, kValueCols,
              scores, ld_scores, vh + kv0 * p.v_stride[2], kValueCols, o_acc, p.value_dim, cols);
      }
      float* oh = out + b * p.out_stride[0] + h * p.out_stride[1] + q0 * p.out_stride[2];
      for (int64_t i = 0; i < rows; ++i) {
        finish_row(o_acc + i * p.value_dim, l[i], oh + i * p.out_stride[2], p.value_dim);
        // A row that saw no key stores 0, as ATen's kernel: its backward then recomputes p = 0
        // (with -inf, exp(-inf + inf) gives NaN gradients).
        if (logsumexp)
          logsumexp[b * lse_stride[0] + h * lse_stride[1] + (q0 + i) * lse_stride[2]] =
              l[i] > 0 ? m[i] + std::log(l[i]) : 0.0f;
      }
    }
  };
  if (threads == 1) return worker(0);
#pragma omp parallel num_threads(std::max(num_threads, threads))  // the whole team
  for_each_worker(threads, worker);
}

}  // namespace inductor_cpp::matrix
