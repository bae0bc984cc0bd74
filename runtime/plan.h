/// \file
/// The execution plan of one compiled graph: pure data, serializable, what the cache stores.
///
/// A plan is a list of steps over numbered value slots. Slots 0..num_inputs-1 hold the graph's
/// inputs, the next num_constants hold its constant tensors, the rest hold step outputs. Each
/// step says which slots die after it, so intermediates are freed as early as possible. A step
/// is one of three typed actions: an ATen call by schema name, a generated kernel, or a call of
/// our matrix-kernel library with its op's typed arguments. The JSON form (plan_json.cpp) and
/// the text form (plan_text.cpp) are written from and read into these same types. The runtime
/// binds a plan (executor.h); it never calls back into the compiler.
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace inductor_cpp::runtime {

/// An operand: a slot, a literal (tagged JSON, as in docs/graph_schema.md), or a list of these.
struct PlanArg {
  enum class Kind { Slot, Literal, List };
  Kind kind = Kind::Literal;
  int32_t slot = -1;
  nlohmann::json literal;  ///< null for None
  std::vector<PlanArg> items;

  static PlanArg of_slot(int32_t s);
  static PlanArg of_literal(nlohmann::json j);
  static PlanArg of_list(std::vector<PlanArg> items);
};

/// An ATen operator called through the c10 dispatcher.
struct AtenCall {
  std::string op;  ///< "aten::add.Tensor"
  std::vector<PlanArg> args;
  std::vector<std::pair<std::string, PlanArg>> kwargs;
  /// Slot receiving each output (a list return counts its elements); -1: output unused.
  std::vector<int32_t> outs;
};

/// Memory for a buffer a generated kernel writes: fresh (empty_strided), or the storage of a
/// dead buffer (`reuse_slot`, same dtype and device, at least as large), restrided.
struct BufferAlloc {
  int32_t slot = -1;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  std::string dtype;   ///< torch name: "float32"
  std::string device;  ///< "cpu"
  int32_t reuse_slot = -1;
};

/// The layout a generated kernel assumes for a buffer it reads; an argument that does not
/// have it (an ATen op returned other strides than its meta said) is copied into it first.
struct ExpectedLayout {
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
};

/// GPU launch configuration of a kernel step (plans whose library is "ptx" or "cubin").
struct GpuLaunchDims {
  std::array<int64_t, 3> grid = {1, 1, 1};
  std::array<int32_t, 3> block = {1, 1, 1};
  int32_t shared_bytes = 0;   ///< dynamic shared memory
  bool checks_bounds = false;  ///< has indirect loads that may report through the status word
  /// Launched with programmatic stream serialization (the kernel waits for its predecessor
  /// itself: codegen/nvptx/emit_ptx.h GpuTarget::programmatic_launch). JSON key
  /// "programmatic", absent when false.
  bool programmatic = false;
  /// Which of the plan's GPU images holds the kernel (Plan::kernel_parts; JSON "part",
  /// absent when 0).
  int32_t part = 0;
  /// The PTX entry it launches when that is another kernel's: a kernel identical to an earlier
  /// one of the plan is emitted once (inductor/build_plan_gpu.cpp). JSON "function", absent
  /// when empty (the kernel's own name).
  std::string function;
};

/// A call of a generated kernel: `extern "C" int32_t name(char* const* bufs, const int64_t*
/// symbols, int32_t num_threads)` from the plan's kernel library; on the GPU the PTX entry
/// `name(ptr..., i64 symbols..., ptr status)` launched with `gpu` (docs/gpu.md).
struct KernelLaunch {
  std::string name;
  std::vector<int32_t> args;  ///< slot per kernel parameter, in parameter order
  std::vector<ExpectedLayout> layouts;  ///< per parameter: the layout the kernel assumes
  std::vector<BufferAlloc> allocs;  ///< buffers it writes, allocated before the call
  std::vector<int32_t> nodes;       ///< graph nodes it computes (for messages)
  /// Parameters it overwrites in place: existing tensors (graph inputs the graph mutates), not
  /// allocated for it. JSON key "updates", absent when empty.
  std::vector<int32_t> updates;
  GpuLaunchDims gpu;                ///< GPU plans only (JSON key "gpu", absent for CPU steps)
};

/// One operation applied to each output element of a GemmCall or Conv2dCall, in list order
/// (matrix/gemm.h EpilogueKind): "bias_col" (data[j]), "bias_row" (data[i]),
/// "residual" (+ data[i][j]), "mul" (· data[i][j]), "scale" (a), "relu", "gelu", "gelu_tanh",
/// "scale_col" (· data[j]: with a following "bias_col", an eval batch norm folded per
/// column, ir/passes/column_affine.h), "silu", "sigmoid", "tanh", "clamp" (a, b).
/// "kernel" (mm / addmm / conv2d, always the last op): the generated tile kernel `kernel`
/// (ir/passes/tile_epilogue.h), called on each finished output block; `params` are the slots of
/// its parameters in order (the step's output slot stands for both the matrix output it reads
/// and the buffer it writes: they share the step's output storage), `layouts` what it assumes
/// of each.
struct MatmulEpilogue {
  std::string kind;
  int32_t slot = -1;  ///< bias / residual data; -1 for the others
  float a = 0, b = 0;
  /// "kernel": the kernel's arguments. JSON key "params", absent when empty.
  std::vector<int32_t> params = {};
  std::string kernel = {};                    ///< "kernel": its name (JSON key "kernel")
  std::vector<ExpectedLayout> layouts = {};  ///< "kernel": per parameter (JSON "layouts")
};

/// Geometry of a convolution library call (torch's [h, w] order).
struct ConvGeometry {
  std::array<int64_t, 2> stride = {1, 1};
  std::array<int64_t, 2> padding = {0, 0};
  std::array<int64_t, 2> dilation = {1, 1};
  int64_t groups = 1;  ///< > 1 on the GPU only (JSON "groups", absent when 1)
};

/// GemmCall::out.sizes[0] of an mm / addmm whose row count is symbolic (dynamic shapes):
/// the output is [rows of A, N], allocated per call.
inline constexpr int64_t kRowsOfA = -1;

// ---- library calls: one typed argument struct per kind of call ------------------------------

/// "mm" / "addmm" (2-D) and "bmm" (3-D, batched): out = epilogue(alpha · a · b) on our GEMM
/// (matrix/gemm.h), the operands' strides read at run time (plain, transposed, or made
/// contiguous). float32, or a bfloat16 mm / addmm on the AMX GEMM (runtime/matmul_bf16_step.h).
/// An output on a GPU: cuBLAS(Lt) through ATen (runtime/gpu_library_step.h), float16 and
/// bfloat16 too.
struct GemmCall {
  int32_t a = -1, b = -1;
  BufferAlloc out;  ///< row-major (or the dense tensor an absorbed reshape gives it)
  float alpha = 1;
  std::vector<MatmulEpilogue> epilogue;  ///< addmm's bias is its first op
};

/// "conv2d": out = epilogue(convolution(input, weight)) (matrix/conv.h, runtime/conv_step.h),
/// input [N, C, H, W] and out [N, OC, OH, OW] both channels-last (NHWC in memory), weight
/// [OC, C, KH, KW] (groups 1); the conv's bias is the first epilogue op ("bias_col"). On a
/// GPU (cuDNN through ATen): any layout and groups.
struct Conv2dCall {
  int32_t input = -1, weight = -1;
  ConvGeometry geometry;
  BufferAlloc out;
  std::vector<MatmulEpilogue> epilogue;
};

/// "conv2d_backward": the gradients of such a convolution (matrix/conv_backward.h,
/// runtime/conv_backward_step.h): grad_input channels-last, grad_weight [OC, C, KH, KW] (any
/// dense layout), grad_bias [OC]; each with slot -1 when not computed.
struct Conv2dBackwardCall {
  int32_t grad_output = -1, input = -1, weight = -1;
  ConvGeometry geometry;
  BufferAlloc grad_input, grad_weight, grad_bias;
};

/// What an attention call and its backward both read: the [batch, heads, length, dim] query,
/// key and value, an additive float or boolean (true: visible) mask broadcast to [batch,
/// heads, q_len, kv_len] (-1: none), the scale, and whether query i sees keys j ≤ i only.
struct AttentionOperands {
  int32_t query = -1, key = -1, value = -1, mask = -1;
  float scale = 1;
  bool causal = false;
};

/// "attention": out = softmax(query · keyᵀ · scale [causal] [+ mask]) · value per batch and
/// head (matrix/attention.h, runtime/attention_step.h); out [batch, heads, q_len, value_dim]
/// (any strides, its last one 1); logsumexp (slot -1: none) m + log l per query row, for the
/// backward.
struct AttentionCall {
  AttentionOperands in;
  BufferAlloc out, logsumexp;
};

/// "attention_backward": the gradients of such an attention (matrix/attention_backward.h) from
/// the output's gradient, the forward's output and logsumexp.
struct AttentionBackwardCall {
  AttentionOperands in;
  int32_t grad_output = -1, forward_output = -1, forward_logsumexp = -1;
  BufferAlloc grad_query, grad_key, grad_value;  ///< any strides, their last one 1
};

/// The library ops, listed once: op name, argument struct. The plan's JSON reader takes an
/// op's argument type from here; the runtime binds each argument type to its launcher
/// (runtime/library_step.cpp), so an op without one does not compile.
#define INDUCTOR_CPP_LIBRARY_OPS(X)                                              \
  X(mm, GemmCall) X(addmm, GemmCall) X(bmm, GemmCall) X(conv2d, Conv2dCall)      \
  X(conv2d_backward, Conv2dBackwardCall) X(attention, AttentionCall)             \
  X(attention_backward, AttentionBackwardCall)

using LibraryArgs =
    std::variant<GemmCall, Conv2dCall, Conv2dBackwardCall, AttentionCall, AttentionBackwardCall>;

/// A call of our matrix-kernel library (matrix/matrix.h) in place of one or more graph nodes.
struct LibraryCall {
  std::string op;            ///< a name from INDUCTOR_CPP_LIBRARY_OPS
  LibraryArgs args;          ///< the op's argument struct
  std::vector<int32_t> nodes;  ///< graph nodes it computes (for messages)

  /// A call of `op` with default arguments; throws std::runtime_error for an unknown op.
  static LibraryCall of(const std::string& op);
  template <typename T>
  T& as() { return std::get<T>(args); }
  template <typename T>
  const T& as() const { return std::get<T>(args); }
  /// Every slot it reads (operands, epilogue data and parameters), -1s left out.
  std::vector<int32_t> reads() const;
  /// Every buffer it allocates (outputs whose slot is -1 left out).
  std::vector<const BufferAlloc*> writes() const;
};

/// One step of a plan: an ATen call, a generated kernel, or a library call.
struct Step {
  int32_t node = -1;  ///< index of the graph node it came from (for messages)
  std::variant<AtenCall, KernelLaunch, LibraryCall> action;
  std::vector<int32_t> free_after;  ///< slots whose last use is this step

  const AtenCall* aten() const { return std::get_if<AtenCall>(&action); }
  const KernelLaunch* kernel() const { return std::get_if<KernelLaunch>(&action); }
  const LibraryCall* library() const { return std::get_if<LibraryCall>(&action); }
  AtenCall* aten() { return std::get_if<AtenCall>(&action); }
  KernelLaunch* kernel() { return std::get_if<KernelLaunch>(&action); }
  LibraryCall* library() { return std::get_if<LibraryCall>(&action); }
};

struct Plan {
  static constexpr int kFormat = 3;  ///< 3: typed steps ("aten" / "kernel" / "library")
  int32_t num_inputs = 0;
  int32_t num_constants = 0;
  int32_t num_slots = 0;
  std::vector<int32_t> free_at_start;  ///< input slots nothing reads
  std::vector<Step> steps;
  std::vector<PlanArg> outputs;
  int64_t ops_generated = 0;  ///< graph nodes computed by generated or matrix kernels
  int64_t ops_fallback = 0;   ///< graph nodes run as ATen calls
  /// File name of the kernel library in the plan's cache entry ("kernels.so"); empty when
  /// the plan has no kernel steps.
  std::string kernel_library;
  /// What kernel_library holds: "so" (a shared library of CPU kernels, dlopen'ed), "ptx"
  /// (PTX text) or "cubin" (ptxas output) for a GPU plan, loaded with the CUDA driver.
  std::string library_kind = "so";
  /// GPU plans: how many images the kernels were compiled into (in parallel, one module
  /// each); part 0 is kernel_library, part k its name with ".k" before the extension
  /// (kernel_part_name). JSON "kernel_parts", absent when 1.
  int32_t kernel_parts = 1;
  /// GPU plans: the bytes of each part, read from the cache entry by the loader
  /// (compile_graph.cpp). Not part of the JSON form: the entry stores the files themselves.
  std::vector<std::string> kernel_images;
  bool is_gpu() const { return library_kind == "ptx" || library_kind == "cubin"; }
  /// The file of image `part`: "kernels.cubin", "kernels.1.cubin", ...
  std::string kernel_part_name(int32_t part) const { return kernel_part_name(kernel_library, part); }
  static std::string kernel_part_name(const std::string& first, int32_t part) {
    const size_t dot = first.rfind('.');
    if (part == 0 || dot == std::string::npos) return first;
    return first.substr(0, dot) + "." + std::to_string(part) + first.substr(dot);
  }
};

nlohmann::json plan_to_json(const Plan& plan);

/// The readable form INDUCTOR_CPP_LOGS=output_code prints, one step a line:
///   %s2 = aten::add.Tensor(%s1, 1)    free %s1
std::string plan_to_text(const Plan& plan);
/// Throws std::runtime_error naming the path on malformed input.
Plan plan_from_json(const nlohmann::json& j);
/// Throws std::runtime_error naming the field unless every slot, parameter index, buffer shape
/// and GPU launch shape of `p` is in range (plan_validate.cpp); plan_from_json calls it.
void validate_plan(const Plan& p);

}  // namespace inductor_cpp::runtime
