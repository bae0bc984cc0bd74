/// \file
/// Binding an ATen step (runtime/plan.h AtenCall) to its c10 dispatcher operator: each plan
/// operand becomes a ready-made stack entry (a constant IValue, a slot, or a list mixing
/// both) in schema order, so a run only pushes and calls. "sym::" steps (arithmetic on sizes
/// in graphs with symbolic shapes, runtime/scalar_ops.h) never touch the dispatcher.
#pragma once

#include <memory>
#include <string>

#include "runtime/bound_step.h"
#include "runtime/plan.h"

namespace inductor_cpp::runtime {

/// Throws std::runtime_error if the operator is unknown or an argument cannot be bound;
/// `label` names the step in errors.
std::unique_ptr<BoundStep> bind_aten_call(const AtenCall& call, std::string label);

/// A graph output: a slot, or a literal taken as written. `ctx.slots` must hold the slots.
class BoundOutput {
 public:
  explicit BoundOutput(const PlanArg& arg);
  c10::IValue value(const std::vector<c10::IValue>& slots) const;

 private:
  int32_t slot_ = -1;
  c10::IValue constant_;
};

}  // namespace inductor_cpp::runtime
