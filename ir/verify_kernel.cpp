/// \file
/// Verifier of scheduled kernels (the rules are listed in ir/verify.h): walks the statement
/// tree keeping the loop variables and locals in scope, so every message can say which
/// statement, inside which loops, broke which rule.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/verify.h"
#include "ir/verify_internal.h"

namespace inductor_cpp::ir {
namespace {

using verify_detail::fail;

struct LocalInfo {
  bool accumulator = false;
  DType read_type = DType::Float32;   ///< what local(name, type) must say
  DType value_type = DType::Float32;  ///< accumulators: what Accumulate must add
};

std::string describe(const Stmt& s) {
  switch (s.kind) {
    case StmtKind::For:
      return "for " + s.var;
    case StmtKind::Let:
      return "let " + s.name;
    case StmtKind::DefineAccumulator:
      return "accumulator " + s.name;
    case StmtKind::Accumulate:
      return s.name + " +=";
    case StmtKind::Store:
      return "store " + s.buffer + "[" + to_string(s.index) + "]";
  }
  return "?";
}

class KernelChecker {
 public:
  explicit KernelChecker(const Kernel& k) : k_(k) {
    for (const KernelParam& p : k.params) {
      if (!params_.emplace(p.buffer, &p).second) fail(where(), "param " + p.buffer + " twice");
    }
    for (const std::string& s : k.symbols) {
      if (!vars_.insert(s).second) fail(where(), "symbol " + s + " twice");
    }
  }

  void run() {
    scopes_.emplace_back();
    block(k_.body);
  }

 private:
  std::string where() const {
    std::string w = "kernel " + k_.name;
    for (const std::string& step : path_) w += " > " + step;
    return w;
  }

  void block(const std::vector<Stmt>& body) {
    for (const Stmt& s : body) {
      path_.push_back(describe(s));
      statement(s);
      path_.pop_back();
    }
  }

  void statement(const Stmt& s) {
    switch (s.kind) {
      case StmtKind::For:
        return loop(s);
      case StmtKind::Let:
        value(s.value);
        return define(s.name, {false, s.value->dtype, s.value->dtype});
      case StmtKind::DefineAccumulator:
        return define(s.name, {true, reduce_result_type(s.reduce_op, s.dtype), s.dtype});
      case StmtKind::Accumulate:
        return accumulate(s);
      case StmtKind::Store:
        return store(s);
    }
  }

  void loop(const Stmt& s) {
    if (s.var.empty()) fail(where(), "loop without a variable");
    if (vars_.count(s.var)) fail(where(), "reuses " + s.var + ", already bound around it");
    verify_detail::check_vars(s.extent, vars_, where(), "extent");
    if (s.vector_width < 0 || s.chunk < 0) fail(where(), "negative vector width or chunk");
    if (s.gpu_threads < 0) fail(where(), "negative gpu thread count");
    if (s.parallel && parallel_depth_ > 0) fail(where(), "parallel loop inside a parallel loop");
    vars_.insert(s.var);
    parallel_depth_ += s.parallel ? 1 : 0;
    scopes_.emplace_back();
    block(s.body);
    scopes_.pop_back();
    parallel_depth_ -= s.parallel ? 1 : 0;
    vars_.erase(s.var);
  }

  void define(const std::string& name, LocalInfo info) {
    if (name.empty()) fail(where(), "defines a local without a name");
    if (find_local(name)) fail(where(), "redefines " + name + ", still in scope");
    scopes_.back().emplace(name, info);
  }

  void accumulate(const Stmt& s) {
    value(s.value);
    const LocalInfo* acc = find_local(s.name);
    if (acc == nullptr) fail(where(), "accumulates into " + s.name + ", not defined before");
    if (!acc->accumulator) fail(where(), s.name + " is a let, not an accumulator");
    if (s.value->dtype != acc->value_type) {
      fail(where(), std::string("adds ") + dtype_name(s.value->dtype) + " to a " +
                        dtype_name(acc->value_type) + " accumulator");
    }
    verify_detail::check_vars(s.index, vars_, where(), "reduction position");
  }

  void store(const Stmt& s) {
    value(s.value);
    auto it = params_.find(s.buffer);
    if (it == params_.end()) fail(where(), "stores to " + s.buffer + ", not a kernel param");
    const KernelParam& p = *it->second;
    if (!p.written) fail(where(), "stores to " + s.buffer + ", a param marked in (read-only)");
    if (s.value->dtype != p.dtype) {
      fail(where(), std::string("stores ") + dtype_name(s.value->dtype) + " into " + s.buffer +
                        " of " + dtype_name(p.dtype));
    }
    verify_detail::check_vars(s.index, vars_, where(), "store index");
  }

  void value(const Value& v) {
    if (!v) fail(where(), "has no value");
    verify_detail::for_each_node(v, [&](const ValueNode& n) {
      if (n.kind == ValueKind::IndexValue) {
        verify_detail::check_vars(n.index.at(0), vars_, where(), "index value");
      } else if (n.kind == ValueKind::Local) {
        const LocalInfo* info = find_local(n.name);
        if (info == nullptr) fail(where(), "reads local " + n.name + " before its definition");
        if (info->read_type != n.dtype) {
          fail(where(), "reads " + n.name + " as " + dtype_name(n.dtype) + " but it is " +
                            dtype_name(info->read_type));
        }
      } else if (n.kind == ValueKind::Load) {
        load(n);
      }
    });
  }

  void load(const ValueNode& n) {
    auto it = params_.find(n.name);
    if (it == params_.end()) fail(where(), "loads from " + n.name + ", not a kernel param");
    if (n.dtype != it->second->dtype) {
      fail(where(), "load of " + n.name + " as " + dtype_name(n.dtype) + " but the param is " +
                        dtype_name(it->second->dtype));
    }
    if (n.index.size() != 1) {
      fail(where(), "load of " + n.name + " has " + std::to_string(n.index.size()) +
                        " indices (kernels index by one element offset)");
    }
    verify_detail::check_load_exprs(n, vars_, where());
  }

  const LocalInfo* find_local(const std::string& name) const {
    for (auto scope = scopes_.rbegin(); scope != scopes_.rend(); ++scope) {
      auto it = scope->find(name);
      if (it != scope->end()) return &it->second;
    }
    return nullptr;
  }

  const Kernel& k_;
  std::map<std::string, const KernelParam*> params_;
  std::set<std::string> vars_;  ///< symbols and enclosing loop variables
  std::vector<std::map<std::string, LocalInfo>> scopes_;
  std::vector<std::string> path_;
  int parallel_depth_ = 0;
};

}  // namespace

void verify(const Kernel& kernel) {
  KernelChecker(kernel).run();
}

}  // namespace inductor_cpp::ir
