/// \file
/// Binding a generated-kernel step (runtime/plan.h KernelLaunch): the CPU kernel's function
/// from the plan's kernel library, or, on the GPU, its index among the plan's CUDA kernels
/// (runtime/gpu_step.h, set by the executor once every step is bound). A run allocates
/// the kernel's outputs (fresh, or over a dead buffer's storage), copies any input whose
/// layout is not the one the kernel was generated for, and calls it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <c10/core/TensorOptions.h>

#include "runtime/bound_step.h"
#include "runtime/loader/kernel_library.h"
#include "runtime/plan.h"

namespace inductor_cpp::runtime {

/// A bound generated-kernel step. Immutable after binding, so thread-safe.
class BoundKernelStep final : public BoundStep {
 public:
  void run(RunContext& ctx) const override;

  KernelFn fn = nullptr;
  int32_t gpu_index = -1;  ///< GPU plans: the kernel in the plan's CUDA module (fn is null)
  std::vector<int32_t> args;
  std::vector<ExpectedLayout> layouts;
  std::vector<bool> written;    ///< per argument: the kernel stores to it
  std::vector<bool> allocated;  ///< per argument: allocated for this call (else it updates a tensor)
  struct Alloc {
    int32_t slot;
    std::vector<int64_t> sizes, strides;
    at::TensorOptions options;
    int32_t reuse_slot;
  };
  std::vector<Alloc> allocs;
};

/// `library` is null for GPU plans; `labels` name the graph nodes in messages.
std::unique_ptr<BoundKernelStep> bind_kernel_launch(const KernelLaunch& launch, const KernelLibrary* library,
                                                    const std::vector<std::string>& labels);


}  // namespace inductor_cpp::runtime
