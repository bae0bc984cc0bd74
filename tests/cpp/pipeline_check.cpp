/// \file
/// Runs a program through the pass pipeline stage by stage with the reference interpreter.
#include "tests/cpp/pipeline_check.h"

#include <functional>
#include <stdexcept>

#include "ir/ir_text.h"
#include "ir/passes/cse.h"
#include "ir/passes/dce.h"
#include "ir/passes/direct_indices.h"
#include "ir/passes/fuse_kernels.h"
#include "ir/verify.h"

namespace inductor_cpp::ir::testing {

namespace {

using Pass = std::function<LoopProgram(const LoopProgram&)>;

std::vector<std::pair<std::string, Pass>> loop_passes(const PipelineOptions& o) {
  return {
      {"eliminate_dead_code", eliminate_dead_code},
      {"eliminate_common_subexpressions", eliminate_common_subexpressions},
      {"inline_producers", [o](const LoopProgram& p) { return inline_producers(p, o.inlining); }},
      {"direct_indices", direct_indices},
      {"eliminate_dead_code", eliminate_dead_code},
      {"split_reductions", [o](const LoopProgram& p) { return split_reductions(p, split_options_for(o)); }},
      {"fuse_kernels", fuse_kernels},
      {"eliminate_dead_code", eliminate_dead_code},
  };
}

/// Runs `f`, recording its outputs or what it threw.
StageRun attempt(std::string stage, std::string text, const std::function<interp::Outputs()>& f) {
  StageRun r{std::move(stage), std::move(text), std::nullopt, "", false};
  try {
    r.outputs = f();
  } catch (const interp::IndexOutOfBounds& e) {
    r.error = std::string("IndexOutOfBounds: ") + e.what();
    r.out_of_bounds = true;
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  return r;
}

std::string report(const StageRun& before, const StageRun& stage, const std::string& what) {
  return "after " + stage.stage + ": " + what + "\n--- program before it (" + before.stage +
         "):\n" + before.program_text + "--- program after it:\n" + stage.program_text;
}

}  // namespace

std::vector<StageRun> run_stages(const LoopProgram& lowered, const interp::BufferStorage& inputs,
                                 const PipelineCheck& check) {
  // Extern view steps are evaluated by the latest definition of their view compute: passes
  // before inline_producers may rewrite views (CSE points them at an equal view).
  LoopProgram definitions = lowered;
  interp::InterpreterOptions options;
  options.run_extern = interp::view_externs_of(definitions, check.externs);
  auto learn_views = [&](const LoopProgram& p) {
    for (const Buffer& b : p.buffers) {
      if (!definitions.find_buffer(b.name)) definitions.buffers.push_back(b);
    }
    for (const auto& [name, c] : p.computes) {
      if (c.view) definitions.computes[name] = c;
    }
    options.run_extern = interp::view_externs_of(definitions, check.externs);
  };
  std::vector<StageRun> runs;
  runs.push_back(attempt("lowered", program_to_text(lowered),
                         [&] { return interp::run_loop_program(lowered, inputs, options); }));
  LoopProgram p = lowered;
  for (const auto& [name, pass] : loop_passes(check.options)) {
    try {
      p = pass(p);
      verify(p);
    } catch (const std::exception& e) {
      runs.push_back(StageRun{name, program_to_text(p), std::nullopt,
                              std::string("the pass failed: ") + e.what()});
      return runs;
    }
    learn_views(p);
    runs.push_back(attempt(name, program_to_text(p),
                           [&] { return interp::run_loop_program(p, inputs, options); }));
  }
  PipelineResult pipeline;
  try {
    pipeline = run_pipeline(lowered, check.options);
  } catch (const std::exception& e) {
    runs.push_back(StageRun{"schedule", program_to_text(p), std::nullopt,
                            std::string("run_pipeline failed: ") + e.what()});
    return runs;
  }
  if (!(pipeline.fused == p)) {
    runs.push_back(
        StageRun{"run_pipeline", program_to_text(pipeline.fused), std::nullopt,
                 "the pass list of pipeline_check.cpp no longer matches ir/passes/pipeline.cpp"});
    return runs;
  }
  const ScheduledProgram& s = pipeline.scheduled;
  runs.push_back(attempt("schedule", scheduled_to_text(s),
                         [&] { return interp::run_scheduled_program(s, inputs, options); }));
  if (!check.check_memory_plan) return runs;
  interp::InterpreterOptions planned = options;
  planned.memory_plan = &pipeline.memory;
  runs.push_back(attempt("plan_memory", scheduled_to_text(s) + memory_plan_to_text(pipeline.memory),
                         [&] { return interp::run_scheduled_program(s, inputs, planned); }));
  return runs;
}

std::string pipeline_mismatch(const std::string& program_text, const PipelineCheck& check) {
  const LoopProgram lowered = parse_program(program_text);
  verify(lowered);
  for (uint64_t seed : check.seeds) {
    const std::vector<StageRun> runs =
        run_stages(lowered, interp::random_inputs(lowered.buffers, seed, check.fill), check);
    const StageRun& reference = runs.front();
    if (!reference.outputs)
      return "the lowered program itself fails: " + reference.error + "\n" + reference.program_text;
    for (size_t k = 1; k < runs.size(); ++k) {
      const std::string seed_text = " (seed " + std::to_string(seed) + ")";
      if (!runs[k].outputs) return report(runs[k - 1], runs[k], runs[k].error + seed_text);
      const std::string diff =
          interp::compare(*runs[k].outputs, *reference.outputs, check.rtol, check.atol);
      if (!diff.empty()) return report(runs[k - 1], runs[k], diff + seed_text);
    }
  }
  return "";
}

std::string pipeline_mismatch(const std::string& program_text) {
  return pipeline_mismatch(program_text, PipelineCheck());
}

std::string stages_not_raising_out_of_bounds(const std::string& program_text,
                                             const interp::BufferStorage& inputs) {
  const PipelineCheck check;
  const LoopProgram lowered = parse_program(program_text);
  verify(lowered);
  std::string failures;
  const std::vector<StageRun> runs = run_stages(lowered, inputs, check);
  for (size_t k = 0; k < runs.size(); ++k) {
    if (runs[k].out_of_bounds) continue;
    failures +=
        k == 0 ? "lowered: " + (runs[k].outputs ? std::string("no error") : runs[k].error) + "\n"
               : report(runs[k - 1], runs[k], runs[k].outputs ? "no error" : runs[k].error) + "\n";
  }
  return failures;
}

}  // namespace inductor_cpp::ir::testing
