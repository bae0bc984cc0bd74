/// \file
/// Gate pairing of two matmuls feeding one product kernel (plan_gate.h).
#include "inductor/plan_gate.h"

#include <algorithm>

#include "inductor/lower/lower_graph.h"

namespace inductor_cpp::inductor::matrix_plan {

using ir::Arg;

namespace {

/// The one node among `nodes` whose arguments mention node `producer`, or -1 (none, or two).
int32_t sole_user_among(const ir::Graph& g, const std::vector<int32_t>& nodes, int64_t producer) {
  int32_t user = -1;
  for (int32_t n : nodes) {
    if (n < 0 || n >= static_cast<int32_t>(g.nodes.size()) || !mentions(g.nodes[n], producer))
      continue;
    if (user >= 0) return -1;
    user = n;
  }
  return user;
}

}  // namespace

std::optional<GatePair> paired_gate(
    const ir::Graph& g, const ir::ScheduledProgram& program, size_t index,
    const std::function<std::optional<StaticMeta>(size_t)>& matmul_output,
    const std::set<std::string>& into_inputs,
    const std::function<int32_t(const std::string&)>& slot_of_buffer) {
  const auto graph_node = [&](size_t step) {
    return static_cast<int64_t>(program.steps[step].call.graph_node);
  };
  if (!matmul_output(index)) return std::nullopt;
  const auto reader = sole_reader_kernel(g, program, index, graph_node(index));
  if (!reader) return std::nullopt;
  // The other matmul the kernel reads: a step before the kernel that we run as a matrix step.
  std::optional<size_t> other;
  const std::set<std::string> reads = buffers_read(program.steps[*reader]);
  for (size_t s = 0; s < *reader; ++s) {
    const ir::ScheduledStep& step = program.steps[s];
    if (s == index || step.kind != ir::ScheduledStep::Kind::Extern || step.call.view ||
        step.call.graph_node < 0 ||
        !reads.count(buffer_name_of(Arg::value(step.call.graph_node, 0))) || !matmul_output(s))
      continue;
    if (other) return std::nullopt;  // three matmuls
    other = s;
  }
  if (!other) return std::nullopt;
  GatePair pair;
  pair.first_step = std::min(index, *other);
  pair.second_step = std::max(index, *other);
  const int64_t first = graph_node(pair.first_step), second = graph_node(pair.second_step);
  if (sole_reader_kernel(g, program, pair.first_step, first) != reader ||
      sole_reader_kernel(g, program, pair.second_step, second) != reader)
    return std::nullopt;

  // The first matmul's chain in the kernel: unary epilogue ops and row-major reshapes (Linear's
  // addmm on [B·S, F] viewed as [B, S, F]), each value read by the next node only, up to the
  // node that also reads something else (the product).
  const ir::ScheduledStep& kernel = program.steps[*reader];
  const auto first_out = matmul_output(pair.first_step);
  Materialized materialized;
  int64_t prev = first;
  for (;;) {
    const int32_t next = sole_user_among(g, kernel.graph_nodes, prev);
    if (next < 0 || !only_read_by(g, program, static_cast<int32_t>(prev), next))
      return std::nullopt;
    const bool reshape = is_row_major_reshape(g, next, prev);
    const Arg* operand = nullptr;
    const auto op = reshape ? std::nullopt : epilogue_op_of(g.nodes[next], prev, &operand);
    if (!reshape && (!op || operand)) break;  // not unary: the product the second absorbs
    const auto meta = meta_of(g, Arg::value(next, 0));
    if (!meta || !is_f32_cpu(meta, meta->sizes.size()) ||
        numel(meta->sizes) != numel(first_out->sizes) || !is_row_major(*meta) ||
        (!reshape && meta->sizes != (pair.first_sizes.empty() ? first_out->sizes : pair.first_sizes)))
      return std::nullopt;
    if (op) pair.first_ops.push_back(*op);
    materialized.nodes.insert(next);
    pair.first_sizes = meta->sizes;
    pair.first_strides = meta->strides;
    prev = next;
  }
  if (pair.first_ops.empty()) return std::nullopt;  // a plain operand: absorbable does it alone
  materialized.node = static_cast<int32_t>(prev);
  materialized.reads = {buffer_name_of(Arg::value(first, 0))};

  // The second matmul absorbs the rest, the activated value as a ready operand.
  auto absorbed = absorbable(g, program, pair.second_step, second, *matmul_output(pair.second_step),
                             is_row_major, into_inputs, slot_of_buffer, /*batch_norm=*/false,
                             &materialized, /*allow_reshapes=*/true);
  if (!absorbed) return std::nullopt;
  pair.first_written = buffer_name_of(Arg::value(materialized.node, 0));
  pair.first_nodes.assign(materialized.nodes.begin(), materialized.nodes.end());
  pair.second = std::move(*absorbed);
  return pair;
}

}  // namespace inductor_cpp::inductor::matrix_plan
