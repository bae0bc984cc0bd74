/// \file
/// Matching `aten::convolution_backward` extern steps to conv2d_backward library calls
/// (plan_conv_backward.h).
#include "inductor/plan_conv_backward.h"

#include <array>

#include "inductor/lower/lower_graph.h"
#include "inductor/plan_epilogue.h"
#include "matrix/matrix.h"

namespace inductor_cpp::inductor {

using ir::Arg;
using namespace matrix_plan;

std::optional<MatmulMatch> match_conv_backward(
    const ir::Graph& g, const ir::ScheduledProgram& program, size_t step_index,
    const std::function<int32_t(const std::string&)>& slot_of_buffer, std::string& why_not) {
  const ir::ScheduledStep& s = program.steps.at(step_index);
  if (s.kind != ir::ScheduledStep::Kind::Extern || s.call.view || s.call.graph_node < 0)
    return std::nullopt;
  const int64_t n = s.call.graph_node;
  const ir::Node& node = g.nodes.at(static_cast<size_t>(n));
  if (op_name(node.op) != "aten::convolution_backward") return std::nullopt;
  const auto no = [&why_not](const std::string& why) -> std::optional<MatmulMatch> {
    why_not = "matrix kernels: " + why;
    return std::nullopt;
  };
  if (node.args.size() != 11 || node.outputs.size() != 3) return no("unexpected arguments");
  const Arg &dy = node.args[0], &x = node.args[1], &w = node.args[2];
  if (!is_tensor_ref(dy) || !is_tensor_ref(x) || !is_tensor_ref(w))
    return no("output gradient, input or weight is not a tensor");
  const auto dy_meta = meta_of(g, dy), x_meta = meta_of(g, x), w_meta = meta_of(g, w);
  if (!is_f32_cpu(dy_meta, 4) || !is_f32_cpu(x_meta, 4) || !is_f32_cpu(w_meta, 4))
    return no("not a 2-D float32 CPU convolution with static shapes");
  const Arg &transposed = node.args[7], &groups = node.args[9], &mask = node.args[10];
  if (transposed.kind != Arg::Kind::Bool || transposed.bool_value) return no("transposed convolution");
  if (groups.kind != Arg::Kind::Int || groups.int_value != 1) return no("groups != 1");
  const auto stride = int_pair(node.args[4]), padding = int_pair(node.args[5]),
             dilation = int_pair(node.args[6]);
  if (!stride || !padding || !dilation) return no("stride, padding or dilation is not two literal ints");
  std::array<bool, 3> wanted{};
  if (mask.kind != Arg::Kind::List || mask.items.size() != 3) return no("output_mask is not a literal list");
  for (size_t i = 0; i < 3; ++i) {
    if (mask.items[i].kind != Arg::Kind::Bool) return no("output_mask is not a literal list");
    wanted[i] = mask.items[i].bool_value;
  }
  if (!is_channels_last(*x_meta) || !is_channels_last(*dy_meta))
    return no(
        "input or output gradient is not channels-last (our convolution reads NHWC; NCHW stays "
        "with ATen's kernel)");
  matrix::Conv2dParams q;
  q.n = x_meta->sizes[0], q.c = x_meta->sizes[1], q.h = x_meta->sizes[2], q.w = x_meta->sizes[3];
  q.oc = w_meta->sizes[0], q.kh = w_meta->sizes[2], q.kw = w_meta->sizes[3];
  q.stride_h = (*stride)[0], q.stride_w = (*stride)[1], q.pad_h = (*padding)[0], q.pad_w = (*padding)[1];
  q.dilation_h = (*dilation)[0], q.dilation_w = (*dilation)[1];
  if (w_meta->sizes[1] != q.c || dy_meta->sizes != std::vector<int64_t>{q.n, q.oc, q.out_h(), q.out_w()})
    return no("shapes do not match");
  if (!matrix::conv2d_backward_weight_supported(q))
    return no("parameters not supported by our convolution");
  // A stem's 3 channels: its weight gradient runs on tiles by filter columns (the 21 columns
  // of a 7×7 filter row on 6 × 64 tiles: 7×7/2 3->64 @224² batch 8, 1.13-1.28x oneDNN at 1-2
  // threads; on tiles by output channels it was 0.73-0.88x), but its input gradient would be a
  // convolution with 3 output channels, a fraction of any register tile.
  if (q.c < 8 && wanted[0])
    return no("input gradient of fewer than 8 input channels (ATen's kernel is faster there)");

  MatmulMatch match;
  match.step.node = static_cast<int32_t>(n);
  match.step.action = runtime::LibraryCall::of("conv2d_backward");
  match.step.library()->nodes = {static_cast<int32_t>(n)};
  runtime::Conv2dBackwardCall& launch = match.step.library()->as<runtime::Conv2dBackwardCall>();
  launch.grad_output = slot_of_buffer(buffer_name_of(dy));
  launch.weight = slot_of_buffer(buffer_name_of(w));
  launch.input = slot_of_buffer(buffer_name_of(x));
  launch.geometry = runtime::ConvGeometry{*stride, *padding, *dilation};
  // Gradient i's allocation, with its meta's layout when `fits` it.
  const auto gradient = [&](int64_t i, size_t rank, const auto& fits) -> std::optional<runtime::BufferAlloc> {
    const auto meta = meta_of(g, Arg::value(n, i));
    if (!is_f32_cpu(meta, rank) || !fits(*meta)) return std::nullopt;
    return runtime::BufferAlloc{slot_of_buffer(buffer_name_of(Arg::value(n, i))), meta->sizes, meta->strides,
                                "float32", "cpu", -1};
  };
  const auto any = [](const StaticMeta&) { return true; };
  std::optional<runtime::BufferAlloc> grad_input;  // in output order, so slots read in order
  if (wanted[0]) {
    grad_input = gradient(0, 4, is_channels_last);
    if (!grad_input || grad_input->sizes != x_meta->sizes) return no("the input gradient is not channels-last");
  }
  if (wanted[1]) {
    auto alloc = gradient(1, 4, [](const StaticMeta& m) { return is_channels_last(m) || is_row_major(m); });
    if (!alloc || alloc->sizes != w_meta->sizes) return no("the weight gradient is neither contiguous nor channels-last");
    launch.grad_weight = std::move(*alloc);
  }
  if (wanted[2]) {
    auto alloc = gradient(2, 1, any);
    if (!alloc || alloc->sizes != std::vector<int64_t>{q.oc}) return no("the bias gradient is not a vector of the output channels");
    launch.grad_bias = std::move(*alloc);
  }
  if (grad_input) {
    // Strided filters larger than 1×1 run by phases, each reading dy in place with its own
    // zero border and writing its pixels of dx (conv_backward.h): batch 8, 2 threads, Xeon dev
    // machine, per-round pairs against oneDNN, 3×3/2 64->128 @56² 1.01-1.10x, 128->256 @28²
    // 1.05x, 256->512 @14² 1.02-1.07x (until 2026-11-28, with a copy of dy and a scatter per
    // phase, 0.85x / 0.94x / 0.91x, and ATen computed them).
    if (!matrix::conv2d_backward_input_supported(q)) return no("input gradient not supported by our convolution");
    launch.grad_input = std::move(*grad_input);
  }
  return match;
}

}  // namespace inductor_cpp::inductor
