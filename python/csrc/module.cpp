/// \file
/// `inductor_cpp._C`: the one crossing from Python into the compiler and runtime.
///
/// Python hands over a graph description (JSON text), the constant tensors and the options;
/// C++ returns a CompiledGraph whose __call__ runs the whole plan with the GIL released.
/// Everything here is conversion; decisions live in inductor/ and runtime/.
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/pybind.h>

#include <ATen/Parallel.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "codegen/cpu/emit_cpp.h"
#include "inductor/compile_graph.h"
#include "inductor/fingerprint.h"
#include "inductor/gpu_tuning.h"
#include "inductor/graph_json.h"
#include "kernels_cache/store.h"
#include "python/csrc/cuda_graph_io.h"
#include "knobs/knobs.h"
#include "runtime/executor.h"
#include "runtime/cpu_pool.h"
#include "matrix/matrix.h"
#include "runtime/loader/kernel_library.h"

namespace py = pybind11;
using nlohmann::json;

namespace inductor_cpp::python {
namespace {

/// The knob named `name`; KeyError naming the closest one otherwise.
knobs::Knob knob_named(const std::string& name) {
  if (const auto knob = knobs::find(name)) return *knob;
  throw py::key_error(name + " is not a known knob; did you mean " + knobs::closest_name(name) +
                      "?");
}

/// `_C.knobs`: the registry's table and typed reads, for python/inductor_cpp/knobs.py.
void register_knobs_bindings(py::module_& m) {
  py::module_ k = m.def_submodule("knobs", "The INDUCTOR_CPP_* registry (knobs/knobs.h)");
  k.def("table", [] {
    py::list rows;
    for (const knobs::KnobInfo& i : knobs::all()) {
      rows.append(py::dict(py::arg("name") = i.name, py::arg("type") = knobs::type_name(i.type),
                           py::arg("default") = i.default_value, py::arg("codegen") = i.codegen,
                           py::arg("scope") = knobs::scope_name(i.scope),
                           py::arg("option") = i.option, py::arg("doc") = i.doc));
    }
    return rows;
  });
  k.def("raw", [](const std::string& n) { return knobs::raw(knob_named(n)); });
  k.def("get_text", [](const std::string& n) { return knobs::get_text(knob_named(n)); });
  k.def("get_bool", [](const std::string& n) { return knobs::get_bool(knob_named(n)); });
  k.def("get_count", [](const std::string& n) { return knobs::get_count(knob_named(n)); });
  k.def("get_float", [](const std::string& n) { return knobs::get_float(knob_named(n)); });
  k.def("malformed", [](const std::string& n) { return knobs::malformed(knob_named(n)); });
  k.def("codegen_values", &knobs::codegen_values);
  k.def("take_unknown_warnings", &knobs::take_unknown_warnings);
}

/// The process's compile counters: the single piece of state the binding owns.
inductor::CompileStats& process_stats() {
  static inductor::CompileStats stats;
  return stats;
}

c10::IValue to_ivalue(const py::handle& obj) {
  if (THPVariable_Check(obj.ptr())) return THPVariable_Unpack(obj.ptr());
  if (obj.is_none()) return c10::IValue();
  if (py::isinstance<py::bool_>(obj)) return c10::IValue(obj.cast<bool>());
  if (py::isinstance<py::int_>(obj)) return c10::IValue(obj.cast<int64_t>());
  if (py::isinstance<py::float_>(obj)) return c10::IValue(obj.cast<double>());
  throw py::type_error("inductor_cpp: compiled graph input of unsupported type " +
                       std::string(Py_TYPE(obj.ptr())->tp_name));
}

py::object to_python(const c10::IValue& v) {
  if (v.isTensor()) return py::reinterpret_steal<py::object>(THPVariable_Wrap(v.toTensor()));
  if (v.isNone()) return py::none();
  if (v.isBool()) return py::bool_(v.toBool());
  if (v.isInt()) return py::int_(v.toInt());
  if (v.isDouble()) return py::float_(v.toDouble());
  if (v.isSymInt()) return py::int_(v.toSymInt().expect_int());
  throw std::runtime_error("inductor_cpp: graph output of unsupported kind " + v.tagKind());
}

/// Appends `context` to the pending Python exception: to its message when that is its only
/// argument (so str() shows it, as for RuntimeError/IndexError/ValueError), else as a note.
void add_context_to_python_error(const std::string& context) {
  PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
  PyErr_Fetch(&type, &value, &traceback);
  PyErr_NormalizeException(&type, &value, &traceback);
  try {
    py::handle exc(value);
    py::tuple args = exc.attr("args");
    if (args.size() == 1 && py::isinstance<py::str>(args[0])) {
      exc.attr("args") = py::make_tuple(args[0].cast<std::string>() + "\n" + context);
    } else if (py::hasattr(exc, "add_note")) {
      exc.attr("add_note")(context);
    }
  } catch (const py::error_already_set&) {
    // An exception class that refuses both: leave it as it was.
  }
  PyErr_Restore(type, value, traceback);
}

/// Raises the error of a failed plan step in Python with its original type (IndexError stays
/// IndexError, a Python kernel's exception stays itself), plus which op and source line.
[[noreturn]] void raise_step_error(const runtime::StepError& e) {
  try {
    std::rethrow_if_nested(e);
    throw std::runtime_error(e.what());
  } catch (...) {
    torch::translate_exception_to_python(std::current_exception());
  }
  add_context_to_python_error(e.what());
  throw py::error_already_set();
}

/// The diagnostics a CompiledGraph keeps (see CompiledGraph::debug_info).
json debug_info_of(const inductor::CompiledPlan& c) {
  json passes = json::array();
  for (const ir::PassRecord& p : c.passes) {
    passes.push_back(
        json{{"name", p.name}, {"ms", p.milliseconds}, {"changed", p.changed}, {"ir", p.ir_after}});
  }
  json decisions = json::array();
  for (const inductor::NodeDecision& d : c.decisions) {
    decisions.push_back(json{{"node", d.node}, {"generated", d.generated}, {"reason", d.reason}});
  }
  return json{{"graph_text", c.graph_text},
              {"schedule_text", c.schedule_text},
              {"lowered_text", c.lowered_text},
              {"ir_rebuilt", c.ir_rebuilt},
              {"passes", std::move(passes)},
              {"labels", c.labels},
              {"decisions", std::move(decisions)},
              {"kernels", inductor::kernel_infos_to_json(c.kernels)},
              {"build", c.build_record},
              {"timings", c.timings},
              {"kernel_library", c.library ? c.library->path() : std::string()}};
}

/// A status line on the terminal while a compile runs longer than `after_s` seconds:
///   inductor_cpp: compiling graph 3 (forward): C++ compiler on 12 kernel(s) (2.5 s)
/// rewritten in place, erased when the compile ends. The caller decides whether stderr is a
/// terminal; this only writes to file descriptor 2.
class ProgressLine {
 public:
  ProgressLine(std::string label, double after_s) : label_(std::move(label)), after_s_(after_s) {
    thread_ = std::thread([this] { run(); });
  }
  ~ProgressLine() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    wake_.notify_all();
    thread_.join();
    if (shown_) write_stderr("\r\033[K");
  }
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  void set_stage(const std::string& stage) {
    std::lock_guard<std::mutex> lock(mutex_);
    stage_ = stage;
  }

 private:
  static void write_stderr(const std::string& text) {
    const ssize_t ignored = ::write(STDERR_FILENO, text.data(), text.size());
    (void)ignored;
  }

  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    const auto start = std::chrono::steady_clock::now();
    if (wake_.wait_for(lock, std::chrono::duration<double>(after_s_), [this] { return done_; }))
      return;
    while (!done_) {
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      char elapsed[32];
      std::snprintf(elapsed, sizeof elapsed, " (%.1f s)", seconds);
      write_stderr("\r\033[Kinductor_cpp: compiling " + label_ +
                   (stage_.empty() ? "" : ": " + stage_) + elapsed);
      shown_ = true;
      wake_.wait_for(lock, std::chrono::milliseconds(250), [this] { return done_; });
    }
  }

  const std::string label_;
  const double after_s_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::string stage_;
  bool done_ = false;
  bool shown_ = false;
  std::thread thread_;
};

/// A compiled graph as Python sees it.
class CompiledGraph {
 public:
  /// `bound`: the plan already bound for execution (a cache hit's, by compile()'s accept_hit),
  /// else null and bound here.
  CompiledGraph(inductor::CompiledPlan compiled, std::vector<at::Tensor> constants, bool frozen_weights,
                std::unique_ptr<runtime::Executable> bound = nullptr)
      : key_(compiled.key),
        cache_outcome_(compiled.cache_outcome),
        plan_json_(runtime::plan_to_json(compiled.plan).dump()),
        plan_text_(runtime::plan_to_text(compiled.plan)),
        cpp_source_(compiled.cpp_source),
        ops_generated_(compiled.plan.ops_generated),
        ops_fallback_(compiled.plan.ops_fallback),
        kernel_steps_(std::count_if(compiled.plan.steps.begin(), compiled.plan.steps.end(),
                                    [](const runtime::Step& s) { return s.kernel() != nullptr; })),
        matrix_steps_(std::count_if(compiled.plan.steps.begin(), compiled.plan.steps.end(),
                                    [](const runtime::Step& s) { return s.library() != nullptr; })),
        aten_steps_(static_cast<int64_t>(compiled.plan.steps.size()) - kernel_steps_ -
                    matrix_steps_),
        logs_(std::move(compiled.logs)),
        debug_(debug_info_of(compiled)),
        executable_(bound ? std::move(bound)
                          : std::make_unique<runtime::Executable>(compiled.plan, std::move(constants),
                                                                  std::move(compiled.labels),
                                                                  compiled.library, frozen_weights)) {}

  /// The boxed calling convention of AOT autograd: a list of inputs, which we empty so that
  /// inputs die as soon as the plan is done with them (a tuple is accepted and left alone).
  py::list call(py::sequence args) {
    std::vector<c10::IValue> inputs;
    inputs.reserve(py::len(args));
    for (const py::handle& a : args) inputs.push_back(to_ivalue(a));
    if (PyList_Check(args.ptr())) args.attr("clear")();
    std::vector<c10::IValue> outputs;
    try {
      py::gil_scoped_release no_gil;
      outputs = executable_->run(std::move(inputs));
    } catch (const runtime::StepError& e) {
      raise_step_error(e);
    }
    ++calls_;
    py::list result;
    for (const c10::IValue& v : outputs) result.append(to_python(v));
    return result;
  }

  /// call() while the current CUDA stream is being captured (cuda_graphs.py): the outputs
  /// and the status words each replay rewrites (None when no kernel can set them).
  py::tuple run_for_capture(py::sequence args) {
    std::vector<c10::IValue> inputs;
    inputs.reserve(py::len(args));
    for (const py::handle& a : args) inputs.push_back(to_ivalue(a));
    std::vector<c10::IValue> outputs;
    at::Tensor status;
    try {
      py::gil_scoped_release no_gil;
      outputs = executable_->run_for_capture(std::move(inputs), status);
    } catch (const runtime::StepError& e) {
      raise_step_error(e);
    }
    py::list result;
    for (const c10::IValue& v : outputs) result.append(to_python(v));
    return py::make_tuple(result, status.defined() ? to_python(status) : py::none());
  }

  /// After a replay: its status words, for a later non-blocking read (None: nothing to read).
  void queue_status(const py::object& words) {
    ++calls_;
    if (!words.is_none()) executable_->queue_status(THPVariable_Unpack(words.ptr()));
  }

  /// Before a replay: raises for an earlier run whose status words report a bad index.
  void check_earlier_runs() {
    try {
      executable_->check_earlier_runs();
    } catch (const runtime::StepError& e) {
      raise_step_error(e);
    }
  }

  py::dict counters() const {
    py::dict d;
    d["ops_generated"] = ops_generated_;
    d["ops_fallback"] = ops_fallback_;
    d["kernels"] = kernel_steps_;
    d["matrix_kernels"] = matrix_steps_;  // matmul / conv steps on our GEMM library
    d["aten_calls"] = aten_steps_;
    d["calls"] = calls_.load();
    d["cache"] = cache_outcome_;
    const runtime::WeightCacheCounts weights = executable_->weight_cache_counts();
    d["weight_packs"] = weights.packs;  // weights packed into a matrix step's cross-call cache
    d["weight_stale_drops"] = weights.stale_drops;  // of those, dropped for writes behind .data
    d["weight_shared"] = weights.adopted;  // copies another graph's step packed, taken as they are
    return d;
  }

  py::list logs() const {
    py::list out;
    for (const auto& r : logs_) out.append(py::make_tuple(r.artifact, r.message));
    return out;
  }

  /// What explain(), debug dumps and bench kernels read (docs/observability.md).
  py::dict debug_info() const {
    py::dict d;
    for (auto it = debug_.begin(); it != debug_.end(); ++it) {
      d[py::str(it.key())] = it.value().is_string() ? py::str(it.value().get<std::string>())
                                                    : py::str(it.value().dump());
    }
    return d;
  }

  const std::string& key() const { return key_; }
  const std::string& cache_outcome() const { return cache_outcome_; }
  const std::string& plan_json() const { return plan_json_; }
  const std::string& plan_text() const { return plan_text_; }
  const std::string& cpp_source() const { return cpp_source_; }

 private:
  std::string key_;
  std::string cache_outcome_;
  std::string plan_json_;
  std::string plan_text_;
  std::string cpp_source_;
  int64_t ops_generated_;
  int64_t ops_fallback_;
  int64_t kernel_steps_;
  int64_t matrix_steps_;
  int64_t aten_steps_;
  std::vector<inductor::LogRecord> logs_;
  nlohmann::json debug_;  ///< debug_info(): texts as strings, structured parts as JSON
  std::unique_ptr<const runtime::Executable> executable_;
  std::atomic<int64_t> calls_{0};
};

/// One kernel library loaded for benchmarking: calls a named kernel on given tensors, the way
/// the runtime does (data pointers in parameter order, no symbols), without a plan around it.
class KernelRunner {
 public:
  explicit KernelRunner(const std::string& path) : library_(runtime::KernelLibrary::open(path)) {}

  int32_t run(const std::string& name, const std::vector<at::Tensor>& tensors,
              int32_t num_threads) const {
    const runtime::KernelFn fn = library_->kernel(name);
    std::vector<char*> ptrs = pointers(tensors);
    py::gil_scoped_release no_gil;
    return fn(ptrs.data(), nullptr, num_threads);
  }

  std::vector<double> time(const std::string& name, const std::vector<at::Tensor>& tensors,
                           int32_t num_threads, int64_t warmup, int64_t iters) const {
    if (iters < 1) throw std::invalid_argument("iters must be >= 1");
    const runtime::KernelFn fn = library_->kernel(name);
    std::vector<char*> ptrs = pointers(tensors);
    std::vector<double> seconds;
    seconds.reserve(iters);
    py::gil_scoped_release no_gil;
    for (int64_t i = 0; i < warmup; ++i) check(fn(ptrs.data(), nullptr, num_threads), name);
    for (int64_t i = 0; i < iters; ++i) {
      const auto start = std::chrono::steady_clock::now();
      const int32_t status = fn(ptrs.data(), nullptr, num_threads);
      seconds.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      check(status, name);
    }
    return seconds;
  }

  const std::string& path() const { return library_->path(); }

 private:
  static std::vector<char*> pointers(const std::vector<at::Tensor>& tensors) {
    std::vector<char*> ptrs;
    for (const at::Tensor& t : tensors) {
      if (!t.device().is_cpu()) throw std::invalid_argument("bench kernels: CPU tensors only");
      ptrs.push_back(static_cast<char*>(t.data_ptr()));
    }
    return ptrs;
  }
  static void check(int32_t status, const std::string& name) {
    if (status != 0)
      throw std::runtime_error("kernel " + name + " returned status " + std::to_string(status));
  }

  std::shared_ptr<runtime::KernelLibrary> library_;
};

/// `diagnostics` (JSON, never part of the cache key): {"log_artifacts": [names],
/// "keep_ir_text": bool, "progress": {"label": "graph 3 (forward)", "after_s": 1.0} or null}.
std::unique_ptr<CompiledGraph> compile(const std::string& description,
                                       std::vector<at::Tensor> constants,
                                       const std::string& options, const std::string& environment,
                                       const std::string& diagnostics) {
  const json diag = json::parse(diagnostics.empty() ? "{}" : diagnostics);
  inductor::CompileContext ctx;
  for (const json& name : diag.value("log_artifacts", json::array()))
    ctx.log_artifacts.insert(name.get<std::string>());
  ctx.keep_ir_text = diag.value("keep_ir_text", false);
  ctx.options = inductor::CompileOptions::from_json(json::parse(options));
  ctx.environment = json::parse(environment);
  ctx.stats = &process_stats();
  // Whether to use the cache is the options' call (Python resolved option vs environment);
  // the environment still says where the cache is and how big it may grow.
  kernels_cache::CacheConfig config = kernels_cache::cache_config_from_env();
  std::unique_ptr<kernels_cache::Store> store;
  config.enabled = ctx.options.use_cache && !config.root.empty();
  if (config.enabled) store = std::make_unique<kernels_cache::Store>(config);
  ctx.store = store.get();
  const json parsed = json::parse(description);
  inductor::CompiledPlan compiled;
  std::unique_ptr<runtime::Executable> bound;
  {
    // The compile is pure C++ (and may run the C++ compiler for seconds): other Python
    // threads run meanwhile.
    py::gil_scoped_release no_gil;
    std::unique_ptr<ProgressLine> progress;
    const json& p = diag.value("progress", json());
    if (p.is_object()) {
      progress = std::make_unique<ProgressLine>(p.value("label", std::string("graph")),
                                                p.value("after_s", 1.0));
      ctx.progress = [line = progress.get()](const std::string& stage) { line->set_stage(stage); };
    }
    // A hit is bound before it is accepted: a plan that passed validation but names an
    // operator, dtype or device that cannot be bound is then discarded and rebuilt.
    ctx.accept_hit = [&](const inductor::CompiledPlan& loaded) {
      bound = std::make_unique<runtime::Executable>(loaded.plan, constants, loaded.labels,
                                                    loaded.library, ctx.options.freezing);
    };
    compiled = inductor::compile_graph(parsed, ctx);
    if (compiled.cache_outcome != "hit") bound.reset();
  }
  return std::make_unique<CompiledGraph>(std::move(compiled), std::move(constants), ctx.options.freezing,
                                         std::move(bound));
}

}  // namespace

/// `_C.matrix` (matrix_bench.cpp): peaks and the bf16 GEMM for `bench matrix`.
void register_matrix_bench_bindings(py::module_& parent);

}  // namespace inductor_cpp::python

PYBIND11_MODULE(_C, m) {
  using namespace inductor_cpp;
  using python::CompiledGraph;
  m.doc() = "inductor_cpp compiler and runtime (C++)";

  // Registered translators: C++ throws of these types arrive in Python as these classes.
  py::register_exception<inductor::CompileError>(m, "CompileError", PyExc_RuntimeError);
  py::register_exception<inductor::GraphSchemaError>(m, "GraphSchemaError", PyExc_ValueError);

  python::register_cuda_graph_io(m);

  py::class_<CompiledGraph>(m, "CompiledGraph")
      .def("__call__", &CompiledGraph::call, py::arg("args"))
      .def("run_for_capture", &CompiledGraph::run_for_capture, py::arg("args"))
      .def("queue_status", &CompiledGraph::queue_status, py::arg("words"))
      .def("check_earlier_runs", &CompiledGraph::check_earlier_runs)
      .def("counters", &CompiledGraph::counters)
      .def("logs", &CompiledGraph::logs)
      .def_property_readonly("key", &CompiledGraph::key)
      .def_property_readonly("cache_outcome", &CompiledGraph::cache_outcome)
      .def_property_readonly("plan_json", &CompiledGraph::plan_json)
      .def_property_readonly("plan_text", &CompiledGraph::plan_text)
      .def_property_readonly("cpp_source", &CompiledGraph::cpp_source)
      .def("debug_info", &CompiledGraph::debug_info,
           "Texts (graph, IR after each pass, schedule) and JSON strings (kernels, build, timings, "
           "decisions, passes, labels) describing the compile");

  py::class_<python::KernelRunner>(
      m, "KernelLibrary",
      "A kernels.so loaded on its own, to run one kernel at a time (bench kernels)")
      .def(py::init<const std::string&>(), py::arg("path"))
      .def("run", &python::KernelRunner::run, py::arg("name"), py::arg("tensors"),
           py::arg("num_threads"),
           "Calls kernel `name` once on the tensors' data pointers; returns its status (0: ok)")
      .def("time", &python::KernelRunner::time, py::arg("name"), py::arg("tensors"),
           py::arg("num_threads"), py::arg("warmup"), py::arg("iters"),
           "Seconds of each of `iters` calls after `warmup` untimed calls")
      .def_property_readonly("path", &python::KernelRunner::path);

  m.def("compile_graph", &python::compile, py::arg("description"), py::arg("constants"),
        py::arg("options"), py::arg("environment"), py::arg("diagnostics") = "{}",
        "Compile a graph description (JSON) into a CompiledGraph.");
  m.def(
      "runtime_header", [] { return codegen::runtime_header_text(); },
      "ic_runtime.h as generated code includes it");
  m.def(
      "check_gpu_tuning",
      [](const std::string& text) {
        try {
          inductor::parse_gpu_tuning(text);
        } catch (const std::invalid_argument& e) {
          throw py::value_error(std::string("inductor_cpp: ") + e.what());
        }
      },
      "Raises ValueError when the gpu_tuning option's text is not valid (inductor/gpu_tuning.h).");
  m.def("stats", [] { return python::process_stats().to_json().dump(); });
  m.def("reset_stats", [] { python::process_stats().reset(); });
  m.def("cpu_pool_stats", [] {
    const runtime::CpuPoolStats s = runtime::cpu_pool_stats();
    return py::dict(py::arg("cached_bytes") = s.cached_bytes, py::arg("reused") = s.reused,
                    py::arg("fresh") = s.fresh);
  }, "The CPU block pool (runtime/cpu_pool.h): bytes cached, allocations reused / fresh.");
  m.def("release_cpu_pool", [] { return runtime::release_cpu_pool(); },
        "Frees the CPU block pool's cached blocks; returns the bytes released.");
  m.def("release_matrix_scratch", [] {
    // Every thread that may have run a matrix call: the team sizes in use here.
    return matrix::release_scratch(std::max(static_cast<int>(at::get_num_threads()), omp_get_max_threads()));
  }, "Frees the matrix library's per-thread scratch (matrix/scratch.h); returns the bytes released.");
  m.def("build_id", [] { return inductor::build_id(); });
  m.def("toolchain", [] { return inductor::host_toolchain().dump(); });
  m.def("cache_root", [] { return kernels_cache::cache_config_from_env().root.string(); });
  m.def("cache_summary", [] {
    const kernels_cache::CacheConfig config = kernels_cache::cache_config_from_env();
    auto s = kernels_cache::Store(config).summary();
    return py::make_tuple(s.entries, s.bytes, config.max_bytes);
  });
  m.def("cache_clear", [] {
    kernels_cache::Store store(kernels_cache::cache_config_from_env());
    std::vector<std::string> refused;
    const size_t removed = store.clear(&refused);
    return py::make_tuple(removed, refused);
  }, "Removes every entry; returns (entries removed, entries refused with why).");
  m.def("cache_verify", [] {
    // Every entry checked as a lookup would check it, then its plan as a load would parse it
    // (checksums alone do not make a plan safe: whoever can write the entry can reseal it).
    py::list out;
    for (kernels_cache::Store::Finding& f :
         kernels_cache::Store(kernels_cache::cache_config_from_env()).verify_entries()) {
      if (f.problem.empty() && !f.key.empty()) {
        try {
          const kernels_cache::Entry entry{f.key, f.path, f.meta};
          runtime::plan_from_json(nlohmann::json::parse(entry.read("plan.json")));
        } catch (const std::exception& e) {
          f.problem = std::string("corrupt: plan.json: ") + e.what();
        }
      }
      const nlohmann::json extra = f.meta.is_object() ? f.meta.value("extra", nlohmann::json::object())
                                                      : nlohmann::json::object();
      py::dict d;
      d["key"] = f.key;
      d["path"] = f.path.string();
      d["problem"] = f.problem;
      d["kind"] = extra.is_object() ? extra.value("kind", std::string()) : std::string();
      out.append(d);
    }
    return out;
  }, "Checks every cache entry and leftover without changing anything (cache.py verify).");
  python::register_matrix_bench_bindings(m);
  python::register_knobs_bindings(m);
}
