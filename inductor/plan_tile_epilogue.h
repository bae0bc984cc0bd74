/// \file
/// The second way a matrix step (mm / addmm, conv2d) takes over the pointwise kernel after it:
/// when the kernel is not a chain of the library's epilogue ops (plan_epilogue.h), the kernel
/// itself is rescheduled over an output window (ir/passes/tile_epilogue.h) and the GEMM or
/// convolution calls it on each block it finishes, as the last epilogue op ("kernel"). The
/// matrix step then writes the kernel's buffer, and the kernel step is dropped.
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>

#include "inductor/plan_epilogue.h"
#include "ir/kernel_ir.h"
#include "ir/loop_ir.h"
#include "ir/passes/schedule.h"

namespace inductor_cpp::inductor::matrix_plan {

struct TileAbsorbed {
  Absorbed absorbed;  ///< ops: the one "kernel" op
  ir::Kernel kernel;  ///< the tile kernel, to emit with the graph's other kernels
};

/// The tile form of the kernel reading matrix node `producer`'s [rows, cols] output (a
/// convolution's channels-last output as [N·OH·OW, OC])
/// (scheduled extern step `index` of `program`, lowered from `fused`), or nothing. The kernel
/// must be the output's only reader, write one buffer (not into a graph input) and read
/// nothing but the output and buffers ready before step `index`.
std::optional<TileAbsorbed> tile_absorbable(
    const ir::Graph& g, const ir::LoopProgram& fused, const ir::ScheduledProgram& program,
    size_t index, int64_t producer, int64_t rows, int64_t cols,
    const std::set<std::string>& into_inputs,
    const std::function<int32_t(const std::string&)>& slot_of_buffer);

}  // namespace inductor_cpp::inductor::matrix_plan
