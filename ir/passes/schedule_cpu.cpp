/// \file
/// The CPU loop nests of the scheduler (schedule.h): which loop is vectorized, which runs in
/// parallel, a single long loop split into parallel blocks of vectors, and long serial float
/// sums blocked. Apart from schedule.cpp, which builds the statements and orders the dims.
#include <algorithm>
#include <functional>
#include <optional>
#include <set>

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

/// Pointwise kernels whose accesses disagree on the fastest dim (`x.t() + y`, NCHW <-> NHWC):
/// along the vector loop's dim `v` some access is contiguous and another gathers, contiguous
/// in another dim `u`. Untiled, each vector of the gathered access reads one element from each
/// of 16 rows a page apart and comes back to those lines only a whole row later (TLB and L1
/// misses per element: `x.t() + y` at 1024^2 ran at 3.9 GB/s on 2 threads, stock 27). Tiled,
/// u and v split into blocks of T: [u blocks (parallel), the other dims, v blocks, u in the
/// tile, v in the tile (vector)]; a tile reads T rows of T elements, all in L1.
std::optional<std::vector<Stmt>> transpose_tiles(std::vector<Stmt>& body,
                                                 const std::vector<LoopDim>& outer,
                                                 const ScheduleOptions& options,
                                                 const RangeMap& ranges) {
  const int64_t t = options.transpose_tile;
  if (t <= 1 || outer.size() < 2) return std::nullopt;
  LoopDim v = outer.back();
  std::vector<Expr> accesses;
  collect_stmt_exprs(body, accesses);
  bool contiguous = false;
  std::optional<LoopDim> u;
  for (const Expr& e : accesses) {
    const auto c = coefficient_of(e, v.var);
    if (c == std::optional<int64_t>(1)) contiguous = true;
    if (!c || *c == 0 || *c == 1 || u) continue;
    for (size_t i = 0; i + 1 < outer.size(); ++i) {
      if (coefficient_of(e, outer[i].var) == std::optional<int64_t>(1)) u = outer[i];
    }
  }
  if (!contiguous || !u || !u->extent.is_const() || !v.extent.is_const() ||
      u->extent.value() < 2 * t || v.extent.value() < t)
    return std::nullopt;
  // When the store is the access that gathers along v (a copy into another layout: loads
  // contiguous along v, the store along u), u becomes the vector dim instead: the store is then
  // contiguous and consecutive tiles write along its rows, and the loads are the tile's
  // transposed reads (codegen/cpu/transposed_tiles.cpp). 2 threads, x.t().contiguous() at
  // 4096 x 1024: 8.2 ms (a scatter per vector) -> 1.23 (tile writes) -> 0.91 (this; stock 0.90);
  // x.permute(2, 0, 1) of 16 x 512 x 512: 8.4 -> 2.3 -> 0.68 (stock 0.68).
  bool store_gathers = false;
  for (const Stmt& s : body) {
    const auto c = s.kind == StmtKind::Store ? coefficient_of(s.index, v.var) : std::nullopt;
    if (c && *c != 0 && *c != 1 && coefficient_of(s.index, u->var) == std::optional<int64_t>(1))
      store_gathers = true;
  }
  if (store_gathers && u->extent.value() >= t && v.extent.value() >= 2 * t) std::swap(v, *u);
  const std::string ub = u->var + "_tb", ui = u->var + "_ti", vb = v.var + "_tb", vi = v.var + "_ti";
  const int64_t nu = u->extent.value(), nv = v.extent.value();
  const int64_t u_tiles = (nu + t - 1) / t, v_tiles = (nv + t - 1) / t;
  // Short rows along v (a few tiles: NCHW -> NHWC with 64 channels) and long ones along u:
  // consecutive tiles walk along u, in chunks of kUChunk tiles (the parallel loop), so the
  // transposed side streams along its rows instead of jumping a row block every few tiles.
  // (8, 64, 64, 128) to channels-last, 2 threads: 0.71-0.92 -> 0.55-0.81 ms, 0.73-0.82x ->
  // 0.91-0.98x stock (bench movement, run-to-run spread).
  constexpr int64_t kUChunk = 16;
  const bool walk_u = v_tiles <= 8 && u_tiles >= 4 * kUChunk;
  const std::string uc = u->var + "_tc";
  const Expr u_tile = walk_u ? Expr::var(uc) * kUChunk + Expr::var(ub) : Expr::var(ub);
  substitute_all(body, {{u->var, u_tile * t + Expr::var(ui)},
                        {v.var, Expr::var(vb) * t + Expr::var(vi)}}, ranges);
  RangeMap r = ranges;
  r[uc] = {0, (u_tiles + kUChunk - 1) / kUChunk - 1};
  r[ub] = {0, (walk_u ? kUChunk : u_tiles) - 1};
  r[vb] = {0, v_tiles - 1};
  Stmt v_in = Stmt::loop(vi, simplify(min(Expr(t), Expr(nv) - Expr::var(vb) * t), r), std::move(body));
  v_in.vector_width = options.vector_width;
  Stmt u_in = Stmt::loop(ui, simplify(min(Expr(t), Expr(nu) - u_tile * t), r), {std::move(v_in)});
  std::vector<LoopDim> others;
  for (const LoopDim& d : outer) {
    if (d.var != u->var && d.var != v.var) others.push_back(d);
  }
  if (walk_u) {
    Stmt u_blocks = Stmt::loop(ub, simplify(min(Expr(kUChunk), Expr(u_tiles) - Expr::var(uc) * kUChunk), r),
                               {std::move(u_in)});
    Stmt v_blocks = Stmt::loop(vb, Expr(v_tiles), {std::move(u_blocks)});
    Stmt chunks = Stmt::loop(uc, Expr((u_tiles + kUChunk - 1) / kUChunk), nest(others, {std::move(v_blocks)}));
    chunks.parallel = true;
    return std::vector<Stmt>{std::move(chunks)};
  }
  Stmt v_blocks = Stmt::loop(vb, Expr(v_tiles), {std::move(u_in)});
  Stmt u_blocks = Stmt::loop(ub, Expr(u_tiles), nest(others, {std::move(v_blocks)}));
  u_blocks.parallel = true;
  return std::vector<Stmt>{std::move(u_blocks)};
}

/// Where the innermost pointwise loop over `loop.var` changes the value of a comparison its
/// masks and index values make with a constant (`x1 < 64`, `64 <= x1`), or a modulo / floor
/// division of it by a constant wraps: the cut points inside (0, extent), sorted. Comparisons
/// that involve other variables give none.
std::vector<int64_t> mask_cut_points(const Stmt& loop) {
  std::vector<Expr> exprs;
  collect_stmt_exprs(loop.body, exprs);
  std::set<int64_t> cuts;
  const int64_t n = loop.extent.value();
  std::function<void(const Expr&)> walk = [&](const Expr& e) {
    if (e.kind() == ExprKind::Lt || e.kind() == ExprKind::Le) {
      const Expr d = e.lhs() - e.rhs();
      const auto coef = coefficient_of(d, loop.var);
      const Expr rest = simplify(substitute(d, {{loop.var, Expr(0)}}), {});
      if ((coef == std::optional<int64_t>(1) || coef == std::optional<int64_t>(-1)) && rest.is_const()) {
        // coef·v + c < 0 (Lt) or <= 0 (Le): the first v on the other side.
        const int64_t c = rest.value();
        const bool lt = e.kind() == ExprKind::Lt;
        const int64_t cut = *coef == 1 ? (lt ? -c : -c + 1) : (lt ? c + 1 : c);
        if (cut > 0 && cut < n) cuts.insert(cut);
      }
    }
    if ((e.kind() == ExprKind::Mod || e.kind() == ExprKind::FloorDiv) && e.rhs().is_const() &&
        e.rhs().value() > 1 && coefficient_of(e.lhs(), loop.var) == std::optional<int64_t>(1)) {
      // (v + c) % m and (v + c) // m: affine between the v where v + c crosses a multiple of
      // m (x.repeat(1, 4): x1 % 1024 over 4096 columns, 4 contiguous ranges).
      const Expr rest = simplify(substitute(e.lhs(), {{loop.var, Expr(0)}}), {});
      const int64_t m = e.rhs().value();
      if (rest.is_const() && n / m < 64) {
        for (int64_t cut = ((-rest.value()) % m + m) % m; cut < n; cut += m) {
          if (cut > 0) cuts.insert(cut);
        }
      }
    }
    if (e.kind() != ExprKind::Const && e.kind() != ExprKind::Var) {
      walk(e.lhs());
      walk(e.rhs());
    }
  };
  for (const Expr& e : exprs) walk(e);
  return {cuts.begin(), cuts.end()};
}

/// The value of an integer or boolean constant, or of an index value whose expression folded
/// to a constant.
std::optional<int64_t> constant_of(const Value& v) {
  if (v->kind == ValueKind::Constant && !is_floating(v->dtype)) return v->int_value;
  if (v->kind == ValueKind::IndexValue && v->index.at(0).is_const()) return v->index[0].value();
  return std::nullopt;
}

/// Whether a where's condition is a constant (`ne(index(1, int64), 0:int64)` once a range has
/// fixed its comparison), and which.
std::optional<bool> constant_truth(const Value& cond) {
  if (auto c = constant_of(cond)) return *c != 0;
  if (cond->kind != ValueKind::Binary) return std::nullopt;
  const auto a = constant_of(cond->operands[0]), b = constant_of(cond->operands[1]);
  if (!a || !b) return std::nullopt;
  if (cond->binary_op() == BinaryOp::ne) return *a != *b;
  if (cond->binary_op() == BinaryOp::eq) return *a == *b;
  return std::nullopt;
}

/// `v` with every where whose condition is constant replaced by the branch it takes.
Value fold_constant_selects(Value v) {
  for (;;) {
    std::optional<std::pair<Value, Value>> fold;
    std::set<const ValueNode*> seen;
    std::function<void(const Value&)> find = [&](const Value& x) {
      if (fold || !seen.insert(x.node()).second) return;
      if (x->kind == ValueKind::Where) {
        if (auto truth = constant_truth(x->operands[0])) {
          fold = std::make_pair(x, x->operands[*truth ? 1 : 2]);
          return;
        }
      }
      for (const Value& o : x->operands) find(o);
    };
    find(v);
    if (!fold) return v;
    v = replace_value(v, fold->first, fold->second);
  }
}

void fold_constant_selects(std::vector<Stmt>& stmts) {
  for (Stmt& s : stmts) {
    if (s.value) s.value = fold_constant_selects(s.value);
    fold_constant_selects(s.body);
  }
}

/// Innermost pointwise loops whose masks switch at constant points (a concatenation: each
/// lane of `where(x1 < 64, load(a), where(x1 < 96, load(b), ...))` evaluated every masked
/// load; densenet121's cat + batch norm + ReLU kernels ran at 1-2 GB/s) become one loop per
/// range between the points, each with its masks folded to constants: one plain load per
/// range, the other branches folded away. At most 64 ranges (densenet121's last dense block
/// concatenates 25 inputs).
void split_at_mask_points(std::vector<Stmt>& stmts, const RangeMap& ranges) {
  for (size_t i = 0; i < stmts.size(); ++i) {
    Stmt& s = stmts[i];
    if (s.kind != StmtKind::For) continue;
    const bool innermost = std::none_of(s.body.begin(), s.body.end(), [](const Stmt& b) {
      return b.kind == StmtKind::For || b.kind == StmtKind::Accumulate ||
             b.kind == StmtKind::DefineAccumulator;
    });
    if (!innermost) {
      split_at_mask_points(s.body, ranges);
      continue;
    }
    if (!s.extent.is_const() || s.parallel) continue;
    const std::vector<int64_t> cuts = mask_cut_points(s);
    if (cuts.empty() || cuts.size() >= 64) continue;
    std::vector<Stmt> pieces;
    int64_t lo = 0;
    for (size_t k = 0; k <= cuts.size(); ++k) {
      const int64_t hi = k < cuts.size() ? cuts[k] : s.extent.value();
      Stmt piece = s;
      piece.extent = Expr(hi - lo);
      RangeMap r = ranges;
      r[s.var] = {0, hi - lo - 1};
      substitute_all(piece.body, {{s.var, Expr::var(s.var) + lo}}, r);
      fold_constant_selects(piece.body);
      pieces.push_back(std::move(piece));
      lo = hi;
    }
    stmts.erase(stmts.begin() + static_cast<std::ptrdiff_t>(i));
    stmts.insert(stmts.begin() + static_cast<std::ptrdiff_t>(i), pieces.begin(), pieces.end());
    i += pieces.size() - 1;
  }
}

}  // namespace

void fold_selects_decided_by_constants(std::vector<Stmt>& stmts) {
  fold_constant_selects(stmts);
}

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
  if (inner.empty() && parallel) {
    if (auto tiled = transpose_tiles(body, outer, options, ranges)) return std::move(*tiled);
  }
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
  split_at_mask_points(kernel_body, ranges);
  return kernel_body;
}

}  // namespace inductor_cpp::ir::schedule_detail
