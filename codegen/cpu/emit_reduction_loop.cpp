/// \file
/// The CPU emitter's reduction loops: two-level float sums and unrolled accumulator copies.
///
/// Two-level sums (counted_loop): a float sum accumulated directly in a loop goes to a
/// partial that is added to the accumulator every kSumBlock vector steps (16 times as many
/// scalar steps), so a long sum's rounding error grows with the square root of its block count
/// instead of its length, close to eager's cascade sum.
///
/// Unrolled reductions (unrolled_reduction_loop): a vector loop whose body updates
/// accumulators declared outside it (an inner-dim reduction) would wait, at every vector step,
/// on the previous step's update of the same register (4 cycles for an add, more for max,
/// argmax or Welford): latency-bound. Its full vectors therefore run in groups of
/// kReductionUnroll consecutive vectors, vector k of each group updating copy k of each
/// accumulator, so the copies' chains overlap. After the loop the copies are combined in a
/// fixed tree order (copy i with copy i + U/2, then halves again, like the lanes), then the
/// remaining full vectors (fewer than U) and the tail update the accumulator itself. The order
/// depends only on the extent, never on threads or timing: results stay deterministic. Float
/// sums keep two levels: each copy is a partial of kSumBlock vectors, and every block adds the
/// copies' tree into the accumulator.
///
///   const int64_t y0_unrolled = y0_main / 64 * 64;
///   for (int64_t y0_u = 0; y0_u < y0_unrolled; y0_u += 64) {
///     { const int64_t y0 = y0_u;      ... t0 = ic::maximum(t0, tmp1); }
///     { const int64_t y0 = y0_u + 16; ... t0_u1 = ic::maximum(t0_u1, tmp2); }
///     ...
///   }
///   t0 = ic::maximum(t0, t0_u2); t0_u1 = ic::maximum(t0_u1, t0_u3); t0 = ic::maximum(t0, t0_u1);
///   for (int64_t y0 = y0_unrolled; y0 < y0_main; y0 += 16) { ... t0 = ic::maximum(t0, ...); }
#include <functional>
#include <unordered_set>
#include <stdexcept>

#include "codegen/cpu/emit_cpp_internal.h"

namespace inductor_cpp::codegen::cpu_detail {

using ir::Stmt;
using ir::StmtKind;

namespace {

bool is_float_sum(const LocalInfo& info) {
  return info.op == ir::ReduceOp::sum && ir::is_floating(info.dtype);
}

}  // namespace

void KernelEmitter::counted_loop(const Stmt& s, const std::string& v, const std::string& end,
                                 int step, bool parallel, const std::function<void()>& body) {
  // Float sums accumulated directly in this loop go to a partial flushed every kSumBlock
  // steps: two-level summation, so a long reduction's rounding error grows with the square
  // root of its block count rather than of its length (closer to eager's cascade sum).
  const int lanes = step > 1 ? step : vec_.width;
  const std::string zero_lanes = lanes ? "ic::broadcast<" + std::to_string(lanes) + ">(" : "(";
  struct PartialSum {
    std::string accumulator, partial, zero, type;
  };
  std::vector<PartialSum> partials;
  const std::map<std::string, std::string> outer_partials = accumulate_into_;
  std::set<std::string> defined_inside, read_inside;
  for_each_stmt(s.body, [&](const Stmt& inner) {
    if (inner.kind == StmtKind::DefineAccumulator) defined_inside.insert(inner.name);
    if (!inner.value) return;
    std::set<const ir::ValueNode*> seen;
    std::function<void(const ir::Value&)> walk = [&](const ir::Value& x) {
      if (!seen.insert(x.node()).second) return;
      if (x->kind == ir::ValueKind::Local) read_inside.insert(x->name);
      for (const ir::Value& o : x->operands) walk(o);
    };
    walk(inner.value);
  });
  for (const Stmt& inner : s.body) {
    const LocalInfo* acc = inner.kind == StmtKind::Accumulate ? find_local(inner.name) : nullptr;
    if (!acc || acc->op != ir::ReduceOp::sum || !ir::is_floating(acc->dtype) ||
        acc->lanes != lanes || acc->horizontal != (step > 1) || defined_inside.count(inner.name) ||
        read_inside.count(inner.name) ||  // a scan reads its running total at every step
        (accumulate_into_.count(inner.name) && !outer_partials.count(inner.name)) || parallel) {
      continue;
    }
    const std::string partial = unique_name(acc->cname + "_part");
    accumulate_into_[inner.name] = partial;
    partials.push_back({acc->cname, partial, zero_lanes + cpp_type(acc->dtype) + "(0))",
                        lanes ? vector_type(acc->dtype, lanes) : cpp_type(acc->dtype)});
  }
  // kSumBlock vector steps (kSumBlock lanes' worth each), or 16 times that many scalar steps.
  const int64_t block_steps = step > 1 ? kSumBlock * step : kSumBlock * 16;
  const bool small = s.extent.is_const() && s.extent.value() <= block_steps;
  const std::string inc = step > 1 ? " += " + std::to_string(step) : "++";
  if (partials.empty() || small) {
    accumulate_into_ = outer_partials;
    if (parallel) line(omp_pragma(s, step > 1 ? step : 0));
    line("for (int64_t " + v + " = 0; " + v + " < " + end + "; " + (step > 1 ? v + inc : inc + v) +
         ") {");
    body();
    line("}");
    return;
  }
  const std::string block = fresh(v + "_blk");
  const std::string block_size = std::to_string(block_steps);
  for (const PartialSum& p : partials) line(p.type + " " + p.partial + " = " + p.zero + ";");
  line("for (int64_t " + block + " = 0; " + block + " < " + end + "; " + block +
       " += " + block_size + ") {");
  ++indent_;
  line("const int64_t " + block + "_end = std::min<int64_t>(" + block + " + " + block_size + ", " +
       end + ");");
  line("for (int64_t " + v + " = " + block + "; " + v + " < " + block + "_end; " +
       (step > 1 ? v + inc : inc + v) + ") {");
  body();
  line("}");
  for (const PartialSum& p : partials) {
    line(p.accumulator + " = ic::add(" + p.accumulator + ", " + p.partial + ");");
    line(p.partial + " = " + p.zero + ";");
  }
  --indent_;
  line("}");
  accumulate_into_ = outer_partials;
}

void KernelEmitter::declare_accumulator_state(const LocalInfo& info, const std::string& cname,
                                              const std::string& identity) {
  const std::string w = std::to_string(info.lanes);
  auto init = [&](const std::string& scalar) {
    return info.lanes ? "ic::broadcast<" + w + ">(" + scalar + ")" : scalar;
  };
  const std::string type = info.lanes ? vector_type(info.dtype, info.lanes) : cpp_type(info.dtype);
  if (info.op == ir::ReduceOp::welford_m2) {
    for (const char* part : {"_mean", "_m2", "_n"}) {
      line(type + " " + cname + part + " = " + init(identity) + ";");
    }
    return;
  }
  line(type + " " + cname + " = " + init(identity) + ";");
  if (info.op == ir::ReduceOp::argmax || info.op == ir::ReduceOp::argmin) {
    const std::string index_type =
        info.lanes ? vector_type(ir::DType::Int64, info.lanes) : std::string("int64_t");
    line(index_type + " " + cname + "_idx = " + init("ic::kNoIndex") + ";");
  }
}

void KernelEmitter::combine_accumulator_state(const LocalInfo& info, const std::string& into,
                                              const std::string& from) {
  switch (info.op) {
    case ir::ReduceOp::argmax:
    case ir::ReduceOp::argmin:
      line(std::string("ic::") + ir::reduce_op_name(info.op) + "_combine(" + into + ", " + into +
           "_idx, " + from + ", " + from + "_idx);");
      return;
    case ir::ReduceOp::welford_m2:
      line("ic::welford_combine(" + into + "_mean, " + into + "_m2, " + into + "_n, " + from +
           "_mean, " + from + "_m2, " + from + "_n);");
      return;
    default:
      line(into + " = " + reduce_combine_function(info.op) + "(" + into + ", " + from + ");");
  }
}

namespace {

/// Nodes of an index expression (a tree: shared subtrees count each time they are printed).
int64_t expr_size(const ir::Expr& e) {
  switch (e.kind()) {
    case ir::ExprKind::Const:
    case ir::ExprKind::Var:
      return 1;
    default:
      return 1 + expr_size(e.lhs()) + expr_size(e.rhs());
  }
}

/// A value's size as emitted code: its nodes (each once) plus the index expressions and masks
/// of its loads, which a vector loop spells out as vector integer arithmetic.
int64_t code_size(const ir::Value& v) {
  std::unordered_set<const ir::ValueNode*> seen;
  int64_t size = 0;
  std::function<void(const ir::Value&)> visit = [&](const ir::Value& x) {
    if (!x || !seen.insert(x.node()).second) return;
    ++size;
    if (x->kind == ir::ValueKind::Load) {
      for (const ir::Expr& e : x->index) size += expr_size(e) - 1;
      size += expr_size(x->mask) - 1;
    }
    for (const ir::Value& operand : x->operands) visit(operand);
  };
  visit(v);
  return size;
}

}  // namespace

int KernelEmitter::reduction_unroll(const Stmt& s, int width) {
  // Worth it only when every copy runs: a constant extent of fewer than U full vectors is not.
  if (s.extent.is_const() && s.extent.value() < int64_t(kReductionUnroll) * width) return 1;
  if (s.body.size() > kMaxUnrolledStatements) return 1;
  int64_t nodes = 0;
  for (const Stmt& inner : s.body)
    if (inner.value) nodes += code_size(inner.value);
  if (nodes > kMaxUnrolledNodes) return 1;
  std::set<std::string> accumulated;
  for (const Stmt& inner : s.body) {
    // Nested loops and per-iteration accumulators stay as they are (not inner reductions).
    if (inner.kind == StmtKind::For || inner.kind == StmtKind::DefineAccumulator) return 1;
    if (inner.kind != StmtKind::Accumulate) continue;
    const LocalInfo* acc = find_local(inner.name);
    if (!acc || !acc->accumulator || !acc->horizontal || acc->lanes != width) return 1;
    accumulated.insert(inner.name);
  }
  if (accumulated.empty()) return 1;
  // A body that reads an accumulator it updates would see one copy, not the running state.
  for (const Stmt& inner : s.body) {
    if (!inner.value) continue;
    for (const std::string& local : reads_of(inner.value.node()).second) {
      if (accumulated.count(local)) return 1;
    }
  }
  return kReductionUnroll;
}

void KernelEmitter::unrolled_reduction_loop(const Stmt& s, int width, const std::string& main_end,
                                            const std::function<void(const std::string&)>& body) {
  const int copies = kReductionUnroll;
  static_assert((kReductionUnroll & (kReductionUnroll - 1)) == 0, "a power of two");
  const int64_t group = int64_t(copies) * width;
  const std::string v = c_identifier(s.var);
  const std::string g = std::to_string(group);
  const std::string unrolled_end = fresh(v + "_unrolled");
  line("const int64_t " + unrolled_end + " = " + main_end + " / " + g + " * " + g + ";");
  const bool known = s.extent.is_const();
  const int64_t known_main = known ? s.extent.value() / width * width : 0;
  const int64_t known_unrolled = known ? s.extent.value() / group * group : 0;
  const int64_t block = kSumBlock * group;

  struct Copies {
    std::string name;  ///< IR name
    LocalInfo info;
    std::string target;  ///< the state updates go to outside this loop
    bool partial = false;
    std::vector<std::string> states;  ///< C base name of each copy
  };
  std::vector<Copies> accumulators;
  bool float_sums = false;
  for (const Stmt& inner : s.body) {
    if (inner.kind != StmtKind::Accumulate) continue;
    bool seen = false;
    for (const Copies& c : accumulators) seen = seen || c.name == inner.name;
    if (seen) continue;
    Copies c;
    c.name = inner.name;
    c.info = *find_local(inner.name);
    auto redirected = accumulate_into_.find(inner.name);
    c.target = redirected != accumulate_into_.end() ? redirected->second : c.info.cname;
    float_sums = float_sums || is_float_sum(c.info);
    accumulators.push_back(c);
  }
  const bool blocked = float_sums && !(known && known_unrolled <= block);
  for (Copies& c : accumulators) {
    c.partial = blocked && is_float_sum(c.info);
    for (int k = 0; k < copies; ++k) {
      if (k == 0 && !c.partial) {
        c.states.push_back(c.target);  // copy 0 is the accumulator itself
        continue;
      }
      c.states.push_back(unique_name(c.info.cname + (c.partial ? "_p" : "_u") + std::to_string(k)));
      declare_accumulator_state(c.info, c.states.back(), reduce_identity(c.info.op, c.info.dtype));
    }
  }
  // Copy i absorbs copy i + n/2 for n = U, U/2, ..., 2: copy 0 ends up with all of them.
  auto combine_tree = [&](const Copies& c) {
    for (int n = copies; n > 1; n /= 2) {
      for (int i = 0; i < n / 2; ++i)
        combine_accumulator_state(c.info, c.states[i], c.states[i + n / 2]);
    }
  };
  const std::map<std::string, std::string> outer_into = accumulate_into_;
  auto group_of_vectors = [&](const std::string& first) {
    for (int k = 0; k < copies; ++k) {
      for (const Copies& c : accumulators) accumulate_into_[c.name] = c.states[k];
      line("{");
      body(k == 0 ? first : first + " + " + std::to_string(k * width));
      line("}");
    }
    accumulate_into_ = outer_into;
  };
  const std::string u = fresh(v + "_u");
  if (blocked) {
    const std::string blk = fresh(v + "_blk");
    line("for (int64_t " + blk + " = 0; " + blk + " < " + unrolled_end + "; " + blk +
         " += " + std::to_string(block) + ") {");
    ++indent_;
    line("const int64_t " + blk + "_end = std::min<int64_t>(" + blk + " + " +
         std::to_string(block) + ", " + unrolled_end + ");");
    line("for (int64_t " + u + " = " + blk + "; " + u + " < " + blk + "_end; " + u + " += " + g +
         ") {");
    ++indent_;
    group_of_vectors(u);
    --indent_;
    line("}");
    for (const Copies& c : accumulators) {
      if (!c.partial) continue;
      combine_tree(c);
      line(c.target + " = ic::add(" + c.target + ", " + c.states[0] + ");");
      const std::string zero = "ic::broadcast<" + std::to_string(c.info.lanes) + ">(" +
                               reduce_identity(c.info.op, c.info.dtype) + ")";
      for (const std::string& p : c.states) line(p + " = " + zero + ";");
    }
    --indent_;
    line("}");
  } else {
    line("for (int64_t " + u + " = 0; " + u + " < " + unrolled_end + "; " + u + " += " + g + ") {");
    ++indent_;
    group_of_vectors(u);
    --indent_;
    line("}");
  }
  for (const Copies& c : accumulators) {
    if (!c.partial) combine_tree(c);
  }
  if (known && known_main == known_unrolled) return;  // no full vectors left over
  line("for (int64_t " + v + " = " + unrolled_end + "; " + v + " < " + main_end + "; " + v +
       " += " + std::to_string(width) + ") {");
  body("");
  line("}");
}

}  // namespace inductor_cpp::codegen::cpu_detail
