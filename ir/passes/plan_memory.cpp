/// \file
/// Lifetimes and storage reuse for kernel-allocated buffers.
#include "ir/passes/plan_memory.h"

#include <functional>
#include <optional>
#include <set>
#include <sstream>

namespace inductor_cpp::ir {

namespace {

std::optional<int64_t> static_bytes(const Buffer& b) {
  // Storage span: 1 + sum (size-1)*stride, in elements.
  int64_t span = 1;
  for (size_t k = 0; k < b.sizes.size(); ++k) {
    if (!b.sizes[k].is_const() || !b.strides[k].is_const()) return std::nullopt;
    if (b.sizes[k].value() == 0) return 0;
    span += (b.sizes[k].value() - 1) * b.strides[k].value();
  }
  return span * dtype_size(b.dtype);
}

}  // namespace

MemoryPlan plan_memory(const ScheduledProgram& program) {
  MemoryPlan plan;
  std::set<std::string> pinned(program.outputs.begin(), program.outputs.end());
  const std::set<std::string> outputs(program.outputs.begin(), program.outputs.end());
  std::set<std::string> kernel_allocated;
  for (size_t s = 0; s < program.steps.size(); ++s) {
    const ScheduledStep& step = program.steps[s];
    for (const std::string& b : step.reads) plan.last_use[b] = s;
    for (const std::string& b : step.writes) plan.last_use[b] = s;
    if (step.kind == ScheduledStep::Kind::Extern) pinned.insert(step.reads.begin(), step.reads.end());
    if (step.kind == ScheduledStep::Kind::Kernel) kernel_allocated.insert(step.writes.begin(), step.writes.end());
  }
  for (const std::string& o : program.outputs) plan.last_use.erase(o);

  std::multimap<int64_t, std::string> free_pool;  // bytes -> dead reusable buffer
  std::set<std::string> taken;
  for (size_t s = 0; s < program.steps.size(); ++s) {
    const ScheduledStep& step = program.steps[s];
    if (step.kind == ScheduledStep::Kind::Kernel) {
      for (const std::string& w : step.writes) {
        const Buffer& wb = program.buffer(w);
        const auto need = static_bytes(wb);
        if (!need || *need == 0) continue;
        // In place: a buffer dying here, read only where this one is written.
        for (const std::string& r : step.reads) {
          if (plan.last_use.count(r) && plan.last_use[r] == s && kernel_allocated.count(r) && !pinned.count(r) &&
              !taken.count(r) && program.buffer(r).dtype == wb.dtype && program.buffer(r).device == wb.device &&
              static_bytes(program.buffer(r)) == need && reads_only_where_written(step.kernel, r, w)) {
            plan.reuse[w] = r;
            taken.insert(r);
            break;
          }
        }
        if (plan.reuse.count(w)) continue;
        // A graph output keeps its storage after the graph returns (saved activations live
        // until the backward): it takes only a storage of its own size, never a larger one.
        const bool outlives_graph = outputs.count(w) > 0;
        for (auto it = free_pool.lower_bound(*need); it != free_pool.end(); ++it) {
          if (outlives_graph && it->first != *need) break;
          const Buffer& cand = program.buffer(it->second);
          if (cand.dtype != wb.dtype || cand.device != wb.device) continue;
          plan.reuse[w] = it->second;
          free_pool.erase(it);
          break;
        }
      }
    }
    // Buffers whose last use is this step become reusable for later steps.
    for (const std::string& b : step.reads) {
      if (plan.last_use.count(b) && plan.last_use[b] == s && kernel_allocated.count(b) && !pinned.count(b) &&
          !taken.count(b)) {
        if (auto bytes = static_bytes(program.buffer(b))) free_pool.emplace(*bytes, b);
        taken.insert(b);
      }
    }
  }
  return plan;
}

bool reads_only_where_written(const Kernel& kernel, const std::string& src, const std::string& dst,
                              const RangeMap& symbol_ranges) {
  RangeMap ranges = symbol_ranges;  // plus the enclosing loops' variables, [0, extent)
  bool ok = true;
  bool stored = false;
  std::optional<Expr> store_index;
  // Each load's offset with the ranges where it sits: it is compared with the store's offset
  // under them (a load in an earlier nest than the store reads before any write anyway).
  std::vector<std::pair<Expr, RangeMap>> loads;
  bool in_accumulate = false;
  std::function<void(const Value&)> walk = [&](const Value& v) {
    if (v->kind == ValueKind::Load && v->name == src) {
      // Masked, indirect, after the store, or read by a reduction (many times per output).
      if (v->mask != Expr(1) || !v->operands.empty() || stored || in_accumulate) ok = false;
      loads.emplace_back(v->index.at(0), ranges);
    }
    for (const Value& o : v->operands) walk(o);
  };
  std::function<void(const std::vector<Stmt>&)> visit = [&](const std::vector<Stmt>& stmts) {
    for (const Stmt& s : stmts) {
      in_accumulate = s.kind == StmtKind::Accumulate;
      if (s.value) walk(s.value);
      in_accumulate = false;
      if (s.kind == StmtKind::Store && s.buffer == dst) {
        if (store_index && !provably_equal(*store_index, s.index, symbol_ranges)) ok = false;
        store_index = s.index;
        stored = true;
      }
      if (s.kind != StmtKind::For) continue;
      const auto outer = ranges.find(s.var);  // a same-named loop outside, restored below
      const std::optional<Interval> saved =
          outer == ranges.end() ? std::nullopt : std::optional<Interval>(outer->second);
      const Interval extent = bounds(s.extent, ranges);
      if (extent.hi >= 1) {
        ranges[s.var] = {0, extent.hi - 1};
      } else {
        ranges.erase(s.var);
      }
      visit(s.body);
      if (saved) {
        ranges[s.var] = *saved;
      } else {
        ranges.erase(s.var);
      }
    }
  };
  visit(kernel.body);
  if (!store_index) return false;
  // Structurally equal, or equal as sums (one may group its terms differently).
  for (const auto& [index, where] : loads) ok = ok && provably_equal(index, *store_index, where);
  return ok;
}

std::string memory_plan_to_text(const MemoryPlan& plan) {
  std::ostringstream out;
  for (const auto& [b, from] : plan.reuse) out << "reuse " << b << " <- " << from << "\n";
  return out.str();
}

}  // namespace inductor_cpp::ir
