/// \file
/// Matching eval BatchNorm's decomposition on a convolution's output (plan_batch_norm.h).
#include "inductor/plan_batch_norm.h"

#include <algorithm>

#include "inductor/lower/lower_graph.h"
#include "inductor/plan_epilogue.h"

namespace inductor_cpp::inductor::matrix_plan {

using ir::Arg;

namespace {

bool is_value_of(const Arg& a, int64_t node) {
  return a.kind == Arg::Kind::Value && a.index == node && a.output == 0;
}

const ir::Node* node_of(const ir::Graph& g, const Arg& a) {
  if (a.kind != Arg::Kind::Value || a.output != 0 || a.index < 0 ||
      a.index >= static_cast<int64_t>(g.nodes.size()))
    return nullptr;
  return &g.nodes[static_cast<size_t>(a.index)];
}

/// The one node that reads node `node`'s value (once), or nothing.
std::optional<int32_t> sole_reader(const ir::Graph& g, int64_t node) {
  std::optional<int32_t> reader;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const int64_t uses = mentions(g.nodes[n], node);
    if (uses == 0) continue;
    if (uses > 1 || reader) return std::nullopt;
    reader = static_cast<int32_t>(n);
  }
  return reader;
}

int64_t numel(const std::vector<int64_t>& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

/// `alpha` of add/sub absent or 1.
bool unit_alpha(const ir::Node& n) {
  const auto alpha = number_or(n, 2, "alpha", 1);
  return alpha && *alpha == 1;
}

/// `a` seen through nodes that keep a vector of `channels` float32 elements in its order
/// (unsqueeze, view, reshape, clone, float32 copies); the nodes passed go to `helpers`.
Arg peel_views(const ir::Graph& g, Arg a, int64_t channels, std::set<int32_t>& helpers) {
  for (;;) {
    const ir::Node* n = node_of(g, a);
    const auto meta = meta_of(g, a);
    if (!n || n->args.empty() || !meta || meta->dtype != "float32" ||
        numel(meta->sizes) != channels)
      return a;
    const std::string op = op_name(n->op);
    const bool view = op == "aten::unsqueeze" || op == "aten::view" || op == "aten::reshape" ||
                      op == "aten::_unsafe_view" || op == "aten::clone";
    bool copy = op == "aten::_to_copy" && n->args.size() == 1;
    for (const auto& [key, value] : n->kwargs) {
      const bool f32 = value.kind == Arg::Kind::Dtype &&
                       (value.text == "float32" || value.text == "torch.float32");
      if (key != "dtype" || !f32) copy = false;
    }
    const auto source = meta_of(g, n->args[0]);
    if (!(view || copy) || !source || source->dtype != "float32" ||
        numel(source->sizes) != channels)
      return a;
    helpers.insert(static_cast<int32_t>(a.index));
    a = n->args[0];
  }
}

/// A float32 CPU graph input or constant of sizes [channels], through views; nothing else.
std::optional<Arg> channel_vector(const ir::Graph& g, const Arg& a, int64_t channels,
                                  std::set<int32_t>& helpers) {
  const Arg source = peel_views(g, a, channels, helpers);
  if (source.kind != Arg::Kind::Input && source.kind != Arg::Kind::Constant) return std::nullopt;
  const auto meta = meta_of(g, source);
  if (!is_f32_cpu(meta, 1) || meta->sizes[0] != channels) return std::nullopt;
  return source;
}

/// True when `a` broadcasts against an [N, C, H, W] value as one value per channel:
/// [C, 1, 1] or [1, C, 1, 1] (a bare [C] would broadcast along W).
bool per_channel_operand(const ir::Graph& g, const Arg& a, int64_t channels) {
  const auto meta = meta_of(g, a);
  if (!meta || meta->dtype != "float32" || meta->device != "cpu") return false;
  const std::vector<int64_t>& s = meta->sizes;
  if (s.size() == 3) return s[0] == channels && s[1] == 1 && s[2] == 1;
  if (s.size() == 4) return s[0] == 1 && s[1] == channels && s[2] == 1 && s[3] == 1;
  return false;
}

/// The other operand of binary node `n` whose operand `chain` is the chain value, or nullptr.
const Arg* other_operand(const ir::Node& n, int64_t chain, bool commutative) {
  if (n.args.size() < 2) return nullptr;
  const bool first = is_value_of(n.args[0], chain), second = is_value_of(n.args[1], chain);
  if (first == second || (second && !commutative)) return nullptr;
  return first ? &n.args[1] : &n.args[0];
}

/// The running variance and eps of an inverse standard deviation operand
/// (1 / sqrt(var + eps), through views, rsqrt, and a multiplication by 1).
std::optional<std::pair<Arg, double>> inverse_std(const ir::Graph& g, const Arg& a,
                                                  int64_t channels, std::set<int32_t>& helpers) {
  Arg x = peel_views(g, a, channels, helpers);
  const ir::Node* n = node_of(g, x);
  if (!n) return std::nullopt;
  std::string op = op_name(n->op);
  if (op == "aten::mul.Tensor" && n->args.size() == 2) {  // invstd * 1
    const auto one = number(n->args[1]);
    if (!one || *one != 1) return std::nullopt;
    helpers.insert(static_cast<int32_t>(x.index));
    x = peel_views(g, n->args[0], channels, helpers);
    if (!(n = node_of(g, x))) return std::nullopt;
    op = op_name(n->op);
  }
  if (op == "aten::reciprocal" && n->args.size() == 1) {
    helpers.insert(static_cast<int32_t>(x.index));
    x = n->args[0];
    if (!(n = node_of(g, x)) || op_name(n->op) != "aten::sqrt" || n->args.size() != 1)
      return std::nullopt;
  } else if (op != "aten::rsqrt" || n->args.size() != 1) {
    return std::nullopt;
  }
  helpers.insert(static_cast<int32_t>(x.index));  // sqrt or rsqrt
  x = n->args[0];
  if (!(n = node_of(g, x)) || op_name(n->op) != "aten::add.Tensor" || n->args.size() < 2 ||
      !unit_alpha(*n))
    return std::nullopt;
  const auto eps = number(n->args[1]);
  if (!eps) return std::nullopt;
  helpers.insert(static_cast<int32_t>(x.index));
  const auto var = channel_vector(g, n->args[0], channels, helpers);
  if (!var) return std::nullopt;
  return std::make_pair(*var, *eps);
}

}  // namespace

std::optional<BatchNormMatch> match_batch_norm(
    const ir::Graph& g, int64_t producer, int32_t first, const std::vector<int64_t>& out_sizes,
    const std::function<int32_t(const std::string&)>& slot_of_buffer) {
  if (out_sizes.size() != 4 || first < 0 || first >= static_cast<int32_t>(g.nodes.size()))
    return std::nullopt;
  const int64_t channels = out_sizes[1];
  const auto same_sizes = [&](int32_t n) {
    const auto meta = meta_of(g, Arg::value(n, 0));
    return is_f32_cpu(meta, 4) && meta->sizes == out_sizes;
  };
  BatchNormMatch m;
  const auto param = [&](const Arg& a) {
    const std::string buffer = buffer_name_of(a);
    m.reads.insert(buffer);
    return slot_of_buffer(buffer);
  };

  // (x - mean): the batch norm's input is the producer's output itself.
  const ir::Node& sub = g.nodes[static_cast<size_t>(first)];
  if (op_name(sub.op) != "aten::sub.Tensor" || sub.args.size() < 2 || !unit_alpha(sub) ||
      !is_value_of(sub.args[0], producer) || is_value_of(sub.args[1], producer) ||
      !per_channel_operand(g, sub.args[1], channels) || !same_sizes(first))
    return std::nullopt;
  const auto mean = channel_vector(g, sub.args[1], channels, m.helpers);
  if (!mean) return std::nullopt;
  m.chain.push_back(first);

  // · invstd
  const auto scaled = sole_reader(g, first);
  if (!scaled) return std::nullopt;
  const ir::Node& mul = g.nodes[static_cast<size_t>(*scaled)];
  const Arg* inv =
      op_name(mul.op) == "aten::mul.Tensor" ? other_operand(mul, first, true) : nullptr;
  if (!inv || !per_channel_operand(g, *inv, channels) || !same_sizes(*scaled)) return std::nullopt;
  const auto var_eps = inverse_std(g, *inv, channels, m.helpers);
  if (!var_eps) return std::nullopt;
  m.chain.push_back(*scaled);

  // · weight, + bias (each optional; absent when affine=False)
  int32_t weight_slot = -1, bias_slot = -1;
  for (const bool is_weight : {true, false}) {
    const int32_t last = m.chain.back();
    const auto next = sole_reader(g, last);
    if (!next || !same_sizes(*next)) break;
    const ir::Node& n = g.nodes[static_cast<size_t>(*next)];
    const std::string op = op_name(n.op);
    const bool expected_op =
        is_weight ? op == "aten::mul.Tensor" : (op == "aten::add.Tensor" && unit_alpha(n));
    if (!expected_op) continue;
    const Arg* operand = other_operand(n, last, true);
    if (!operand || !per_channel_operand(g, *operand, channels)) continue;
    std::set<int32_t> helpers = m.helpers;
    const auto vector = channel_vector(g, *operand, channels, helpers);
    if (!vector) continue;
    m.helpers = std::move(helpers);
    (is_weight ? weight_slot : bias_slot) = param(*vector);
    m.chain.push_back(*next);
  }
  m.op.kind = "batch_norm";
  m.op.a = static_cast<float>(var_eps->second);
  m.op.params = {param(*mean), param(var_eps->first), weight_slot, bias_slot};
  return m;
}

std::optional<PairedAbsorption> paired_absorption(
    const ir::Graph& g, const ir::ScheduledProgram& program, size_t index,
    const std::function<std::optional<StaticMeta>(size_t)>& conv_output,
    const std::set<std::string>& into_inputs,
    const std::function<int32_t(const std::string&)>& slot_of_buffer) {
  const auto graph_node = [&](size_t step) {
    return static_cast<int64_t>(program.steps[step].call.graph_node);
  };
  if (!conv_output(index)) return std::nullopt;
  const auto reader = sole_reader_kernel(g, program, index, graph_node(index));
  if (!reader) return std::nullopt;
  // The other convolution the kernel reads: one step before the kernel that we run as conv2d.
  std::optional<size_t> other;
  const std::set<std::string> reads = buffers_read(program.steps[*reader]);
  for (size_t s = 0; s < *reader; ++s) {
    const ir::ScheduledStep& step = program.steps[s];
    if (s == index || step.kind != ir::ScheduledStep::Kind::Extern || step.call.view ||
        step.call.graph_node < 0 ||
        !reads.count(buffer_name_of(Arg::value(step.call.graph_node, 0))))
      continue;
    if (!conv_output(s)) continue;
    if (other) return std::nullopt;  // three convolutions
    other = s;
  }
  if (!other) return std::nullopt;
  PairedAbsorption pair;
  pair.first_step = std::min(index, *other);
  pair.second_step = std::max(index, *other);
  const int64_t first = graph_node(pair.first_step), second = graph_node(pair.second_step);
  if (sole_reader_kernel(g, program, pair.first_step, first) != reader ||
      sole_reader_kernel(g, program, pair.second_step, second) != reader)
    return std::nullopt;

  // The first convolution's batch norm, all of it computed by the kernel.
  const ir::ScheduledStep& kernel = program.steps[*reader];
  const auto first_out = conv_output(pair.first_step);
  const auto reads_first =
      std::find_if(kernel.graph_nodes.begin(), kernel.graph_nodes.end(), [&](int32_t n) {
        return n >= 0 && n < static_cast<int32_t>(g.nodes.size()) && mentions(g.nodes[n], first);
      });
  if (reads_first == kernel.graph_nodes.end()) return std::nullopt;
  const auto bn = match_batch_norm(g, first, *reads_first, first_out->sizes, slot_of_buffer);
  if (!bn || !only_read_by(g, program, static_cast<int32_t>(first), bn->chain.front()))
    return std::nullopt;
  Materialized materialized;
  materialized.node = bn->chain.back();
  const std::set<int32_t> computed(kernel.graph_nodes.begin(), kernel.graph_nodes.end());
  for (size_t i = 0; i < bn->chain.size(); ++i) {
    if (!computed.count(bn->chain[i])) return std::nullopt;
    if (i + 1 < bn->chain.size() && !only_read_by(g, program, bn->chain[i], bn->chain[i + 1]))
      return std::nullopt;
    materialized.nodes.insert(bn->chain[i]);
  }
  for (int32_t n : bn->helpers) {
    if (computed.count(n)) materialized.nodes.insert(n);
  }
  materialized.reads = bn->reads;
  materialized.reads.insert(buffer_name_of(Arg::value(first, 0)));
  const auto bn_meta = meta_of(g, Arg::value(materialized.node, 0));
  if (!bn_meta || !is_channels_last(*bn_meta)) return std::nullopt;

  // The second convolution absorbs the rest, the first's batch norm output as a residual.
  auto absorbed = absorbable(g, program, pair.second_step, second, *conv_output(pair.second_step),
                             is_channels_last, into_inputs, slot_of_buffer, true, &materialized);
  if (!absorbed) return std::nullopt;
  pair.first_op = bn->op;
  pair.first_written = buffer_name_of(Arg::value(materialized.node, 0));
  pair.first_strides = bn_meta->strides;
  pair.first_nodes.assign(materialized.nodes.begin(), materialized.nodes.end());
  pair.second = std::move(*absorbed);
  return pair;
}

}  // namespace inductor_cpp::inductor::matrix_plan
