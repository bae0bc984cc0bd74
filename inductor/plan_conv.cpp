/// \file
/// Matching `aten::convolution` extern steps to conv2d library calls, and reading
/// convolution weights past their layout copies (plan_conv.h).
#include "inductor/plan_conv.h"

#include <array>
#include <set>
#include <utility>

#include "inductor/lower/lower_graph.h"
#include "inductor/plan_batch_norm.h"
#include "inductor/plan_epilogue.h"
#include "inductor/plan_tile_epilogue.h"
#include "matrix/matrix.h"

namespace inductor_cpp::inductor {

using ir::Arg;
using namespace matrix_plan;

namespace {

/// A convolution node our kernel runs: its geometry and output meta.
struct ConvNode {
  runtime::ConvGeometry geometry;
  StaticMeta out;
};

/// Graph-level checks of convolution node `n` (everything but epilogue absorption): the node
/// as our kernel runs it, or nothing with `why_not` set (left empty for other ops).
std::optional<ConvNode> runnable_conv(const ir::Graph& g, int64_t n, std::string& why_not) {
  const ir::Node& node = g.nodes.at(static_cast<size_t>(n));
  if (op_name(node.op) != "aten::convolution") return std::nullopt;
  const auto no = [&why_not](const std::string& why) -> std::optional<ConvNode> {
    why_not = "matrix kernels: " + why;
    return std::nullopt;
  };
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
  matrix::Conv2dParams q;
  q.n = x_meta->sizes[0], q.c = x_meta->sizes[1], q.h = x_meta->sizes[2], q.w = x_meta->sizes[3];
  q.oc = w_meta->sizes[0], q.kh = w_meta->sizes[2], q.kw = w_meta->sizes[3];
  q.stride_h = (*stride)[0], q.stride_w = (*stride)[1], q.pad_h = (*padding)[0],
  q.pad_w = (*padding)[1];
  q.dilation_h = (*dilation)[0], q.dilation_w = (*dilation)[1];
  if (w_meta->sizes[1] != q.c ||
      out_meta->sizes != std::vector<int64_t>{q.n, q.oc, q.out_h(), q.out_w()})
    return no("shapes do not match");
  if (!matrix::conv2d_supported(q)) return no("parameters not supported by conv2d_nhwc_f32");
  const auto b_meta = meta_of(g, bias);
  if (bias.kind != Arg::Kind::None &&
      (!is_tensor_ref(bias) || !is_f32_cpu(b_meta, 1) || b_meta->sizes[0] != q.oc))
    return no("bias is not a float32 CPU vector of the output channels");
  return ConvNode{runtime::ConvGeometry{*stride, *padding, *dilation}, *out_meta};
}

}  // namespace

std::optional<ir::Graph> read_conv_weights_in_place(const ir::Graph& g) {
  // Inputs the graph writes (in-place ops, copy_ into them): a copy taken before the write
  // differs from the source read later.
  std::set<std::pair<Arg::Kind, int64_t>> written;
  for (const ir::Node& node : g.nodes) {
    const std::string name = ir::split_op_name(node.op).first;
    if (!node.args.empty() && !name.empty() && name.back() == '_')
      written.insert({node.args[0].kind, node.args[0].index});
  }
  std::optional<ir::Graph> out;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    std::string why_not;
    if (!runnable_conv(g, static_cast<int64_t>(n), why_not)) continue;
    const Arg& w = g.nodes[n].args[1];
    if (w.kind != Arg::Kind::Value || w.output != 0) continue;
    const ir::Node& copy = g.nodes.at(static_cast<size_t>(w.index));
    if (op_name(copy.op) != "aten::clone" || copy.args.size() != 1) continue;
    const Arg& source = copy.args[0];
    if (source.kind != Arg::Kind::Input && source.kind != Arg::Kind::Constant) continue;
    if (written.count({source.kind, source.index})) continue;
    if (!out) out = g;
    out->nodes[n].args[1] = source;
  }
  return out;
}

std::optional<MatmulMatch> match_conv(
    const ir::Graph& g, const ir::ScheduledProgram& program, size_t step_index,
    const std::set<std::string>& into_inputs,
    const std::function<int32_t(const std::string&)>& slot_of_buffer, std::string& why_not,
    const ir::LoopProgram* fused) {
  const ir::ScheduledStep& s = program.steps.at(step_index);
  if (s.kind != ir::ScheduledStep::Kind::Extern || s.call.view || s.call.graph_node < 0)
    return std::nullopt;
  const int64_t n = s.call.graph_node;
  const auto conv = runnable_conv(g, n, why_not);
  if (!conv) return std::nullopt;
  const ir::Node& node = g.nodes.at(static_cast<size_t>(n));
  const Arg &x = node.args[0], &w = node.args[1], &bias = node.args[2];

  MatmulMatch match;
  runtime::Step& step = match.step;
  step.node = static_cast<int32_t>(n);
  step.action = runtime::LibraryCall::of("conv2d");
  runtime::LibraryCall& call = *step.library();
  call.nodes = {static_cast<int32_t>(n)};
  runtime::Conv2dCall& launch = call.as<runtime::Conv2dCall>();
  launch.input = slot_of_buffer(buffer_name_of(x));
  launch.weight = slot_of_buffer(buffer_name_of(w));
  launch.geometry = conv->geometry;
  if (bias.kind != Arg::Kind::None)
    launch.epilogue.push_back({"bias_col", slot_of_buffer(buffer_name_of(bias)), 0, 0});
  auto absorbed = absorbable(g, program, step_index, n, conv->out, is_channels_last, into_inputs,
                             slot_of_buffer, /*batch_norm=*/true);
  std::string written = absorbed ? absorbed->written : buffer_name_of(Arg::value(n, 0));
  std::vector<int64_t> strides = absorbed ? absorbed->strides : conv->out.strides;
  if (!absorbed) {  // two convolutions feeding one kernel (plan_batch_norm.h)
    const auto conv_output = [&](size_t s) -> std::optional<StaticMeta> {
      const ir::ScheduledStep& step = program.steps.at(s);
      std::string ignored;
      if (step.kind != ir::ScheduledStep::Kind::Extern || step.call.view ||
          step.call.graph_node < 0)
        return std::nullopt;
      const auto other = runnable_conv(g, step.call.graph_node, ignored);
      if (!other) return std::nullopt;
      return other->out;
    };
    if (auto pair =
            paired_absorption(g, program, step_index, conv_output, into_inputs, slot_of_buffer)) {
      if (pair->first_step == step_index) {
        launch.epilogue.push_back(pair->first_op);
        call.nodes.insert(call.nodes.end(), pair->first_nodes.begin(), pair->first_nodes.end());
        written = pair->first_written;
        strides = pair->first_strides;
      } else {
        absorbed = std::move(pair->second);
        written = absorbed->written;
        strides = absorbed->strides;
      }
    }
  }
  const std::vector<int64_t>& sizes = conv->out.sizes;
  if (!absorbed && fused && written == buffer_name_of(Arg::value(n, 0))) {
    // The output [N, OC, OH, OW] channels-last is the [N·OH·OW, OC] matrix the kernels write.
    auto tiled = tile_absorbable(g, *fused, program, step_index, n, sizes[0] * sizes[2] * sizes[3],
                                 sizes[1], into_inputs, slot_of_buffer);
    if (tiled && tiled->absorbed.sizes == sizes &&
        is_channels_last(StaticMeta{sizes, tiled->absorbed.strides, "float32", "cpu"})) {
      absorbed = std::move(tiled->absorbed);
      written = absorbed->written;
      strides = absorbed->strides;
      match.tile_kernel = std::move(tiled->kernel);
    }
  }
  if (absorbed) {
    launch.epilogue.insert(launch.epilogue.end(), absorbed->ops.begin(), absorbed->ops.end());
    call.nodes.insert(call.nodes.end(), absorbed->nodes.begin(), absorbed->nodes.end());
    match.absorbed_step = absorbed->step;
  }
  launch.out = runtime::BufferAlloc{slot_of_buffer(written), sizes, strides, "float32", "cpu", -1};
  return match;
}

}  // namespace inductor_cpp::inductor
