/// \file
/// Lowering: the ATen-level graph -> the loop-level IR.
///
/// Each node whose op has a lowering becomes one or more computes (with broadcasting and
/// torch's type promotion made explicit, views as index rewrites); every other node becomes
/// an extern step that runs the ATen op, so every graph stays correct. A node also falls back
/// when its lowering declines it (an unsupported dtype, device, symbolic size, ...), with the
/// reason recorded. With LoweringOptions::library_calls, matrix ops our kernels run become
/// library calls first (library_calls.h).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/aten_graph.h"
#include "ir/loop_ir.h"

namespace inductor_cpp::inductor {

/// How one graph node was handled, for logs, counters and explain().
struct LoweringDecision {
  int32_t node = -1;
  bool generated = false;
  std::string reason;  ///< why it falls back, when it does
};

/// A graph mutation `copy_(input, value)`: the buffers it copies between.
struct InputCopy {
  std::string value;  ///< the value copied (a node's output buffer)
  std::string input;  ///< the graph input written ("%in<k>")
};

struct LoweredGraph {
  ir::LoopProgram program;
  std::vector<LoweringDecision> decisions;  ///< one per graph node, in node order
  /// Extern steps that copy a value into a graph input, by graph node: the kernel computing the
  /// value may store it there directly (ir/passes/input_writeback.h).
  std::map<int32_t, InputCopy> input_copies;
};

/// Buffer names: "%in<k>" for input k, "%c<k>" for constant k, "%<n>" for node n's first
/// output and "%<n>.<k>" for its k-th (k >= 1).
std::string buffer_name_of(const ir::Arg& tensor_ref);

struct LoweringOptions {
  bool library_calls = false;  ///< matrix ops on our library kernels (the "matrix_kernels" option)
  bool bf16_on_amx = false;    ///< bf16 mm/addmm too (frozen weights on a CPU with usable AMX)
  /// A CUDA graph: library calls for the GPU's matrix ops (library_calls.h gpu_library_call)
  /// instead of those on our CPU kernels.
  bool gpu = false;
};

LoweredGraph lower_graph(const ir::Graph& graph, const LoweringOptions& options = {});

}  // namespace inductor_cpp::inductor
