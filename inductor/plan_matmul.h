/// \file
/// Plan building for matrix multiplies: an ATen `mm` / `addmm` / `bmm` extern step over static
/// float32 CPU tensors (or a bf16 mm / addmm, see match_matmul) becomes a runtime::LibraryCall (our
/// GEMM library, matrix/gemm.h) instead of an ATen call, and the one pointwise kernel that only
/// applies activations (relu, gelu, gelu-tanh, silu, clamp, hardtanh) or adds residuals to its
/// result is folded into the GEMM epilogue (plan_epilogue.h). Conservative: anything unusual stays
/// ATen / stays a kernel. Convolutions: plan_conv.h.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "ir/aten_graph.h"
#include "ir/kernel_ir.h"
#include "ir/loop_ir.h"
#include "ir/passes/schedule.h"
#include "runtime/plan.h"

namespace inductor_cpp::inductor {

/// A matched matrix step (matmul or convolution) and, if any, the kernel step whose work its
/// epilogue does.
struct MatmulMatch {
  runtime::Step step;                   ///< a LibraryCall (free lists left to the caller)
  std::optional<size_t> absorbed_step;  ///< scheduled step now done by the epilogue
  /// The absorbed kernel's tile form (plan_tile_epilogue.h), when the epilogue's last op is
  /// "kernel": the caller emits it with the graph's kernels.
  std::optional<ir::Kernel> tile_kernel;
  /// (value, buffer): values that now live in another buffer's slot. A symbolic plan's
  /// absorbed activation: its output is the reshape of the step's output it was applied to.
  std::vector<std::pair<std::string, std::string>> aliases;
};

/// The LibraryCall for scheduled extern step `step_index` of `program` (lowered from `g`),
/// or nothing when it is not a matmul we run. `slot_of_buffer` maps buffer names to plan
/// slots; `into_inputs` are buffers stored into graph inputs (never absorbed). With `fused`
/// (the loop program `program` was scheduled from), a following kernel that is not a chain of
/// epilogue ops may still be absorbed as a tile kernel (mm / addmm). `bf16_on_amx`: a 2-D
/// bfloat16 mm / addmm (alpha 1) also becomes a step, run by runtime/matmul_bf16_step.h with
/// nothing absorbed; the caller sets it with frozen weights on a CPU with usable AMX (with the
/// per-call content check of a packed weight, ATen's bf16 GEMM is the faster:
/// docs/decisions/019-bf16-on-amx-only-frozen-and-up-to-256-rows.md).
std::optional<MatmulMatch> match_matmul(
    const ir::Graph& g, const ir::ScheduledProgram& program, size_t step_index,
    const std::set<std::string>& into_inputs,
    const std::function<int32_t(const std::string&)>& slot_of_buffer,
    const ir::LoopProgram* fused = nullptr, bool bf16_on_amx = false);

}  // namespace inductor_cpp::inductor
