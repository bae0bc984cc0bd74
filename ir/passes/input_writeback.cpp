/// \file
/// Which functionalized input mutations can be done in place by the kernel computing them.
#include "ir/passes/input_writeback.h"

#include <algorithm>
#include <optional>
#include <set>

namespace inductor_cpp::ir {

namespace {

bool same_layout(const Buffer& a, const Buffer& b) {
  return a.dtype == b.dtype && a.device == b.device && a.sizes == b.sizes && a.strides == b.strides &&
         a.offset == b.offset;
}

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

/// Index of the kernel step that writes `buffer`, if any.
std::optional<size_t> writer_of(const ScheduledProgram& program, const std::string& buffer) {
  for (size_t s = 0; s < program.steps.size(); ++s) {
    const ScheduledStep& step = program.steps[s];
    if (step.kind == ScheduledStep::Kind::Kernel && contains(step.writes, buffer)) return s;
  }
  return std::nullopt;
}

bool is_legal(const ScheduledProgram& program, const MemoryPlan& memory, const InputWriteback& c) {
  const Buffer* value = nullptr;
  const Buffer* input = nullptr;
  for (const Buffer& b : program.buffers) {
    if (b.name == c.value) value = &b;
    if (b.name == c.input) input = &b;
  }
  if (!value || !input || input->origin != BufferOrigin::Input || value->origin != BufferOrigin::Computed) return false;
  if (!same_layout(*value, *input)) return false;
  if (contains(program.outputs, c.value) || contains(program.outputs, c.input)) return false;
  if (memory.reuse.count(c.value)) return false;
  for (const auto& [taker, donor] : memory.reuse) {
    if (donor == c.value) return false;
  }
  const std::optional<size_t> writer = writer_of(program, c.value);
  if (!writer || *writer >= c.copy_step) return false;
  for (size_t s = 0; s < program.steps.size(); ++s) {
    const ScheduledStep& step = program.steps[s];
    if (s == c.copy_step || !contains(step.reads, c.input)) continue;
    // A later reader would see the new value; an ATen step may have returned a view of it.
    if (s > *writer || step.kind == ScheduledStep::Kind::Extern) return false;
  }
  const ScheduledStep& kernel = program.steps[*writer];
  return !contains(kernel.reads, c.input) || reads_only_where_written(kernel.kernel, c.input, c.value);
}

}  // namespace

std::vector<InputWriteback> plan_input_writebacks(const ScheduledProgram& program, const MemoryPlan& memory,
                                                  const std::vector<InputWriteback>& candidates) {
  std::vector<InputWriteback> accepted;
  std::set<std::string> inputs_taken;
  std::set<std::string> values_taken;
  for (const InputWriteback& c : candidates) {
    if (inputs_taken.count(c.input) || values_taken.count(c.value)) continue;
    if (!is_legal(program, memory, c)) continue;
    inputs_taken.insert(c.input);
    values_taken.insert(c.value);
    accepted.push_back(c);
  }
  return accepted;
}

}  // namespace inductor_cpp::ir
