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
#include <functional>
#include <nlohmann/json.hpp>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "inductor/build_plan.h"
#include "inductor/kernel_info.h"
#include "inductor/options.h"
#include "kernels_cache/store.h"
#include "runtime/loader/kernel_library.h"
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
  /// True the first time `reason` is given since the last reset(): a compiler failure (a
  /// missing header, no compiler) is warned about once per process, not once per graph.
  bool first_report_of(const std::string& reason);

 private:
  std::mutex reported_mutex_;
  std::set<std::string> reported_;
};

/// A message for one logging artifact (docs/observability.md); the caller emits them.
/// "warning" records are always produced; the others only when asked for.
struct LogRecord {
  std::string artifact;  ///< "graph", "ir", "fusion", "schedule", "cache", "fallbacks", "perf"
  std::string message;
};

struct CompileContext {
  CompileOptions options;
  nlohmann::json environment = nlohmann::json::object();  ///< torch version, Python ABI
  kernels_cache::Store* store = nullptr;                  ///< null: compile without cache
  CompileStats* stats = nullptr;

  // Diagnostics. None of these enters the cache key or changes what is generated.
  /// Log artifacts to produce records for (besides warnings, which always come).
  std::set<std::string> log_artifacts;
  /// Keep the loop IR text as lowered and after every pass (the `ir` log, debug dumps). On a
  /// cache hit the IR is rebuilt for this (lowering and passes only: no C++ compiler run).
  bool keep_ir_text = false;
  /// Told what the compile is doing as it moves on ("lowering and passes", "g++: 12 kernels",
  /// ...), for a progress line; may be empty.
  std::function<void(const std::string& stage)> progress;
  /// Called on a plan read from a cache hit before the hit is accepted (the caller binds it
  /// for execution: an operator, dtype or device a validated plan may still name wrongly).
  /// Throwing rejects the entry: it is discarded and rebuilt, as a corrupt one. May be empty.
  std::function<void(const struct CompiledPlan& loaded)> accept_hit;

  bool wants(const std::string& artifact) const { return log_artifacts.count(artifact) > 0; }
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

  // What tools show about the compile (explain(), debug dumps, bench kernels).
  std::string graph_text;           ///< the ATen-level graph (ir::to_text)
  std::string schedule_text;        ///< kernels and extern calls as scheduled ("" without codegen)
  std::vector<KernelInfo> kernels;  ///< per generated kernel (kernel_info.h)
  /// How the cache entry was built (build.json): per-pass times, lowering and emit times, the
  /// C++ compiler command and its duration. From the entry, so a cache hit has it too.
  nlohmann::json build_record = nlohmann::json::object();
  /// This compile's stage times in ms: import, key, cache (lookup or build, and load), total.
  nlohmann::json timings = nlohmann::json::object();
  /// With keep_ir_text: the loop IR as lowered and the records of every pass with its IR text
  /// (on a cache hit, from a rebuild done for the purpose: `ir_rebuilt`).
  std::string lowered_text;
  std::vector<ir::PassRecord> passes;
  bool ir_rebuilt = false;
};

CompiledPlan compile_graph(const nlohmann::json& description, const CompileContext& ctx);

}  // namespace inductor_cpp::inductor
