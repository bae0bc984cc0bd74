/// \file
/// Library calls for 2-D convolutions and their backward (library_calls.h), and the weight read
/// past its layout copy: a `clone` of an input or constant that the graph never writes (the
/// copy's compute then has no reader and dead-code elimination drops it).
#include <array>
#include <set>
#include <utility>

#include "inductor/lower/graph_meta.h"
#include "inductor/lower/library_calls.h"
#include "matrix/matrix.h"

namespace inductor_cpp::inductor::library_calls {

using ir::Arg;
using namespace graph_meta;

namespace {

/// Stride, padding and dilation of a convolution, as literal int pairs.
struct Geometry {
  std::array<int64_t, 2> stride, padding, dilation;
};

/// The geometry as the call's attributes.
void set_geometry_attrs(const Geometry& geo, ir::LibraryCall& call) {
  call.attrs["stride_h"] = double(geo.stride[0]), call.attrs["stride_w"] = double(geo.stride[1]);
  call.attrs["padding_h"] = double(geo.padding[0]);
  call.attrs["padding_w"] = double(geo.padding[1]);
  call.attrs["dilation_h"] = double(geo.dilation[0]);
  call.attrs["dilation_w"] = double(geo.dilation[1]);
}

matrix::Conv2dParams conv_params(const StaticMeta& x, const StaticMeta& w, const Geometry& geo) {
  matrix::Conv2dParams q;
  q.n = x.sizes[0], q.c = x.sizes[1], q.h = x.sizes[2], q.w = x.sizes[3];
  q.oc = w.sizes[0], q.kh = w.sizes[2], q.kw = w.sizes[3];
  q.stride_h = geo.stride[0], q.stride_w = geo.stride[1], q.pad_h = geo.padding[0],
  q.pad_w = geo.padding[1];
  q.dilation_h = geo.dilation[0], q.dilation_w = geo.dilation[1];
  return q;
}

/// The weight operand of a convolution we run: when the weight is a layout copy
/// `aten::clone(input or constant)` (the channels-last FX pass adds one per weight) of a
/// source no in-place op of the graph writes, the source itself. The conv2d call packs the
/// weight from any layout and caches the packed copy while the source does not change, where
/// a fresh copy every call would be packed every call; the copy, now unread, is dropped by
/// dead-code elimination.
std::string weight_operand(const ir::Graph& g, const Arg& w) {
  if (w.kind != Arg::Kind::Value || w.output != 0) return operand_name(w);
  const ir::Node& copy = g.nodes.at(static_cast<size_t>(w.index));
  if (op_name(copy.op) != "aten::clone" || copy.args.size() != 1) return operand_name(w);
  const Arg& source = copy.args[0];
  if (source.kind != Arg::Kind::Input && source.kind != Arg::Kind::Constant)
    return operand_name(w);
  // A source the graph writes (in-place ops, copy_ into it): a copy taken before the write
  // differs from the source read later.
  for (const ir::Node& node : g.nodes) {
    const std::string name = ir::split_op_name(node.op).first;
    if (!node.args.empty() && !name.empty() && name.back() == '_' &&
        node.args[0].kind == source.kind && node.args[0].index == source.index)
      return operand_name(w);
  }
  return operand_name(source);
}

}  // namespace

std::optional<LibraryCallMatch> conv2d_call(const ir::Graph& g, int32_t n, std::string& why_not) {
  const ir::Node& node = g.nodes.at(static_cast<size_t>(n));
  if (op_name(node.op) != "aten::convolution") return std::nullopt;
  const auto no = [&why_not](const std::string& why) { return no_library_call(why_not, why); };
  if (node.args.size() != 9 || node.outputs.size() != 1) return no("unexpected arguments");
  const Arg &x = node.args[0], &w = node.args[1], &bias = node.args[2];
  if (!is_tensor_ref(x) || !is_tensor_ref(w)) return no("input or weight is not a tensor");
  const auto x_meta = meta_of(g, x), w_meta = meta_of(g, w),
             out_meta = meta_of(g, Arg::value(n, 0));
  if (!is_f32_cpu(out_meta, 4) || !is_f32_cpu(x_meta, 4) || !is_f32_cpu(w_meta, 4))
    return no("not a 2-D float32 CPU convolution with static shapes");
  const Arg &transposed = node.args[6], &groups = node.args[8];
  if (transposed.kind != Arg::Kind::Bool || transposed.bool_value)
    return no("transposed convolution");
  if (groups.kind != Arg::Kind::Int || groups.int_value != 1) return no("groups != 1");
  const auto stride = int_pair(node.args[3]), padding = int_pair(node.args[4]),
             dilation = int_pair(node.args[5]);
  if (!stride || !padding || !dilation)
    return no("stride, padding or dilation is not two literal ints");
  if (!is_channels_last(*x_meta))
    return no(
        "input is not channels-last (our convolution reads NHWC; NCHW stays with ATen's kernel)");
  if (!is_channels_last(*out_meta))
    return no("output is not channels-last (our convolution writes NHWC)");
  const Geometry geo{*stride, *padding, *dilation};
  const matrix::Conv2dParams q = conv_params(*x_meta, *w_meta, geo);
  if (w_meta->sizes[1] != q.c ||
      out_meta->sizes != std::vector<int64_t>{q.n, q.oc, q.out_h(), q.out_w()})
    return no("shapes do not match");
  if (!matrix::conv2d_supported(q)) return no("parameters not supported by conv2d_nhwc_f32");
  const auto b_meta = meta_of(g, bias);
  if (bias.kind != Arg::Kind::None &&
      (!is_tensor_ref(bias) || !is_f32_cpu(b_meta, 1) || b_meta->sizes[0] != q.oc))
    return no("bias is not a float32 CPU vector of the output channels");

  LibraryCallMatch match;
  match.call.op = ir::LibraryOp::conv2d;
  match.call.operands = {operand_name(x), weight_operand(g, w)};
  set_geometry_attrs(geo, match.call);
  if (bias.kind != Arg::Kind::None)  // the output is [N, C, H, W]: the bias is by channel, i1
    match.call.epilogue = ir::binary(
        ir::BinaryOp::add, ir::epilogue_accumulator(ir::DType::Float32),
        ir::load(operand_name(bias), ir::DType::Float32, {ir::Expr::var("i1")}));
  match.computed = {true};
  return match;
}

std::optional<LibraryCallMatch> conv2d_backward_call(const ir::Graph& g, int32_t n,
                                                     std::string& why_not) {
  const ir::Node& node = g.nodes.at(static_cast<size_t>(n));
  if (op_name(node.op) != "aten::convolution_backward") return std::nullopt;
  const auto no = [&why_not](const std::string& why) { return no_library_call(why_not, why); };
  if (node.args.size() != 11 || node.outputs.size() != 3) return no("unexpected arguments");
  const Arg &dy = node.args[0], &x = node.args[1], &w = node.args[2];
  if (!is_tensor_ref(dy) || !is_tensor_ref(x) || !is_tensor_ref(w))
    return no("output gradient, input or weight is not a tensor");
  const auto dy_meta = meta_of(g, dy), x_meta = meta_of(g, x), w_meta = meta_of(g, w);
  if (!is_f32_cpu(dy_meta, 4) || !is_f32_cpu(x_meta, 4) || !is_f32_cpu(w_meta, 4))
    return no("not a 2-D float32 CPU convolution with static shapes");
  const Arg &transposed = node.args[7], &groups = node.args[9], &mask = node.args[10];
  if (transposed.kind != Arg::Kind::Bool || transposed.bool_value)
    return no("transposed convolution");
  if (groups.kind != Arg::Kind::Int || groups.int_value != 1) return no("groups != 1");
  const auto stride = int_pair(node.args[4]), padding = int_pair(node.args[5]),
             dilation = int_pair(node.args[6]);
  if (!stride || !padding || !dilation)
    return no("stride, padding or dilation is not two literal ints");
  std::array<bool, 3> wanted{};
  if (mask.kind != Arg::Kind::List || mask.items.size() != 3)
    return no("output_mask is not a literal list");
  for (size_t i = 0; i < 3; ++i) {
    if (mask.items[i].kind != Arg::Kind::Bool) return no("output_mask is not a literal list");
    wanted[i] = mask.items[i].bool_value;
  }
  if (!is_channels_last(*x_meta) || !is_channels_last(*dy_meta))
    return no(
        "input or output gradient is not channels-last (our convolution reads NHWC; NCHW stays "
        "with ATen's kernel)");
  const Geometry geo{*stride, *padding, *dilation};
  const matrix::Conv2dParams q = conv_params(*x_meta, *w_meta, geo);
  if (w_meta->sizes[1] != q.c ||
      dy_meta->sizes != std::vector<int64_t>{q.n, q.oc, q.out_h(), q.out_w()})
    return no("shapes do not match");
  if (!matrix::conv2d_backward_weight_supported(q))
    return no("parameters not supported by our convolution");
  // A stem's 3 channels: its weight gradient runs on tiles by filter columns (the 21 columns
  // of a 7×7 filter row on 6 × 64 tiles: 7×7/2 3->64 @224² batch 8, 1.13-1.28x oneDNN at 1-2
  // threads; on tiles by output channels it was 0.73-0.88x), but its input gradient would be a
  // convolution with 3 output channels, a fraction of any register tile.
  if (q.c < 8 && wanted[0])
    return no("input gradient of fewer than 8 input channels (ATen's kernel is faster there)");
  // Gradient i is written with its meta's layout, which must be one our kernels write.
  const auto gradient_fits = [&](int64_t i, size_t rank, const auto& fits,
                                 const std::vector<int64_t>& sizes) {
    const auto meta = meta_of(g, Arg::value(n, i));
    return is_f32_cpu(meta, rank) && fits(*meta) && meta->sizes == sizes;
  };
  if (wanted[0] && !gradient_fits(0, 4, is_channels_last, x_meta->sizes))
    return no("the input gradient is not channels-last");
  const auto dense = [](const StaticMeta& m) { return is_channels_last(m) || is_row_major(m); };
  if (wanted[1] && !gradient_fits(1, 4, dense, w_meta->sizes))
    return no("the weight gradient is neither contiguous nor channels-last");
  const auto any = [](const StaticMeta&) { return true; };
  if (wanted[2] && !gradient_fits(2, 1, any, std::vector<int64_t>{q.oc}))
    return no("the bias gradient is not a vector of the output channels");
  // Strided filters larger than 1×1 run by phases, each reading dy in place with its own
  // zero border and writing its pixels of dx (conv_backward.h): batch 8, 2 threads, Xeon dev
  // machine, per-round pairs against oneDNN, 3×3/2 64->128 @56² 1.01-1.10x, 128->256 @28²
  // 1.05x, 256->512 @14² 1.02-1.07x.
  if (wanted[0] && !matrix::conv2d_backward_input_supported(q))
    return no("input gradient not supported by our convolution");

  LibraryCallMatch match;
  match.call.op = ir::LibraryOp::conv2d_backward;
  match.call.operands = {operand_name(dy), operand_name(x), operand_name(w)};
  set_geometry_attrs(geo, match.call);
  match.computed = {wanted[0], wanted[1], wanted[2]};
  return match;
}

}  // namespace inductor_cpp::inductor::library_calls
