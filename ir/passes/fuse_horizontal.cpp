/// \file
/// Concatenates independent consecutive kernels (see fuse_horizontal.h).
#include "ir/passes/fuse_horizontal.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

namespace inductor_cpp::ir {

namespace {

bool intersects(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  for (const std::string& x : a) {
    if (std::find(b.begin(), b.end(), x) != b.end()) return true;
  }
  return false;
}

/// `v` with every local read renamed through `names` (names absent from it stay).
class LocalRenamer {
 public:
  explicit LocalRenamer(const std::map<std::string, std::string>& names) : names_(names) {}

  Value value(const Value& v) {
    if (!v) return v;
    auto hit = done_.find(v);
    if (hit != done_.end()) return hit->second;
    std::vector<Value> ops;
    for (const Value& o : v->operands) ops.push_back(value(o));
    Value out = v;
    switch (v->kind) {
      case ValueKind::Local:
        out = local(name(v->name), v->dtype);
        break;
      case ValueKind::Load:
        out = load(v->name, v->dtype, v->index, v->mask, ops, v->bounds);
        break;
      case ValueKind::Unary:
        out = unary(v->unary_op(), ops[0]);
        break;
      case ValueKind::Binary:
        out = binary(v->binary_op(), ops[0], ops[1]);
        break;
      case ValueKind::Where:
        out = where(ops[0], ops[1], ops[2]);
        break;
      case ValueKind::Cast:
        out = cast(ops[0], v->dtype);
        break;
      default:
        break;  // constants and index values read no local
    }
    done_.emplace(v, out);
    return out;
  }

  std::vector<Stmt> stmts(const std::vector<Stmt>& in) {
    std::vector<Stmt> out = in;
    for (Stmt& s : out) {
      if (s.kind == StmtKind::Let || s.kind == StmtKind::DefineAccumulator || s.kind == StmtKind::Accumulate) {
        s.name = name(s.name);
      }
      s.value = value(s.value);
      s.body = stmts(s.body);
    }
    return out;
  }

 private:
  std::string name(const std::string& n) const {
    auto it = names_.find(n);
    return it == names_.end() ? n : it->second;
  }
  const std::map<std::string, std::string>& names_;
  std::unordered_map<Value, Value> done_;
};

void collect_locals(const std::vector<Stmt>& stmts, std::set<std::string>& out) {
  for (const Stmt& s : stmts) {
    if (s.kind == StmtKind::Let || s.kind == StmtKind::DefineAccumulator) out.insert(s.name);
    collect_locals(s.body, out);
  }
}

/// Iterations of all loops of the kernel (static extents; a symbolic one counts as large).
int64_t work_of(const std::vector<Stmt>& stmts, int64_t outer = 1) {
  int64_t total = 0;
  for (const Stmt& s : stmts) {
    if (s.kind != StmtKind::For) continue;
    const int64_t n = s.extent.is_const() ? s.extent.value() : (int64_t{1} << 40);
    total += outer * n + work_of(s.body, outer * n);
  }
  return total;
}

/// Appends `next` to `into` (the checks are the caller's).
void append_kernel(ScheduledStep& into, const ScheduledStep& next) {
  std::set<std::string> taken;
  collect_locals(into.kernel.body, taken);
  std::set<std::string> theirs;
  collect_locals(next.kernel.body, theirs);
  std::map<std::string, std::string> renames;
  for (const std::string& n : theirs) {
    if (!taken.count(n)) continue;
    std::string fresh;
    for (int k = 0;; ++k) {
      fresh = n + "_h" + std::to_string(k);
      if (!taken.count(fresh) && !theirs.count(fresh)) break;
    }
    renames[n] = fresh;
    taken.insert(fresh);
  }
  LocalRenamer renamer(renames);
  for (Stmt& s : renamer.stmts(next.kernel.body)) into.kernel.body.push_back(std::move(s));
  for (const KernelParam& p : next.kernel.params) {
    auto same = std::find_if(into.kernel.params.begin(), into.kernel.params.end(),
                             [&](const KernelParam& q) { return q.buffer == p.buffer; });
    if (same == into.kernel.params.end()) {
      into.kernel.params.push_back(p);
    } else {
      same->written = same->written || p.written;
    }
  }
  for (const std::string& sym : next.kernel.symbols) {
    if (std::find(into.kernel.symbols.begin(), into.kernel.symbols.end(), sym) == into.kernel.symbols.end()) {
      into.kernel.symbols.push_back(sym);
    }
  }
  // `writes` is in parameter order (schedule.h).
  into.writes.clear();
  for (const KernelParam& p : into.kernel.params) {
    if (p.written) into.writes.push_back(p.buffer);
  }
  for (const std::string& r : next.reads) {
    if (std::find(into.reads.begin(), into.reads.end(), r) == into.reads.end()) into.reads.push_back(r);
  }
  into.graph_nodes.insert(into.graph_nodes.end(), next.graph_nodes.begin(), next.graph_nodes.end());
}

}  // namespace

ScheduledProgram fuse_horizontal(const ScheduledProgram& program, const HorizontalFusionOptions& options) {
  ScheduledProgram out;
  out.buffers = program.buffers;
  out.outputs = program.outputs;
  size_t nests_in_last = 0;
  auto small = [&](const ScheduledStep& s) {
    return options.max_work == 0 || work_of(s.kernel.body) <= options.max_work;
  };
  for (const ScheduledStep& step : program.steps) {
    const bool can_join = step.kind == ScheduledStep::Kind::Kernel && !out.steps.empty() &&
                          out.steps.back().kind == ScheduledStep::Kind::Kernel && small(step) &&
                          small(out.steps.back()) && nests_in_last < options.max_kernels;
    if (can_join) {
      const ScheduledStep& last = out.steps.back();
      const bool independent = !intersects(step.reads, last.writes) && !intersects(step.writes, last.reads) &&
                               !intersects(step.writes, last.writes);
      if (independent) {
        append_kernel(out.steps.back(), step);
        ++nests_in_last;
        continue;
      }
    }
    out.steps.push_back(step);
    nests_in_last = 1;
  }
  return out;
}

}  // namespace inductor_cpp::ir
