/// \file
/// Plan building for library calls: a scheduled extern step carrying an ir::LibraryCall (chosen
/// at lowering, its epilogue composed by ir/passes/absorb_epilogues.h) becomes a
/// runtime::LibraryCall: buffer names become slots, the epilogue expression becomes the
/// library's fixed operations (ir/epilogue_ops.h), and a tile compute becomes a generated tile
/// kernel (ir/passes/tile_epilogue.h) called as the last of them. No ATen op is looked at here:
/// everything the call needs is in the IR.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "ir/kernel_ir.h"
#include "ir/loop_ir.h"
#include "ir/passes/schedule.h"
#include "runtime/plan.h"

namespace inductor_cpp::inductor {

struct LibraryStep {
  runtime::Step step;                ///< a runtime::LibraryCall (free lists left to the caller)
  std::optional<ir::Kernel> tile_kernel;  ///< to emit with the graph's other kernels
};

/// The runtime step of scheduled step `s` (an extern step whose call has a library call) of
/// `program`, scheduled from `fused`. `tile_name` names its tile kernel, if it has one.
/// Throws std::runtime_error when the IR holds what the runtime cannot run (a bug upstream).
LibraryStep library_step(const ir::ScheduledStep& s, const ir::ScheduledProgram& program,
                         const ir::LoopProgram& fused,
                         const std::function<int32_t(const std::string&)>& slot_of_buffer,
                         const std::string& tile_name);

}  // namespace inductor_cpp::inductor
