/// \file
/// The compiler's entry point: graph description in, execution plan out, through the cache.
///
///   description ─► import + validate ─► key ─► cache hit? load the plan
///                                          └─► miss: build the plan, publish it
///
/// Everything it needs comes in through CompileContext (options, cache store, counters); it
/// keeps no state of its own.
#pragma once

#include <atomic>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "inductor/options.h"
#include "kernels_cache/store.h"
#include "inductor/build_plan.h"
#include "runtime/kernel_library.h"
#include "runtime/plan.h"

namespace inductor_cpp::inductor {

/// Process-wide counters, owned by whoever drives compiles (the Python binding keeps one).
struct CompileStats {
  std::atomic<int64_t> graphs_compiled{0};
  std::atomic<int64_t> cache_hits{0};
  std::atomic<int64_t> cache_misses{0};
  std::atomic<int64_t> cache_corrupt_rebuilt{0};
  std::atomic<int64_t> plan_builds{0};  ///< "compiler invocations" before codegen
  std::atomic<int64_t> cxx_compiler_invocations{0};
  std::atomic<int64_t> cxx_compile_failures{0};  ///< kernels that fell back to ATen instead

  nlohmann::json to_json() const;
  void reset();
};

/// A message for one logging artifact (docs: INDUCTOR_CPP_LOGS); the caller emits them.
struct LogRecord {
  std::string artifact;  ///< "graph", "cache", "fallbacks", ...
  std::string message;
};

struct CompileContext {
  CompileOptions options;
  nlohmann::json environment = nlohmann::json::object();  ///< torch version, Python ABI
  kernels_cache::Store* store = nullptr;                  ///< null: compile without cache
  CompileStats* stats = nullptr;
};

/// A graph the compiler refuses in strict mode, or cannot compile at all. The message names
/// the op and the user's source line when there is one.
class CompileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct CompiledPlan {
  runtime::Plan plan;
  std::shared_ptr<runtime::KernelLibrary> library;  ///< null when the plan has no kernels
  std::string cpp_source;                           ///< the generated kernels ("" if none)
  std::vector<NodeDecision> decisions;              ///< per graph node
  std::string key;
  std::string cache_outcome;        ///< "hit", "built", "rebuilt_corrupt", "uncached"
  std::vector<std::string> labels;  ///< per graph node: "aten::mm (model.py:3 in f: ...)"
  std::vector<LogRecord> logs;
};

CompiledPlan compile_graph(const nlohmann::json& description, const CompileContext& ctx);

}  // namespace inductor_cpp::inductor
