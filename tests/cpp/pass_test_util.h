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
inline std::string program(const std::string& lines) {
  return "program {\n" + lines + "}\n";
}

/// Layer norm over 32 rows of 512 as lowering gives it: the buffers, the sum and variance
/// reductions (%1, %2), the per-row rstd (%3) and the normalized rows (%4); tests add the
/// kernel and output lines.
inline const std::string kLayerNormComputes = R"(  buffer %in0: float32[32, 512]{512, 1} input 0 cpu
  buffer %1: float32[32]{1} computed cpu
  buffer %2: float32[32]{1} computed cpu
  buffer %3: float32[32]{1} computed cpu
  buffer %4: float32[32, 512]{512, 1} computed cpu
  compute %1 (node 1) reduce sum[32] over [512] = load(%in0, [i0, r0])
  compute %2 (node 2) reduce welford_m2[32] over [512] = load(%in0, [i0, r0])
  compute %3 (node 3) pointwise[32] = rsqrt(add(div(load(%2, [i0]), 512.0:float32), 1e-05:float32))
  compute %4 (node 4) pointwise[32, 512] = mul(sub(load(%in0, [i0, i1]), div(load(%1, [i0]), 512.0:float32)), load(%3, [i0]))
)";

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
