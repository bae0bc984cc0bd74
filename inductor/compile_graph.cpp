/// \file
/// compile_graph(): import, key, cache protocol, plan build, strict checks, logs.
#include "inductor/compile_graph.h"

#include <filesystem>
#include <functional>

#include "inductor/build_plan.h"
#include "inductor/cache_key.h"
#include "inductor/fingerprint.h"
#include "inductor/graph_json.h"

namespace inductor_cpp::inductor {

using nlohmann::json;

json CompileStats::to_json() const {
  return json{{"graphs_compiled", graphs_compiled.load()},
              {"cache_hits", cache_hits.load()},
              {"cache_misses", cache_misses.load()},
              {"cache_corrupt_rebuilt", cache_corrupt_rebuilt.load()},
              {"plan_builds", plan_builds.load()},
              {"cxx_compiler_invocations", cxx_compiler_invocations.load()}};
}

void CompileStats::reset() {
  for (auto* c : {&graphs_compiled, &cache_hits, &cache_misses, &cache_corrupt_rebuilt,
                  &plan_builds, &cxx_compiler_invocations}) {
    c->store(0);
  }
}

namespace {

std::string label_of(const ir::Node& node) {
  if (node.source.empty()) return node.op;
  return node.op + " (" + node.source + ")";
}

/// Builds the plan and counts it; the cache calls this only on a miss.
kernels_cache::Artifacts build_artifacts(const ir::Graph& graph, const CompileContext& ctx) {
  if (ctx.stats) ++ctx.stats->plan_builds;
  PlanBuild built = build_plan(graph);
  return {{"plan.json", runtime::plan_to_json(built.plan).dump()}};
}

/// The cache protocol for one graph. A hit can lose a race with another process's eviction
/// between the store's verification and our read; then we go round once more (which rebuilds),
/// and if even that fails, build without the cache: cache trouble never fails a compile.
void load_through_cache(const ir::Graph& graph, kernels_cache::Store& store,
                        const std::function<kernels_cache::Artifacts()>& build, CompiledPlan& out) {
  std::string read_error;
  for (int attempt = 0; attempt < 2; ++attempt) {
    kernels_cache::LookupResult found =
        store.get_or_build(out.key, build, json{{"kind", graph.kind}});
    std::string bytes;
    try {
      bytes = found.entry.read("plan.json");
    } catch (const std::exception& e) {
      read_error = e.what();
      continue;
    }
    out.cache_outcome = kernels_cache::outcome_name(found.outcome);
    out.plan = runtime::plan_from_json(json::parse(bytes));
    std::string line = "graph " + out.key + ": " + out.cache_outcome;
    if (!found.note.empty()) line += " (" + found.note + ")";
    out.logs.push_back({"cache", line});
    if (found.outcome == kernels_cache::Outcome::Uncached) {
      // The store built into a private temp dir; everything is read, so it can go.
      std::error_code ignored;
      std::filesystem::remove_all(found.entry.dir, ignored);
      out.logs.push_back({"warning", "cache not used: " + found.note});
    }
    return;
  }
  out.cache_outcome = "uncached";
  out.plan = runtime::plan_from_json(json::parse(build().at("plan.json")));
  out.logs.push_back({"warning", "cache not used: " + read_error});
}

void log_fallbacks(CompiledPlan& out) {
  for (const runtime::Step& step : out.plan.steps) {
    out.logs.push_back(
        {"fallbacks",
         out.labels[step.node] + ": runs as an ATen call (no generated kernel for this op yet)"});
  }
}

}  // namespace

CompiledPlan compile_graph(const json& description, const CompileContext& ctx) {
  const ir::Graph graph = graph_from_json(description);
  CompiledPlan out;
  for (const ir::Node& node : graph.nodes) out.labels.push_back(label_of(node));
  out.logs.push_back({"graph", ir::to_text(graph)});

  out.key = cache_key({graph_to_json(graph, /*with_sources=*/false), ctx.options.codegen,
                       ctx.environment, build_id(), host_toolchain()});
  auto build = [&] { return build_artifacts(graph, ctx); };
  if (ctx.store && ctx.options.use_cache) {
    load_through_cache(graph, *ctx.store, build, out);
  } else {
    out.cache_outcome = "uncached";
    out.plan = runtime::plan_from_json(json::parse(build().at("plan.json")));
    out.logs.push_back({"cache", "graph " + out.key + ": uncached (cache disabled)"});
  }
  if (ctx.stats) {
    ++ctx.stats->graphs_compiled;
    if (out.cache_outcome == "hit") ++ctx.stats->cache_hits;
    if (out.cache_outcome != "hit") ++ctx.stats->cache_misses;
    if (out.cache_outcome == "rebuilt_corrupt") ++ctx.stats->cache_corrupt_rebuilt;
  }

  log_fallbacks(out);
  if (ctx.options.strict == Strict::Everything && !out.plan.steps.empty()) {
    throw CompileError("inductor_cpp (strict=\"all\"): " + out.labels[out.plan.steps.front().node] +
                       " would run as an ATen fallback: no generated kernel for this op yet");
  }
  return out;
}

}  // namespace inductor_cpp::inductor
