/// \file
/// Binding a library call (runtime/plan.h LibraryCall) to its launcher: the one place that
/// maps each argument type of INDUCTOR_CPP_LIBRARY_OPS to the bound step that runs it
/// (GemmStep or MatmulBf16Step for GemmCall, ConvStep, ConvBackwardStep, AttentionStep,
/// AttentionBackwardStep; for outputs on a GPU, gpu_library_step.h's steps). The mapping is a std::visit over the argument variant, so an op
/// added to the list without a launcher does not compile.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/bound_step.h"
#include "runtime/loader/kernel_library.h"
#include "runtime/plan.h"

namespace inductor_cpp::runtime {

/// What binding a library call needs besides the call itself.
struct LibraryBindContext {
  const KernelLibrary* library = nullptr;  ///< the plan's kernels (a "kernel" epilogue op's function)
  const std::vector<std::string>& labels;  ///< graph node labels, for messages
  bool frozen_weights = false;             ///< the "freezing" option (runtime/matmul_step.h)
};

/// Throws std::runtime_error when the call's arguments are inconsistent.
std::unique_ptr<BoundStep> bind_library_call(const LibraryCall& call, const LibraryBindContext& ctx);

}  // namespace inductor_cpp::runtime
