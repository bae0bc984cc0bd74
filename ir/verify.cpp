/// \file
/// Verifier of LoopPrograms (the rules are listed in ir/verify.h), and the helpers both
/// verifiers share (verify_internal.h). Kernels are checked in verify_kernel.cpp.
#include "ir/verify.h"

#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "ir/verify_internal.h"

namespace inductor_cpp::ir {

namespace verify_detail {

void fail(const std::string& where, const std::string& what) {
  throw std::invalid_argument("verify: " + where + ": " + what);
}

void for_each_node(const Value& v, const std::function<void(const ValueNode&)>& f) {
  std::set<const ValueNode*> seen;
  std::function<void(const Value&)> walk = [&](const Value& x) {
    if (!x || !seen.insert(x.node()).second) return;
    for (const Value& operand : x->operands) walk(operand);
    f(*x);
  };
  walk(v);
}

void check_vars(const Expr& e, const std::set<std::string>& allowed, const std::string& where,
                const std::string& what) {
  for (const std::string& var : free_vars(e)) {
    if (allowed.count(var)) continue;
    fail(where, what + " " + to_string(e) + " uses " + var + ", which is not in scope here");
  }
}

std::string indirect_var(size_t k) {
  return "%ind" + std::to_string(k);
}

void check_load_exprs(const ValueNode& load, const std::set<std::string>& allowed,
                      const std::string& where) {
  const std::string what = "load of " + load.name + ":";
  if (load.bounds.size() != load.operands.size()) {
    fail(where, what + " " + std::to_string(load.operands.size()) + " indirect values but " +
                    std::to_string(load.bounds.size()) + " bounds");
  }
  std::set<std::string> with_indirect = allowed;
  for (size_t k = 0; k < load.operands.size(); ++k) with_indirect.insert(indirect_var(k));
  for (const Expr& e : load.index) check_vars(e, with_indirect, where, what + " index");
  check_vars(load.mask, allowed, where, what + " mask");
  for (const Expr& e : load.bounds) check_vars(e, allowed, where, what + " bound");
}

}  // namespace verify_detail

namespace {

using verify_detail::fail;

/// Buffers written by extern view steps: views that ATen materializes, whose computes
/// inline_producers may have dropped.
std::set<std::string> extern_view_outputs(const LoopProgram& p) {
  std::set<std::string> outputs;
  for (const Step& s : p.steps) {
    if (s.kind == Step::Kind::Extern && s.call.view) {
      outputs.insert(s.call.outputs.begin(), s.call.outputs.end());
    }
  }
  return outputs;
}

void check_buffers(const LoopProgram& p) {
  const std::set<std::string> view_outputs = extern_view_outputs(p);
  std::set<std::string> seen;
  for (const Buffer& b : p.buffers) {
    const std::string where = "buffer " + b.name;
    if (b.name.empty()) fail("buffer", "a buffer has an empty name");
    if (!seen.insert(b.name).second) fail(where, "is declared twice");
    if (b.sizes.size() != b.strides.size()) {
      fail(where, std::to_string(b.sizes.size()) + " sizes but " +
                      std::to_string(b.strides.size()) + " strides");
    }
    const bool graph_value = b.origin == BufferOrigin::Input || b.origin == BufferOrigin::Constant;
    if (graph_value && b.index < 0) {
      fail(where, std::string("is a graph ") + buffer_origin_name(b.origin) + " without an index");
    }
    const bool has_compute = p.computes.count(b.name) > 0;
    if (b.origin == BufferOrigin::Computed && !has_compute && !view_outputs.count(b.name)) {
      fail(where, "is computed but no compute defines it (nor an extern view step)");
    }
    if (b.origin != BufferOrigin::Computed && has_compute) {
      fail(where, std::string("is ") + buffer_origin_name(b.origin) +
                      " but a compute defines it (a compute's buffer is computed)");
    }
  }
  for (const auto& [name, range] : p.symbol_ranges) {
    if (range.lo > range.hi) fail("symbol " + name, "has an empty range");
  }
}

/// Variables index expressions of `c` may use, without the %ind<k> of a particular load.
std::set<std::string> compute_vars(const Compute& c, const LoopProgram& p) {
  std::set<std::string> vars;
  for (size_t k = 0; k < c.ranges.size(); ++k) vars.insert(range_var(k));
  for (size_t k = 0; k < c.reduce_ranges.size(); ++k) vars.insert(reduce_var(k));
  for (const auto& [name, range] : p.symbol_ranges) vars.insert(name);
  return vars;
}

void check_compute_body(const Compute& c, const LoopProgram& p) {
  const std::string where = "compute " + c.name;
  if (!c.body) fail(where, "has no body");
  const std::set<std::string> vars = compute_vars(c, p);
  std::set<std::string> symbols;
  for (const auto& [name, range] : p.symbol_ranges) symbols.insert(name);
  for (const Expr& e : c.ranges) verify_detail::check_vars(e, symbols, where, "range");
  for (const Expr& e : c.reduce_ranges)
    verify_detail::check_vars(e, symbols, where, "reduce range");

  verify_detail::for_each_node(c.body, [&](const ValueNode& n) {
    if (n.kind == ValueKind::Local) {
      fail(where, "reads local " + n.name + " (locals exist only in scheduled kernels)");
    }
    if (n.kind == ValueKind::IndexValue) {
      verify_detail::check_vars(n.index.at(0), vars, where, "index value");
    }
    if (n.kind != ValueKind::Load) return;
    const std::string load = "load of " + n.name;
    if (n.name == c.name) fail(where, "reads its own buffer");
    const Buffer* b = p.find_buffer(n.name);
    if (b == nullptr) fail(where, load + ": unknown buffer");
    if (n.dtype != b->dtype) {
      fail(where,
           load + " as " + dtype_name(n.dtype) + " but the buffer is " + dtype_name(b->dtype));
    }
    if (n.index.size() != b->sizes.size()) {
      fail(where, load + " has " + std::to_string(n.index.size()) +
                      " indices but the buffer has rank " + std::to_string(b->sizes.size()));
    }
    verify_detail::check_load_exprs(n, vars, where);
  });
  if (c.view && c.is_reduction()) fail(where, "is a view but a reduction");
  if (c.is_scan()) {
    if (c.scan_dim >= static_cast<int32_t>(c.ranges.size()) || c.reduce_ranges.size() != 1 ||
        c.reduce_ranges[0] != c.ranges[c.scan_dim])
      fail(where, "is a scan whose one reduce range is not the extent of its scan dim");
    if (c.reduce_op != ReduceOp::sum && c.reduce_op != ReduceOp::prod &&
        c.reduce_op != ReduceOp::max && c.reduce_op != ReduceOp::min)
      fail(where, std::string("is a scan by ") + reduce_op_name(c.reduce_op) + " (sum, prod, max, min only)");
  }
}

void check_computes(const LoopProgram& p) {
  for (const auto& [name, c] : p.computes) {
    const std::string where = "compute " + name;
    if (c.name != name) fail(where, "is filed under the name " + name + " but named " + c.name);
    check_compute_body(c, p);
    const Buffer* b = p.find_buffer(name);
    if (b == nullptr) fail(where, "defines no buffer (no buffer named " + name + ")");
    // A float scan may accumulate wider than its buffer (eager's CPU scans sum float32 in
    // float64): each running value is rounded as it is stored.
    const bool rounded_scan = c.is_scan() && is_floating(c.dtype()) && is_floating(b->dtype);
    if (c.dtype() != b->dtype && !rounded_scan) {
      fail(where, std::string("produces ") + dtype_name(c.dtype()) + " but its buffer is " +
                      dtype_name(b->dtype));
    }
    if (c.ranges.size() != b->sizes.size()) {
      fail(where, "has " + std::to_string(c.ranges.size()) + " ranges but its buffer has rank " +
                      std::to_string(b->sizes.size()));
    }
    for (size_t k = 0; k < c.ranges.size(); ++k) {
      if (c.ranges[k] != b->sizes[k] &&
          !provably_equal(c.ranges[k], b->sizes[k], p.symbol_ranges)) {
        fail(where, "range " + std::to_string(k) + " is " + to_string(c.ranges[k]) +
                        " but its buffer's size is " + to_string(b->sizes[k]));
      }
    }
  }
}

/// Computes must not depend on themselves, through any chain of reads.
class CycleChecker {
 public:
  explicit CycleChecker(const LoopProgram& p) : p_(p) {}

  void run() {
    for (const auto& [name, c] : p_.computes) visit(name);
  }

 private:
  void visit(const std::string& name) {
    auto it = p_.computes.find(name);
    if (it == p_.computes.end() || done_.count(name)) return;
    for (size_t k = 0; k < path_.size(); ++k) {
      if (path_[k] != name) continue;
      std::string chain;
      for (size_t j = k + 1; j < path_.size(); ++j) chain += path_[j] + " -> ";
      fail("compute " + name, "reads its own buffer through " + chain + name);
    }
    path_.push_back(name);
    for (const std::string& read : buffers_read(it->second.body)) visit(read);
    path_.pop_back();
    done_.insert(name);
  }

  const LoopProgram& p_;
  std::vector<std::string> path_;
  std::set<std::string> done_;
};

/// Walks the steps in order, tracking which buffers hold data.
class StepChecker {
 public:
  explicit StepChecker(const LoopProgram& p) : p_(p) {
    for (const Buffer& b : p.buffers) {
      if (b.origin == BufferOrigin::Input || b.origin == BufferOrigin::Constant) {
        defined_.insert(b.name);
      }
    }
    for (size_t s = 0; s < p.steps.size(); ++s) {
      if (p.steps[s].kind != Step::Kind::Kernel) continue;
      for (const std::string& name : p.steps[s].kernel.computes) stored_.insert(name);
    }
  }

  void run() {
    for (size_t s = 0; s < p_.steps.size(); ++s) {
      const Step& step = p_.steps[s];
      if (step.kind == Step::Kind::Kernel) {
        kernel_step(s, step.kernel);
      } else {
        extern_step(s, step.call);
      }
    }
    for (const std::string& out : p_.outputs) {
      if (out.empty() || defined_.count(out) || pending_view(out, "output " + out)) continue;
      fail("output " + out,
           p_.find_buffer(out) ? "is never materialized by a step" : "is not a buffer");
    }
  }

 private:
  void kernel_step(size_t s, const KernelGroup& group) {
    const std::string where = "step " + std::to_string(s) + " (kernel)";
    for (const std::string& name : group.computes) {
      auto it = p_.computes.find(name);
      if (it == p_.computes.end()) fail(where, name + " is not a compute");
      if (it->second.view) fail(where, "stores view " + name + " (views are never stored)");
      if (defined_.count(name)) fail(where, "stores " + name + ", already written before");
      check_reads(it->second, where);
      defined_.insert(name);
    }
  }

  /// What `c` reads must hold data, or be computes inlined (recursively) from data.
  void check_reads(const Compute& c, const std::string& where) {
    for (const std::string& read : buffers_read(c.body)) {
      if (defined_.count(read) || inlinable_.count(read)) continue;
      auto it = p_.computes.find(read);
      if (it == p_.computes.end() || stored_.count(read)) {
        fail(where, c.name + " reads " + read + " before it is defined");
      }
      check_reads(it->second, where);
      inlinable_.insert(read);  // stays true: defined_ only grows
    }
  }

  /// A view no step has materialized yet, whose sources hold data: inline_producers turns
  /// it into an extern view step where an extern or the graph output needs it.
  bool pending_view(const std::string& name, const std::string& where) {
    auto it = p_.computes.find(name);
    if (it == p_.computes.end() || !it->second.view || stored_.count(name)) return false;
    check_reads(it->second, where);
    return true;
  }

  void extern_step(size_t s, const ExternCall& call) {
    const std::string where =
        "step " + std::to_string(s) + " (extern node " + std::to_string(call.graph_node) + ")";
    for (const std::string& in : call.inputs) {
      if (in.empty()) fail(where, "has an empty input name");
      if (!p_.find_buffer(in)) fail(where, "reads unknown buffer " + in);
      if (defined_.count(in) || pending_view(in, where)) continue;
      fail(where, "reads " + in + " before it is materialized");
    }
    for (const std::string& out : call.outputs) {
      if (out.empty()) continue;
      const Buffer* b = p_.find_buffer(out);
      if (b == nullptr) fail(where, "writes unknown buffer " + out);
      // An extern view step materializes a view: a computed buffer whose compute is a view
      // (or was dropped once every reader had inlined it).
      auto compute = p_.computes.find(out);
      const bool view = compute == p_.computes.end() || compute->second.view;
      const bool materializes_view = call.view && b->origin == BufferOrigin::Computed && view;
      // A library call running a tile compute stores that compute's (computed) buffer.
      const bool stores_tile =
          call.library && call.library->tile_compute == out && b->origin == BufferOrigin::Computed;
      if (b->origin != BufferOrigin::Extern && !materializes_view && !stores_tile) {
        fail(where, "writes " + out + ", a " + buffer_origin_name(b->origin) +
                        " buffer (externs write extern buffers; extern view steps materialize "
                        "views; library calls their tile compute's)");
      }
      if (!defined_.insert(out).second) fail(where, "writes " + out + ", already written before");
    }
    verify_detail::check_library_call(p_, call, where);
  }

  const LoopProgram& p_;
  std::set<std::string> defined_;    ///< buffers holding data at this point
  std::set<std::string> stored_;     ///< computes some kernel step stores
  std::set<std::string> inlinable_;  ///< inlined computes whose reads all hold data
};

}  // namespace

void verify(const LoopProgram& program) {
  check_buffers(program);
  check_computes(program);
  CycleChecker(program).run();
  StepChecker(program).run();
}

}  // namespace inductor_cpp::ir
