/// \file
/// A plan step bound for execution: what each step type (ATen call, generated kernel, library
/// call) becomes once its operator, kernel function or library launcher is found and its
/// arguments are checked. The executor (executor.h) is a loop over these: run, then free the
/// slots whose last use this was. Binding happens once per compiled graph; `run` once per
/// call and per step, so it does no lookups.
#pragma once

#include <ATen/core/ivalue.h>
#include <ATen/core/stack.h>

#include <optional>
#include <string>
#include <vector>

#include "runtime/gpu_step.h"

namespace inductor_cpp::runtime {

/// The GPU side of one run: the plan's bound kernels and the run's status words (made at
/// the first launch, on the device of its first buffer).
struct GpuRun {
  const std::vector<cuda::GpuKernel>& kernels;
  std::optional<cuda::GpuRunStatus> status;
  std::optional<c10::Device> device;
  /// Set when no kernel of the plan can write its status word: then every run shares one
  /// zeroed set per device (no fill kernel launched per run).
  cuda::SharedRunStatus* shared_status = nullptr;
};

/// What a step reads and writes during one run of the plan.
struct RunContext {
  std::vector<c10::IValue>& slots;
  torch::jit::Stack& stack;  ///< scratch for boxed ATen calls
  GpuRun& gpu;
};

/// Packed-weight cache counters of a library step (runtime/matmul_step.h), summed by the
/// executor.
struct WeightCacheCounts {
  int64_t packs = 0;
  int64_t adopted = 0;  ///< copies another step packed, taken instead of packing
  int64_t stale_drops = 0;
};

class BoundStep {
 public:
  virtual ~BoundStep() = default;
  /// Runs the step: reads its operands from `ctx.slots`, writes its outputs there.
  virtual void run(RunContext& ctx) const = 0;
  /// Library steps with packed weights report their caches' counters.
  virtual WeightCacheCounts weight_cache_counts() const { return {}; }

  std::string label;         ///< names the step in errors: "generated kernel3 computing ..."
  std::string profile_name;  ///< torch.profiler range; empty: no range (the dispatcher records ATen ops)
  std::vector<int32_t> free_after;
};

/// The name torch.profiler shows for a generated or library step: "inductor_cpp::<what>" and
/// the ATen ops it computes, e.g. "inductor_cpp::kernel2 (add, native_layer_norm)".
std::string profile_name_of(const std::string& what, const std::vector<int32_t>& nodes,
                            const std::vector<std::string>& labels);

/// "<what> computing <label>, <label>" for the graph nodes a step computes.
std::string computing_label(const std::string& what, const std::vector<int32_t>& nodes,
                            const std::vector<std::string>& labels);

}  // namespace inductor_cpp::runtime
