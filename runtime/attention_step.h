/// \file
/// Running an "attention" MatmulLaunch (runtime/plan.h): scaled dot-product attention of float32
/// CPU [batch, heads, length, dim] tensors on our library (matrix/attention.h), in place
/// of ATen's `_scaled_dot_product_flash_attention_for_cpu` (no dropout), and an
/// "attention_backward" one: its gradients (matrix/attention_backward.h), in place of
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

#include "runtime/plan.h"

namespace inductor_cpp::runtime {

/// A bound attention step. Stateless after construction, so thread-safe.
class AttentionStep {
 public:
  /// Checks the launch: op "attention" or "attention_backward", no epilogue, q / k / v slots
  /// (and the backward's inputs), 4-D float32 CPU outputs whose last stride is 1, a positive
  /// scale; `label` names the step in errors.
  AttentionStep(MatmulLaunch launch, std::string label);

  /// Allocates the outputs and computes them into their slots.
  void run(std::vector<c10::IValue>& slots) const;

 private:
  void run_backward(std::vector<c10::IValue>& slots) const;

  MatmulLaunch launch_;
  std::string label_;
};

}  // namespace inductor_cpp::runtime
