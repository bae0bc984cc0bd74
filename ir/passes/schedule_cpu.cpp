/// \file
/// The CPU loop nests of the scheduler (schedule.h): which loop is vectorized, which runs in
/// parallel, a single long loop split into parallel blocks of vectors, and long serial float
/// sums blocked. Apart from schedule.cpp, which builds the statements and orders the dims.
#include <algorithm>
#include <functional>
#include <optional>

#include "ir/passes/schedule_internal.h"

namespace inductor_cpp::ir::schedule_detail {
namespace {

/// Whether the vector loop is the innermost outer loop rather than the innermost inner one:
/// the loop some memory access is contiguous in (loads and stores; an index value or a mask
/// costs the same along either loop). Counting index values too, batch norm's backward after
/// max_pool2d's (the argmax compared with index(y1·56 + y2)) was vectorized along its strided
/// reduction loop (channels-last, each lane a gather): 124 ms a call in a resnet18 training
/// step, dev machine, 2 threads.
bool vectorizes_outer_loop(const std::vector<std::vector<Stmt>>& segment_bodies,
                           const std::vector<LoopDim>& outer, const std::vector<LoopDim>& inner) {
  std::vector<Expr> accesses;
  std::function<void(const std::vector<Stmt>&)> collect_accesses =
      [&](const std::vector<Stmt>& stmts) {
        for (const Stmt& s : stmts) {
          if (s.kind == StmtKind::Store || s.kind == StmtKind::Accumulate)
            accesses.push_back(s.index);
          if (s.value) collect_load_offsets(s.value, accesses);
          collect_accesses(s.body);
        }
      };
  for (const auto& seg : segment_bodies) collect_accesses(seg);
  auto contiguous_in = [&](const std::string& var) {
    for (const Expr& e : accesses) {
      if (coefficient_of(e, var) == std::optional<int64_t>(1)) return true;
    }
    return false;
  };
  // Accesses that a vector loop over `var` would gather: neither contiguous (1) nor invariant
  // (0, a broadcast) in it.
  auto gathers_in = [&](const std::string& var) {
    return std::count_if(accesses.begin(), accesses.end(), [&](const Expr& e) {
      const auto c = coefficient_of(e, var);
      return c != std::optional<int64_t>(0) && c != std::optional<int64_t>(1);
    });
  };
  // The outer loop when only it has contiguous accesses, or when both have some and it gathers
  // fewer: layer norm's weight gradient (a column sum over tokens of dy · (x - mean) · rstd,
  // mean and rstd per token) read mean and rstd contiguously along the tokens, so it was
  // vectorized along them, dy and x gathered a row apart per lane: 2.3x eager's backward.
  const bool has_inner = !inner.empty();
  return !has_inner || (!outer.empty() && contiguous_in(outer.back().var) &&
                        (!contiguous_in(inner.back().var) ||
                         gathers_in(outer.back().var) < gathers_in(inner.back().var)));
}

}  // namespace

std::vector<Stmt> cpu_loop_nest(std::vector<std::vector<Stmt>> segment_bodies,
                                const std::vector<LoopDim>& outer,
                                const std::vector<LoopDim>& inner, const ScheduleOptions& options,
                                const RangeMap& ranges) {
  const bool vectorize_outer = vectorizes_outer_loop(segment_bodies, outer, inner);
  // Inner loops replace the "@inner" placeholders; the outer nest wraps everything.
  std::vector<Stmt> body;
  for (auto& seg : segment_bodies) {
    for (Stmt& s : seg) {
      if (s.kind == StmtKind::For && s.var == "@inner") {
        std::vector<Stmt> loops = nest(inner, std::move(s.body));
        if (!vectorize_outer && !inner.empty())
          innermost_loop(loops)->vector_width = options.vector_width;
        body.insert(body.end(), loops.begin(), loops.end());
        continue;
      }
      body.push_back(std::move(s));
    }
  }
  int64_t work = 1;
  for (const LoopDim& d : outer) work *= d.extent.is_const() ? d.extent.value() : 1024;
  for (const LoopDim& d : inner) work *= d.extent.is_const() ? d.extent.value() : 1024;
  const bool parallel = work >= options.parallel_min_work && !outer.empty();
  std::vector<Stmt> kernel_body;
  // Outer-strategy reductions (sum(0)) over data past the L2 cache: each lane's accumulator
  // waits on its own previous add and each row step reads one cache line, so one vector of
  // columns per step is latency-bound. Four vectors side by side (one 4x wide vector loop)
  // overlap four add chains and read 256 contiguous bytes per row (unroll-and-jam across
  // columns): 4096x1024 sum(0) 1.23 -> 0.55 ms on 2 threads. Not for cache-resident inputs:
  // GCC keeps a 4-register vector on the stack, which costs more than it saves there
  // (256x1024: 26 -> 43 us).
  const bool outer_reduction = vectorize_outer && !inner.empty() && work >= (int64_t{1} << 21);
  const int lanes = outer_reduction ? 4 * options.vector_width : options.vector_width;
  if (outer.size() == 1 && vectorize_outer && parallel && outer[0].extent.is_const() &&
      outer[0].extent.value() > 2 * lanes) {
    // One loop both parallel and vectorized: parallel blocks, each a vector loop (the last
    // block shorter). Blocks are whole vectors, at least 16 of them when the loop allows.
    const LoopDim d = outer[0];
    const std::string blk = d.var + "_blk", in = d.var + "_in";
    const int64_t n = d.extent.value();
    const int64_t per_block = ((n + 15) / 16 + lanes - 1) / lanes * lanes;
    const int64_t b = std::min(options.block, per_block);
    substitute_all(body, {{d.var, Expr::var(blk) * b + Expr::var(in)}}, ranges);
    RangeMap r = ranges;
    r[blk] = {0, (n + b - 1) / b - 1};
    const Expr tail = simplify(min(Expr(b), Expr(n) - Expr::var(blk) * b), r);
    Stmt inner_loop = Stmt::loop(in, tail, std::move(body));
    inner_loop.vector_width = lanes;
    Stmt outer_loop = Stmt::loop(blk, Expr((n + b - 1) / b), {std::move(inner_loop)});
    outer_loop.parallel = true;
    kernel_body.push_back(std::move(outer_loop));
  } else {
    kernel_body = nest(outer, std::move(body));
    if (!outer.empty()) {
      Stmt* vector_loop = vectorize_outer ? loop_at_depth(kernel_body, outer.size()) : nullptr;
      if (vector_loop) {
        const bool wide = vector_loop->extent.is_const() && vector_loop->extent.value() >= lanes;
        vector_loop->vector_width = wide ? lanes : options.vector_width;
      }
      // A loop both parallel and vector only when it is short (no split above).
      if (parallel && (outer.size() > 1 || !vector_loop)) kernel_body.front().parallel = true;
    }
  }
  int partial_counter = 0;
  block_long_float_sums(kernel_body, ranges, 64, partial_counter);
  return kernel_body;
}

}  // namespace inductor_cpp::ir::schedule_detail
