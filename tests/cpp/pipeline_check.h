/// \file
/// Semantic checks of the pass pipeline: a lowered program is run by the reference
/// interpreter (tests/cpp/ir_interpreter.h) before any pass, after each loop-level pass, once
/// scheduled, and once more with its memory plan; every stage must compute what the lowered
/// program computes. A stage that differs is reported with the pass that made it and the
/// program text after it, so a wrong transformation is caught where it happens.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/loop_ir.h"
#include "ir/passes/pipeline.h"
#include "tests/cpp/ir_interpreter.h"

namespace inductor_cpp::ir::testing {

/// One program run by every stage.
struct StageRun {
  std::string stage;         ///< "lowered", a pass name, "schedule" or "plan_memory"
  std::string program_text;  ///< the IR the stage ran (loop program or scheduled text)
  std::optional<interp::Outputs> outputs;  ///< null when it threw
  std::string error;                       ///< what it threw
  bool out_of_bounds = false;              ///< it threw interp::IndexOutOfBounds
};

/// How a program is checked.
struct PipelineCheck {
  interp::RandomFill fill;
  interp::ExternHandler externs;  ///< for non-view extern steps (views are evaluated)
  PipelineOptions options;
  std::vector<uint64_t> seeds = {1, 2};
  double rtol = 1e-9, atol = 1e-12;
  bool check_memory_plan = true;  ///< also run with the memory plan (the last stage)
};

/// Runs `lowered` on `inputs` at every stage. Also fails (with a message naming it) when the
/// pass list here no longer produces what run_pipeline does.
std::vector<StageRun> run_stages(const LoopProgram& lowered, const interp::BufferStorage& inputs,
                                 const PipelineCheck& check);

/// "" when, for every seed, every stage's outputs match the lowered program's; otherwise a
/// report of the first stage that differs or throws.
std::string pipeline_mismatch(const std::string& program_text, const PipelineCheck& check);
std::string pipeline_mismatch(const std::string& program_text);  ///< with the default check

/// "" when, for the given inputs, every stage throws interp::IndexOutOfBounds; otherwise a
/// report naming the stages that did not.
std::string stages_not_raising_out_of_bounds(const std::string& program_text,
                                             const interp::BufferStorage& inputs);

}  // namespace inductor_cpp::ir::testing
