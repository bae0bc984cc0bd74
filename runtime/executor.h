/// \file
/// Runs a plan: binds every step once (ATen calls to their dispatcher operators, generated
/// kernels to their functions, library calls to their launchers: bound_step.h), then executes
/// the whole step list per call in C++, with no Python between steps.
///
/// The files of runtime/ that bind steps include libtorch headers, the costly part of a build
/// (most of a minute each on 2 cores): keep them few.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/bound_step.h"
#include "runtime/loader/kernel_library.h"
#include "runtime/plan.h"

namespace inductor_cpp::runtime {

/// A step of a plan failed. The original exception (a c10::Error subclass, a Python error
/// from a Python kernel, ...) is nested inside, so the caller can rethrow it with its own type;
/// what() names the op and the user's source line:
///   "inductor_cpp: while running aten::index.Tensor (model.py:3 in f: return x[i])".
class StepError : public std::runtime_error, public std::nested_exception {
 public:
  explicit StepError(const std::string& context) : std::runtime_error(context) {}
};

/// A plan bound for execution, plus the constant tensors it reads. Immutable after
/// construction, so one instance may run on several threads at once.
class Executable {
 public:
  /// `labels[node]` names each graph node in error messages ("aten::mm (model.py:3 in f)").
  /// Throws std::runtime_error if an operator is unknown or an argument cannot be bound.
  /// `library` holds the plan's generated kernels (null when the plan has none); the
  /// executable keeps it loaded for its own lifetime. `frozen_weights` (the "freezing" option):
  /// library steps reuse a packed weight while its version counter is unchanged, without
  /// checking its contents (runtime/matmul_step.h).
  Executable(const Plan& plan, std::vector<at::Tensor> constants, std::vector<std::string> labels,
             std::shared_ptr<KernelLibrary> library = nullptr, bool frozen_weights = false);
  ~Executable();

  /// Runs the plan. `inputs` is consumed (the caller's references are released as soon as
  /// no step needs them). A failing step throws StepError with the original error nested.
  std::vector<c10::IValue> run(std::vector<c10::IValue> inputs) const;

  /// Runs the plan while the current CUDA stream is being captured into a CUDA graph
  /// (python/inductor_cpp/cuda_graphs.py): nothing is read on the host (no earlier run's status
  /// words are queried), and this run's status words, which every replay rewrites, are
  /// returned through `status_words` (left undefined when no kernel can set them) instead of
  /// being queued. After each replay the caller passes them to queue_status().
  std::vector<c10::IValue> run_for_capture(std::vector<c10::IValue> inputs, at::Tensor& status_words) const;

  /// Queues a replay's status words (from run_for_capture) for a later, non-blocking read.
  void queue_status(const at::Tensor& status_words) const;

  /// Throws StepError if an earlier run's (or replay's) status words that have arrived report
  /// an out-of-range index; never waits.
  void check_earlier_runs() const;

  /// The library steps' packed-weight caches (runtime/matmul_step.h), summed: how many times a
  /// weight was packed into a cache, how many copies another step packed were taken, and how
  /// many cached copies were dropped because the weight's contents changed behind its version
  /// counter.
  WeightCacheCounts weight_cache_counts() const;

 private:
  struct Bound;
  std::vector<c10::IValue> run_steps(std::vector<c10::IValue> inputs, at::Tensor* capture_status) const;
  std::unique_ptr<const Bound> bound_;
};

}  // namespace inductor_cpp::runtime
