/// \file
/// The GPU part of plan building: which devices get generated code, the pipeline options
/// for them, and turning a graph's scheduled kernels into one PTX module (the NVPTX emitter,
/// codegen/nvptx) whose launch dimensions go into the plan's kernel steps.
///
/// build_plan.cpp calls these at two points (docs/gpu.md):
///   device is_gpu_device? ─► run_pipeline(gpu_pipeline_options(...))
///   kernels scheduled     ─► attach_gpu_module(kernels, device, build)
/// Anything the emitter cannot handle throws; build_plan then runs the graph as ATen calls.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "inductor/build_plan.h"
#include "ir/aten_graph.h"
#include "ir/kernel_ir.h"
#include "ir/passes/pipeline.h"

namespace inductor_cpp::inductor {

/// "cuda" or "cuda:N", and GPU code generation is switched on (INDUCTOR_CPP_GPU_CODEGEN is
/// not "0").
bool is_gpu_device(const std::string& device);

/// The first CUDA device a graph's tensors are on ("cuda:0"), "" when none is.
std::string graph_gpu_device(const ir::Graph& graph);

/// The device ordinal of "cuda:N" (0 for "cuda").
int gpu_ordinal(const std::string& device);

/// `base` with the scheduler targeting the GPU (one thread per element, block reductions).
ir::PipelineOptions gpu_pipeline_options(const ir::PipelineOptions& base);

/// The sm architecture kernels for `device` are generated for: the device's compute
/// capability (driver), capped at what LLVM 16 emits (sm_90); 90 without a driver.
int gpu_target_sm(const std::string& device);

/// What, besides the graph, decides the GPU code: sm architecture, LLVM version, PTX ISA,
/// driver version, ptxas version. Part of the cache key of GPU graphs (fingerprint.h).
nlohmann::json gpu_toolchain(const std::string& device);

/// Emits `kernels` (the graph's kernel steps, in plan order) as PTX, fills each kernel step's
/// GPU launch dims and sets the plan's library to "kernels.ptx" (kind "ptx"). The kernels are
/// split into parts (partition_kernels with compile_threads()), each emitted, optimized and
/// turned into PTX as a module of its own on a thread of its own; identical kernels are
/// emitted once (first_identical_kernels)
/// (plan.kernel_parts; each kernel step's gpu.part). Leaves the LLVM IR and the PTX per part
/// in build.gpu_llvm_ir / build.gpu_ptx. Throws std::runtime_error when the emitter cannot
/// emit a kernel.
/// `tuning`: the emitter switches of the option "gpu_tuning".
void attach_gpu_module(const std::vector<ir::Kernel>& kernels, const std::string& device,
                       const GpuTuning& tuning, PlanBuild& build);

/// For each kernel, the index of the first kernel identical to it up to its name and the
/// buffers its parameters name (itself when none before is): attach_gpu_module emits each
/// distinct kernel once and launches repeats through the first one's entry (gpu.function).
std::vector<size_t> first_identical_kernels(const std::vector<ir::Kernel>& kernels);

/// Kernels per part, at least, on average: each part links libdevice and runs ptxas once.
inline constexpr size_t kMinKernelsPerPart = 8;

/// Threads for compiling one graph's kernels: INDUCTOR_CPP_COMPILE_THREADS, else the CPUs
/// this process may run on.
int compile_threads();

/// `kernels` in min(`parts`, kernels / kMinKernelsPerPart) groups (at least one), balanced by
/// statement count (largest first, each to the lightest group): the kernel indices of each
/// group, ascending.
std::vector<std::vector<size_t>> partition_kernels(const std::vector<ir::Kernel>& kernels, int parts);

/// Whether a kernel has indirect (bounds-checked) loads, i.e. may set the status word.
bool kernel_checks_bounds(const ir::Kernel& kernel);

}  // namespace inductor_cpp::inductor
