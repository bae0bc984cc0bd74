/// \file
/// Statement-tree tools of the scheduler (schedule_internal.h): substituting and collecting
/// index expressions, wrapping statements in loop nests, and splitting long serial float sums
/// into blocks. Kept apart from schedule.cpp, which decides what the nests are.
#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "ir/passes/schedule_internal.h"

namespace inductor_cpp::ir::schedule_detail {

void substitute_all(std::vector<Stmt>& stmts, const std::map<std::string, Expr>& subst,
                    const RangeMap& ranges) {
  auto fix = [&](const Expr& e) { return simplify(substitute(e, subst), ranges); };
  for (Stmt& s : stmts) {
    s.extent = fix(s.extent);
    s.index = fix(s.index);
    if (s.value) s.value = map_indices(s.value, fix);
    substitute_all(s.body, subst, ranges);
  }
}

void collect_stmt_exprs(const std::vector<Stmt>& stmts, std::vector<Expr>& out) {
  for (const Stmt& s : stmts) {
    if (s.kind == StmtKind::Store) out.push_back(s.index);
    if (s.kind == StmtKind::Accumulate) out.push_back(s.index);
    if (s.value) collect_index_exprs(s.value, out);
    collect_stmt_exprs(s.body, out);
  }
}

std::vector<Stmt> nest(const std::vector<LoopDim>& dims, std::vector<Stmt> body) {
  for (auto it = dims.rbegin(); it != dims.rend(); ++it)
    body = {Stmt::loop(it->var, it->extent, std::move(body))};
  return body;
}

Stmt* loop_at_depth(std::vector<Stmt>& nest_stmts, size_t depth) {
  Stmt* loop = &nest_stmts.front();
  for (size_t d = 1; d < depth; ++d) loop = &loop->body.front();
  return loop;
}

Stmt* innermost_loop(std::vector<Stmt>& nest_stmts) {
  Stmt* loop = nullptr;
  std::vector<Stmt>* level = &nest_stmts;
  while (level->size() == 1 && level->front().kind == StmtKind::For) {
    loop = &level->front();
    level = &loop->body;
  }
  return loop;
}

namespace {

bool serial_constant_loop(const Stmt& s) {
  return s.kind == StmtKind::For && s.vector_width == 0 && !s.parallel && s.extent.is_const();
}

/// Iterations of the serial loops nested alone in `body` (a batch norm's sum over N, then H,
/// then W: 16 x 16 below N), 1 where the body is not one such loop; at least 1 (an empty
/// tensor's loops run 0 times: no blocks to size).
int64_t nested_iterations(const std::vector<Stmt>& body) {
  if (body.size() != 1 || !serial_constant_loop(body.front())) return 1;
  return std::max<int64_t>(1, body.front().extent.value() * nested_iterations(body.front().body));
}

}  // namespace

void block_long_float_sums(std::vector<Stmt>& stmts, const RangeMap& ranges, int64_t block_elements,
                           int& counter) {
  std::set<std::string> sums;  // float sum accumulators defined at this level or above
  std::function<void(std::vector<Stmt>&, std::set<std::string>)> visit =
      [&](std::vector<Stmt>& level, std::set<std::string> outer_sums) {
        for (Stmt& s : level) {
          if (s.kind == StmtKind::DefineAccumulator && s.reduce_op == ReduceOp::sum &&
              is_floating(s.dtype)) {
            outer_sums.insert(s.name);
          }
          if (s.kind != StmtKind::For) continue;
          // Which outer sums does this loop accumulate into?
          std::map<std::string, DType> accumulated;
          std::function<void(const std::vector<Stmt>&)> scan = [&](const std::vector<Stmt>& body) {
            for (const Stmt& b : body) {
              if (b.kind == StmtKind::Accumulate && outer_sums.count(b.name))
                accumulated[b.name] = b.value->dtype;
              scan(b.body);
            }
          };
          scan(s.body);
          // Long counts the loops nested in it: an NHWC batch norm's weight gradient sums
          // 8 x 16 x 16 values through three short loops, as one running sum (10x eager's
          // float32 error). A block is then `block_elements` of the nest's values: whole
          // iterations of this loop, at least one (the nested loops are blocked in turn).
          const int64_t nested = serial_constant_loop(s) ? nested_iterations(s.body) : 1;
          const int64_t block = std::max<int64_t>(1, block_elements / nested);
          const bool long_serial = serial_constant_loop(s) &&
                                   s.extent.value() * nested > 2 * block_elements &&
                                   s.extent.value() > block;
          if (accumulated.empty() || !long_serial) {
            visit(s.body, outer_sums);
            continue;
          }
          const int64_t n = s.extent.value();
          const std::string blk = s.var + "_blk", in = s.var + "_in";
          std::map<std::string, std::string> partial;
          for (const auto& [acc, dtype] : accumulated)
            partial[acc] = acc + "_p" + std::to_string(counter++);
          std::vector<Stmt> inner = std::move(s.body);
          substitute_all(inner, {{s.var, Expr::var(blk) * block + Expr::var(in)}}, ranges);
          std::function<void(std::vector<Stmt>&)> rename = [&](std::vector<Stmt>& body) {
            for (Stmt& b : body) {
              if (b.kind == StmtKind::Accumulate && partial.count(b.name)) b.name = partial[b.name];
              rename(b.body);
            }
          };
          rename(inner);
          RangeMap r = ranges;
          r[blk] = {0, (n + block - 1) / block - 1};
          std::vector<Stmt> block_body;
          for (const auto& [acc, dtype] : accumulated)
            block_body.push_back(Stmt::define_accumulator(partial[acc], ReduceOp::sum, dtype));
          block_body.push_back(
              Stmt::loop(in, simplify(min(Expr(block), Expr(n) - Expr::var(blk) * block), r),
                         std::move(inner)));
          for (const auto& [acc, dtype] : accumulated)
            block_body.push_back(Stmt::accumulate(acc, local(partial[acc], dtype)));
          s = Stmt::loop(blk, Expr((n + block - 1) / block), std::move(block_body));
          // The block loop is itself a serial sum: split it again while it is long, so the
          // error grows with the logarithm of the length (a pairwise-like tree of 64-blocks).
          std::vector<Stmt> again{std::move(s)};
          visit(again, outer_sums);
          s = std::move(again.front());
        }
      };
  visit(stmts, sums);
}

}  // namespace inductor_cpp::ir::schedule_detail
