/// \file
/// The CPU nest of a scan (a cumulative sum / product / max / min along one dim): one running
/// accumulator per line, updated and stored at each position of a serial loop along the scan.
///
/// The loop-level IR writes a scan as a reduction whose body masks itself to r0 <= i_k (so
/// every other pass may treat it as one); run as written, each output point would sum its
/// whole prefix again (quadratic). schedule.cpp instead hands the scan's line (its accumulator
/// definition and the serial loop that accumulates and stores) here, after substituting the
/// scan position for i_k (the mask folds to true). The line is wrapped in loops over the other
/// dims: the one the output is contiguous along becomes the innermost, vector loop, so a scan
/// down the rows of a row-major matrix (cumsum(0)) runs 16 columns' lines side by side, each
/// step reading and writing whole vectors; the outermost loop runs in parallel.
#include <algorithm>
#include <optional>

#include "ir/passes/schedule_internal.h"

namespace inductor_cpp::ir::schedule_detail {

std::vector<Stmt> scan_loop_nest(std::vector<Stmt> line, const std::vector<LoopDim>& outer,
                                 const Expr& store_index, const ScheduleOptions& options,
                                 const RangeMap& ranges) {
  fold_selects_decided_by_constants(line);
  std::vector<LoopDim> dims;
  std::optional<LoopDim> vector_dim;
  for (const LoopDim& d : outer) {
    if (!vector_dim && coefficient_of(store_index, d.var) == std::optional<int64_t>(1)) {
      vector_dim = d;
    } else {
      dims.push_back(d);
    }
  }
  int64_t work = 1;
  for (const LoopDim& d : outer) work *= d.extent.is_const() ? d.extent.value() : 1024;
  for (const Stmt& s : line) {
    if (s.kind == StmtKind::For) work *= s.extent.is_const() ? s.extent.value() : 1024;
  }
  const bool parallel = work >= options.parallel_min_work;
  if (vector_dim) {
    Stmt lanes = Stmt::loop(vector_dim->var, vector_dim->extent, std::move(line));
    lanes.vector_width = 2 * options.vector_width;  // two registers: a whole line per step
    line = {std::move(lanes)};
    if (dims.empty() && parallel) {
      // The vector dim alone: blocks of 256 lines, the blocks in parallel.
      constexpr int64_t kBlock = 256;
      const std::string blk = vector_dim->var + "_blk", in = vector_dim->var + "_in";
      RangeMap r = ranges;
      r[blk] = {0, extent_hi(vector_dim->extent) / kBlock};
      substitute_all(line, {{vector_dim->var, Expr::var(blk) * kBlock + Expr::var(in)}}, r);
      line[0].var = in;
      line[0].extent = simplify(min(Expr(kBlock), vector_dim->extent - Expr::var(blk) * kBlock), r);
      Stmt blocks = Stmt::loop(blk, simplify(floordiv(vector_dim->extent + Expr(kBlock - 1), Expr(kBlock)), r),
                               std::move(line));
      blocks.parallel = true;
      return {std::move(blocks)};
    }
  }
  std::vector<Stmt> nested = nest(dims, std::move(line));
  if (parallel && !dims.empty()) nested[0].parallel = true;
  return nested;
}

}  // namespace inductor_cpp::ir::schedule_detail
