/// \file
/// Running a "conv2d" library call (runtime/plan.h Conv2dCall) on our NHWC convolution
/// (matrix/conv.h): the input and output are [N, C, H, W]-sized tensors with
/// channels-last strides (NHWC in memory), the weight [OC, C, KH, KW] is packed once and kept
/// while it does not change (PackedWeightCache, runtime/matmul_step.h: storage, pointer,
/// layout and version counter; inference tensors are never cached), the bias, an absorbed eval
/// batch norm (a per-channel scale and shift computed per call) and absorbed activations /
/// residual adds run in the kernel's epilogue.
///
/// Operands that are not laid out as expected at run time (an ATen op returned another layout
/// than its meta said) are copied: the input and residual into channels-last, the weight into
/// OHWI (channels-last; only to pack it: a channels-last model's weight is packed as it is).
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

#include <memory>
#include <string>
#include <vector>

#include "runtime/bound_step.h"
#include "runtime/loader/kernel_library.h"
#include "runtime/matmul_step.h"
#include "matrix/matrix.h"
#include "runtime/plan.h"

namespace inductor_cpp::runtime {

/// True when an [N, C, H, W] tensor with these strides is dense NHWC in memory (size-1 dims
/// may have any stride), i.e. what conv2d_nhwc_f32 reads and writes.
bool is_dense_nhwc(at::IntArrayRef sizes, at::IntArrayRef strides);

/// Dense NHWC strides of an [N, C, H, W] tensor.
std::vector<int64_t> nhwc_strides(at::IntArrayRef sizes);

/// `t` itself when it is dense NHWC, else a dense NHWC copy.
at::Tensor as_dense_nhwc(const at::Tensor& t);

/// The float32 CPU tensor in `v`; else an error naming the step (`label`) and the operand.
at::Tensor checked_f32(const c10::IValue& v, const std::string& label, const char* what);

/// The library's parameters of a convolution of input `x` ([N, C, H, W]) with weight `w`
/// ([OC, C, KH, KW]) and `geometry`; denormals flushed when the calling thread flushes them.
matrix::Conv2dParams conv_params(const at::Tensor& x, const at::Tensor& w, const ConvGeometry& geometry);

/// A bound conv2d step. Thread-safe (the packed-weight cache has its own mutex).
class ConvStep final : public BoundStep {
 public:
  /// Checks the call (a 4-D channels-last float32 CPU output); `kinds` are its
  /// epilogue kinds, `label` names it in errors, `tile_fn` is the function of a last "kernel"
  /// op (runtime/tile_kernel_call.h), if any.
  /// `frozen_weights`: trust the weight's version counter alone (the "freezing" option).
  ConvStep(Conv2dCall call, std::vector<matrix::EpilogueKind> kinds, std::string label,
           KernelFn tile_fn = nullptr, bool frozen_weights = false);

  /// Allocates the output, runs the convolution with its epilogue, stores it in its slot.
  void run(RunContext& ctx) const override;

  WeightCacheCounts weight_cache_counts() const override {
    return {packed_->packs(), packed_->adopted(), packed_->stale_drops()};
  }

 private:
  Conv2dCall call_;
  std::vector<matrix::EpilogueKind> kinds_;
  KernelFn tile_fn_ = nullptr;
  std::shared_ptr<PackedWeightCache<matrix::PackedConvWeight>> packed_;
};

}  // namespace inductor_cpp::runtime
