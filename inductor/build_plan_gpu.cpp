/// \file
/// GPU plan building: device selection, pipeline options, PTX emission, launch dims.
#include "inductor/build_plan_gpu.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <stdexcept>

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

#if INDUCTOR_CPP_HAVE_NVPTX
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
  codegen::nvptx::PtxModule module =
      codegen::nvptx::emit_ptx(kernels, target, codegen::nvptx::default_libdevice_path());
  if (module.launches.size() != kernels.size())
    throw std::runtime_error("the PTX emitter returned " + std::to_string(module.launches.size()) +
                             " launch configurations for " + std::to_string(kernels.size()) +
                             " kernels");
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
    const codegen::nvptx::GpuLaunch& launch = module.launches.at(next);
    ++next;
    if (launch.name != plan_kernel->name || kernel.name != plan_kernel->name)
      throw std::runtime_error("kernel order mismatch: plan step " + plan_kernel->name +
                               ", emitted " + launch.name);
    if (!kernel.symbols.empty())
      throw std::runtime_error("kernel " + kernel.name +
                               " has symbolic sizes (not on the GPU yet)");
    runtime::GpuLaunchDims& dims = plan_kernel->gpu;
    std::copy(std::begin(launch.grid), std::end(launch.grid), dims.grid.begin());
    std::copy(std::begin(launch.block), std::end(launch.block), dims.block.begin());
    dims.shared_bytes = launch.shared_bytes;
    dims.checks_bounds = kernel_checks_bounds(kernel);
    dims.programmatic = launch.programmatic;
  }
  build.gpu_llvm_ir = std::move(module.llvm_ir);
  build.gpu_ptx = std::move(module.ptx);
  build.gpu_sm = target.sm;
  build.plan.kernel_library = "kernels.ptx";
  build.plan.library_kind = "ptx";
}
#else
void attach_gpu_module(const std::vector<ir::Kernel>&, const std::string&, const GpuTuning&,
                       PlanBuild&) {
  throw std::runtime_error("inductor_cpp was built without the NVPTX emitter (LLVM 16)");
}
#endif

}  // namespace inductor_cpp::inductor
