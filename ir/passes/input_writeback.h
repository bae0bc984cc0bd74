/// \file
/// Input write-back: a graph that overwrites one of its inputs (a functionalized mutation:
/// `aten::copy_(input, value)`, as AOT autograd emits for optimizer state, parameters under
/// `optimizer.step()` and batch-norm running statistics) can have the kernel that computes
/// `value` store it straight into the input's storage, instead of writing a fresh buffer that
/// a separate copy then moves into the input. This saves one read and one write of the tensor,
/// and is what makes a compiled optimizer step update its state in place.
///
/// It is legal when nothing can observe the difference:
///   * `value` is written by a kernel step before the copy, with the input's exact dtype,
///     device and layout (sizes, strides, offset), is not a graph output, and takes or gives no
///     storage in the memory plan;
///   * the input is not a graph output, no step after that kernel (other than the copy) and no
///     ATen step at all (it may have returned a view of it) reads it; inside the kernel it is read only where `value` is written and before the
///     write (plan_memory.h: reads_only_where_written), so every read sees the old value.
/// A candidate that fails any condition keeps its copy step (correct, one extra pass).
#pragma once

#include <string>
#include <vector>

#include "ir/passes/plan_memory.h"
#include "ir/passes/schedule.h"

namespace inductor_cpp::ir {

/// `input` (an Input buffer) := `value` (a computed buffer), done by extern step `copy_step`.
struct InputWriteback {
  size_t copy_step = 0;
  std::string value;
  std::string input;
  bool operator==(const InputWriteback& o) const {
    return copy_step == o.copy_step && value == o.value && input == o.input;
  }
};

/// The candidates whose `value` can be stored straight into `input` (see the file comment),
/// at most one per input and per value.
std::vector<InputWriteback> plan_input_writebacks(const ScheduledProgram& program, const MemoryPlan& memory,
                                                  const std::vector<InputWriteback>& candidates);

}  // namespace inductor_cpp::ir
