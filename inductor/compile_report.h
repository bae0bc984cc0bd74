/// \file
/// What a compile tells about itself: the text of its diagnostic log records (`fusion`,
/// `ir`, `perf`; docs/observability.md) and the build record stored in each cache entry
/// (build.json). Formatting only: every decision was made before these run.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "inductor/build_plan.h"
#include "ir/passes/pipeline.h"
#include "runtime/loader/cpp_compiler.h"
#include "runtime/plan.h"

namespace inductor_cpp::inductor {

/// build.json: how an entry was built. `cxx` is null when no C++ was compiled.
///   {"plan_build_ms", "lowering_ms", "emit_ms", "passes": [{"name", "ms", "changed"}],
///    "kernels": N, "codegen_error": "...",
///    "cxx": {"command", "dir" (the build directory named in the command), "seconds", "ok"}}
nlohmann::json make_build_record(const PlanBuild& built, double plan_build_ms,
                                 const runtime::CppCompileResult* cxx,
                                 const std::string& compile_dir);

/// `fusion`: per kernel the graph nodes it computes, the nodes that run as ATen calls, and
/// those in no step at all (views folded into indexing, dead code). `labels[node]` names a
/// node: "aten::sin (model.py:3 in f: ...)".
std::string fusion_report(const runtime::Plan& plan, const std::vector<std::string>& labels);

/// `ir`: one message for the lowered program, then one per pass (a pass that changed nothing
/// says so instead of repeating the text).
std::vector<std::string> ir_reports(const std::string& lowered_text,
                                    const std::vector<ir::PassRecord>& passes);

/// `perf`: where one compile's time went. `timings` is CompiledPlan::timings; `build_record`
/// the entry's build.json, described as this compile's work when `built_now`, else as the
/// original build's.
std::string perf_report(const std::string& cache_outcome, const nlohmann::json& timings,
                        const nlohmann::json& build_record, bool built_now);

}  // namespace inductor_cpp::inductor
