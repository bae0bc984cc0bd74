/// \file
/// The execution plan of one compiled graph: pure data, serializable, what the cache stores.
///
/// A plan is a list of steps over numbered value slots. Slots 0..num_inputs-1 hold the graph's
/// inputs, the next num_constants hold its constant tensors, the rest hold step outputs. Each
/// step says which slots die after it, so intermediates are freed as early as possible. Today
/// every step is an ATen call by schema name; generated kernels become a second step kind.
/// The runtime binds a plan to the c10 dispatcher (aten_executor.h); it never calls back into
/// the compiler.
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
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

/// One operation applied to each output element of a MatmulLaunch, in list order
/// (matrix/gemm.h EpilogueKind): "bias_col" (data[j]), "bias_row" (data[i]),
/// "residual" (+ data[i][j]), "mul" (· data[i][j]), "scale" (a), "relu", "gelu", "gelu_tanh",
/// "silu", "sigmoid", "tanh", "clamp" (a, b),
/// and, on conv2d only, "batch_norm": eval batch norm per output channel j,
/// (x - mean[j]) / sqrt(var[j] + a) · weight[j] + bias[j], from `params` (runtime/conv_step.h).
/// "kernel" (mm / addmm / conv2d, always the last op): the generated tile kernel `kernel`
/// (ir/passes/tile_epilogue.h), called on each finished output block; `params` are the slots of
/// its parameters in order (the step's output slot stands for both the matrix output it reads
/// and the buffer it writes: they share the step's output storage), `layouts` what it assumes
/// of each.
struct MatmulEpilogue {
  std::string kind;
  int32_t slot = -1;  ///< bias / residual data; -1 for the others
  float a = 0, b = 0;
  /// "batch_norm": slots of running mean, running var, weight, bias (-1: no weight / bias);
  /// "kernel": the kernel's arguments. JSON key "params", absent when empty.
  std::vector<int32_t> params = {};
  std::string kernel = {};                    ///< "kernel": its name (JSON key "kernel")
  std::vector<ExpectedLayout> layouts = {};  ///< "kernel": per parameter (JSON "layouts")
};

/// Geometry of a "conv2d" MatmulLaunch (torch's [h, w] order).
struct ConvGeometry {
  std::array<int64_t, 2> stride = {1, 1};
  std::array<int64_t, 2> padding = {0, 0};
  std::array<int64_t, 2> dilation = {1, 1};
};

/// MatmulLaunch::out.sizes[0] of an mm / addmm whose row count is symbolic (dynamic shapes):
/// the output is [rows of A, N], allocated per call.
inline constexpr int64_t kRowsOfA = -1;

/// A float32 CPU matrix kernel run by our library (matrix): a matrix multiply
/// (gemm.h) out = epilogue(alpha · a · b), "mm" and "addmm" 2-D, "bmm" 3-D (batched), whose
/// operand strides are read at run time (plain, transposed, or made contiguous); or "conv2d"
/// (conv.h, runtime/conv_step.h): out = epilogue(convolution(a, b)) with a the [N, C, H, W]
/// input and out the [N, OC, OH, OW] output both channels-last (NHWC in memory), b the
/// [OC, C, KH, KW] weight (groups 1); the conv's bias is the first epilogue op ("bias_col");
/// or "conv2d_backward" (conv_backward.h, runtime/conv_backward_step.h): the gradients of such
/// a convolution, a the output gradient, b the weight, `input` the forward's input; `out` the
/// input gradient (channels-last), `grad_weight` ([OC, C, KH, KW], any dense layout) and
/// `grad_bias` ([OC]), each with slot -1 when not computed; no epilogue.
/// Or "attention" (matrix/attention.h, runtime/attention_step.h): out = softmax(a · bᵀ · alpha
/// [causal] [+ mask]) · value per batch and head, a / b / value the [batch, heads, length, dim]
/// query, key and value, `mask` an additive float or boolean (true: visible) mask broadcast to
/// [batch, heads, q_len, kv_len], `out` [batch, heads, q_len, value_dim] (any strides, its last
/// one 1), `logsumexp` (when its slot is set) m + log l per query row for the backward; no
/// epilogue.
/// Or "attention_backward" (matrix/attention_backward.h, runtime/attention_step.h): the
/// gradients of such an attention from `grad_output`, the forward's `forward_output` and
/// `forward_logsumexp`, with a / b / value / mask / alpha / causal as the forward's; `out` the
/// query's gradient, `grad_key` and `grad_value` the others' (any strides, their last one 1).
/// JSON key "matmul" (conv2d and conv2d_backward add "conv": the geometry; conv2d_backward
/// adds "input", "grad_weight" and "grad_bias"; attention adds "value", "mask", "causal" and
/// "logsumexp"; attention_backward adds "value", "mask", "causal", "grad_output",
/// "forward_output", "forward_logsumexp", "grad_key" and "grad_value").
struct MatmulLaunch {
  /// "mm", "addmm", "bmm", "conv2d", "conv2d_backward", "attention" or "attention_backward";
  /// empty: none
  std::string op;
  int32_t a = -1, b = -1;
  BufferAlloc out;  ///< the output (row-major / channels-last, allocated before the call)
  float alpha = 1;
  std::vector<MatmulEpilogue> epilogue;  ///< addmm's / conv's bias is its first op
  std::vector<int32_t> nodes;            ///< graph nodes it computes (for messages)
  ConvGeometry conv;                     ///< "conv2d" and "conv2d_backward"
  int32_t input = -1;                    ///< "conv2d_backward": the forward's input
  BufferAlloc grad_weight, grad_bias;    ///< "conv2d_backward" (slot -1: not computed)
  int32_t value = -1;                    ///< "attention": v (a is q, b is k, alpha the scale)
  int32_t mask = -1;                     ///< "attention": additive or boolean mask (-1: none)
  BufferAlloc logsumexp;                 ///< "attention": [batch, heads, q_len] (slot -1: none)
  bool causal = false;                   ///< "attention": query i sees keys j ≤ i only
  int32_t grad_output = -1;              ///< "attention_backward": dL/d out
  int32_t forward_output = -1;           ///< "attention_backward": the forward's out
  int32_t forward_logsumexp = -1;        ///< "attention_backward": the forward's logsumexp
  BufferAlloc grad_key, grad_value;      ///< "attention_backward" (out is the query's)
  bool is_conv() const { return op == "conv2d"; }
  bool is_conv_backward() const { return op == "conv2d_backward"; }
  bool is_attention() const { return op == "attention"; }
  bool is_attention_backward() const { return op == "attention_backward"; }
};

struct Step {
  int32_t node = -1;  ///< index of the graph node it came from (for messages)
  AtenCall call;      ///< an ATen step (when kernel.name and matmul.op are empty)
  KernelLaunch kernel;
  MatmulLaunch matmul;              ///< a matrix kernel step (matmul or convolution)
  std::vector<int32_t> free_after;  ///< slots whose last use is this step
  bool is_kernel() const { return !kernel.name.empty(); }
  bool is_matmul() const { return !matmul.op.empty(); }
};

struct Plan {
  static constexpr int kFormat = 2;
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
  /// GPU plans: the bytes of kernel_library, read from the cache entry by the loader
  /// (compile_graph.cpp). Not part of the JSON form: the entry stores the file itself.
  std::string kernel_image;
  bool is_gpu() const { return library_kind == "ptx" || library_kind == "cubin"; }
};

nlohmann::json plan_to_json(const Plan& plan);

/// The readable form INDUCTOR_CPP_LOGS=output_code prints, one step a line:
///   %s2 = aten::add.Tensor(%s1, 1)    free %s1
std::string plan_to_text(const Plan& plan);
/// Throws std::runtime_error naming the path on malformed input.
Plan plan_from_json(const nlohmann::json& j);

}  // namespace inductor_cpp::runtime
