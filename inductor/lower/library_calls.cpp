/// \file
/// Library calls for matrix ops (library_calls.h): the dispatcher over the op families, and
/// mm / addmm / bmm on our GEMMs.
#include "inductor/lower/library_calls.h"

#include "inductor/lower/graph_meta.h"
#include "matrix/matrix.h"

namespace inductor_cpp::inductor::library_calls {

using ir::Arg;
using namespace graph_meta;

namespace {

/// The dtypes our GEMMs take: float32, and bfloat16 for mm / addmm when the caller allows it
/// (LoweringOptions::bf16_on_amx).
bool is_matrix_dtype(const std::string& dtype, bool bmm, bool bf16_on_amx) {
  return dtype == "float32" || (dtype == "bfloat16" && !bmm && bf16_on_amx);
}

/// Why `dtype` is not one of is_matrix_dtype's.
std::string dtype_problem(const std::string& dtype, bool bmm) {
  if (dtype == "bfloat16" && bmm) return "bfloat16 bmm (our bf16 GEMM does mm / addmm only)";
  if (dtype == "bfloat16")
    return "bfloat16 without frozen weights on a CPU with usable AMX";
  return "dtype " + (dtype.empty() ? std::string("unknown") : dtype) +
         " (our GEMMs take float32, and bfloat16 on AMX)";
}

bool is_cpu_2d(const ir::TensorMeta* m, const std::string& dtype) {
  return m && m->dtype == dtype && m->device == "cpu" && m->sizes.size() == 2 &&
         m->strides.size() == 2;
}

std::optional<int64_t> static_dim(const ir::Dim& d) {
  if (const int64_t* v = std::get_if<int64_t>(&d)) return *v;
  return std::nullopt;
}

ir::Expr var(int k) {
  return ir::Expr::var("i" + std::to_string(k));
}

/// An mm / addmm whose row count is symbolic (Dynamo's dynamic batch: A [M, K], a weight
/// B [K, N], the output [M, N] with K and N static, row-major). addmm's bias must be a [N] /
/// [1, N] vector.
std::optional<LibraryCallMatch> dynamic_rows_call(const ir::Graph& g, int32_t n, bool addmm,
                                                  bool bf16_on_amx, std::string& why_not) {
  const ir::Node& node = g.nodes.at(static_cast<size_t>(n));
  const size_t first = addmm ? 1 : 0;
  const Arg& a = node.args[first];
  const Arg& b = node.args[first + 1];
  const ir::TensorMeta* a_meta = tensor_meta_of(g, a);
  const ir::TensorMeta* out_meta = tensor_meta_of(g, Arg::value(n, 0));
  const auto b_meta = meta_of(g, b);
  const std::string dtype = a_meta ? a_meta->dtype : "";
  if (!is_matrix_dtype(dtype, false, bf16_on_amx)) return no_library_call(why_not, dtype_problem(dtype, false));
  if (!is_cpu_2d(a_meta, dtype) || !is_cpu_2d(out_meta, dtype) || !is_cpu_tensor(b_meta, 2, dtype))
    return no_library_call(why_not, "not a " + dtype + " CPU matrix product (symbolic rows, static weight)");
  const int64_t k = b_meta->sizes[0], cols = b_meta->sizes[1];
  const auto a_k = static_dim(a_meta->sizes[1]), out_cols = static_dim(out_meta->sizes[1]);
  const auto row_stride = static_dim(out_meta->strides[0]),
             col_stride = static_dim(out_meta->strides[1]);
  if (!a_k || *a_k != k || !out_cols || *out_cols != cols || !row_stride || *row_stride != cols ||
      !col_stride || *col_stride != 1)
    return no_library_call(why_not,
                           "symbolic rows with K or N not static, or an output that is not "
                           "row-major");
  return gemm_call_start(g, n, addmm ? ir::LibraryOp::addmm : ir::LibraryOp::mm, a, b, std::nullopt,
                         cols, dtype, "cpu", why_not);
}

}  // namespace

std::nullopt_t no_library_call(std::string& why_not, const std::string& why) {
  why_not = "matrix kernels: " + why;
  return std::nullopt;
}

std::string operand_name(const Arg& a) {
  return is_tensor_ref(a) ? buffer_name_of(a) : "";
}

std::optional<LibraryCallMatch> gemm_call_start(const ir::Graph& g, int32_t n, ir::LibraryOp op,
                                                const Arg& a, const Arg& b, std::optional<int64_t> rows,
                                                int64_t cols, const std::string& dtype,
                                                const std::string& device, std::string& why_not) {
  const ir::Node& node = g.nodes.at(static_cast<size_t>(n));
  LibraryCallMatch match;
  match.call.op = op;
  match.call.operands = {operand_name(a), operand_name(b)};
  match.computed = {true};
  if (op != ir::LibraryOp::addmm) return match;
  const auto beta = number_or(node, 3, "beta", 1), alpha = number_or(node, 4, "alpha", 1);
  if (!beta || *beta != 1) return no_library_call(why_not, "addmm with beta != 1");
  if (!alpha) return no_library_call(why_not, "addmm's alpha is not a literal");
  // The bf16 GEMM has no alpha: addmm with alpha != 1 stays ATen there.
  if (dtype != "float32" && *alpha != 1)
    return no_library_call(why_not, "bfloat16 addmm with alpha != 1 (our bf16 GEMM has no alpha)");
  if (*alpha != 1) match.call.attrs["alpha"] = *alpha;
  const Arg& bias = node.args[0];
  const auto bias_meta = meta_of(g, bias);
  if (!is_tensor_ref(bias) || !bias_meta || bias_meta->dtype != dtype || bias_meta->device != device)
    return no_library_call(why_not, "addmm's bias is not a " + dtype + " tensor on " + device +
                                        " of static shape");
  const std::vector<int64_t>& bs = bias_meta->sizes;
  std::vector<ir::Expr> index;
  if (bs == std::vector<int64_t>{cols}) {
    index = {var(1)};
  } else if (bs == std::vector<int64_t>{1, cols}) {
    index = {ir::Expr(0), var(1)};
  } else if (rows && bs == std::vector<int64_t>{*rows, 1}) {
    index = {var(0), ir::Expr(0)};
  } else if (rows && bs == std::vector<int64_t>{*rows, cols}) {
    index = {var(0), var(1)};
  } else {
    return no_library_call(why_not, rows ? "addmm's bias is not [N], [1, N], [M, 1] or [M, N]"
                                         : "addmm's bias is not [N] or [1, N] (symbolic rows)");
  }
  const ir::DType dt = *ir::dtype_from_name(dtype);
  match.call.epilogue = ir::binary(ir::BinaryOp::add, ir::epilogue_accumulator(dt),
                                   ir::load(operand_name(bias), dt, std::move(index)));
  return match;
}

std::optional<LibraryCallMatch> matmul_call(const ir::Graph& g, int32_t n, bool bf16_on_amx,
                                            std::string& why_not) {
  const ir::Node& node = g.nodes.at(static_cast<size_t>(n));
  const std::string op = op_name(node.op);
  const bool addmm = op == "aten::addmm", bmm = op == "aten::bmm";
  if (op != "aten::mm" && !addmm && !bmm) return std::nullopt;
  const size_t first = addmm ? 1 : 0;
  if (node.args.size() < first + 2 || node.outputs.size() != 1)
    return no_library_call(why_not, "unexpected arguments");
  const Arg& a = node.args[first];
  const Arg& b = node.args[first + 1];
  if (!is_tensor_ref(a) || !is_tensor_ref(b))
    return no_library_call(why_not, "an operand is not a tensor");
  const size_t rank = bmm ? 3 : 2;
  const auto out_meta = meta_of(g, Arg::value(n, 0));
  const auto a_meta = meta_of(g, a), b_meta = meta_of(g, b);
  if (!bmm && (!out_meta || !a_meta)) return dynamic_rows_call(g, n, addmm, bf16_on_amx, why_not);
  const std::string dtype = out_meta ? out_meta->dtype : "";
  if (!is_matrix_dtype(dtype, bmm, bf16_on_amx)) return no_library_call(why_not, dtype_problem(dtype, bmm));
  if (!is_cpu_tensor(out_meta, rank, dtype) || !is_cpu_tensor(a_meta, rank, dtype) ||
      !is_cpu_tensor(b_meta, rank, dtype))
    return no_library_call(why_not, "not a " + dtype + " CPU " + (bmm ? "batched " : "") +
                                        "matrix product with static, non-empty shapes");
  if (!is_row_major(*out_meta)) return no_library_call(why_not, "output is not row-major");
  const int64_t m = out_meta->sizes[rank - 2], cols = out_meta->sizes[rank - 1];
  if (a_meta->sizes[rank - 2] != m || b_meta->sizes[rank - 1] != cols ||
      a_meta->sizes[rank - 1] != b_meta->sizes[rank - 2])
    return no_library_call(why_not, "shapes do not match");
  if (bmm && (a_meta->sizes[0] != out_meta->sizes[0] || b_meta->sizes[0] != out_meta->sizes[0]))
    return no_library_call(why_not, "shapes do not match");
  const ir::LibraryOp library_op =
      bmm ? ir::LibraryOp::bmm : addmm ? ir::LibraryOp::addmm : ir::LibraryOp::mm;
  auto match = gemm_call_start(g, n, library_op, a, b, m, cols, dtype, "cpu", why_not);
  if (!match) return std::nullopt;
  if (dtype != "float32" && m > matrix::kBf16AmxMaxRows)  // ATen's GEMM is the faster there
    return no_library_call(why_not, "bfloat16 with more than " +
                                        std::to_string(matrix::kBf16AmxMaxRows) +
                                        " rows (ATen's GEMM is faster there)");
  return match;
}

std::optional<ir::ExternCall> library_call_for(const ir::Graph& g, int32_t index,
                                               const LoweringOptions& options,
                                               std::string& why_not) {
  why_not.clear();
  std::optional<LibraryCallMatch> match;
  if (options.gpu) {  // a CUDA graph: cuBLAS(Lt) and cuDNN through ATen
    match = gpu_library_call(g, index, why_not);
  } else {  // our CPU kernels
    match = matmul_call(g, index, options.bf16_on_amx, why_not);
    if (!match && why_not.empty()) match = conv2d_call(g, index, why_not);
    if (!match && why_not.empty()) match = conv2d_backward_call(g, index, why_not);
    if (!match && why_not.empty()) match = attention_call(g, index, why_not);
    if (!match && why_not.empty()) match = attention_backward_call(g, index, why_not);
  }
  if (!match) return std::nullopt;
  const ir::Node& node = g.nodes.at(static_cast<size_t>(index));
  ir::ExternCall call;
  call.graph_node = index;
  for (size_t k = 0; k < node.outputs.size(); ++k) {
    const bool computed = k < match->computed.size() && match->computed[k] && node.outputs[k];
    call.outputs.push_back(computed ? buffer_name_of(Arg::value(index, static_cast<int64_t>(k)))
                                    : std::string());
  }
  call.inputs = match->call.reads();
  call.library = std::move(match->call);
  return call;
}

}  // namespace inductor_cpp::inductor::library_calls
