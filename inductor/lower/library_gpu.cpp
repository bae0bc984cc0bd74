/// \file
/// Library calls in a CUDA graph (library_calls.h gpu_library_call): mm / addmm / bmm, 2-D
/// convolutions and their backward, run by cuBLAS(Lt) and cuDNN through ATen
/// (runtime/gpu_library_step.h).
///
/// The checks are lighter than for our CPU kernels: the libraries take any operand strides,
/// groups and the half-precision types, so what is left to check is that the node is the op
/// the call stands for (static shapes, one device, one dtype) and that its output is the
/// layout ATen gives it, which later kernels were scheduled for. What the call gains over its
/// ATen extern is the epilogue: the absorb pass may move a bias, residual or activation into
/// it (ir/epilogue_ops.h gpu_epilogue_fits), so cuBLASLt applies them to each output tile.
#include <array>

#include "inductor/lower/graph_meta.h"
#include "inductor/lower/library_calls.h"

namespace inductor_cpp::inductor::library_calls {

using ir::Arg;
using namespace graph_meta;

namespace {

bool is_gpu_dtype(const std::string& dtype) {
  return dtype == "float32" || dtype == "float16" || dtype == "bfloat16";
}

bool is_cuda(const std::string& device) {
  return device == "cuda" || device.rfind("cuda:", 0) == 0;
}

/// A tensor of rank `rank` with static, non-empty shape on `device` of dtype `dtype`.
bool is_on(const std::optional<StaticMeta>& m, size_t rank, const std::string& dtype,
           const std::string& device) {
  if (!m || m->dtype != dtype || m->device != device || m->sizes.size() != rank) return false;
  for (int64_t s : m->sizes)
    if (s <= 0) return false;
  return true;
}

std::optional<LibraryCallMatch> gemm_call(const ir::Graph& g, int32_t n, const std::string& op,
                                          std::string& why_not) {
  const ir::Node& node = g.nodes.at(static_cast<size_t>(n));
  const bool addmm = op == "aten::addmm", bmm = op == "aten::bmm";
  const size_t first = addmm ? 1 : 0, rank = bmm ? 3 : 2;
  if (node.args.size() < first + 2 || node.outputs.size() != 1)
    return no_library_call(why_not, "unexpected arguments");
  const Arg &a = node.args[first], &b = node.args[first + 1];
  if (!is_tensor_ref(a) || !is_tensor_ref(b)) return no_library_call(why_not, "an operand is not a tensor");
  const auto out = meta_of(g, Arg::value(n, 0)), a_meta = meta_of(g, a), b_meta = meta_of(g, b);
  const std::string dtype = out ? out->dtype : "", device = out ? out->device : "";
  if (!out || !is_cuda(device) || !is_gpu_dtype(dtype) || !is_on(out, rank, dtype, device) ||
      !is_on(a_meta, rank, dtype, device) || !is_on(b_meta, rank, dtype, device))
    return no_library_call(why_not, "not a float32 / float16 / bfloat16 GPU matrix product of static, "
                                    "non-empty shapes");
  if (!is_row_major(*out)) return no_library_call(why_not, "output is not row-major");
  const int64_t m = out->sizes[rank - 2], cols = out->sizes[rank - 1];
  if (a_meta->sizes[rank - 2] != m || b_meta->sizes[rank - 1] != cols ||
      a_meta->sizes[rank - 1] != b_meta->sizes[rank - 2] ||
      (bmm && (a_meta->sizes[0] != out->sizes[0] || b_meta->sizes[0] != out->sizes[0])))
    return no_library_call(why_not, "shapes do not match");
  const ir::LibraryOp library_op = bmm ? ir::LibraryOp::bmm : addmm ? ir::LibraryOp::addmm : ir::LibraryOp::mm;
  return gemm_call_start(g, n, library_op, a, b, m, cols, dtype, device, why_not);
}

/// Stride, padding and dilation as the call's attributes, and groups; false when one is not
/// a literal.
bool set_conv_attrs(const Arg& stride, const Arg& padding, const Arg& dilation, const Arg& groups,
                    ir::LibraryCall& call) {
  const auto s = int_pair(stride), p = int_pair(padding), d = int_pair(dilation);
  if (!s || !p || !d || groups.kind != Arg::Kind::Int || groups.int_value < 1) return false;
  call.attrs["stride_h"] = double((*s)[0]), call.attrs["stride_w"] = double((*s)[1]);
  call.attrs["padding_h"] = double((*p)[0]), call.attrs["padding_w"] = double((*p)[1]);
  call.attrs["dilation_h"] = double((*d)[0]), call.attrs["dilation_w"] = double((*d)[1]);
  if (groups.int_value != 1) call.attrs["groups"] = double(groups.int_value);
  return true;
}

bool not_transposed(const Arg& transposed) {
  return transposed.kind == Arg::Kind::Bool && !transposed.bool_value;
}

std::optional<LibraryCallMatch> conv_call(const ir::Graph& g, int32_t n, std::string& why_not) {
  const ir::Node& node = g.nodes.at(static_cast<size_t>(n));
  if (node.args.size() != 9 || node.outputs.size() != 1) return no_library_call(why_not, "unexpected arguments");
  const Arg &x = node.args[0], &w = node.args[1], &bias = node.args[2];
  if (!is_tensor_ref(x) || !is_tensor_ref(w)) return no_library_call(why_not, "input or weight is not a tensor");
  const auto out = meta_of(g, Arg::value(n, 0)), x_meta = meta_of(g, x), w_meta = meta_of(g, w);
  const std::string dtype = out ? out->dtype : "", device = out ? out->device : "";
  if (!out || !is_cuda(device) || !is_gpu_dtype(dtype) || !is_on(out, 4, dtype, device) ||
      !is_on(x_meta, 4, dtype, device) || !is_on(w_meta, 4, dtype, device))
    return no_library_call(why_not, "not a 2-D float32 / float16 / bfloat16 GPU convolution of static shapes");
  if (!not_transposed(node.args[6])) return no_library_call(why_not, "transposed convolution");
  LibraryCallMatch match;
  match.call.op = ir::LibraryOp::conv2d;
  match.call.operands = {operand_name(x), operand_name(w)};
  if (!set_conv_attrs(node.args[3], node.args[4], node.args[5], node.args[8], match.call))
    return no_library_call(why_not, "stride, padding, dilation or groups is not literal");
  if (bias.kind != Arg::Kind::None) {
    const auto b_meta = meta_of(g, bias);
    if (!is_tensor_ref(bias) || !is_on(b_meta, 1, dtype, device) || b_meta->sizes[0] != out->sizes[1])
      return no_library_call(why_not, "bias is not a vector of the output channels");
    const ir::DType dt = *ir::dtype_from_name(dtype);  // [N, C, H, W]: by channel, i1
    match.call.epilogue = ir::binary(ir::BinaryOp::add, ir::epilogue_accumulator(dt),
                                     ir::load(operand_name(bias), dt, {ir::Expr::var("i1")}));
  }
  match.computed = {true};
  return match;
}

std::optional<LibraryCallMatch> conv_backward_call(const ir::Graph& g, int32_t n, std::string& why_not) {
  const ir::Node& node = g.nodes.at(static_cast<size_t>(n));
  if (node.args.size() != 11 || node.outputs.size() != 3) return no_library_call(why_not, "unexpected arguments");
  const Arg &dy = node.args[0], &x = node.args[1], &w = node.args[2], &mask = node.args[10];
  if (!is_tensor_ref(dy) || !is_tensor_ref(x) || !is_tensor_ref(w))
    return no_library_call(why_not, "output gradient, input or weight is not a tensor");
  const auto dy_meta = meta_of(g, dy), x_meta = meta_of(g, x), w_meta = meta_of(g, w);
  const std::string dtype = x_meta ? x_meta->dtype : "", device = x_meta ? x_meta->device : "";
  if (!x_meta || !is_cuda(device) || !is_gpu_dtype(dtype) || !is_on(dy_meta, 4, dtype, device) ||
      !is_on(x_meta, 4, dtype, device) || !is_on(w_meta, 4, dtype, device))
    return no_library_call(why_not, "not a 2-D float32 / float16 / bfloat16 GPU convolution of static shapes");
  if (!not_transposed(node.args[7])) return no_library_call(why_not, "transposed convolution");
  std::array<bool, 3> wanted{};
  if (mask.kind != Arg::Kind::List || mask.items.size() != 3) return no_library_call(why_not, "output_mask is not literal");
  for (size_t k = 0; k < 3; ++k) {
    if (mask.items[k].kind != Arg::Kind::Bool) return no_library_call(why_not, "output_mask is not literal");
    wanted[k] = mask.items[k].bool_value;
  }
  // Each gradient is stored as ATen returns it; the call checks the layout the graph recorded.
  for (int64_t k = 0; k < 3; ++k) {
    if (wanted[k] && !is_on(meta_of(g, Arg::value(n, k)), k == 2 ? 1 : 4, dtype, device))
      return no_library_call(why_not, "a gradient of dynamic or empty shape");
  }
  LibraryCallMatch match;
  match.call.op = ir::LibraryOp::conv2d_backward;
  match.call.operands = {operand_name(dy), operand_name(x), operand_name(w)};
  if (!set_conv_attrs(node.args[4], node.args[5], node.args[6], node.args[9], match.call))
    return no_library_call(why_not, "stride, padding, dilation or groups is not literal");
  match.computed = {wanted[0], wanted[1], wanted[2]};
  return match;
}

}  // namespace

std::optional<LibraryCallMatch> gpu_library_call(const ir::Graph& g, int32_t n, std::string& why_not) {
  const std::string op = op_name(g.nodes.at(static_cast<size_t>(n)).op);
  if (op == "aten::mm" || op == "aten::addmm" || op == "aten::bmm") return gemm_call(g, n, op, why_not);
  if (op == "aten::convolution") return conv_call(g, n, why_not);
  if (op == "aten::convolution_backward") return conv_backward_call(g, n, why_not);
  return std::nullopt;
}

}  // namespace inductor_cpp::inductor::library_calls
