/// \file
/// Running an "attention" library call (runtime/plan.h AttentionCall): scaled dot-product attention of float32
/// CPU [batch, heads, length, dim] tensors on our library (matrix/attention.h), in place
/// of ATen's `_scaled_dot_product_flash_attention_for_cpu` (no dropout), and an
/// "attention_backward" one (AttentionBackwardCall): its gradients (matrix/attention_backward.h), in place of
/// `_scaled_dot_product_flash_attention_for_cpu_backward`. Tensors are read with their strides
/// (the views of a packed qkv projection as they come; a copy only when their last dimension is
/// not contiguous); outputs are allocated with the plan's strides, or in ATen's layout
/// ([batch, length, heads, dim] in memory) when the plan's shapes are symbolic. A boolean mask
/// (true: visible) becomes an additive 0 / -inf one first. A call with more keys than ours is
/// faster for (matrix::kMaxFasterKeys; only a plan of symbolic lengths lets one through) runs
/// ATen's kernel, as does one with sizes ours does not take.
#pragma once

#include <ATen/core/ivalue.h>

#include <string>
#include <vector>

#include "runtime/bound_step.h"
#include "runtime/plan.h"

namespace inductor_cpp::runtime {

/// A bound attention step. Stateless after construction, so thread-safe.
class AttentionStep final : public BoundStep {
 public:
  /// Checks the call: q / k / v slots, 4-D float32 CPU outputs whose last stride is 1, a
  /// positive scale; `label` names the step in errors.
  AttentionStep(AttentionCall call, std::string label);

  /// Allocates the outputs and computes them into their slots.
  void run(RunContext& ctx) const override;

 private:
  AttentionCall call_;
};

/// A bound attention backward step. Stateless after construction, so thread-safe.
class AttentionBackwardStep final : public BoundStep {
 public:
  /// Checks the call as AttentionStep's, and the backward's inputs.
  AttentionBackwardStep(AttentionBackwardCall call, std::string label);

  /// Allocates the gradients and computes them into their slots.
  void run(RunContext& ctx) const override;

 private:
  AttentionBackwardCall call_;
};

}  // namespace inductor_cpp::runtime
