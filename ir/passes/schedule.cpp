/// \file
/// Kernel groups -> loop-nest kernels (see schedule.h for the decisions and why).
#include "ir/passes/schedule.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>

#include "ir/ir_text.h"
#include "ir/passes/fuse_kernels.h"
#include "ir/passes/program_queries.h"
#include "ir/passes/schedule_internal.h"
#include "ir/simplify.h"

namespace inductor_cpp::ir {

namespace {

using schedule_detail::collect_stmt_exprs;
using schedule_detail::cpu_loop_nest;
using schedule_detail::extent_hi;
using schedule_detail::flatten_for_gpu;
using schedule_detail::gpu_loop_nest;
using schedule_detail::scan_loop_nest;
using schedule_detail::substitute_all;

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
  MemberRole role(const std::string& m) const { return member_role(p_.computes.at(m), shape_); }

  void plan_segments();
  /// The member's body in kernel variables, with group-local reads replaced by locals.
  Value translate(const Compute& c, const std::map<std::string, Value>& locals);
  Expr store_index(const Compute& c);
  void note_buffer(const std::string& b, bool written);
  /// Statements per segment, in kernel variables (x* outer, y* inner), not yet in loops: each
  /// segment's inner loop a For over "@inner" (schedule_internal.h).
  std::vector<std::vector<Stmt>> segment_statements();
  /// The kernel's loop dims, outer and inner, ordered and merged over every expression in
  /// `segment_bodies` (which get the merged variables substituted); flattened for the GPU.
  void order_loop_dims(std::vector<std::vector<Stmt>>& segment_bodies, std::vector<LoopDim>& outer,
                       std::vector<LoopDim>& inner);
  /// The step around a finished loop nest: name, params, symbols, graph nodes.
  ScheduledStep finish(std::vector<Stmt> kernel_body);
  /// A lone scan on the CPU: a running accumulator per line (schedule_scan.cpp).
  std::vector<Stmt> scan_nest(const Compute& c);

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

std::vector<std::vector<Stmt>> GroupScheduler::segment_statements() {
  std::map<std::string, Value> locals;
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
  return segment_bodies;
}

void GroupScheduler::order_loop_dims(std::vector<std::vector<Stmt>>& segment_bodies,
                                     std::vector<LoopDim>& outer, std::vector<LoopDim>& inner) {
  std::vector<Expr> exprs;
  for (const auto& seg : segment_bodies) collect_stmt_exprs(seg, exprs);
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
  if (options_.target == Target::Gpu) flatten_for_gpu(outer, inner, merged, ranges_);
  for (auto& seg : segment_bodies) substitute_all(seg, merged, ranges_);
}

std::vector<Stmt> GroupScheduler::scan_nest(const Compute& c) {
  // The group's shape is the scan's: outer x_k over its ranges, inner y0 along the scan.
  const std::string position = inner_var(0);
  const std::map<std::string, Expr> on_line{{outer_var(c.scan_dim), Expr::var(position)}};
  Value v = translate(c, {});
  v = map_indices(v, [&](const Expr& e) { return simplify(substitute(e, on_line), ranges_); });
  const Expr index = simplify(substitute(store_index(c), on_line), ranges_);
  note_buffer(c.name, true);
  const std::string acc = "t0";
  std::vector<Stmt> steps{Stmt::accumulate(acc, v, Expr(0)),
                          Stmt::store(c.name, index, cast(local(acc, v->dtype), p_.buffer(c.name).dtype))};
  std::vector<Stmt> line{Stmt::define_accumulator(acc, c.reduce_op, v->dtype),
                         Stmt::loop(position, c.ranges[c.scan_dim], std::move(steps))};
  std::vector<LoopDim> outer;
  for (size_t k = 0; k < c.ranges.size(); ++k) {
    if (static_cast<int32_t>(k) != c.scan_dim) outer.push_back({outer_var(k), c.ranges[k]});
  }
  return scan_loop_nest(std::move(line), outer, index, options_, ranges_);
}

ScheduledStep GroupScheduler::run() {
  if (options_.target == Target::Cpu && group_.computes.size() == 1) {
    const Compute& c = p_.computes.at(group_.computes.front());
    if (c.is_scan()) return finish(scan_nest(c));
  }
  std::vector<std::vector<Stmt>> segment_bodies = segment_statements();
  std::vector<LoopDim> outer, inner;
  order_loop_dims(segment_bodies, outer, inner);
  if (options_.target == Target::Gpu)
    return finish(gpu_loop_nest(std::move(segment_bodies), outer, inner, options_, ranges_));
  return finish(cpu_loop_nest(std::move(segment_bodies), outer, inner, options_, ranges_));
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
  BufferTypes types;  // library epilogues print their loads without types, as programs do
  for (const Buffer& b : program.buffers) types.emplace(b.name, b.dtype);
  std::string out;
  for (const ScheduledStep& s : program.steps) {
    if (s.kind == ScheduledStep::Kind::Kernel) {
      out += kernel_to_text(s.kernel);
      continue;
    }
    out += std::string("extern ") + (s.call.view ? "view " : "") + (s.call.alias ? "alias " : "") + "node " +
           std::to_string(s.call.graph_node) + " (";
    for (size_t k = 0; k < s.call.inputs.size(); ++k) out += (k ? ", " : "") + s.call.inputs[k];
    out += ") -> (";
    for (size_t k = 0; k < s.call.outputs.size(); ++k) {
      out += (k ? ", " : "") + (s.call.outputs[k].empty() ? std::string("_") : s.call.outputs[k]);
    }
    out += ")";
    if (s.call.library) out += " " + library_text(*s.call.library, types);
    out += "\n";
  }
  return out;
}

}  // namespace inductor_cpp::ir
