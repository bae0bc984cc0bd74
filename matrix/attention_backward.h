/// \file attention_backward.h
/// \brief The gradients of scaled dot-product attention (attention.h), float32, on the GEMM
/// micro-kernels: what ATen's `_scaled_dot_product_flash_attention_for_cpu_backward` computes,
/// from the forward's output and logsumexp.
///
/// Per batch and head (one work item; threads take contiguous runs of them, as ATen's kernel), kᵀ
/// and vᵀ are packed once into the GEMM's 32-key panels and k into 64-column panels, and each block
/// of kQueryBlock queries then
///   S  = q_blk · kᵀ                         (14 × 32 tiles)
///   P  = exp(S·scale [+ mask] − lse)        (the forward's probabilities, recomputed)
///   dP = dO_blk · vᵀ                        (14 × 32 tiles)
///   dS = P ∘ (dP − rowsum(dO_blk ∘ O_blk)) · scale
///   grad_v += Pᵀ · dO_blk,  grad_k += dSᵀ · q_blk,  grad_q_blk = dS · k   (6 × 64 tiles;
///   Pᵀ and dSᵀ are read through transposed strides, never copied; grad_q in passes of 128 keys,
///   whose k panel stays in L1)
/// over the keys its queries can see (causal: the keys up to its last query). The first block to
/// see a key writes its grad_k and grad_v rows, later ones add to them (zeroing them first cost
/// 18 % of the time at 128 keys: the rows lie a token apart, each store a cache miss); keys no
/// query sees (causal, more keys than queries) get zero rows at the end. S, P, dP and dS
/// of a block stay in L2 (2 × 64 × kv_len floats); nothing of size q_len × kv_len is written.
///
/// Numerics: fp32 sums as ATen's kernel; exp within 2 ulp (vector_math.h). A query whose keys
/// are all hidden (logsumexp 0 from the forward, every score -inf) gets p = 0 and zero gradients.
/// Needs AVX-512 (attention_supported).
#pragma once

#include <array>
#include <cstdint>

#include "matrix/attention.h"

namespace inductor_cpp::matrix {

/// The tensors of one attention backward. Strides are elements of [batch, head, position]; the
/// last dimension of each tensor is contiguous. The forward's shapes and mask are in the
/// AttentionParams (its out_stride is `out`'s).
struct AttentionBackwardArgs {
  const float *q = nullptr, *k = nullptr, *v = nullptr;
  const float* out = nullptr;        ///< the forward's output
  const float* grad_out = nullptr;   ///< dL/d out, like out
  const float* logsumexp = nullptr;  ///< the forward's, [batch, head, q_len]
  std::array<int64_t, 3> grad_out_stride{}, lse_stride{};
  float *grad_q = nullptr, *grad_k = nullptr, *grad_v = nullptr;  ///< like q, k and v
  std::array<int64_t, 3> grad_q_stride{}, grad_k_stride{}, grad_v_stride{};
};

/// Writes grad_q, grad_k and grad_v (overwriting them). Throws std::invalid_argument when
/// !attention_supported(p) or the mask's key dimension is not contiguous.
void attention_backward_f32(const AttentionParams& p, const AttentionBackwardArgs& args,
                            int num_threads);

}  // namespace inductor_cpp::matrix
