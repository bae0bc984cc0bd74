/// \file
/// compile_graph(): import, key, cache protocol, plan build, strict checks, logs.
#include "inductor/compile_graph.h"

#include <filesystem>
#include <cstdlib>
#include <fstream>
#include <functional>

#include "codegen/cpu/emit_cpp.h"
#include "runtime/cpp_compiler.h"

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
              {"cxx_compiler_invocations", cxx_compiler_invocations.load()},
              {"cxx_compile_failures", cxx_compile_failures.load()}};
}

void CompileStats::reset() {
  for (auto* c : {&graphs_compiled, &cache_hits, &cache_misses, &cache_corrupt_rebuilt,
                  &plan_builds, &cxx_compiler_invocations, &cxx_compile_failures}) {
    c->store(0);
  }
}

namespace {

std::string label_of(const ir::Node& node) {
  if (node.source.empty()) return node.op;
  return node.op + " (" + node.source + ")";
}

json decisions_to_json(const std::vector<NodeDecision>& decisions) {
  json out = json::array();
  for (const NodeDecision& d : decisions) out.push_back(json{{"node", d.node}, {"generated", d.generated}, {"reason", d.reason}});
  return out;
}

std::vector<NodeDecision> decisions_from_json(const json& j) {
  std::vector<NodeDecision> out;
  for (const json& d : j) out.push_back({d.at("node").get<int32_t>(), d.at("generated").get<bool>(), d.at("reason").get<std::string>()});
  return out;
}

/// A private scratch directory, removed with its contents when this goes out of scope.
struct ScratchDir {
  std::filesystem::path path;
  ScratchDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "inductor_cpp-build-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("cannot create a scratch directory in " + tmpl);
    path = tmpl;
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// Thrown out of a cache build whose kernels failed to compile: carries the all-ATen
/// artifacts to run instead, which must not be cached (the failure may be transient: a full
/// disk, a compiler upgrade in progress), so the next process tries again.
struct KernelCompileFailed {
  kernels_cache::Artifacts fallback;
};

/// Builds the plan and its kernel library, and counts them; the cache calls this only on a
/// miss. A kernel library that fails to compile falls back to an all-ATen plan, with the
/// compiler's message logged: code generation trouble never fails a compile.
kernels_cache::Artifacts build_artifacts(const ir::Graph& graph, const CompileContext& ctx,
                                         std::vector<LogRecord>& logs) {
  if (ctx.stats) ++ctx.stats->plan_builds;
  PlanBuild built = build_plan(graph);
  if (!built.codegen_error.empty()) logs.push_back({"warning", "code generation abandoned: " + built.codegen_error});
  kernels_cache::Artifacts artifacts;
  if (!built.cpp_source.empty()) {
    ScratchDir scratch;
    if (ctx.stats) ++ctx.stats->cxx_compiler_invocations;
    const runtime::CppCompileResult r =
        runtime::compile_shared_library(scratch.path.string(), built.cpp_source, codegen::runtime_header_text());
    logs.push_back({"perf", "kernels compiled in " + std::to_string(r.seconds) + " s: " + r.command});
    if (r.ok) {
      artifacts["kernels.so"] = read_file(scratch.path / "kernels.so");
      artifacts["kernels.cpp"] = built.cpp_source;
    } else {
      if (ctx.stats) ++ctx.stats->cxx_compile_failures;
      logs.push_back({"warning", "generated kernels failed to compile; running the graph as ATen calls. " +
                                     r.command + "\n" + r.output});
      const PlanBuild aten = build_aten_plan(graph, "its generated kernel failed to compile");
      throw KernelCompileFailed{{{"plan.json", runtime::plan_to_json(aten.plan).dump()},
                                 {"decisions.json", decisions_to_json(aten.decisions).dump()}}};
    }
  }
  artifacts["plan.json"] = runtime::plan_to_json(built.plan).dump();
  artifacts["decisions.json"] = decisions_to_json(built.decisions).dump();
  return artifacts;
}

/// Reads a plan and loads its kernels from an entry's directory.
void load_entry(const kernels_cache::Entry& entry, CompiledPlan& out) {
  out.plan = runtime::plan_from_json(json::parse(entry.read("plan.json")));
  out.decisions = decisions_from_json(json::parse(entry.read("decisions.json")));
  if (!out.plan.kernel_library.empty()) {
    out.cpp_source = entry.read("kernels.cpp");
    out.library = runtime::KernelLibrary::open((entry.dir / out.plan.kernel_library).string());
  }
}

/// The cache protocol for one graph. A hit can lose a race with another process's eviction
/// between the store's verification and our read; then we go round once more (which rebuilds),
/// and if even that fails, build without the cache: cache trouble never fails a compile.
/// Artifacts built outside the cache: written to a scratch dir just long enough to load.
void load_uncached(const kernels_cache::Artifacts& artifacts, CompiledPlan& out) {
  ScratchDir scratch;
  for (const auto& [name, bytes] : artifacts) {
    std::ofstream(scratch.path / name, std::ios::binary) << bytes;
  }
  kernels_cache::Entry entry;
  entry.dir = scratch.path;
  load_entry(entry, out);  // dlopen keeps the library mapped after its file is gone
}

void load_through_cache(const ir::Graph& graph, kernels_cache::Store& store,
                        const std::function<kernels_cache::Artifacts()>& build, CompiledPlan& out) {
  std::string read_error;
  for (int attempt = 0; attempt < 2; ++attempt) {
    kernels_cache::LookupResult found =
        store.get_or_build(out.key, build, json{{"kind", graph.kind}});
    try {
      load_entry(found.entry, out);
    } catch (const std::exception& e) {
      read_error = e.what();
      continue;
    }
    out.cache_outcome = kernels_cache::outcome_name(found.outcome);
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
  load_uncached(build(), out);
  out.logs.push_back({"warning", "cache not used: " + read_error});
}

void log_fallbacks(CompiledPlan& out) {
  for (const NodeDecision& d : out.decisions) {
    if (d.generated || d.node < 0 || d.node >= static_cast<int32_t>(out.labels.size())) continue;
    out.logs.push_back({"fallbacks", out.labels[d.node] + ": runs as an ATen call (" + d.reason + ")"});
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
  auto build = [&] { return build_artifacts(graph, ctx, out.logs); };
  try {
    if (ctx.store && ctx.options.use_cache) {
      load_through_cache(graph, *ctx.store, build, out);
    } else {
      out.cache_outcome = "uncached";
      load_uncached(build(), out);
      out.logs.push_back({"cache", "graph " + out.key + ": uncached (cache disabled)"});
    }
  } catch (const KernelCompileFailed& failed) {
    out.cache_outcome = "uncached";
    load_uncached(failed.fallback, out);
    out.logs.push_back({"cache", "graph " + out.key + ": uncached (its kernels failed to compile)"});
  }
  if (ctx.stats) {
    ++ctx.stats->graphs_compiled;
    if (out.cache_outcome == "hit") ++ctx.stats->cache_hits;
    if (out.cache_outcome != "hit") ++ctx.stats->cache_misses;
    if (out.cache_outcome == "rebuilt_corrupt") ++ctx.stats->cache_corrupt_rebuilt;
  }

  log_fallbacks(out);
  if (ctx.options.strict == Strict::Everything) {
    for (const NodeDecision& d : out.decisions) {
      if (d.generated) continue;
      throw CompileError("inductor_cpp (strict=\"all\"): " + out.labels.at(d.node) +
                         " would run as an ATen fallback: " + d.reason);
    }
  }
  return out;
}

}  // namespace inductor_cpp::inductor
