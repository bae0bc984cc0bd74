/// \file
/// Running an "attention" MatmulLaunch (runtime/plan.h): scaled dot-product attention of float32
/// CPU [batch, heads, length, dim] tensors on our library (runtime/matrix/attention.h), in place
/// of ATen's `_scaled_dot_product_flash_attention_for_cpu` (no mask, no dropout). q, k and v are
/// read with their strides (the views of a packed qkv projection as they come; a copy only when
/// their last dimension is not contiguous); the output is allocated with the plan's strides.
#pragma once

#include <ATen/core/ivalue.h>

#include <string>
#include <vector>

#include "runtime/plan.h"

namespace inductor_cpp::runtime {

/// A bound attention step. Stateless after construction, so thread-safe.
class AttentionStep {
 public:
  /// Checks the launch: op "attention", no epilogue, q / k / v slots, a 4-D float32 CPU output
  /// whose last stride is 1, a positive scale; `label` names the step in errors.
  AttentionStep(MatmulLaunch launch, std::string label);

  /// Allocates the output and computes it into its slot.
  void run(std::vector<c10::IValue>& slots) const;

 private:
  MatmulLaunch launch_;
  std::string label_;
};

}  // namespace inductor_cpp::runtime
