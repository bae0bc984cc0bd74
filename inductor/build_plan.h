/// \file
/// Turns an ATen-level graph into an execution plan.
///
///   graph ─► lower (inductor/lower) ─► pass pipeline (ir/passes) ─► C++ source (codegen/cpu)
///         ─► plan: value slots, kernel steps (with their buffer allocations and reuse),
///            ATen steps for everything not generated, and when each slot can be freed.
///
/// Code generation is skipped (every node runs as an ATen call) for graphs on devices we do
/// not generate code for, and when lowering or the pipeline fails on a graph — that failure
/// is reported, never fatal (strict mode makes it an error, in compile_graph).
#pragma once

#include <string>
#include <vector>

#include "inductor/gpu_tuning.h"
#include "inductor/kernel_info.h"
#include "ir/aten_graph.h"
#include "ir/passes/pipeline.h"
#include "runtime/plan.h"

namespace inductor_cpp::inductor {

/// How one graph node was handled, for logs and explain().
struct NodeDecision {
  int32_t node = -1;
  bool generated = false;
  std::string reason;  ///< why it falls back, when it does
};

struct CodegenSettings {
  bool enabled = true;
  std::string disabled_reason = "code generation disabled";  ///< the decisions' reason when off
  ir::PipelineOptions pipeline;
  /// CPU matrix ops (mm, addmm, bmm, convolution and its backward, flash attention and its
  /// backward) as library calls on our kernels (inductor/lower/library_calls.h) instead of
  /// ATen's; the option "matrix_kernels".
  bool matrix_kernels = false;
  /// With matrix_kernels: a pointwise kernel after an mm / addmm / conv2d that the epilogue ops
  /// cannot express runs per output tile inside the call (ir/passes/absorb_epilogues.h); the option
  /// "matrix_tile_epilogues" (default on).
  bool tile_epilogues = true;
  /// With matrix_kernels: the option "freezing" (weights are constants). Then, on a CPU with
  /// usable AMX, bf16 mm / addmm run on our AMX GEMM with B kept packed.
  bool frozen_weights = false;
  /// GPU graphs: the option "gpu_tuning" (schedule limits, emitter switches).
  GpuTuning gpu_tuning;
};

struct PlanBuild {
  runtime::Plan plan;
  std::vector<NodeDecision> decisions;
  std::string cpp_source;     ///< the kernels' translation unit; empty without kernels
  std::string codegen_error;  ///< why code generation was abandoned for this graph, if it was
  std::vector<ir::PassRecord> passes;
  std::string lowered_text;    ///< the loop program as lowered (when keep_ir_text)
  std::string scheduled_text;  ///< the kernels and extern calls as scheduled
  std::vector<KernelInfo> kernels;  ///< per generated kernel, in plan order
  double lowering_ms = 0;           ///< ATen graph -> loop IR
  double emit_ms = 0;               ///< scheduled kernels -> C++ source (or PTX)
  // GPU graphs (build_plan_gpu.h): the module as LLVM IR (its parts one after another) and
  // PTX (one per part, plan.kernel_parts of them), and the sm it targets.
  std::string gpu_llvm_ir;
  std::vector<std::string> gpu_ptx;
  int gpu_sm = 0;
};

PlanBuild build_plan(const ir::Graph& graph, const CodegenSettings& settings = {});

/// The same graph with every node as an ATen call (what a failed code generation falls back
/// to); `reason` is recorded for every node.
PlanBuild build_aten_plan(const ir::Graph& graph, const std::string& reason);

}  // namespace inductor_cpp::inductor
