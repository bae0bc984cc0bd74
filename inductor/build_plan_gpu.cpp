/// \file
/// GPU plan building: device selection, pipeline options, PTX emission, launch dims.
#include "inductor/build_plan_gpu.h"

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <functional>
#include <map>
#include <stdexcept>
#include <thread>

#if INDUCTOR_CPP_HAVE_NVPTX
#include "codegen/nvptx/emit_ptx.h"
#endif
#include "knobs/knobs.h"
#include "runtime/cuda/driver.h"
#include "runtime/cuda/ptxas.h"

namespace inductor_cpp::inductor {

namespace {

/// LLVM 16's NVPTX backend knows sm_90 at most; PTX for sm_90 is JIT-compiled by the driver
/// on later GPUs.
constexpr int kMaxEmittedSm = 90;
constexpr int kDefaultSm = 90;

bool value_checks_bounds(const ir::Value& v) {
  if (!v) return false;
  if (v->kind == ir::ValueKind::Load && !v->bounds.empty()) return true;
  return std::any_of(v->operands.begin(), v->operands.end(), value_checks_bounds);
}

size_t stmt_count(const std::vector<ir::Stmt>& body) {
  size_t n = body.size();
  for (const ir::Stmt& s : body) n += stmt_count(s.body);
  return n;
}

bool stmts_check_bounds(const std::vector<ir::Stmt>& body) {
  return std::any_of(body.begin(), body.end(), [](const ir::Stmt& s) {
    return value_checks_bounds(s.value) || stmts_check_bounds(s.body);
  });
}

}  // namespace

bool is_gpu_device(const std::string& device) {
  if (!INDUCTOR_CPP_HAVE_NVPTX) return false;  // built without LLVM: GPU graphs run as ATen
  if (device != "cuda" && device.rfind("cuda:", 0) != 0) return false;
  return knobs::get_bool(knobs::Knob::GpuCodegen);
}

std::string graph_gpu_device(const ir::Graph& g) {
  auto cuda = [](const std::string& d) { return d == "cuda" || d.rfind("cuda:", 0) == 0; };
  for (const ir::GraphInput& in : g.inputs) {
    if (in.tensor && cuda(in.tensor->device)) return in.tensor->device;
  }
  for (const ir::TensorMeta& c : g.constants) {
    if (cuda(c.device)) return c.device;
  }
  for (const ir::Node& n : g.nodes) {
    for (const auto& o : n.outputs) {
      if (o && cuda(o->device)) return o->device;
    }
  }
  return "";
}

int gpu_ordinal(const std::string& device) {
  const auto colon = device.find(':');
  return colon == std::string::npos ? 0 : std::stoi(device.substr(colon + 1));
}

ir::PipelineOptions gpu_pipeline_options(const ir::PipelineOptions& base) {
  ir::PipelineOptions options = base;
  options.schedule.target = ir::Target::Gpu;
  options.inlining.realize_by_streams = true;
  return options;
}

int gpu_target_sm(const std::string& device) {
  const int cc = runtime::cuda::compute_capability(gpu_ordinal(device));
  return cc <= 0 ? kDefaultSm : std::min(cc, kMaxEmittedSm);
}

nlohmann::json gpu_toolchain(const std::string& device) {
  const int ordinal = gpu_ordinal(device);
  nlohmann::json out{{"codegen", is_gpu_device(device)},
                     {"device_sm", runtime::cuda::compute_capability(ordinal)},
                     {"target_sm", gpu_target_sm(device)},
                     {"driver", runtime::cuda::driver_version()},
                     {"ptxas", runtime::cuda::ptxas_version()}};
#if INDUCTOR_CPP_HAVE_NVPTX
  out["ptx_version"] = codegen::nvptx::GpuTarget{}.ptx_version;
  out["llvm"] = codegen::nvptx::llvm_version();
#endif
  return out;
}

bool kernel_checks_bounds(const ir::Kernel& kernel) {
  return stmts_check_bounds(kernel.body);
}

namespace {

/// The kernel with its name and parameters replaced by positional ones: kernels with the same
/// text compute the same thing on their parameters (the layers of a transformer, a forward
/// kernel recomputed in the backward) and share one PTX entry.
std::string canonical_text(const ir::Kernel& k) {
  std::map<std::string, std::string> renamed;
  ir::Kernel c = k;
  c.name = "k";
  for (size_t i = 0; i < c.params.size(); ++i) {
    c.params[i].buffer = "%p" + std::to_string(i);
    renamed.emplace(k.params[i].buffer, c.params[i].buffer);
  }
  const auto rename = [&](const ir::Value& v) {
    return ir::replace_loads(v, [&](const ir::Value& l) -> ir::Value {
      auto it = renamed.find(l->name);
      if (it == renamed.end()) return ir::Value();
      return ir::load(it->second, l->dtype, l->index, l->mask, l->operands, l->bounds);
    });
  };
  std::function<void(std::vector<ir::Stmt>&)> walk = [&](std::vector<ir::Stmt>& body) {
    for (ir::Stmt& s : body) {
      if (s.value) s.value = rename(s.value);
      if (auto it = renamed.find(s.buffer); s.kind == ir::StmtKind::Store && it != renamed.end()) s.buffer = it->second;
      walk(s.body);
    }
  };
  walk(c.body);
  return ir::kernel_to_text(c);
}

}  // namespace

std::vector<size_t> first_identical_kernels(const std::vector<ir::Kernel>& kernels) {
  std::vector<size_t> first(kernels.size());
  std::map<std::string, size_t> seen;
  for (size_t i = 0; i < kernels.size(); ++i) first[i] = seen.emplace(canonical_text(kernels[i]), i).first->second;
  return first;
}

int compile_threads() {
  if (const auto n = knobs::get_count(knobs::Knob::CompileThreads); n && *n > 0)
    return static_cast<int>(std::min<uint64_t>(*n, 256));
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

std::vector<std::vector<size_t>> partition_kernels(const std::vector<ir::Kernel>& kernels, int parts) {
  const size_t count = std::max<size_t>(
      1, std::min<size_t>(static_cast<size_t>(std::max(parts, 1)), kernels.size() / kMinKernelsPerPart));
  std::vector<std::pair<size_t, size_t>> by_size;  // (statements, index), largest first
  for (size_t i = 0; i < kernels.size(); ++i) by_size.push_back({stmt_count(kernels[i].body), i});
  std::stable_sort(by_size.begin(), by_size.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::vector<size_t>> groups(count);
  std::vector<size_t> load(count, 0);
  for (const auto& [size, index] : by_size) {  // each to the lightest group so far
    const size_t g = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    groups[g].push_back(index);
    load[g] += size;
  }
  for (std::vector<size_t>& g : groups) std::sort(g.begin(), g.end());
  return groups;
}

#if INDUCTOR_CPP_HAVE_NVPTX
namespace {

/// emit_ptx of each group on a thread of its own (the first on the calling thread).
std::vector<codegen::nvptx::PtxModule> emit_parts(const std::vector<ir::Kernel>& kernels,
                                                  const std::vector<std::vector<size_t>>& groups,
                                                  const codegen::nvptx::GpuTarget& target) {
  const std::string libdevice = codegen::nvptx::default_libdevice_path();
  std::vector<codegen::nvptx::PtxModule> modules(groups.size());
  std::vector<std::exception_ptr> errors(groups.size());
  const auto emit = [&](size_t g) {
    try {
      std::vector<ir::Kernel> part;
      for (size_t i : groups[g]) part.push_back(kernels[i]);
      modules[g] = codegen::nvptx::emit_ptx(part, target, libdevice);
    } catch (...) {
      errors[g] = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  for (size_t g = 1; g < groups.size(); ++g) threads.emplace_back(emit, g);
  emit(0);
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  return modules;
}

}  // namespace

void attach_gpu_module(const std::vector<ir::Kernel>& kernels, const std::string& device,
                       const GpuTuning& tuning, PlanBuild& build) {
  codegen::nvptx::GpuTarget target;
  target.sm = gpu_target_sm(device);
  const GpuEmitterTuning& e = tuning.emitter;
  target.read_once_hints = e.read_once_hints;
  if (e.row_unroll) target.row_unroll = e.row_unroll;
  if (e.column_unroll) target.column_unroll = e.column_unroll;
  if (e.max_column_block) target.max_column_block = e.max_column_block;
  if (e.min_column_grid) target.min_column_grid = e.min_column_grid;
  target.programmatic_launch = e.programmatic_launch;
  // Each distinct kernel is emitted once; a repeat launches the first one's entry.
  const std::vector<size_t> first = first_identical_kernels(kernels);
  std::vector<ir::Kernel> distinct;
  std::vector<size_t> source;                          // distinct kernel -> its index in `kernels`
  std::vector<size_t> distinct_index(kernels.size());  // kernel -> its distinct kernel
  for (size_t i = 0; i < kernels.size(); ++i) {
    if (first[i] == i) {
      distinct_index[i] = distinct.size();
      distinct.push_back(kernels[i]);
      source.push_back(i);
    } else {
      distinct_index[i] = distinct_index[first[i]];
    }
  }
  const std::vector<std::vector<size_t>> groups = partition_kernels(distinct, compile_threads());
  std::vector<codegen::nvptx::PtxModule> modules = emit_parts(distinct, groups, target);
  // Where each distinct kernel landed: its part and its launch.
  std::vector<std::pair<int32_t, const codegen::nvptx::GpuLaunch*>> placed(distinct.size(), {-1, nullptr});
  for (size_t g = 0; g < groups.size(); ++g) {
    if (modules[g].launches.size() != groups[g].size())
      throw std::runtime_error("the PTX emitter returned " + std::to_string(modules[g].launches.size()) +
                               " launch configurations for " + std::to_string(groups[g].size()) + " kernels");
    for (size_t k = 0; k < groups[g].size(); ++k)
      placed[groups[g][k]] = {static_cast<int32_t>(g), &modules[g].launches[k]};
  }
  size_t next = 0;
  for (runtime::Step& step : build.plan.steps) {
    runtime::KernelLaunch* plan_kernel = step.kernel();
    if (!plan_kernel) continue;
    for (const runtime::BufferAlloc& a : plan_kernel->allocs) {
      // A kernel writing host memory (a graph mixing devices) cannot run on the GPU.
      if (a.device != device)
        throw std::runtime_error("kernel " + plan_kernel->name + " writes a buffer on " + a.device +
                                 " in a graph on " + device);
    }
    const ir::Kernel& kernel = kernels.at(next);
    const auto [part, launch] = placed.at(distinct_index.at(next));
    const std::string& entry = kernels.at(source.at(distinct_index.at(next))).name;
    ++next;
    if (launch->name != entry || kernel.name != plan_kernel->name)
      throw std::runtime_error("kernel order mismatch: plan step " + plan_kernel->name +
                               ", emitted " + launch->name);
    if (!kernel.symbols.empty())
      throw std::runtime_error("kernel " + kernel.name +
                               " has symbolic sizes (not on the GPU yet)");
    runtime::GpuLaunchDims& dims = plan_kernel->gpu;
    std::copy(std::begin(launch->grid), std::end(launch->grid), dims.grid.begin());
    std::copy(std::begin(launch->block), std::end(launch->block), dims.block.begin());
    dims.shared_bytes = launch->shared_bytes;
    dims.checks_bounds = kernel_checks_bounds(kernel);
    dims.programmatic = launch->programmatic;
    dims.part = part;
    dims.function = entry == kernel.name ? "" : entry;
  }
  build.gpu_llvm_ir.clear();
  build.gpu_ptx.clear();
  for (size_t g = 0; g < modules.size(); ++g) {
    if (modules.size() > 1) build.gpu_llvm_ir += "; ---- part " + std::to_string(g) + " ----\n";
    build.gpu_llvm_ir += modules[g].llvm_ir;
    build.gpu_ptx.push_back(std::move(modules[g].ptx));
  }
  build.gpu_sm = target.sm;
  build.plan.kernel_library = "kernels.ptx";
  build.plan.library_kind = "ptx";
  build.plan.kernel_parts = static_cast<int32_t>(modules.size());
}
#else
void attach_gpu_module(const std::vector<ir::Kernel>&, const std::string&, const GpuTuning&,
                       PlanBuild&) {
  throw std::runtime_error("inductor_cpp was built without the NVPTX emitter (LLVM 16)");
}
#endif

}  // namespace inductor_cpp::inductor
