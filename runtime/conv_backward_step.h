/// \file
/// Running a "conv2d_backward" library call (runtime/plan.h Conv2dBackwardCall): the gradients of a channels-last
/// float32 convolution (groups 1) on our library (matrix/conv_backward.h). Reads the
/// output gradient and the forward's input as dense NHWC (copied into that layout when an ATen
/// op returned another) and the weight as OHWI (a channels-last weight as it is; another
/// layout is copied, it is small). Writes the input gradient channels-last, the weight
/// gradient in the plan's layout (computed OHWI, copied when the plan says OIHW) and the bias
/// gradient, each only when its slot is set.
#pragma once

#include <ATen/core/ivalue.h>

#include <string>
#include <vector>

#include "runtime/bound_step.h"
#include "runtime/plan.h"

namespace inductor_cpp::runtime {

/// A bound conv2d_backward step. Stateless after construction, so thread-safe.
class ConvBackwardStep final : public BoundStep {
 public:
  /// Checks the call: at least one gradient, a
  /// channels-last 4-D input gradient, a dense 4-D weight gradient, a 1-D bias gradient, all
  /// float32 on the CPU; `label` names the step in errors.
  ConvBackwardStep(Conv2dBackwardCall call, std::string label);

  /// Allocates and computes the requested gradients into their slots.
  void run(RunContext& ctx) const override;

 private:
  Conv2dBackwardCall call_;
};

}  // namespace inductor_cpp::runtime
