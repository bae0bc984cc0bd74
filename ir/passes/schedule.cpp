/// \file
/// Kernel groups -> loop-nest kernels (see schedule.h for the decisions and why).
#include "ir/passes/schedule.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>

#include "ir/passes/fuse_kernels.h"
#include "ir/passes/program_queries.h"
#include "ir/passes/schedule_loops.h"
#include "ir/simplify.h"

namespace inductor_cpp::ir {

namespace {

std::string outer_var(size_t k) {
  return "x" + std::to_string(k);
}
std::string inner_var(size_t k) {
  return "y" + std::to_string(k);
}

Expr linear_index(const Buffer& b, const std::vector<Expr>& index) {
  Expr e(0);
  for (size_t k = 0; k < index.size(); ++k) e = e + index[k] * b.strides.at(k);
  return e;
}

/// One kernel group being scheduled.
class GroupScheduler {
 public:
  GroupScheduler(const LoopProgram& p, const KernelGroup& g,
                 const std::set<std::string>& read_outside, const ScheduleOptions& options,
                 std::string name)
      : p_(p), group_(g), options_(options), shape_(group_shape(p, g)), name_(std::move(name)) {
    for (size_t k = 0; k < shape_.outer.size(); ++k)
      ranges_[outer_var(k)] = {0, extent_hi(shape_.outer[k])};
    for (size_t k = 0; k < shape_.inner.size(); ++k)
      ranges_[inner_var(k)] = {0, extent_hi(shape_.inner[k])};
    for (const auto& [s, r] : p.symbol_ranges) ranges_[s] = r;
    members_.insert(g.computes.begin(), g.computes.end());
    plan_segments();
    for (const std::string& m : g.computes) {
      if (read_outside.count(m) || forced_store_.count(m)) stored_.insert(m);
    }
  }

  ScheduledStep run();

 private:
  static int64_t extent_hi(const Expr& e) { return e.is_const() ? e.value() - 1 : INT64_MAX; }
  MemberRole role(const std::string& m) const { return member_role(p_.computes.at(m), shape_); }

  void plan_segments();
  /// The member's body in kernel variables, with group-local reads replaced by locals.
  Value translate(const Compute& c, const std::map<std::string, Value>& locals);
  Expr store_index(const Compute& c);
  void note_buffer(const std::string& b, bool written);
  /// GPU: outer dims into one loop, inner dims into one loop (ranges_ learns the new vars).
  void flatten_for_gpu(std::vector<LoopDim>& outer, std::vector<LoopDim>& inner,
                       std::map<std::string, Expr>& substitutions);
  /// GPU: the loop nest over the segments (see ScheduleOptions / Target::Gpu).
  std::vector<Stmt> gpu_nest(std::vector<std::vector<Stmt>> segment_bodies,
                             const std::vector<LoopDim>& outer, const std::vector<LoopDim>& inner,
                             bool outer_contiguous, bool inner_contiguous, bool outer_reduction);
  /// The step around a finished loop nest: name, params, symbols, graph nodes.
  ScheduledStep finish(std::vector<Stmt> kernel_body);

  const LoopProgram& p_;
  const KernelGroup& group_;
  const ScheduleOptions& options_;
  GroupShape shape_;
  std::string name_;
  RangeMap ranges_;
  std::set<std::string> members_;
  std::vector<std::vector<std::string>> segments_;  ///< inner segments; an Outer member alone
  std::set<std::string> forced_store_;
  std::set<std::string> stored_;
  std::vector<std::string> param_order_;
  std::map<std::string, bool> written_;
};

void GroupScheduler::plan_segments() {
  std::vector<std::string> current;
  std::set<std::string> open_reductions;
  auto close = [&] {
    if (!current.empty()) segments_.push_back(current);
    current.clear();
    open_reductions.clear();
  };
  for (const std::string& m : group_.computes) {
    const std::set<std::string> reads = buffers_read(p_.computes.at(m).body);
    if (role(m) == MemberRole::Outer && !shape_.inner.empty()) {
      close();
      segments_.push_back({m});
      continue;
    }
    for (const std::string& r : reads) {
      if (open_reductions.count(r)) {
        close();
        break;
      }
    }
    current.push_back(m);
    if (role(m) == MemberRole::Reduction) open_reductions.insert(m);
  }
  close();
  // Inner members read from a later segment come back from memory.
  std::map<std::string, size_t> segment_of;
  for (size_t s = 0; s < segments_.size(); ++s) {
    for (const std::string& m : segments_[s]) segment_of[m] = s;
  }
  for (const std::string& m : group_.computes) {
    for (const std::string& r : buffers_read(p_.computes.at(m).body)) {
      if (members_.count(r) && role(r) == MemberRole::Inner && segment_of[r] != segment_of[m]) {
        forced_store_.insert(r);
      }
    }
  }
}

void GroupScheduler::note_buffer(const std::string& b, bool written) {
  if (!written_.count(b)) param_order_.push_back(b);
  written_[b] = written_[b] || written;
}

Value GroupScheduler::translate(const Compute& c, const std::map<std::string, Value>& locals) {
  std::map<std::string, Expr> vars;
  const size_t n_outer = shape_.outer.size();
  for (size_t k = 0; k < c.ranges.size(); ++k) {
    vars[range_var(k)] = Expr::var(k < n_outer ? outer_var(k) : inner_var(k - n_outer));
  }
  for (size_t k = 0; k < c.reduce_ranges.size(); ++k) vars[reduce_var(k)] = Expr::var(inner_var(k));
  Value body =
      map_indices(c.body, [&](const Expr& e) { return simplify(substitute(e, vars), ranges_); });
  return replace_loads(body, [&](const Value& l) -> Value {
    auto local_it = locals.find(l->name);
    if (local_it != locals.end()) return cast(local_it->second, l->dtype);
    const Buffer& b = p_.buffer(l->name);
    note_buffer(l->name, false);
    const Expr offset = simplify(linear_index(b, l->index), ranges_);
    return load(l->name, l->dtype, {offset}, l->mask, l->operands, l->bounds);
  });
}

Expr GroupScheduler::store_index(const Compute& c) {
  std::vector<Expr> idx;
  const size_t n_outer = shape_.outer.size();
  for (size_t k = 0; k < c.ranges.size(); ++k) {
    idx.push_back(Expr::var(k < n_outer ? outer_var(k) : inner_var(k - n_outer)));
  }
  return simplify(linear_index(p_.buffer(c.name), idx), ranges_);
}

/// Applies `subst` to every expression in a statement tree.
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

/// GPU: lanes per thread of a loop over `var`, so that the widest element accessed contiguously
/// in it (coefficient 1) takes `vector_bytes` per chunk (float32: 4 lanes = 128 bits; float16:
/// 8), between 2 and 16 lanes; 0 when no access is contiguous in it.
int gpu_lanes(const std::vector<Stmt>& stmts, const std::string& var, int vector_bytes) {
  int widest = 0;
  auto note = [&](const Expr& index, DType t) {
    if (coefficient_of(index, var) == std::optional<int64_t>(1))
      widest = std::max(widest, dtype_size(t));
  };
  std::function<void(const std::vector<Stmt>&)> walk = [&](const std::vector<Stmt>& level) {
    for (const Stmt& s : level) {
      if (s.kind == StmtKind::Store) note(s.index, s.value->dtype);
      if (s.value) {
        for (const Value& l : loads_in(s.value)) note(l->index.at(0), l->dtype);
      }
      walk(s.body);
    }
  };
  walk(stmts);
  if (widest == 0) return 0;
  return std::clamp(vector_bytes / widest, 2, 16);
}

/// Wraps `body` in loops over `dims` (outer to inner).
std::vector<Stmt> nest(const std::vector<LoopDim>& dims, std::vector<Stmt> body) {
  for (auto it = dims.rbegin(); it != dims.rend(); ++it)
    body = {Stmt::loop(it->var, it->extent, std::move(body))};
  return body;
}

/// The For `depth` levels down a nest built by nest() (depth 1: the outermost).
Stmt* loop_at_depth(std::vector<Stmt>& nest_stmts, size_t depth) {
  Stmt* loop = &nest_stmts.front();
  for (size_t d = 1; d < depth; ++d) loop = &loop->body.front();
  return loop;
}

/// The innermost For of a single-path nest (the one whose body holds the statements).
Stmt* innermost_loop(std::vector<Stmt>& nest_stmts) {
  Stmt* loop = nullptr;
  std::vector<Stmt>* level = &nest_stmts;
  while (level->size() == 1 && level->front().kind == StmtKind::For) {
    loop = &level->front();
    level = &loop->body;
  }
  return loop;
}

/// Float sums accumulated in a long serial loop (the reduction loop of the "outer" strategy:
/// sum(0) runs down 1024 rows per column) lose accuracy as one running sum. Such a loop is
/// split into blocks of `block` iterations, each summed into its own accumulator that is then
/// added to the total, recursively while the block loop is still long: the error grows with
/// the block length times the depth rather than with the row count (vector reduction loops
/// get the same from the emitter).
void block_long_float_sums(std::vector<Stmt>& stmts, const RangeMap& ranges, int64_t block,
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
          const bool long_serial = s.vector_width == 0 && !s.parallel && s.extent.is_const() &&
                                   s.extent.value() > 2 * block;
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

ScheduledStep GroupScheduler::run() {
  // 1. Statements per segment, in kernel variables (x* outer, y* inner), not yet in loops.
  std::map<std::string, Value> locals;
  std::vector<Stmt> outer_body;  // statements run once per outer point
  std::vector<std::vector<Stmt>> segment_bodies;
  int counter = 0;
  for (const std::vector<std::string>& segment : segments_) {
    std::vector<Stmt> before, inside, after;
    std::map<std::string, Value> segment_locals;  // inner members, visible inside this segment
    for (const std::string& m : segment) {
      const Compute& c = p_.computes.at(m);
      std::map<std::string, Value> visible = locals;
      visible.insert(segment_locals.begin(), segment_locals.end());
      Value v = translate(c, visible);
      const Buffer& out = p_.buffer(m);
      const std::string local_name = "t" + std::to_string(counter++);
      if (c.is_reduction()) {
        before.push_back(Stmt::define_accumulator(local_name, c.reduce_op, v->dtype));
        Expr position(0);
        const bool positional = c.reduce_op == ReduceOp::argmax || c.reduce_op == ReduceOp::argmin;
        for (size_t k = 0; positional && k < c.reduce_ranges.size(); ++k) {
          Expr stride(1);
          for (size_t j = k + 1; j < c.reduce_ranges.size(); ++j)
            stride = stride * c.reduce_ranges[j];
          position = position + Expr::var(inner_var(k)) * stride;
        }
        inside.push_back(Stmt::accumulate(local_name, v, simplify(position, ranges_)));
        const Value result = local(local_name, reduce_result_type(c.reduce_op, v->dtype));
        locals[m] = result;
        if (stored_.count(m)) {
          after.push_back(Stmt::store(m, store_index(c), cast(result, out.dtype)));
          note_buffer(m, true);
        }
        continue;
      }
      const bool is_outer = role(m) == MemberRole::Outer;
      std::vector<Stmt>& where_to = is_outer ? after : inside;
      where_to.push_back(Stmt::let(local_name, v));
      const Value value = local(local_name, v->dtype);
      (is_outer ? locals : segment_locals)[m] = value;
      if (stored_.count(m)) {
        where_to.push_back(Stmt::store(m, store_index(c), cast(value, out.dtype)));
        note_buffer(m, true);
      }
    }
    // Segment statements: accumulators, the inner loop body, then per-outer-point results.
    std::vector<Stmt> seg = before;
    if (!inside.empty()) seg.push_back(Stmt::loop("@inner", Expr(0), std::move(inside)));
    seg.insert(seg.end(), after.begin(), after.end());
    segment_bodies.push_back(std::move(seg));
  }
  (void)outer_body;

  // 2. Loop dims: order and merge outer and inner dims over every expression in the kernel.
  std::vector<Expr> exprs;
  for (const auto& seg : segment_bodies) collect_stmt_exprs(seg, exprs);
  std::vector<LoopDim> outer, inner;
  for (size_t k = 0; k < shape_.outer.size(); ++k) outer.push_back({outer_var(k), shape_.outer[k]});
  for (size_t k = 0; k < shape_.inner.size(); ++k) inner.push_back({inner_var(k), shape_.inner[k]});
  // Dims of extent 1 (a batch of one) iterate once: they are dropped (their variable is 0),
  // so they neither hide the layout from the ordering below (the lowering indexes them with 0)
  // nor stand as a one-iteration parallel loop in front of the real work.
  std::map<std::string, Expr> merged;
  auto drop_unit_dims = [&](std::vector<LoopDim>& dims) {
    std::vector<LoopDim> kept;
    for (const LoopDim& d : dims) {
      if (d.extent.is_const() && d.extent.value() == 1) continue;
      kept.push_back(d);
    }
    if (kept.empty() || kept.size() == dims.size()) return;
    for (const LoopDim& d : dims)
      if (d.extent.is_const() && d.extent.value() == 1) merged[d.var] = Expr(0);
    dims = std::move(kept);
  };
  drop_unit_dims(outer);
  drop_unit_dims(inner);
  Expr outer_ref(0), inner_ref(0);
  // GPU pointwise kernels: a store sets the order when one touches all dims, so consecutive
  // threads write consecutive elements (whole sectors); reads in another layout are then
  // gathered, but the sectors they leave half used are read again from L1/L2 by neighbouring
  // warps, while half-written sectors cost DRAM read-modify-writes. (H200, the NCHW -> NHWC
  // copy of resnet18's 64 x 3 x 224² input: 79 µs in load order, under 26 µs in store order,
  // Triton 47 µs; resnet18 kernel time per forward 1.816 -> 1.761 ms, stock 1.82.)
  if (options_.target == Target::Gpu && inner.empty()) {
    std::vector<Expr> stores;
    std::function<void(const std::vector<Stmt>&)> walk = [&](const std::vector<Stmt>& level) {
      for (const Stmt& st : level) {
        if (st.kind == StmtKind::Store) stores.push_back(st.index);
        walk(st.body);
      }
    };
    for (const auto& seg : segment_bodies) walk(seg);
    for (const Expr& e : stores) {
      bool all_outer = !outer.empty();
      for (const LoopDim& d : outer) all_outer = all_outer && depends_on(e, d.var);
      if (all_outer) {
        outer_ref = e;
        break;
      }
    }
  }
  for (const Expr& e : exprs) {
    // The first access touching all outer (inner) dims sets their order.
    bool all_outer = !outer.empty(), all_inner = !inner.empty();
    for (const LoopDim& d : outer) all_outer = all_outer && depends_on(e, d.var);
    for (const LoopDim& d : inner) all_inner = all_inner && depends_on(e, d.var);
    if (all_outer && outer_ref == Expr(0)) outer_ref = e;
    if (all_inner && inner_ref == Expr(0)) inner_ref = e;
  }
  outer = merge_dims(order_by_stride(outer, outer_ref), exprs, merged);
  inner = merge_dims(order_by_stride(inner, inner_ref), exprs, merged);
  if (options_.target == Target::Gpu) flatten_for_gpu(outer, inner, merged);
  for (auto& seg : segment_bodies) substitute_all(seg, merged, ranges_);
  exprs.clear();
  for (const auto& seg : segment_bodies) collect_stmt_exprs(seg, exprs);

  // 3. Strategy: which loop is vectorized: the one some memory access is contiguous in
  // (loads and stores; an index value or a mask costs the same along either loop). Counting
  // index values too, batch norm's backward after max_pool2d's (the argmax compared with
  // index(y1·56 + y2)) was vectorized along its strided reduction loop (channels-last, each
  // lane a gather): 124 ms a call in a resnet18 training step, dev machine, 2 threads.
  std::vector<Expr> accesses;
  std::function<void(const std::vector<Stmt>&)> collect_accesses = [&](const std::vector<Stmt>& stmts) {
    for (const Stmt& s : stmts) {
      if (s.kind == StmtKind::Store || s.kind == StmtKind::Accumulate) accesses.push_back(s.index);
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
  const bool vectorize_outer =
      !has_inner ||
      (!outer.empty() && contiguous_in(outer.back().var) &&
       (!contiguous_in(inner.back().var) ||
        gathers_in(outer.back().var) < gathers_in(inner.back().var)));

  if (options_.target == Target::Gpu) {
    // Memory accesses only: an argmax position (`at y0`) is no load.
    std::vector<Expr> accesses;
    std::function<void(const std::vector<Stmt>&)> collect = [&](const std::vector<Stmt>& stmts) {
      for (const Stmt& s : stmts) {
        if (s.kind == StmtKind::Store) accesses.push_back(s.index);
        if (s.value) collect_index_exprs(s.value, accesses);
        collect(s.body);
      }
    };
    for (const auto& seg : segment_bodies) collect(seg);
    auto accessed_contiguously = [&](const std::string& var) {
      return std::any_of(accesses.begin(), accesses.end(), [&](const Expr& e) {
        return coefficient_of(e, var) == std::optional<int64_t>(1);
      });
    };
    const bool outer_contiguous = !outer.empty() && accessed_contiguously(outer[0].var);
    const bool inner_contiguous = !inner.empty() && accessed_contiguously(inner[0].var);
    const bool outer_reduction = inner.empty() || (!inner_contiguous && outer_contiguous);
    return finish(gpu_nest(std::move(segment_bodies), outer, inner, outer_contiguous,
                           inner_contiguous, outer_reduction));
  }

  // 4. Build: inner loops replace the "@inner" placeholders; the outer nest wraps everything.
  std::vector<Stmt> body;
  for (auto& seg : segment_bodies) {
    for (Stmt& s : seg) {
      if (s.kind == StmtKind::For && s.var == "@inner") {
        std::vector<Stmt> loops = nest(inner, std::move(s.body));
        if (!vectorize_outer && !inner.empty())
          innermost_loop(loops)->vector_width = options_.vector_width;
        body.insert(body.end(), loops.begin(), loops.end());
        continue;
      }
      body.push_back(std::move(s));
    }
  }
  int64_t work = 1;
  for (const LoopDim& d : outer) work *= d.extent.is_const() ? d.extent.value() : 1024;
  for (const LoopDim& d : inner) work *= d.extent.is_const() ? d.extent.value() : 1024;
  const bool parallel = work >= options_.parallel_min_work && !outer.empty();
  std::vector<Stmt> kernel_body;
  // Outer-strategy reductions (sum(0)) over data past the L2 cache: each lane's accumulator
  // waits on its own previous add and each row step reads one cache line, so one vector of
  // columns per step is latency-bound. Four vectors side by side (one 4x wide vector loop)
  // overlap four add chains and read 256 contiguous bytes per row (unroll-and-jam across
  // columns): 4096x1024 sum(0) 1.23 -> 0.55 ms on 2 threads. Not for cache-resident inputs:
  // GCC keeps a 4-register vector on the stack, which costs more than it saves there
  // (256x1024: 26 -> 43 us).
  const bool outer_reduction = vectorize_outer && !inner.empty() && work >= (int64_t{1} << 21);
  const int lanes = outer_reduction ? 4 * options_.vector_width : options_.vector_width;
  if (outer.size() == 1 && vectorize_outer && parallel && outer[0].extent.is_const() &&
      outer[0].extent.value() > 2 * lanes) {
    // One loop both parallel and vectorized: parallel blocks, each a vector loop (the last
    // block shorter). Blocks are whole vectors, at least 16 of them when the loop allows.
    const LoopDim d = outer[0];
    const std::string blk = d.var + "_blk", in = d.var + "_in";
    const int64_t n = d.extent.value();
    const int64_t per_block = ((n + 15) / 16 + lanes - 1) / lanes * lanes;
    const int64_t b = std::min(options_.block, per_block);
    substitute_all(body, {{d.var, Expr::var(blk) * b + Expr::var(in)}}, ranges_);
    RangeMap r = ranges_;
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
        vector_loop->vector_width = wide ? lanes : options_.vector_width;
      }
      // A loop both parallel and vector only when it is short (no split above).
      if (parallel && (outer.size() > 1 || !vector_loop)) kernel_body.front().parallel = true;
    }
  }

  int partial_counter = 0;
  block_long_float_sums(kernel_body, ranges_, 64, partial_counter);
  return finish(std::move(kernel_body));
}

void GroupScheduler::flatten_for_gpu(std::vector<LoopDim>& outer, std::vector<LoopDim>& inner,
                                     std::map<std::string, Expr>& substitutions) {
  if (outer.size() > 1) outer = {flatten_dims(outer, "xf", substitutions)};
  if (inner.size() > 1) inner = {flatten_dims(inner, "yf", substitutions)};
  for (const std::vector<LoopDim>* dims : {&outer, &inner}) {
    for (const LoopDim& d : *dims) ranges_[d.var] = {0, extent_hi(d.extent)};
  }
}

std::vector<Stmt> GroupScheduler::gpu_nest(std::vector<std::vector<Stmt>> segment_bodies,
                                           const std::vector<LoopDim>& outer,
                                           const std::vector<LoopDim>& inner, bool outer_contiguous,
                                           bool inner_contiguous, bool outer_reduction) {
  // Inner (reduction) loops: contiguous ones give each thread vector chunks.
  std::vector<Stmt> all_statements;
  for (const auto& seg : segment_bodies)
    all_statements.insert(all_statements.end(), seg.begin(), seg.end());
  const int inner_lanes =
      inner_contiguous && !outer_reduction
          ? gpu_lanes(all_statements, inner.at(0).var, options_.gpu_vector_bytes)
          : 0;
  std::vector<Stmt> body;
  for (auto& seg : segment_bodies) {
    for (Stmt& s : seg) {
      if (s.kind == StmtKind::For && s.var == "@inner") {
        Stmt loop = Stmt::loop(inner.at(0).var, inner[0].extent, std::move(s.body));
        loop.vector_width = inner_lanes;
        body.push_back(std::move(loop));
        continue;
      }
      body.push_back(std::move(s));
    }
  }
  if (outer.empty()) return body;  // one row: the emitter runs it on one block
  Stmt loop = Stmt::loop(outer[0].var, outer[0].extent, std::move(body));
  loop.parallel = true;
  if (outer_reduction && !inner.empty() && outer[0].extent.is_const() &&
      inner[0].extent.is_const()) {
    // sum(0)-like: T thread rows per column split the reduced dim (few columns alone would
    // leave most of the GPU idle); combined in a fixed order by the emitter.
    // The emitter gives a group of thread rows 16 bytes of columns (4 float32: 128-bit loads)
    // when they split evenly (codegen/nvptx/emit_columns_nvptx.cpp): count those groups.
    const int64_t rows = inner[0].extent.value(), extent = outer[0].extent.value();
    const int64_t lanes = gpu_lanes(loop.body, loop.var, options_.gpu_vector_bytes);
    const int64_t columns = lanes > 1 && extent % lanes == 0 ? extent / lanes : extent;
    int64_t threads = 1;
    while (threads < options_.gpu_max_column_rows &&
           columns * threads < options_.gpu_column_threads &&
           rows / (threads * 2) >= options_.gpu_min_rows_per_thread) {
      threads *= 2;
    }
    if (threads > 1) {
      loop.gpu_threads = static_cast<int32_t>(threads);
      return {std::move(loop)};
    }
  }
  if (inner.empty() || outer_reduction) {
    loop.gpu_threads = 1;  // pointwise, or sum(0)-like: one thread per output
    if (inner.empty() && outer_contiguous)
      loop.vector_width = gpu_lanes(loop.body, loop.var, options_.gpu_vector_bytes);
    std::vector<Stmt> nest_stmts{std::move(loop)};
    int partial_counter = 0;  // long serial per-thread sums, as on the CPU
    block_long_float_sums(nest_stmts, ranges_, 64, partial_counter);
    return nest_stmts;
  }
  // T threads per row: enough for one chunk each, a power of two in [gpu_min_threads,
  // gpu_max_threads] (short rows share a warp: the emitter puts 128 / T rows in a block).
  const Expr& n = inner.at(0).extent;
  const int64_t lanes = std::max(inner_lanes, 1);
  int64_t threads = 1;
  while (threads < options_.gpu_min_threads) threads *= 2;
  const int64_t chunks = n.is_const() ? (n.value() + lanes - 1) / lanes : INT64_MAX;
  while (threads < options_.gpu_max_threads && threads < chunks) threads *= 2;
  // Fewer threads that split the row evenly, a few chunks each, let the emitter keep the row
  // in registers across the loops (persistent rows: 768 floats = 192 chunks -> 64 x 3).
  if (n.is_const() && n.value() % lanes == 0 && chunks % threads != 0) {
    for (int64_t t = threads / 2; t >= 32; t /= 2) {
      if (chunks % t == 0 && chunks / t <= options_.gpu_persistent_chunks) {
        threads = t;
        break;
      }
    }
  }
  loop.gpu_threads = static_cast<int32_t>(threads);
  return {std::move(loop)};
}

ScheduledStep GroupScheduler::finish(std::vector<Stmt> kernel_body) {
  ScheduledStep step;
  step.kind = ScheduledStep::Kind::Kernel;
  step.kernel.name = name_;
  std::set<int32_t> nodes;
  for (const std::string& m : group_.computes) {
    const Compute& c = p_.computes.at(m);
    if (c.graph_node >= 0) nodes.insert(c.graph_node);
    nodes.insert(c.inlined_nodes.begin(), c.inlined_nodes.end());
  }
  step.graph_nodes.assign(nodes.begin(), nodes.end());
  step.kernel.body = std::move(kernel_body);
  std::set<std::string> symbols;
  std::vector<Expr> all;
  collect_stmt_exprs(step.kernel.body, all);
  for (const Expr& e : all) {
    for (const std::string& v : free_vars(e)) {
      if (p_.symbol_ranges.count(v)) symbols.insert(v);
    }
  }
  step.kernel.symbols.assign(symbols.begin(), symbols.end());
  for (const std::string& b : param_order_) {
    step.kernel.params.push_back(KernelParam{b, p_.buffer(b).dtype, written_[b]});
    (written_[b] ? step.writes : step.reads).push_back(b);
  }
  return step;
}

}  // namespace

const Buffer& ScheduledProgram::buffer(const std::string& name) const {
  for (const Buffer& b : buffers) {
    if (b.name == name) return b;
  }
  throw std::out_of_range("no buffer " + name);
}

ScheduledProgram schedule(const LoopProgram& program, const ScheduleOptions& options) {
  ScheduledProgram out;
  out.buffers = program.buffers;
  out.outputs = program.outputs;
  // Who reads each compute from outside its own group.
  const std::set<std::string> needed = buffers_needed_in_memory(program);
  std::map<std::string, size_t> group_of;
  for (size_t s = 0; s < program.steps.size(); ++s) {
    if (program.steps[s].kind != Step::Kind::Kernel) continue;
    for (const std::string& c : program.steps[s].kernel.computes) group_of[c] = s;
  }
  std::set<std::string> read_outside = needed;
  for (const auto& [name, c] : program.computes) {
    for (const std::string& b : buffers_read(c.body)) {
      auto g = group_of.find(b);
      auto mine = group_of.find(name);
      if (g != group_of.end() && (mine == group_of.end() || mine->second != g->second))
        read_outside.insert(b);
    }
  }
  int kernel_count = 0;
  for (const Step& s : program.steps) {
    if (s.kind == Step::Kind::Extern) {
      ScheduledStep e;
      e.kind = ScheduledStep::Kind::Extern;
      e.call = s.call;
      e.reads = s.call.inputs;
      for (const std::string& o : s.call.outputs) {
        if (!o.empty()) e.writes.push_back(o);
      }
      out.steps.push_back(std::move(e));
      continue;
    }
    GroupScheduler g(program, s.kernel, read_outside, options,
                     "kernel" + std::to_string(kernel_count++));
    out.steps.push_back(g.run());
  }
  return out;
}

}  // namespace inductor_cpp::ir

namespace inductor_cpp::ir {

std::string scheduled_to_text(const ScheduledProgram& program) {
  std::string out;
  for (const ScheduledStep& s : program.steps) {
    if (s.kind == ScheduledStep::Kind::Kernel) {
      out += kernel_to_text(s.kernel);
      continue;
    }
    out += std::string("extern ") + (s.call.view ? "view " : "") + "node " +
           std::to_string(s.call.graph_node) + " (";
    for (size_t k = 0; k < s.call.inputs.size(); ++k) out += (k ? ", " : "") + s.call.inputs[k];
    out += ") -> (";
    for (size_t k = 0; k < s.call.outputs.size(); ++k) {
      out += (k ? ", " : "") + (s.call.outputs[k].empty() ? std::string("_") : s.call.outputs[k]);
    }
    out += ")\n";
  }
  return out;
}

}  // namespace inductor_cpp::ir
