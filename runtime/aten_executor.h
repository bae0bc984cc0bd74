/// \file
/// Runs a plan: binds each ATen step to its c10 dispatcher operator once, then executes the
/// whole step list per call in C++ (boxed calls by schema name, no Python between ops).
///
/// One of the two files of the project that include libtorch headers (the other is the
/// Python binding): each such file costs most of a minute to compile.
#pragma once

#include <ATen/core/ivalue.h>
#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <vector>

#include "runtime/plan.h"

namespace inductor_cpp::runtime {

/// A plan bound to the dispatcher, plus the constant tensors it reads. Immutable after
/// construction, so one instance may run on several threads at once.
class AtenExecutable {
 public:
  /// `labels[node]` names each graph node in error messages ("aten::mm (model.py:3 in f)").
  /// Throws std::runtime_error if an operator is unknown or an argument cannot be bound.
  AtenExecutable(const Plan& plan, std::vector<at::Tensor> constants, std::vector<std::string> labels);
  ~AtenExecutable();

  /// Runs the plan. `inputs` is consumed (the caller's references are released as soon as
  /// no step needs them). Errors name the failing op and the user's source line.
  std::vector<c10::IValue> run(std::vector<c10::IValue> inputs) const;

 private:
  struct Bound;
  std::unique_ptr<const Bound> bound_;
};

}  // namespace inductor_cpp::runtime
