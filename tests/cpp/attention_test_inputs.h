/// \file attention_test_inputs.h
/// \brief Random inputs of the attention tests (matrix_attention_test.cpp, forward, and
/// matrix_attention_backward_test.cpp): q, k and v as dense [batch, heads, length, dim] tensors
/// with padded k / v rows or as the views of one packed qkv projection, and the optional
/// additive masks, with the AttentionParams that describe them.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "matrix/attention.h"

namespace inductor_cpp::matrix::testing {

struct AttentionCase {
  int64_t batch, heads, q_len, kv_len, head_dim, value_dim;
  bool causal;
  bool packed_qkv;  ///< q, k, v as views of one [batch, len, 3, heads, dim] tensor
  /// 0: no mask; 1: padding mask [batch, 1, 1, kv] (the last keys of batch b hidden by -inf,
  /// b + 1 of them); 2: a random [batch, heads, q, kv] additive mask, query row 1 fully hidden.
  int mask = 0;
};

/// The inputs of one case; p points at `mask` (out_stride left for the caller).
struct AttentionInputs {
  AttentionParams p;
  std::vector<float> q, k, v, mask;  ///< q holds all three when packed
  const float *qp = nullptr, *kp = nullptr, *vp = nullptr;
  AttentionInputs() = default;
  AttentionInputs(const AttentionInputs&) = delete;  // p.mask and the pointers point inside

  /// Row i of q, k or v (base qp, kp or vp) of batch b, head h, at that tensor's strides.
  const float* row(const float* base, const std::array<int64_t, 3>& s, int64_t b, int64_t h,
                   int64_t i) const {
    return base + b * s[0] + h * s[1] + i * s[2];
  }
  double mask_at(int64_t b, int64_t h, int64_t i, int64_t j) const {
    if (!p.mask) return 0.0;
    return double(p.mask[b * p.mask_stride[0] + h * p.mask_stride[1] + i * p.mask_stride[2] + j]);
  }
};

/// Fills `in` for case c with values uniform in [-2, 2] (the scale 1 / sqrt(head_dim)).
inline void make_attention_inputs(const AttentionCase& c, std::mt19937& rng, AttentionInputs& in) {
  AttentionParams& p = in.p;
  p.batch = c.batch, p.heads = c.heads, p.q_len = c.q_len, p.kv_len = c.kv_len;
  p.head_dim = c.head_dim, p.value_dim = c.value_dim, p.causal = c.causal;
  p.scale = float(1.0 / std::sqrt(double(c.head_dim)));
  std::uniform_real_distribution<float> dist(-2, 2);
  if (c.packed_qkv) {  // [batch, len, 3, heads, dim]: q_len == kv_len, head_dim == value_dim
    const int64_t d = c.head_dim, row = 3 * c.heads * d;
    in.q.resize(size_t(c.batch * c.q_len * row));
    for (float& e : in.q) e = dist(rng);
    p.q_stride = {c.q_len * row, d, row};
    p.k_stride = p.q_stride, p.v_stride = p.q_stride;
  } else {  // dense [batch, heads, len, dim], k and v with padded rows (stride dim + 3)
    in.q.resize(size_t(c.batch * c.heads * c.q_len * c.head_dim));
    in.k.resize(size_t(c.batch * c.heads * c.kv_len * (c.head_dim + 3)));
    in.v.resize(size_t(c.batch * c.heads * c.kv_len * (c.value_dim + 3)));
    for (auto* t : {&in.q, &in.k, &in.v})
      for (float& e : *t) e = dist(rng);
    p.q_stride = {c.heads * c.q_len * c.head_dim, c.q_len * c.head_dim, c.head_dim};
    p.k_stride = {c.heads * c.kv_len * (c.head_dim + 3), c.kv_len * (c.head_dim + 3),
                  c.head_dim + 3};
    p.v_stride = {c.heads * c.kv_len * (c.value_dim + 3), c.kv_len * (c.value_dim + 3),
                  c.value_dim + 3};
  }
  constexpr float kHidden = -std::numeric_limits<float>::infinity();
  if (c.mask == 1) {
    in.mask.assign(size_t(c.batch * c.kv_len), 0.0f);
    for (int64_t b = 0; b < c.batch; ++b)
      for (int64_t j = std::max<int64_t>(1, c.kv_len - b - 1); j < c.kv_len; ++j)
        in.mask[size_t(b * c.kv_len + j)] = kHidden;
    p.mask_stride = {c.kv_len, 0, 0, 1};
  } else if (c.mask == 2) {
    in.mask.resize(size_t(c.batch * c.heads * c.q_len * c.kv_len));
    for (float& e : in.mask) e = dist(rng);
    for (int64_t bh = 0; bh < c.batch * c.heads; ++bh)
      for (int64_t j = 0; j < c.kv_len; ++j)
        in.mask[size_t((bh * c.q_len + 1) * c.kv_len + j)] = kHidden;
    p.mask_stride = {c.heads * c.q_len * c.kv_len, c.q_len * c.kv_len, c.kv_len, 1};
  }
  p.mask = c.mask ? in.mask.data() : nullptr;
  in.qp = in.q.data();
  in.kp = c.packed_qkv ? in.q.data() + c.heads * c.head_dim : in.k.data();
  in.vp = c.packed_qkv ? in.q.data() + 2 * c.heads * c.head_dim : in.v.data();
}

}  // namespace inductor_cpp::matrix::testing
