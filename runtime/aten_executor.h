/// \file
/// Runs a plan: binds each ATen step to its c10 dispatcher operator once, then executes the
/// whole step list per call in C++ (boxed calls by schema name, no Python between ops).
///
/// One of the two files of the project that include libtorch headers (the other is the
/// Python binding): each such file costs most of a minute to compile.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/kernel_library.h"
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

/// A plan bound to the dispatcher, plus the constant tensors it reads. Immutable after
/// construction, so one instance may run on several threads at once.
class AtenExecutable {
 public:
  /// `labels[node]` names each graph node in error messages ("aten::mm (model.py:3 in f)").
  /// Throws std::runtime_error if an operator is unknown or an argument cannot be bound.
  /// `library` holds the plan's generated kernels (null when the plan has none); the
  /// executable keeps it loaded for its own lifetime. `frozen_weights` (the "freezing" option):
  /// matrix steps reuse a packed weight while its version counter is unchanged, without
  /// checking its contents (runtime/matmul_step.h).
  AtenExecutable(const Plan& plan, std::vector<at::Tensor> constants,
                 std::vector<std::string> labels, std::shared_ptr<KernelLibrary> library = nullptr,
                 bool frozen_weights = false);
  ~AtenExecutable();

  /// Runs the plan. `inputs` is consumed (the caller's references are released as soon as
  /// no step needs them). A failing step throws StepError with the original error nested.
  std::vector<c10::IValue> run(std::vector<c10::IValue> inputs) const;

  /// The matrix steps' packed-weight caches (runtime/matmul_step.h), summed: how many times a
  /// weight was packed into a cache, and how many cached copies were dropped because the
  /// weight's contents changed behind its version counter.
  struct WeightCacheCounts {
    int64_t packs = 0;
    int64_t adopted = 0;  ///< copies another step packed, taken instead of packing
    int64_t stale_drops = 0;
  };
  WeightCacheCounts weight_cache_counts() const;

 private:
  struct Bound;
  std::unique_ptr<const Bound> bound_;
};

}  // namespace inductor_cpp::runtime
