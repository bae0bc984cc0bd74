/// \file
/// A matrix step's consumer kernel run per output tile (plan_tile_epilogue.h).
#include "inductor/plan_tile_epilogue.h"

#include "inductor/lower/lower_graph.h"
#include "ir/passes/tile_epilogue.h"

namespace inductor_cpp::inductor::matrix_plan {

namespace {

std::optional<std::vector<int64_t>> constants(const std::vector<ir::Expr>& exprs) {
  std::vector<int64_t> out;
  for (const ir::Expr& e : exprs) {
    if (!e.is_const()) return std::nullopt;
    out.push_back(e.value());
  }
  return out;
}

}  // namespace

std::optional<TileAbsorbed> tile_absorbable(
    const ir::Graph& g, const ir::LoopProgram& fused, const ir::ScheduledProgram& program,
    size_t index, int64_t producer, int64_t rows, int64_t cols,
    const std::set<std::string>& into_inputs,
    const std::function<int32_t(const std::string&)>& slot_of_buffer) {
  const std::string out = buffer_name_of(ir::Arg::value(producer, 0));
  const auto reader = sole_reader_kernel(g, program, index, producer);
  if (!reader || *reader >= fused.steps.size()) return std::nullopt;
  const ir::ScheduledStep& consumer = program.steps[*reader];
  if (into_inputs.count(consumer.writes[0])) return std::nullopt;
  auto tile = ir::tile_epilogue_kernel(fused, {*reader, out, rows, cols, consumer.kernel.name + "_tile"});
  if (!tile || tile->written != consumer.writes[0]) return std::nullopt;

  runtime::MatmulEpilogue op;
  op.kind = "kernel";
  op.kernel = tile->kernel.name;
  const ir::Buffer& written = program.buffer(tile->written);
  const auto sizes = constants(written.sizes), strides = constants(written.strides);
  if (!sizes || !strides) return std::nullopt;
  for (const ir::KernelParam& p : tile->kernel.params) {
    const bool output = p.buffer == out || p.buffer == tile->written;
    if (!output && !ready_before(program, p.buffer, index)) return std::nullopt;
    const ir::Buffer& b = program.buffer(output ? tile->written : p.buffer);
    const auto b_sizes = constants(b.sizes), b_strides = constants(b.strides);
    if (!b_sizes || !b_strides) return std::nullopt;
    op.params.push_back(slot_of_buffer(output ? tile->written : p.buffer));
    op.layouts.push_back({*b_sizes, *b_strides});
  }
  TileAbsorbed result;
  result.absorbed.step = *reader;
  result.absorbed.ops = {op};
  result.absorbed.written = tile->written;
  result.absorbed.sizes = *sizes;
  result.absorbed.strides = *strides;
  result.absorbed.nodes = consumer.graph_nodes;
  result.kernel = std::move(tile->kernel);
  return result;
}

}  // namespace inductor_cpp::inductor::matrix_plan
