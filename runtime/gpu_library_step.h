/// \file
/// Library calls on the GPU: the plan's GemmCall / Conv2dCall / Conv2dBackwardCall for CUDA
/// tensors, run by cuBLAS(Lt) and cuDNN through ATen's ops on PyTorch's current stream (the
/// stream generated kernels launch on, gpu_step.h).
///
/// The call is the same IR node as on the CPU (ir/library_call.h); what differs is which
/// epilogues it applies itself (ir/epilogue_ops.h gpu_epilogue_fits), mapped onto ATen's
/// arguments at binding time:
///   mm / addmm / bmm   scale -> alpha; bias_col, bias_row or residual -> C with beta 1
///                      (at::addmm_out / at::baddbmm_out: a 1-D bias takes cuBLASLt's bias
///                      epilogue); then relu or gelu_tanh -> at::_addmm_activation_out
///                      (cuBLASLt's RELU_BIAS / GELU_BIAS epilogue);
///   conv2d             bias_col -> at::convolution's bias (cuDNN);
///   conv2d_backward    at::convolution_backward.
/// Outputs get the layout the plan recorded (the one ATen gives them, which later kernels were
/// scheduled for); a result ATen lays out otherwise is copied into it.
#pragma once

#include <memory>
#include <string>

#include "runtime/bound_step.h"
#include "runtime/plan.h"

namespace inductor_cpp::runtime {

/// The bound step of a library call whose output lives on a GPU. Throws std::runtime_error
/// when its epilogue is not one the GPU libraries apply.
std::unique_ptr<BoundStep> bind_gpu_gemm(const std::string& op, const GemmCall& call, std::string label);
std::unique_ptr<BoundStep> bind_gpu_conv(const Conv2dCall& call, std::string label);
std::unique_ptr<BoundStep> bind_gpu_conv_backward(const Conv2dBackwardCall& call, std::string label);

}  // namespace inductor_cpp::runtime
