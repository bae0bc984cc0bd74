/// \file
/// The CPU emitter's loop plan and value bookkeeping across loops.
///
/// Before any text: which loops become vector loops, of what width, and which run in
/// parallel (plan_loops; the rules are in emit_cpp.cpp's file comment), and how many lanes an
/// accumulator keeps. The width is the schedule's, capped so that every vector the loop holds
/// fits one register of the target (64 bytes on AVX-512, 32 on AVX2): a loop with double,
/// int64 or index-vector values gets fewer lanes. (GCC keeps a vector type wider than any
/// register in memory, which costs more than the lanes gain.)
///
/// While emitting: what a cached value reads (to forget it when that changes) and which
/// values can be computed once before a loop.
#include <algorithm>
#include <functional>
#include <map>
#include <stdexcept>

#include "codegen/cpu/emit_cpp_internal.h"

namespace inductor_cpp::codegen::cpu_detail {

using ir::Stmt;
using ir::StmtKind;

namespace {

bool nested_extent_depends_on(const std::vector<Stmt>& body, const std::string& var) {
  bool depends = false;
  for_each_stmt(body, [&](const Stmt& s) {
    if (s.kind == StmtKind::For && ir::depends_on(s.extent, var)) depends = true;
  });
  return depends;
}

/// Whether the loop accumulates into an accumulator declared outside it.
bool accumulates_outside(const Stmt& loop) {
  std::set<std::string> defined;
  bool outside = false;
  for_each_stmt(loop.body, [&](const Stmt& s) {
    if (s.kind == StmtKind::DefineAccumulator) defined.insert(s.name);
    if (s.kind == StmtKind::Accumulate && !defined.count(s.name)) outside = true;
  });
  return outside;
}

int floor_pow2(int w) {
  int p = 1;
  while (p * 2 <= w && p * 2 <= 64) p *= 2;
  return p;
}

/// The widest element (in bytes) among the vectors a vector loop over `loop.var` would hold:
/// a walk that mirrors the emitter's vector/scalar decisions (conservatively). Also says
/// whether any of them holds 64-bit integers (indices, argmax positions).
class VectorElementBytes {
 public:
  VectorElementBytes(const Stmt& loop, const std::map<std::string, ir::ReduceOp>& accumulators,
                     const std::set<std::string>& ordered_float_args)
      : var_(loop.var), accumulators_(accumulators), ordered_float_args_(ordered_float_args) {}

  int operator()(const Stmt& loop) {
    statements(loop.body);
    return widest_;
  }
  bool holds_int64() const { return int64_ || arg_index_; }
  /// Whether its only 64-bit integers are the indices of float32 argmax/argmin accumulators
  /// with ordered updates (ic::arg_update_ordered has a 16-lane AVX-512 form for those).
  bool int64_only_ordered_arg_indices() const { return arg_index_ && !int64_; }

 private:
  void record(ir::DType t) {
    widest_ = std::max(widest_, ir::dtype_size(t));
    int64_ = int64_ || (!ir::is_floating(t) && ir::dtype_size(t) == 8);
  }
  void record_index_of(const std::string& accumulator) {
    if (!ordered_float_args_.count(accumulator)) return record(ir::DType::Int64);
    widest_ = std::max(widest_, 8);
    arg_index_ = true;
  }
  bool indexed(const std::string& accumulator) const {
    auto found = accumulators_.find(accumulator);
    return found != accumulators_.end() &&
           (found->second == ir::ReduceOp::argmax || found->second == ir::ReduceOp::argmin);
  }

  void statements(const std::vector<Stmt>& body) {
    for (const Stmt& s : body) {
      switch (s.kind) {
        case StmtKind::For:
          statements(s.body);
          break;
        case StmtKind::Let:
          if (vector(s.value)) {
            vector_locals_.insert(s.name);
          } else {
            vector_locals_.erase(s.name);
          }
          break;
        case StmtKind::DefineAccumulator:  // one lane per iteration
          vector_locals_.insert(s.name);
          record(s.dtype);
          if (indexed(s.name)) record_index_of(s.name);
          break;
        case StmtKind::Accumulate:  // into lanes, whether declared here or outside
          vector(s.value);
          record(s.value->dtype);
          if (indexed(s.name)) record_index_of(s.name);
          break;
        case StmtKind::Store:
          if (s.value->kind == ir::ValueKind::Local && indexed(s.value->name) &&
              s.value->dtype == ir::DType::Int64) {
            record_index_of(s.value->name);  // the argmax itself: its index lanes
          } else if (vector(s.value) || ir::depends_on(s.index, var_)) {
            record(s.value->dtype);
          }
          if (ir::depends_on(s.index, var_) && !ir::coefficient_of(s.index, var_)) {
            record(ir::DType::Int64);
          }
          break;
      }
    }
  }

  bool vector(const ir::Value& v) {
    switch (v->kind) {
      case ir::ValueKind::Constant:
        return false;
      case ir::ValueKind::Local:
        return vector_locals_.count(v->name) > 0;
      case ir::ValueKind::IndexValue:
        if (!ir::depends_on(v->index[0], var_)) return false;
        record(ir::DType::Int64);
        record(v->dtype);
        return true;
      case ir::ValueKind::Load: {
        bool through_vector = false;
        for (const ir::Value& op : v->operands) through_vector = vector(op) || through_vector;
        if (through_vector) record(ir::DType::Int64);
        const ir::Expr& index = v->index[0];
        const bool index_vector = through_vector || ir::depends_on(index, var_);
        const bool mask_vector = ir::depends_on(v->mask, var_);
        if (index_vector && (through_vector || !ir::coefficient_of(index, var_))) {
          record(ir::DType::Int64);
        }
        if (mask_vector && !is_affine_condition(v->mask, var_)) record(ir::DType::Int64);
        if (!index_vector && !mask_vector) return false;
        record(v->dtype);
        return true;
      }
      default: {
        const int affine = affine_index_operand(*v, var_);
        if (affine >= 0 && !vector(v->operands[1 - affine])) return true;  // bool lanes only
        bool any = false;
        for (const ir::Value& op : v->operands) any = vector(op) || any;
        if (!any) return false;
        record(v->dtype);
        for (const ir::Value& op : v->operands) {
          record(op->dtype);
          if (ir::is_reduced_float(op->dtype)) record(ir::DType::Float32);
        }
        return true;
      }
    }
  }

  std::string var_;
  const std::map<std::string, ir::ReduceOp>& accumulators_;
  const std::set<std::string>& ordered_float_args_;
  std::set<std::string> vector_locals_;
  int widest_ = 1;
  bool int64_ = false;     ///< 64-bit integer lanes other than those below
  bool arg_index_ = false;  ///< indices of ordered float32 argmax/argmin accumulators
};

}  // namespace

bool is_affine_condition(const ir::Expr& e, const std::string& var) {
  if (!ir::depends_on(e, var)) return true;
  switch (e.kind()) {
    case ir::ExprKind::Lt:
    case ir::ExprKind::Le:
    case ir::ExprKind::Eq:
    case ir::ExprKind::Ne: {
      const std::optional<int64_t> c = ir::coefficient_of(e.lhs() - e.rhs(), var);
      return c && *c >= -kMaxAffineConditionCoefficient && *c <= kMaxAffineConditionCoefficient;
    }
    case ir::ExprKind::Mul:
      return is_comparison(e.lhs()) && is_comparison(e.rhs()) &&
             is_affine_condition(e.lhs(), var) && is_affine_condition(e.rhs(), var);
    default:
      return false;
  }
}

int affine_index_operand(const ir::ValueNode& n, const std::string& var) {
  if (n.kind != ir::ValueKind::Binary) return -1;
  switch (n.binary_op()) {
    case ir::BinaryOp::eq:
    case ir::BinaryOp::ne:
    case ir::BinaryOp::lt:
    case ir::BinaryOp::le:
    case ir::BinaryOp::gt:
    case ir::BinaryOp::ge:
      break;
    default:
      return -1;
  }
  for (int k = 0; k < 2; ++k) {
    const ir::Value& op = n.operands[k];
    if (op->kind != ir::ValueKind::IndexValue ||
        (op->dtype != ir::DType::Int64 && op->dtype != ir::DType::Int32)) {
      continue;
    }
    const std::optional<int64_t> c = ir::coefficient_of(op->index[0], var);
    if (c && *c != 0 && *c >= -kMaxAffineConditionCoefficient &&
        *c <= kMaxAffineConditionCoefficient) {
      return k;
    }
  }
  return -1;
}

bool is_comparison(const ir::Expr& e) {
  return e.kind() == ir::ExprKind::Lt || e.kind() == ir::ExprKind::Le ||
         e.kind() == ir::ExprKind::Eq || e.kind() == ir::ExprKind::Ne;
}

void KernelEmitter::plan_loops(const std::vector<Stmt>& stmts, bool in_vector, bool in_parallel) {
  for (const Stmt& s : stmts) {
    if (s.kind != StmtKind::For) continue;
    int width = 0;
    if (target_.isa != CpuIsa::Scalar && !in_vector && s.vector_width > 1 &&
        !nested_extent_depends_on(s.body, s.var)) {
      const int register_bytes = target_.isa == CpuIsa::Avx512 ? 64 : 32;
      VectorElementBytes elements(s, accumulator_ops_, ordered_float_args_);
      const int element_bytes = elements(s);
      // The scheduler asks 16 lanes for one register's worth (one AVX-512 float vector), and
      // a multiple of 16 for that many registers side by side (outer-strategy reductions).
      // Not with 64-bit integer lanes: batch norm's sums fused with max_pool2d's backward
      // (argmax indices compared per window) took 5.1-5.5 ms a call at 16 threads on the
      // H200 host's AVX-512 with 32 lanes (int64 vectors and their masks 4 registers each),
      // 0.73 ms with 8 (one register); no change on the AVX2 EPYC.
      // An ordered float32 argmax/argmin (a column argmax, its indices the rows) takes 16
      // lanes on AVX-512 (its indices two registers): a whole cache line per row step, 1024 x
      // 4096 argmax(0) on 2 threads 1.31 -> 0.96-1.05 ms (stock 0.87-0.94).
      const bool arg_lanes = target_.isa == CpuIsa::Avx512 && elements.int64_only_ordered_arg_indices();
      const int registers = elements.holds_int64() ? (arg_lanes && s.vector_width >= 16 ? 2 : 1)
                                                   : std::max(1, s.vector_width / 16);
      width = floor_pow2(std::min(s.vector_width, registers * register_bytes / element_bytes));
      if (width < 2) width = 0;
    }
    const bool parallel = s.parallel && !in_parallel && !in_vector && !accumulates_outside(s);
    vector_width_[&s] = width;
    parallel_[&s] = parallel;
    plan_loops(s.body, in_vector || width > 0, in_parallel || parallel);
  }
}

void KernelEmitter::plan_ordered_arg_updates(const std::vector<Stmt>& body) {
  std::map<std::string, int> updates;  // accumulator -> Accumulate statements in the kernel
  for_each_stmt(body, [&](const Stmt& s) {
    if (s.kind == StmtKind::Accumulate) ++updates[s.name];
  });
  // An argmax/argmin whose only update sits directly in a serial loop over its index (a
  // parallel one may run serially inside another, never the other way), that loop a sibling
  // after the accumulator's definition: each lane sees increasing indices from the identity
  // on (ic::arg_update_ordered). Runs before plan_loops, which widens such loops.
  std::function<void(const std::vector<Stmt>&)> scan = [&](const std::vector<Stmt>& stmts) {
    std::set<std::string> defined;
    for (const Stmt& s : stmts) {
      if (s.kind == StmtKind::DefineAccumulator &&
          (s.reduce_op == ir::ReduceOp::argmax || s.reduce_op == ir::ReduceOp::argmin))
        defined.insert(s.name);
      if (s.kind != StmtKind::For) continue;
      for (const Stmt& b : s.body) {
        if (b.kind == StmtKind::Accumulate && defined.count(b.name) && updates[b.name] == 1 &&
            b.index == ir::Expr::var(s.var) && !s.parallel) {
          ordered_arg_updates_.insert(&b);
          if (b.value->dtype == ir::DType::Float32) ordered_float_args_.insert(b.name);
        }
      }
      scan(s.body);
    }
  };
  scan(body);
}

std::set<int> KernelEmitter::accumulate_widths(const std::vector<Stmt>& stmts, size_t from,
                                               const std::string& name) const {
  std::set<int> widths;
  std::function<void(const Stmt&, int)> scan = [&](const Stmt& s, int width) {
    if (s.kind == StmtKind::Accumulate && s.name == name) widths.insert(width);
    if (s.kind != StmtKind::For) return;
    const int w = vector_width_.at(&s);
    for (const Stmt& inner : s.body) scan(inner, w > 0 ? w : width);
  };
  for (size_t i = from; i < stmts.size(); ++i) {
    if (stmts[i].kind == StmtKind::DefineAccumulator && stmts[i].name == name) break;
    scan(stmts[i], 0);
  }
  return widths;
}

const std::pair<std::set<std::string>, std::set<std::string>>& KernelEmitter::reads_of(
    const ir::ValueNode* n) {
  auto found = reads_.find(n);
  if (found != reads_.end()) return found->second;
  std::pair<std::set<std::string>, std::set<std::string>> reads;
  if (n->kind == ir::ValueKind::Load) reads.first.insert(n->name);
  if (n->kind == ir::ValueKind::Local) reads.second.insert(n->name);
  for (const ir::Value& op : n->operands) {
    const auto& sub = reads_of(op.node());
    reads.first.insert(sub.first.begin(), sub.first.end());
    reads.second.insert(sub.second.begin(), sub.second.end());
  }
  return reads_[n] = std::move(reads);
}

void KernelEmitter::invalidate(const std::set<std::string>& buffers,
                               const std::set<std::string>& locals) {
  auto hits = [](const std::set<std::string>& a, const std::set<std::string>& b) {
    for (const std::string& x : a) {
      if (b.count(x)) return true;
    }
    return false;
  };
  for (Scope& scope : scopes_) {
    for (auto it = scope.values.begin(); it != scope.values.end();) {
      const auto& reads = reads_of(it->first);
      if (hits(reads.first, buffers) || hits(reads.second, locals)) {
        it = scope.values.erase(it);
      } else {
        ++it;
      }
    }
  }
}

void KernelEmitter::invalidate_for_loop(const Stmt& loop) {
  std::set<std::string> buffers, locals;
  for_each_stmt(loop.body, [&](const Stmt& s) {
    if (s.kind == StmtKind::Store) buffers.insert(s.buffer);
    if (s.kind == StmtKind::Let || s.kind == StmtKind::DefineAccumulator ||
        s.kind == StmtKind::Accumulate) {
      locals.insert(s.name);
    }
  });
  invalidate(buffers, locals);
}

const std::set<std::string>& KernelEmitter::index_vars_of(const ir::ValueNode* n) {
  auto found = index_vars_.find(n);
  if (found != index_vars_.end()) return found->second;
  std::set<std::string> vars;
  for (const ir::Expr& e : n->index) {
    const std::set<std::string> free = ir::free_vars(e);
    vars.insert(free.begin(), free.end());
  }
  if (n->kind == ir::ValueKind::Load) {
    const std::set<std::string> free = ir::free_vars(n->mask);
    vars.insert(free.begin(), free.end());
  }
  for (const ir::Value& op : n->operands) {
    const std::set<std::string>& sub = index_vars_of(op.node());
    vars.insert(sub.begin(), sub.end());
  }
  return index_vars_[n] = std::move(vars);
}

void KernelEmitter::hoist_invariants(const Stmt& loop) {
  std::set<std::string> changing_vars = {loop.var}, changing_locals;
  for_each_stmt(loop.body, [&](const Stmt& s) {
    if (s.kind == StmtKind::For) changing_vars.insert(s.var);
    if (s.kind != StmtKind::For && s.kind != StmtKind::Store) changing_locals.insert(s.name);
  });
  auto invariant = [&](const ir::Value& v) {
    if (v->kind == ir::ValueKind::Constant) return false;
    const auto& reads = reads_of(v.node());
    if (!reads.first.empty()) return false;  // loads stay where they are guarded
    for (const std::string& local : reads.second) {
      if (changing_locals.count(local) || !find_local(local)) return false;
    }
    for (const std::string& var : index_vars_of(v.node())) {
      if (changing_vars.count(var)) return false;
    }
    return true;
  };
  std::set<const ir::ValueNode*> visited;
  std::function<void(const ir::Value&)> visit = [&](const ir::Value& v) {
    if (!visited.insert(v.node()).second) return;
    if (invariant(v)) {
      value(v);
      return;
    }
    for (const ir::Value& op : v->operands) visit(op);
  };
  for_each_stmt(loop.body, [&](const Stmt& s) {
    if (s.kind != StmtKind::For && s.value) visit(s.value);
  });
}

}  // namespace inductor_cpp::codegen::cpu_detail
