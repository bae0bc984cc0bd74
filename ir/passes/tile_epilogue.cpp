/// \file
/// Rescheduling a matrix step's pointwise consumer over one output tile (tile_epilogue.h).
#include "ir/passes/tile_epilogue.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <set>

#include "ir/passes/plan_memory.h"
#include "ir/passes/schedule.h"

namespace inductor_cpp::ir {

namespace {

std::optional<TileEpilogue> fail(std::string* why_not, const std::string& why) {
  if (why_not) *why_not = why;
  return std::nullopt;
}

/// Static values of `exprs`, or nothing when one is symbolic.
std::optional<std::vector<int64_t>> constants(const std::vector<Expr>& exprs) {
  std::vector<int64_t> out;
  for (const Expr& e : exprs) {
    if (!e.is_const()) return std::nullopt;
    out.push_back(e.value());
  }
  return out;
}

/// The dims of size > 1 ordered by decreasing stride: the order in which a dense layout nests
/// them (size-1 dims are always indexed 0).
std::vector<size_t> memory_order(const std::vector<int64_t>& sizes,
                                 const std::vector<int64_t>& strides) {
  std::vector<size_t> order;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] != 1) order.push_back(d);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return strides[a] > strides[b]; });
  return order;
}

/// Counts Store statements and parallel loops, and moves each store by `offset` (the
/// scheduler lays out a computed buffer from offset 0; the window starts at the tile).
void place_stores(std::vector<Stmt>& body, const Expr& offset, int& stores, bool& parallel) {
  for (Stmt& s : body) {
    if (s.kind == StmtKind::Store) {
      ++stores;
      s.index = simplify(s.index + offset);
    }
    if (s.kind == StmtKind::For) {
      parallel = parallel || s.parallel;
      place_stores(s.body, offset, stores, parallel);
    }
  }
}

/// True when `v` computes a transcendental function (exp, log, trigonometric, hyperbolic,
/// erf, sigmoid, pow, ...): measured slower as a tile kernel than as a kernel of its own
/// (docs/matrix/in_graphs.md "Tile epilogues").
bool transcendental(const Value& v, std::set<const ValueNode*>& seen) {
  if (!seen.insert(v.node()).second) return false;
  if (v->kind == ValueKind::Unary) {
    // Cheap: what needs no floating operand (sign, rounding, tests) and the square roots.
    const UnaryOp op = v->unary_op();
    if (unary_needs_floating(op) && op != UnaryOp::reciprocal && op != UnaryOp::sqrt &&
        op != UnaryOp::rsqrt)
      return true;
  }
  if (v->kind == ValueKind::Binary &&
      (v->binary_op() == BinaryOp::pow || v->binary_op() == BinaryOp::atan2 ||
       v->binary_op() == BinaryOp::hypot))
    return true;
  for (const Value& o : v->operands) {
    if (transcendental(o, seen)) return true;
  }
  return false;
}

}  // namespace

std::optional<TileEpilogue> tile_epilogue_kernel(const LoopProgram& program,
                                                 const TileEpilogueRequest& request,
                                                 std::string* why_not) {
  if (request.step >= program.steps.size() ||
      program.steps[request.step].kind != Step::Kind::Kernel)
    return fail(why_not, "not a kernel step");
  const KernelGroup& group = program.steps[request.step].kernel;
  if (group.computes.size() != 1) return fail(why_not, "a kernel of several computes");
  const Compute& consumer = program.computes.at(group.computes[0]);
  if (consumer.is_reduction() || consumer.view) return fail(why_not, "not a pointwise compute");
  std::set<const ValueNode*> seen;
  if (transcendental(consumer.body, seen))
    return fail(why_not, "the consumer computes a transcendental function");
  const Buffer& out = program.buffer(consumer.name);
  if (out.dtype != DType::Float32 || out.device != "cpu")
    return fail(why_not, "output is not float32 on the CPU");
  const auto sizes = constants(out.sizes), strides = constants(out.strides);
  if (!sizes || !strides || sizes->empty() || !out.offset.is_const() || out.offset.value() != 0)
    return fail(why_not, "output layout is symbolic or offset");
  const auto ranges = constants(consumer.ranges);
  if (!ranges || *ranges != *sizes) return fail(why_not, "compute ranges differ from its buffer");
  // The dims in memory order, outermost first (row-major: 0, 1, ..; channels-last NCHW: 0, 2,
  // 3, 1): the output must be dense in that order, its innermost dim the matrix's columns
  // (unless there is one column).
  const std::vector<size_t> order = memory_order(*sizes, *strides);
  int64_t expected = 1;
  for (size_t o = order.size(); o-- > 0;) {
    if ((*strides)[order[o]] != expected) return fail(why_not, "output is not dense");
    expected *= (*sizes)[order[o]];
  }
  const bool column_dim = request.cols > 1;
  if (expected != request.rows * request.cols ||
      (column_dim && (order.empty() || (*sizes)[order.back()] != request.cols)))
    return fail(why_not, "output is not the matrix output's rows x cols");

  // The consumer's point (i0, .., i{k-1}) of tile element (i0', i1'): the innermost dim is the
  // column col0 + i1', the others split the row row0 + i0' in memory order; size-1 dims are 0.
  const Expr row0 = Expr::var(kTileSymbols[0]), rows = Expr::var(kTileSymbols[1]);
  const Expr col0 = Expr::var(kTileSymbols[2]), cols = Expr::var(kTileSymbols[3]);
  std::map<std::string, Expr> point;
  for (size_t d = 0; d < sizes->size(); ++d) point[range_var(d)] = Expr(0);
  if (column_dim) point[range_var(order.back())] = col0 + Expr::var(range_var(1));
  const Expr row = row0 + Expr::var(range_var(0));
  int64_t inner = 1;  // product of the sizes of the row dims inside the current one
  for (size_t o = order.size() - (column_dim ? 1 : 0); o-- > 0;) {
    const size_t d = order[o];
    const Expr quotient = inner == 1 ? row : floordiv(row, Expr(inner));
    point[range_var(d)] = o == 0 ? quotient : mod(quotient, Expr((*sizes)[d]));
    inner *= (*sizes)[d];
  }

  LoopProgram window = program;
  Compute tile = consumer;
  tile.ranges = {rows, cols};
  tile.body = map_indices(consumer.body, [&](const Expr& e) { return substitute(e, point); });
  window.computes[consumer.name] = tile;
  for (Buffer& b : window.buffers) {
    if (b.name != consumer.name) continue;
    b.sizes = {rows, cols};
    b.strides = {Expr(request.cols), Expr(1)};
  }
  window.steps = {program.steps[request.step]};
  window.outputs = {consumer.name};
  window.symbol_ranges[kTileSymbols[0]] = {0, request.rows - 1};
  window.symbol_ranges[kTileSymbols[1]] = {1, request.rows};
  window.symbol_ranges[kTileSymbols[2]] = {0, request.cols - 1};
  window.symbol_ranges[kTileSymbols[3]] = {1, request.cols};

  ScheduleOptions options;
  options.parallel_min_work = std::numeric_limits<int64_t>::max();  // the caller's threads
  ScheduledProgram scheduled = schedule(window, options);
  if (scheduled.steps.size() != 1 || scheduled.steps[0].kind != ScheduledStep::Kind::Kernel)
    return fail(why_not, "scheduling gave no single kernel");
  TileEpilogue result;
  result.kernel = std::move(scheduled.steps[0].kernel);
  result.kernel.name = request.name;
  result.written = consumer.name;
  int stores = 0;
  bool parallel = false;
  place_stores(result.kernel.body, row0 * Expr(request.cols) + col0, stores, parallel);
  if (stores != 1 || parallel) return fail(why_not, "the tile kernel stores more than once");
  for (const std::string& s : result.kernel.symbols) {
    if (!window.symbol_ranges.count(s) ||
        !std::count(std::begin(kTileSymbols), std::end(kTileSymbols), s))
      return fail(why_not, "the consumer has symbolic sizes");
  }
  result.kernel.symbols.assign(std::begin(kTileSymbols), std::end(kTileSymbols));
  bool reads_output = false, writes_output = false;
  for (const KernelParam& p : result.kernel.params) {
    reads_output = reads_output || (p.buffer == request.matrix_output && !p.written);
    writes_output = writes_output || (p.buffer == consumer.name && p.written);
  }
  if (!reads_output || !writes_output)
    return fail(why_not, "the consumer does not read the matrix output");
  if (!reads_only_where_written(result.kernel, request.matrix_output, consumer.name,
                                window.symbol_ranges))
    return fail(why_not, "the consumer reads the matrix output outside the element it writes");
  return result;
}

}  // namespace inductor_cpp::ir
