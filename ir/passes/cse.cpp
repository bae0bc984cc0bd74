/// \file
/// Merges computes with equal definitions, in step order (so the survivor is defined first).
#include "ir/passes/cse.h"

#include <map>
#include <set>
#include <tuple>

#include "ir/passes/program_queries.h"

namespace inductor_cpp::ir {

namespace {

/// What makes two computes interchangeable (not the name, not the graph node).
struct Definition {
  std::vector<Expr> ranges;
  std::vector<Expr> reduce_ranges;
  ReduceOp reduce_op;
  Value body;
  bool view;
  bool operator<(const Definition& o) const {
    auto key = [](const Definition& d) {
      return std::make_tuple(d.ranges, d.reduce_ranges, d.reduce_op, d.body.node(), d.view);
    };
    return key(*this) < key(o);
  }
};

/// Computes in definition order: kernel steps first-come, then views (which have no step).
std::vector<std::string> definition_order(const LoopProgram& p) {
  std::vector<std::string> order;
  std::set<std::string> seen;
  for (const Buffer& b : p.buffers) {
    if (p.computes.count(b.name) && seen.insert(b.name).second) order.push_back(b.name);
  }
  for (const auto& [name, c] : p.computes) {
    if (seen.insert(name).second) order.push_back(name);
  }
  return order;
}

Value rename_loads(const Value& body, const std::map<std::string, std::string>& renamed) {
  return replace_loads(body, [&](const Value& l) -> Value {
    auto it = renamed.find(l->name);
    if (it == renamed.end()) return Value();
    return load(it->second, l->dtype, l->index, l->mask, l->operands, l->bounds);
  });
}

}  // namespace

LoopProgram eliminate_common_subexpressions(const LoopProgram& program) {
  // Neither what an extern step reads nor what a view ATen materializes reads may be renamed:
  // those steps find their inputs by graph value.
  std::set<std::string> pinned = buffers_needed_in_memory(program);
  views_to_materialize(program, pinned);
  std::map<Definition, std::string> first;
  std::map<std::string, std::string> renamed;
  std::map<std::string, Compute> computes;
  const std::vector<std::string> order = definition_order(program);
  const std::set<std::string> tiles = tile_computes(program);
  for (const std::string& name : order) {
    Compute c = program.computes.at(name);
    c.body = rename_loads(c.body, renamed);  // definitions come before uses in this order
    if (tiles.count(name)) {
      // A library call names it: it can neither go nor stand in for another compute, which
      // would make readers of that one read the library call's output.
      computes.emplace(name, std::move(c));
      continue;
    }
    const Definition def{c.ranges, c.reduce_ranges, c.reduce_op, c.body, c.view};
    auto [it, inserted] = first.emplace(def, name);
    const bool same_type = !inserted && program.computes.at(it->second).dtype() == c.dtype();
    if (!inserted && same_type && !pinned.count(name)) {
      renamed[name] = it->second;
      continue;
    }
    computes.emplace(name, std::move(c));
  }
  if (renamed.empty()) return program;
  LoopProgram out = with_computes(program, std::move(computes));
  // Rename again in case a reader came before its (renamed) producer in `order`.
  for (auto& [name, c] : out.computes) c.body = rename_loads(c.body, renamed);
  for (Step& s : out.steps) {
    if (s.kind == Step::Kind::Extern) {
      for (std::string& in : s.call.inputs) {
        if (renamed.count(in)) in = renamed.at(in);
      }
      if (s.call.library) s.call.library = ir::renamed(*s.call.library, renamed);
      continue;
    }
    std::vector<std::string> kept;
    for (const std::string& c : s.kernel.computes) {
      if (!renamed.count(c)) kept.push_back(c);
    }
    s.kernel.computes = kept;
  }
  std::vector<Step> steps;
  for (Step& s : out.steps) {
    if (s.kind == Step::Kind::Extern || !s.kernel.computes.empty()) steps.push_back(std::move(s));
  }
  out.steps = std::move(steps);
  std::vector<Buffer> buffers;
  for (const Buffer& b : out.buffers) {
    if (!renamed.count(b.name)) buffers.push_back(b);
  }
  out.buffers = std::move(buffers);
  return out;
}

}  // namespace inductor_cpp::ir
