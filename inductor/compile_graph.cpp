/// \file
/// compile_graph(): import, key, cache protocol, plan build, strict checks, logs.
#include "inductor/compile_graph.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "codegen/cpu/emit_cpp.h"
#include "kernels_cache/sha256.h"
#include "knobs/knobs.h"
#include "runtime/loader/cpp_compiler.h"
#include "runtime/cuda/ptxas.h"

#include "inductor/build_plan.h"
#include "inductor/build_plan_gpu.h"
#include "inductor/cache_key.h"
#include "inductor/compile_report.h"
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
  std::lock_guard<std::mutex> lock(reported_mutex_);
  reported_.clear();
}

bool CompileStats::first_report_of(const std::string& reason) {
  std::lock_guard<std::mutex> lock(reported_mutex_);
  return reported_.insert(reason).second;
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

/// Scratch directories of processes killed mid-build (theirs are never removed otherwise):
/// ours (owner), real directories (no symlinks), named like ours, untouched for longer than
/// any build may run (twice the tool deadline, at least an hour; a day without a deadline).
/// Once per process, best effort.
void remove_stale_scratch_dirs(const std::filesystem::path& tmp) {
  static std::mutex mutex;
  static std::set<std::string> done;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!done.insert(tmp.string()).second) return;
  }
  {
    const uint64_t deadline = knobs::get_count(knobs::Knob::ToolTimeoutS).value_or(600);
    const int64_t max_age = deadline == 0 ? 86400 : std::max<int64_t>(3600, 2 * static_cast<int64_t>(deadline));
    const auto now = std::filesystem::file_time_type::clock::now();
    std::error_code ec;
    for (const auto& d : std::filesystem::directory_iterator(tmp, ec)) {
      const std::string name = d.path().filename().string();
      struct stat st {};
      if (name.rfind("inductor_cpp-build-", 0) != 0 || ::lstat(d.path().c_str(), &st) != 0 ||
          !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid())
        continue;
      std::error_code time_ec;
      const auto mtime = std::filesystem::last_write_time(d.path(), time_ec);
      if (time_ec || now - mtime < std::chrono::seconds(max_age)) continue;
      std::error_code ignored;
      std::filesystem::remove_all(d.path(), ignored);
    }
  }
}

/// A private scratch directory, removed with its contents when this goes out of scope. Made in
/// $TMPDIR; where that is missing, not a directory, unwritable or full, in the cache's own
/// tmp/ (`cache_tmp`, when a cache is in use), then in /tmp: a TMPDIR fault costs nothing
/// while one of them works. Throws only when none does (the caller falls back for that graph).
struct ScratchDir {
  std::filesystem::path path;
  explicit ScratchDir(const std::filesystem::path& cache_tmp = {}) {
    std::vector<std::filesystem::path> bases;
    std::error_code ec;
    const std::filesystem::path tmpdir = std::filesystem::temp_directory_path(ec);
    if (!ec) bases.push_back(tmpdir);
    if (!cache_tmp.empty() && std::filesystem::is_directory(cache_tmp, ec)) bases.push_back(cache_tmp);
    bases.emplace_back("/tmp");
    std::string why;
    for (const std::filesystem::path& base : bases) {
      remove_stale_scratch_dirs(base);
      std::string tmpl = (base / "inductor_cpp-build-XXXXXX").string();
      if (mkdtemp(tmpl.data())) {
        path = tmpl;
        return;
      }
      why += (why.empty() ? "" : "; ") + base.string() + ": " + std::strerror(errno);
    }
    throw std::runtime_error("cannot create a scratch directory (" + why + ")");
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

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

void report_progress(const CompileContext& ctx, const std::string& stage) {
  if (ctx.progress) ctx.progress(stage);
}

/// GPU graphs: the module as LLVM IR (kernels.ll) and PTX (kernels.ptx, kernels.1.ptx, ...:
/// one per part), and, when ptxas is there, as cubins for the target sm (kernels.cubin, ...,
/// which the plan then names; one ptxas process per part, in parallel), so a cached graph
/// loads machine code without the driver's JIT. A failing ptxas leaves the PTX to the driver,
/// with a warning. Returns the build record's "gpu" part: the parts and ptxas's wall time.
json add_gpu_artifacts(PlanBuild& built, const CompileContext& ctx, CompiledPlan& out,
                       kernels_cache::Artifacts& artifacts) {
  const size_t parts = built.gpu_ptx.size();
  json record{{"parts", parts}, {"ptxas_ms", 0.0}};
  artifacts["kernels.ll"] = built.gpu_llvm_ir;
  for (size_t p = 0; p < parts; ++p)
    artifacts[runtime::Plan::kernel_part_name("kernels.ptx", static_cast<int32_t>(p))] = built.gpu_ptx[p];
  if (!knobs::get_bool(knobs::Knob::PtxasCubin) || runtime::cuda::find_ptxas().empty()) return record;
  const auto start = Clock::now();
  ScratchDir scratch;
  report_progress(ctx, "ptxas on " + std::to_string(built.kernels.size()) + " GPU kernel(s) in " +
                           std::to_string(parts) + " part(s)");
  std::vector<runtime::cuda::PtxasResult> results(parts);
  std::vector<std::thread> threads;
  for (size_t p = 0; p < parts; ++p) {
    threads.emplace_back([&, p] {
      const std::filesystem::path dir = scratch.path / ("part" + std::to_string(p));
      try {
        std::filesystem::create_directories(dir);
        results[p] = runtime::cuda::assemble_cubin(dir.string(), built.gpu_ptx[p], built.gpu_sm);
      } catch (const std::exception& e) {
        results[p].output = e.what();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  record["ptxas_ms"] = ms_since(start);
  for (const runtime::cuda::PtxasResult& r : results) {
    if (!r.ok) {
      out.logs.push_back({"warning", "ptxas failed; the driver will compile the PTX. " + r.command +
                                         "\n" + r.output});
      return record;
    }
  }
  for (size_t p = 0; p < parts; ++p)
    artifacts[runtime::Plan::kernel_part_name("kernels.cubin", static_cast<int32_t>(p))] = results[p].cubin;
  built.plan.kernel_library = "kernels.cubin";
  built.plan.library_kind = "cubin";
  return record;
}

/// Why a C++ compile failed, in one line: the compiler's first line naming an error (without
/// the scratch directory's path), else its last line, else that it said nothing.
std::string compile_failure_summary(const std::string& output) {
  std::string first_error, last;
  size_t at = 0;
  while (at < output.size()) {
    size_t end = output.find('\n', at);
    if (end == std::string::npos) end = output.size();
    const std::string line = output.substr(at, end - at);
    at = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    last = line;
    if (first_error.empty() && line.find("error") != std::string::npos) first_error = line;
  }
  std::string why = !first_error.empty() ? first_error : last;
  if (why.empty()) return "the compiler failed without a message";
  const size_t file = why.find("kernels.cpp:");  // "/tmp/inductor_cpp-build-Xyz/kernels.cpp:3:10: ..."
  if (file != std::string::npos) why = why.substr(file);
  return why.size() > 200 ? why.substr(0, 200) + "..." : why;
}

/// The code generation settings the compile options ask for.
CodegenSettings codegen_settings(const CompileOptions& options, bool keep_ir_text) {
  CodegenSettings settings;
  // mode="lite": the fastest compile, the graph's ATen plan run by our executor.
  if (options.codegen.value("mode", std::string("default")) == "lite") {
    settings.enabled = false;
    settings.disabled_reason = "mode=\"lite\" generates no code";
  }
  settings.pipeline.keep_ir_text = keep_ir_text;
  settings.matrix_kernels = options.codegen.value("matrix_kernels", false);
  settings.tile_epilogues = options.codegen.value("matrix_tile_epilogues", true);
  settings.frozen_weights = options.freezing;
  settings.gpu_tuning = parse_gpu_tuning(options.codegen.value("gpu_tuning", std::string()));
  return settings;
}

/// Builds the plan and its kernel library, and counts them; the cache calls this only on a
/// miss. A kernel library that fails to compile falls back to an all-ATen plan, with the
/// compiler's message logged: code generation trouble never fails a compile. Besides the
/// artifacts, it leaves in `out` what only a build knows (the IR text after each pass, when
/// asked for) and its duration.
kernels_cache::Artifacts build_artifacts(const ir::Graph& graph, const CompileContext& ctx,
                                         CompiledPlan& out) {
  const auto start = Clock::now();
  if (ctx.stats) ++ctx.stats->plan_builds;
  report_progress(ctx, "lowering and passes");
  PlanBuild built = build_plan(graph, codegen_settings(ctx.options, ctx.keep_ir_text));
  const double plan_build_ms = ms_since(start);
  out.passes = built.passes;
  out.lowered_text = built.lowered_text;
  if (!built.codegen_error.empty())
    out.logs.push_back({"warning", "code generation abandoned: " + built.codegen_error});
  kernels_cache::Artifacts artifacts;
  if (!built.gpu_ptx.empty()) {
    const json gpu = add_gpu_artifacts(built, ctx, out, artifacts);
    json record = make_build_record(built, plan_build_ms, nullptr, "");
    record["gpu"] = gpu;
    artifacts["build.json"] = record.dump();
  } else if (!built.cpp_source.empty()) {
    ScratchDir scratch(ctx.store != nullptr ? ctx.store->config().root / "tmp" : std::filesystem::path());
    if (ctx.stats) ++ctx.stats->cxx_compiler_invocations;
    report_progress(ctx, "C++ compiler on " + std::to_string(built.kernels.size()) + " kernel(s)");
    runtime::CppCompileResult r;
    try {
      r = runtime::compile_shared_library(scratch.path.string(), built.cpp_source, codegen::runtime_header_text());
    } catch (const std::runtime_error& e) {
      // No compiler to start (an image without g++, an empty PATH, its identity taken from
      // the toolchain record): like a failed compile, the graph runs as ATen calls.
      r.ok = false;
      r.output = e.what();
    }
    const json record = make_build_record(built, plan_build_ms, &r, scratch.path.string());
    if (r.ok) {
      artifacts["kernels.so"] = read_file(scratch.path / "kernels.so");
      artifacts["kernels.cpp"] = built.cpp_source;
      artifacts["build.json"] = record.dump();
    } else {
      if (ctx.stats) ++ctx.stats->cxx_compile_failures;
      // One line, once per process and cause (a missing sleef.h is the same hundreds of lines
      // of g++ errors for every graph); the whole output is the fallbacks log's.
      const std::string why = compile_failure_summary(r.output);
      if (!ctx.stats || ctx.stats->first_report_of(why))
        out.logs.push_back({"warning", "generated kernels failed to compile (" + why +
                                           "); graphs that fail so run as ATen calls (the compiler's "
                                           "output: INDUCTOR_CPP_LOGS=fallbacks)"});
      if (ctx.wants("fallbacks"))
        out.logs.push_back({"fallbacks", "the C++ compile failed: " + r.command + "\n" + r.output});
      const PlanBuild aten = build_aten_plan(graph, "its generated kernel failed to compile");
      out.timings["build_ms"] = ms_since(start);
      throw KernelCompileFailed{{{"plan.json", runtime::plan_to_json(aten.plan).dump()},
                                 {"decisions.json", decisions_to_json(aten.decisions).dump()},
                                 {"build.json", record.dump()}}};
    }
  } else {
    artifacts["build.json"] = make_build_record(built, plan_build_ms, nullptr, "").dump();
  }
  artifacts["plan.json"] = runtime::plan_to_json(built.plan).dump();
  artifacts["decisions.json"] = decisions_to_json(built.decisions).dump();
  artifacts["kernels.json"] = kernel_infos_to_json(built.kernels).dump();
  artifacts["schedule.txt"] = built.scheduled_text;
  out.timings["build_ms"] = ms_since(start);
  report_progress(ctx, "loading");
  return artifacts;
}

/// One file of an entry, opened once and checked through that descriptor: ours (owner, not
/// group/other-writable), a regular file (O_NOFOLLOW: no symlink), and, in a cache entry, one
/// that meta.json lists, whose bytes hash to its sha256 (a scratch dir of an uncached build has
/// no meta.json: this process wrote its files just now). The bytes returned are the bytes
/// checked: nothing can be swapped in between. `keep_fd`: the descriptor is handed over open
/// (the kernel library is loaded through it), else closed. Throws std::runtime_error on any
/// mismatch (the caller discards the entry and rebuilds).
std::string read_entry_file(const kernels_cache::Entry& entry, const std::string& name, int* keep_fd = nullptr) {
  const std::filesystem::path path = entry.dir / name;
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot open " + path.string() + ": " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() {
      if (fd >= 0) ::close(fd);
    }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 022) != 0)
    throw std::runtime_error(path.string() + " is not a private regular file of this user");
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::pread(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(done));
    if (n <= 0) throw std::runtime_error("cannot read " + path.string());
    done += static_cast<size_t>(n);
  }
  if (entry.meta.is_object()) {
    const json files = entry.meta.value("files", json::object());
    if (!files.is_object() || !files.contains(name))
      throw std::runtime_error(path.string() + " is not among the files meta.json lists");
    const json& record = files.at(name);
    if (!record.is_object() || record.value("sha256", std::string()) != kernels_cache::sha256_hex(bytes))
      throw std::runtime_error(path.string() + " does not match meta.json's sha256");
  }
  if (keep_fd != nullptr) {
    *keep_fd = fd;
    closer.fd = -1;
  }
  return bytes;
}

/// The entry's kernel library, checked by read_entry_file and loaded through that descriptor
/// (dlopen("/proc/self/fd/N") maps the file that was checked). Without /proc, the checked path
/// is loaded.
std::shared_ptr<runtime::KernelLibrary> open_entry_library(const kernels_cache::Entry& entry,
                                                           const std::string& name) {
  int fd = -1;
  read_entry_file(entry, name, &fd);
  const std::string path = (entry.dir / name).string();
  if (::access(("/proc/self/fd/" + std::to_string(fd)).c_str(), R_OK) != 0) {
    ::close(fd);
    return runtime::KernelLibrary::open(path);  // no /proc: the checked path
  }
  return runtime::KernelLibrary::open_descriptor(fd, path);  // owns the descriptor now
}

/// Reads a plan and loads its kernels from an entry's directory.
void load_entry(const kernels_cache::Entry& entry, CompiledPlan& out) {
  auto read = [&](const std::string& name) { return read_entry_file(entry, name); };
  out.plan = runtime::plan_from_json(json::parse(read("plan.json")));
  out.decisions = decisions_from_json(json::parse(read("decisions.json")));
  // Diagnostic artifacts: absent from the all-ATen fallback of a failed kernel compile.
  auto has = [&](const char* name) { return std::filesystem::exists(entry.path(name)); };
  out.kernels = has("kernels.json") ? kernel_infos_from_json(json::parse(read("kernels.json")))
                                    : std::vector<KernelInfo>{};
  out.schedule_text = has("schedule.txt") ? read("schedule.txt") : "";
  out.build_record = has("build.json") ? json::parse(read("build.json")) : json::object();
  if (out.plan.is_gpu()) {
    // The module is loaded by the executor (runtime/cuda); output_code shows IR and PTX.
    out.cpp_source = "// ---- LLVM IR (kernels.ll) ----\n" + read("kernels.ll");
    for (int32_t p = 0; p < out.plan.kernel_parts; ++p) {
      out.plan.kernel_images.push_back(read(out.plan.kernel_part_name(p)));
      const std::string ptx = runtime::Plan::kernel_part_name("kernels.ptx", p);
      out.cpp_source += "\n// ---- PTX (" + ptx + "; loaded as " + out.plan.kernel_part_name(p) + ") ----\n" +
                        read(ptx);
    }
  } else if (!out.plan.kernel_library.empty()) {
    out.cpp_source = read("kernels.cpp");
    out.library = open_entry_library(entry, out.plan.kernel_library);
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
    // Private whatever the umask (read_entry_file refuses group/other-writable files).
    std::filesystem::permissions(scratch.path / name, std::filesystem::perms::owner_read |
                                                          std::filesystem::perms::owner_write);
  }
  kernels_cache::Entry entry;
  entry.dir = scratch.path;
  load_entry(entry, out);  // dlopen keeps the library mapped after its file is gone
}

void load_through_cache(const ir::Graph& graph, kernels_cache::Store& store,
                        const std::function<kernels_cache::Artifacts()>& build,
                        const CompileContext& ctx, CompiledPlan& out) {
  std::string read_error, discarded;
  for (int attempt = 0; attempt < 2; ++attempt) {
    kernels_cache::LookupResult found =
        store.get_or_build(out.key, build, json{{"kind", graph.kind}});
    try {
      load_entry(found.entry, out);
      if (found.outcome == kernels_cache::Outcome::Hit && ctx.accept_hit) ctx.accept_hit(out);
    } catch (const std::exception& e) {
      read_error = e.what();
      // A hit whose plan fails validation (its checksums matched: meta.json was rewritten with
      // it, or it came from a different build) is removed, so the next round rebuilds it.
      if (found.outcome == kernels_cache::Outcome::Hit && store.discard(found.entry).empty())
        discarded = "unusable entry removed: " + read_error;
      continue;
    }
    if (!discarded.empty() && found.outcome == kernels_cache::Outcome::Built) {
      found.outcome = kernels_cache::Outcome::RebuiltCorrupt;
      found.note = discarded;
    }
    out.cache_outcome = kernels_cache::outcome_name(found.outcome);
    std::string line = "graph " + out.key + ": " + out.cache_outcome;
    if (!found.note.empty()) line += " (" + found.note + ")";
    if (ctx.wants("cache")) out.logs.push_back({"cache", line});
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

/// On a cache hit nothing was lowered; the `ir` log and debug dumps still want the IR, so the
/// lowering and passes run again for them (no C++ compiler run: the kernels come from the cache).
void rebuild_ir_text(const ir::Graph& graph, const CompileOptions& options, CompiledPlan& out) {
  PlanBuild again = build_plan(graph, codegen_settings(options, true));
  out.passes = std::move(again.passes);
  out.lowered_text = std::move(again.lowered_text);
  out.ir_rebuilt = true;
}

/// The diagnostic records of the artifacts the caller asked for.
void log_diagnostics(const CompileContext& ctx, bool built_now, CompiledPlan& out) {
  const std::string head = "graph " + out.key + ":";
  if (ctx.wants("ir")) {
    if (out.ir_rebuilt)
      out.logs.push_back(
          {"ir", head + " cache hit: IR rebuilt for this log (kernels loaded from the cache)"});
    for (const std::string& text : ir_reports(out.lowered_text, out.passes))
      out.logs.push_back({"ir", head + " " + text});
  }
  if (ctx.wants("fusion"))
    out.logs.push_back({"fusion", head + " " + fusion_report(out.plan, out.labels)});
  if (ctx.wants("schedule")) {
    out.logs.push_back({"schedule", head + (out.schedule_text.empty() ? " no generated kernels"
                                                                      : "\n" + out.schedule_text)});
  }
  if (ctx.wants("perf")) {
    out.logs.push_back(
        {"perf",
         head + " " + perf_report(out.cache_outcome, out.timings, out.build_record, built_now)});
  }
}

void log_fallbacks(CompiledPlan& out) {
  for (const NodeDecision& d : out.decisions) {
    if (d.node < 0 || d.node >= static_cast<int32_t>(out.labels.size())) continue;
    if (!d.generated)
      out.logs.push_back({"fallbacks", out.labels[d.node] + ": runs as an ATen call (" + d.reason + ")"});
    else if (!d.reason.empty())  // generated, part of it still an ATen call
      out.logs.push_back({"fallbacks", out.labels[d.node] + ": partly an ATen call (" + d.reason + ")"});
  }
}

}  // namespace

CompiledPlan compile_graph(const json& description, const CompileContext& ctx) {
  const auto start = Clock::now();
  const ir::Graph graph = graph_from_json(description);
  CompiledPlan out;
  for (const ir::Node& node : graph.nodes) out.labels.push_back(label_of(node));
  out.graph_text = ir::to_text(graph);
  if (ctx.wants("graph")) out.logs.push_back({"graph", out.graph_text});
  out.timings["import_ms"] = ms_since(start);

  const auto key_start = Clock::now();
  out.key = cache_key({graph_to_json(graph, /*with_sources=*/false), ctx.options.codegen,
                       ctx.environment, build_id(), toolchain_for(graph_gpu_device(graph))});
  out.timings["key_ms"] = ms_since(key_start);
  const auto cache_start = Clock::now();
  bool built_now = false;
  auto build = [&] {
    built_now = true;
    return build_artifacts(graph, ctx, out);
  };
  try {
    if (ctx.store && ctx.options.use_cache) {
      load_through_cache(graph, *ctx.store, build, ctx, out);
    } else {
      out.cache_outcome = "uncached";
      load_uncached(build(), out);
      if (ctx.wants("cache"))
        out.logs.push_back({"cache", "graph " + out.key + ": uncached (cache disabled)"});
    }
  } catch (const KernelCompileFailed& failed) {
    out.cache_outcome = "uncached";
    load_uncached(failed.fallback, out);
    if (ctx.wants("cache")) {
      out.logs.push_back(
          {"cache", "graph " + out.key + ": uncached (its kernels failed to compile)"});
    }
  }
  const double build_ms = out.timings.value("build_ms", 0.0);
  out.timings["build_ms"] = build_ms;
  out.timings["cache_ms"] = ms_since(cache_start) - build_ms;
  if (ctx.stats) {
    ++ctx.stats->graphs_compiled;
    if (out.cache_outcome == "hit") ++ctx.stats->cache_hits;
    if (out.cache_outcome != "hit") ++ctx.stats->cache_misses;
    if (out.cache_outcome == "rebuilt_corrupt") ++ctx.stats->cache_corrupt_rebuilt;
  }
  out.timings["total_ms"] = ms_since(start);
  if (ctx.keep_ir_text && !built_now) rebuild_ir_text(graph, ctx.options, out);
  log_diagnostics(ctx, built_now, out);

  if (ctx.wants("fallbacks")) log_fallbacks(out);
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
