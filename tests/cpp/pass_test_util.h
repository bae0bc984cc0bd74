/// \file
/// Helpers for pass tests written as "IR text in -> pass -> IR text out".
#pragma once

#include <string>

#include "ir/ir_text.h"
#include "ir/loop_ir.h"
#include "ir/passes/plan_memory.h"
#include "ir/passes/schedule.h"
#include "ir/verify.h"

namespace inductor_cpp::ir::testing {

/// `text` wrapped as a program: "program {\n" + lines + "}\n", so tests list only the lines.
inline std::string program(const std::string& lines) { return "program {\n" + lines + "}\n"; }

/// Parses, verifies, runs `pass`, verifies the result and prints it.
template <typename Pass>
std::string run_pass(const std::string& text, Pass pass) {
  const LoopProgram in = parse_program(text);
  verify(in);
  const LoopProgram out = pass(in);
  verify(out);
  return program_to_text(out);
}

/// The kernels and extern calls `schedule` makes of a program.
inline std::string scheduled(const std::string& text, const ScheduleOptions& options = {}) {
  return scheduled_to_text(schedule(parse_program(text), options));
}

/// The scheduled program followed by its memory plan.
inline std::string memory_plan(const std::string& text) {
  const ScheduledProgram s = schedule(parse_program(text));
  return scheduled_to_text(s) + memory_plan_to_text(plan_memory(s));
}

}  // namespace inductor_cpp::ir::testing
