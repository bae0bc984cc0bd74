/// \file
/// The pass pipeline, in order, in one place (pipeline.cpp reads top to bottom):
///
///   lowered LoopProgram
///     -> eliminate_dead_code -> eliminate_common_subexpressions
///     -> inline_producers          (vertical fusion, views as index rewrites)
///     -> absorb_epilogues          (library calls take over the pointwise work on their result)
///     -> split_reductions          (two-stage long reductions with few outputs)
///     -> fuse_kernels              (epilogue / sibling / horizontal grouping)
///     -> eliminate_dead_code
///     -> schedule                  (loop nests: order, merge, parallel, vector)
///     -> fuse_horizontal           (independent small kernels side by side; CPU only)
///     -> plan_memory               (lifetimes, reuse, in place)
///
/// Each pass is timed; the program is verified after each loop-level pass; on request the
/// IR text after each pass is kept (INDUCTOR_CPP_LOGS=ir, debug dumps).
#pragma once

#include <string>
#include <vector>

#include "ir/loop_ir.h"
#include "ir/passes/absorb_epilogues.h"
#include "ir/passes/fuse_horizontal.h"
#include "ir/passes/inline_producers.h"
#include "ir/passes/plan_memory.h"
#include "ir/passes/schedule.h"
#include "ir/passes/split_reductions.h"

namespace inductor_cpp::ir {

struct PipelineOptions {
  InlineOptions inlining;
  AbsorbOptions absorb;
  SplitOptions split;
  ScheduleOptions schedule;
  bool fuse_horizontal = true;  ///< CPU schedules only (fuse_horizontal.h)
  HorizontalFusionOptions horizontal{int64_t{1} << 18};
  bool keep_ir_text = false;  ///< record the IR text after every pass
  bool verify = true;         ///< run the verifier after each loop-level pass
};

struct PassRecord {
  std::string name;
  double milliseconds = 0;
  bool changed = false;
  std::string ir_after;  ///< when keep_ir_text
};

struct PipelineResult {
  LoopProgram fused;  ///< the loop program as scheduled (after the last loop-level pass)
  ScheduledProgram scheduled;
  MemoryPlan memory;
  std::vector<PassRecord> passes;
};

PipelineResult run_pipeline(const LoopProgram& lowered, const PipelineOptions& options = {});

/// options.split as the pipeline runs it for options' target: on the GPU the column chunks are
/// off (its column kernels split rows over thread rows themselves), few-column splits reach
/// more outputs (up to 4096) over at least 2^20 elements, batch-norm variances split with
/// Chan's combine, and split sums add their parts in float64.
SplitOptions split_options_for(const PipelineOptions& options);

}  // namespace inductor_cpp::ir
