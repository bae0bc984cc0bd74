/// \file
/// Lowering matrix ops to library calls (ir/library_call.h): mm / addmm / bmm, 2-D
/// convolutions and their backward, and CPU flash attention and its backward, when their
/// operands suit our kernels (matrix/matrix.h), or, in a CUDA graph, cuBLAS(Lt) and cuDNN;
/// the node then becomes an extern step carrying the call instead of an ATen call. Private to
/// inductor/lower/.
///
/// Why here: lowering is the one place that reads ATen op names and argument conventions, so
/// the passes after it (epilogue absorption, scheduling) see only library calls with their
/// operands, attributes and epilogue, and never have to match ATen nodes again. A node that
/// fails a check keeps its ATen extern, and the "matrix kernels: ..." reason goes into its
/// lowering decision (docs/matrix/in_graphs.md, decision 027).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "inductor/lower/lower_graph.h"
#include "ir/aten_graph.h"
#include "ir/library_call.h"
#include "ir/loop_ir.h"

namespace inductor_cpp::inductor::library_calls {

/// The extern step for graph node `index` as a library call (graph_node, outputs named like
/// the node's buffers with "" for outputs not computed, inputs = every buffer the call reads,
/// library), or nothing. A matrix op our kernels do not run sets `why_not`
/// ("matrix kernels: ..."); it stays empty for every other op.
std::optional<ir::ExternCall> library_call_for(const ir::Graph& g, int32_t index,
                                               const LoweringOptions& options,
                                               std::string& why_not);

// ---- the op families (one file each), used by library_call_for ----

/// A library call for a node, and which of the node's outputs it computes.
struct LibraryCallMatch {
  ir::LibraryCall call;
  std::vector<bool> computed;  ///< one per node output
};

/// Each returns nothing with `why_not` empty when node `n` is not its op, and nothing with
/// `why_not` set when it is but our kernels do not run it.
std::optional<LibraryCallMatch> matmul_call(const ir::Graph& g, int32_t n, bool bf16_on_amx,
                                            std::string& why_not);  // library_calls.cpp
std::optional<LibraryCallMatch> conv2d_call(const ir::Graph& g, int32_t n,
                                            std::string& why_not);  // library_conv.cpp
std::optional<LibraryCallMatch> conv2d_backward_call(const ir::Graph& g, int32_t n,
                                                     std::string& why_not);  // library_conv.cpp
std::optional<LibraryCallMatch> attention_call(const ir::Graph& g, int32_t n,
                                               std::string& why_not);  // library_attention.cpp
std::optional<LibraryCallMatch> attention_backward_call(const ir::Graph& g, int32_t n,
                                                        std::string& why_not);

/// CUDA graphs (LoweringOptions::gpu): mm / addmm / bmm and 2-D convolutions and their
/// backward on a GPU, run by cuBLAS(Lt) / cuDNN through ATen (runtime/gpu_library_step.h), for
/// float32, float16 and bfloat16 tensors of static shapes (library_gpu.cpp).
std::optional<LibraryCallMatch> gpu_library_call(const ir::Graph& g, int32_t n, std::string& why_not);

/// The call for mm / addmm / bmm node `n` (operands `a`, `b`, of `dtype` on `device`) before
/// anything is absorbed: operands, alpha, and addmm's bias as `acc + bias` broadcast to the
/// output [rows, cols] (`[cols]` / `[1, cols]`; with static `rows` also `[rows, 1]` and
/// `[rows, cols]`). Nothing (why_not set) when addmm's beta is not the literal 1, its alpha
/// not a literal, or its bias none of those (library_calls.cpp).
std::optional<LibraryCallMatch> gemm_call_start(const ir::Graph& g, int32_t n, ir::LibraryOp op,
                                                const ir::Arg& a, const ir::Arg& b,
                                                std::optional<int64_t> rows, int64_t cols,
                                                const std::string& dtype, const std::string& device,
                                                std::string& why_not);

/// A node whose work a library call's epilogue took over at lowering: its value is the buffer
/// `value_of` (the call's output, or the view of it the node read).
struct TakenNode {
  int32_t node = -1;
  std::string value_of;
};

/// For library call `call` of node `n`, a float32 mm / addmm of symbolic row count: the
/// data-free activation (relu, gelu, gelu-tanh, silu, sigmoid, tanh, hardtanh, a literal
/// scale) that alone reads its output, directly or through one view, taken into call.epilogue;
/// nothing otherwise (library_activation.cpp).
std::optional<TakenNode> take_activation(const ir::Graph& g, int32_t n, ir::LibraryCall& call);

/// Declines: sets why_not to "matrix kernels: " + why.
std::nullopt_t no_library_call(std::string& why_not, const std::string& why);

/// The buffer name of a tensor argument (lower_graph.h's buffer_name_of), "" for none.
std::string operand_name(const ir::Arg& a);

}  // namespace inductor_cpp::inductor::library_calls
