/// \file
/// The pass pipeline (see pipeline.h for the order and why it is this order).
#include "ir/passes/pipeline.h"

#include <algorithm>
#include <chrono>
#include <functional>

#include "ir/ir_text.h"
#include "ir/passes/cse.h"
#include "ir/passes/dce.h"
#include "ir/passes/direct_indices.h"
#include "ir/passes/fuse_kernels.h"
#include "ir/verify.h"

namespace inductor_cpp::ir {

namespace {

double elapsed_ms(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since).count();
}

/// Runs one loop-level pass: times it, verifies the result, records whether it changed.
LoopProgram run_pass(const std::string& name, const std::function<LoopProgram(const LoopProgram&)>& pass,
                     const LoopProgram& in, const PipelineOptions& options, std::vector<PassRecord>& records) {
  const auto start = std::chrono::steady_clock::now();
  LoopProgram out = pass(in);
  PassRecord record{name, elapsed_ms(start), !(out == in), ""};
  if (options.verify) verify(out);
  if (options.keep_ir_text) record.ir_after = program_to_text(out);
  records.push_back(std::move(record));
  return out;
}

}  // namespace

PipelineResult run_pipeline(const LoopProgram& lowered, const PipelineOptions& options) {
  PipelineResult result;
  auto& records = result.passes;
  if (options.verify) verify(lowered);
  LoopProgram p = lowered;
  p = run_pass("eliminate_dead_code", eliminate_dead_code, p, options, records);
  p = run_pass("eliminate_common_subexpressions", eliminate_common_subexpressions, p, options, records);
  p = run_pass("inline_producers", [&](const LoopProgram& x) { return inline_producers(x, options.inlining); },
               p, options, records);
  p = run_pass("direct_indices", direct_indices, p, options, records);
  p = run_pass("eliminate_dead_code", eliminate_dead_code, p, options, records);
  p = run_pass("absorb_epilogues", [&](const LoopProgram& x) { return absorb_epilogues(x, options.absorb); }, p,
               options, records);
  const SplitOptions split = split_options_for(options);
  p = run_pass("split_reductions", [&](const LoopProgram& x) { return split_reductions(x, split); }, p,
               options, records);
  p = run_pass("fuse_kernels", fuse_kernels, p, options, records);
  p = run_pass("eliminate_dead_code", eliminate_dead_code, p, options, records);
  result.fused = p;

  auto start = std::chrono::steady_clock::now();
  result.scheduled = schedule(p, options.schedule);
  for (const ScheduledStep& s : result.scheduled.steps) {
    if (options.verify && s.kind == ScheduledStep::Kind::Kernel) verify(s.kernel);
  }
  records.push_back({"schedule", elapsed_ms(start), true,
                     options.keep_ir_text ? scheduled_to_text(result.scheduled) : ""});

  if (options.fuse_horizontal && options.schedule.target == Target::Cpu) {
    start = std::chrono::steady_clock::now();
    const size_t steps_before = result.scheduled.steps.size();
    result.scheduled = fuse_horizontal(result.scheduled, options.horizontal);
    for (const ScheduledStep& s : result.scheduled.steps) {
      if (options.verify && s.kind == ScheduledStep::Kind::Kernel) verify(s.kernel);
    }
    records.push_back({"fuse_horizontal", elapsed_ms(start), result.scheduled.steps.size() != steps_before,
                       options.keep_ir_text ? scheduled_to_text(result.scheduled) : ""});
  }

  start = std::chrono::steady_clock::now();
  result.memory = plan_memory(result.scheduled);
  records.push_back({"plan_memory", elapsed_ms(start), !result.memory.reuse.empty(),
                     options.keep_ir_text ? memory_plan_to_text(result.memory) : ""});
  return result;
}

SplitOptions split_options_for(const PipelineOptions& options) {
  SplitOptions split = options.split;
  if (options.schedule.target != Target::Cpu) {
    split.column_chunk = 0;
    // A column kernel gives a block to a few columns (<= 32 thread rows each): 96 channels
    // over 100352 pixels (convnext's bias and layer-scale gradients) ran on one block of the
    // H200's 132 multiprocessors. Columns are split up to where the column kernels alone
    // would have 2048 groups of 4 x 32 thread rows to spread.
    split.few_columns_max_outputs = std::max<int64_t>(split.few_columns_max_outputs, 4096);
    split.few_columns_min_elements = std::max<int64_t>(split.few_columns_min_elements, int64_t{1} << 20);
    split.two_pass_variance = false;
    if (split.strided_head_max_parts == 0) split.strided_head_max_parts = 256;
    split.float64_totals = true;
  }
  return split;
}

}  // namespace inductor_cpp::ir
