/// \file
/// Running a "conv2d" MatmulLaunch (runtime/plan.h) on our NHWC convolution
/// (runtime/matrix/conv.h): the input and output are [N, C, H, W]-sized tensors with
/// channels-last strides (NHWC in memory), the weight [OC, C, KH, KW] is packed once and kept
/// while it does not change (PackedWeightCache, runtime/matmul_step.h: storage, pointer,
/// layout and version counter; inference tensors are never cached), the bias and absorbed
/// activations / residual adds run in the kernel's epilogue.
///
/// Operands that are not laid out as expected at run time (an ATen op returned another layout
/// than its meta said) are copied: the input and residual into channels-last, the weight into
/// contiguous OIHW (only to pack it).
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

#include <memory>
#include <string>
#include <vector>

#include "runtime/matmul_step.h"
#include "runtime/matrix/conv.h"
#include "runtime/plan.h"

namespace inductor_cpp::runtime {

/// True when an [N, C, H, W] tensor with these strides is dense NHWC in memory (size-1 dims
/// may have any stride), i.e. what conv2d_nhwc_f32 reads and writes.
bool is_dense_nhwc(at::IntArrayRef sizes, at::IntArrayRef strides);

/// A bound conv2d step. Thread-safe (the packed-weight cache has its own mutex).
class ConvStep {
 public:
  /// Checks the launch (op "conv2d", 4-D channels-last float32 CPU output); `kinds` are its
  /// epilogue kinds, `label` names it in errors.
  ConvStep(MatmulLaunch launch, std::vector<matrix::EpilogueKind> kinds, std::string label);

  /// Allocates the output, runs the convolution with its epilogue, stores it in its slot.
  void run(std::vector<c10::IValue>& slots) const;

  /// How many times the weight was packed into the cache (tests and diagnostics).
  int64_t cached_packs() const { return packed_->packs(); }

 private:
  MatmulLaunch launch_;
  std::vector<matrix::EpilogueKind> kinds_;
  std::string label_;
  std::shared_ptr<PackedWeightCache<matrix::PackedConvWeight>> packed_ =
      std::make_shared<PackedWeightCache<matrix::PackedConvWeight>>();
};

}  // namespace inductor_cpp::runtime
