/// \file attention.h
/// \brief Scaled dot-product attention, float32, on the GEMM micro-kernels: out = softmax(q·kᵀ ·
/// scale [causal mask]) · v per batch and head, what `F.scaled_dot_product_attention` computes on
/// the CPU without an attention mask or dropout.
///
/// Flash-style: each query block (kQueryBlock rows of one head) walks the keys in blocks of at
/// most kKeyBlock, keeping per row the running maximum m and sum l of exp(s − m):
///   s = q_blk · kᵀ_blk (a 14 × 32 register tile over the head dimension, kᵀ of the head packed
///   once per thread and head), then per row m' = max(m, max(s·scale)), the row of the output
///   accumulator and l rescaled by exp(m − m'), p = exp(s·scale − m'), l += Σ p, and
///   o_acc += p · v_blk (a 6 × 64 tile reading v's rows in place);
/// at the end out = o_acc / l (and logsumexp = m + log l when asked for). An additive mask is
/// added to the scaled scores before the row maximum. The scores of a block
/// stay in L2; nothing of size q_len × kv_len is ever written. Causal attention is top-left
/// aligned, as torch's `is_causal` (query i sees keys j ≤ i); key blocks a query block cannot see
/// are skipped. Threads take contiguous runs of (batch, head, query block) items, so a thread
/// packs each head's kᵀ once.
///
/// Numerics: fp32 sums, exp within 2 ulp (vector_math.h); agrees with ATen's flash attention to
/// a few ulp of the output's scale. Needs AVX-512 (attention_supported).
#pragma once

#include <array>
#include <cstdint>

namespace inductor_cpp::matrix {

struct AttentionParams {
  int64_t batch = 1, heads = 1, q_len = 0, kv_len = 0, head_dim = 0, value_dim = 0;
  /// Element strides of [batch, head, position] of q, k, v and out; their last dimension (the
  /// head or value dimension) is contiguous.
  std::array<int64_t, 3> q_stride{}, k_stride{}, v_stride{}, out_stride{};
  float scale = 1;      ///< multiplies q·kᵀ (torch's default: 1 / sqrt(head_dim))
  bool causal = false;  ///< query i sees keys j ≤ i only
  /// Optional additive mask, added to the scaled scores: element [batch, head, query, key] at
  /// the strides (0 for a broadcast dimension; the key stride must be 1). -inf hides a key; a
  /// row with every key hidden gets zeros (as ATen's kernel).
  const float* mask = nullptr;
  std::array<int64_t, 4> mask_stride{};
};

inline constexpr int64_t kMaxHeadDim = 512;

/// Up to this many keys (one key block) ours is faster than ATen's flash attention on the CPU,
/// forward (1.1-1.8x) and backward (1.1-1.9x); with more the two are level (0.9-1.06x), so
/// compiled graphs leave longer sequences to ATen's kernel (inductor/lower/library_attention.cpp, and
/// per call in runtime/attention_step.cpp when the length is symbolic).
inline constexpr int64_t kMaxFasterKeys = 512;

/// True when attention_f32 handles p: AVX-512 present, positive sizes, head and value
/// dimensions up to kMaxHeadDim.
bool attention_supported(const AttentionParams& p);

/// out = attention(q, k, v); logsumexp ([batch, head, q_len] at `lse_stride`), when not null,
/// gets m + log(l) per query row (0 for a row whose keys are all hidden, as ATen's kernel). Throws std::invalid_argument when !attention_supported(p).
void attention_f32(const float* q, const float* k, const float* v, float* out,
                   const AttentionParams& p, int num_threads, float* logsumexp = nullptr,
                   std::array<int64_t, 3> lse_stride = {});

}  // namespace inductor_cpp::matrix
