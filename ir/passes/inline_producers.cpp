/// \file
/// Substitutes views and cheap or single-use pointwise producers into their readers.
#include "ir/passes/inline_producers.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

#include "ir/passes/program_queries.h"
#include "ir/simplify.h"

namespace inductor_cpp::ir {

namespace {

/// The name an indirect value of the reader's load takes while it is moved into the
/// producer's loads (where "%ind<k>" already means the producer's own indirect values).
std::string outer_indirect(size_t k) { return "%outer" + std::to_string(k); }

/// `producer`'s body evaluated at `at` (the reader's load). The reader's mask is ANDed into
/// every inlined load: where it is off they must not read either, and what the producer then
/// yields does not matter (readers of masked loads select another value). The reader's
/// indirect values (gather/index) move into the inlined loads that use them, renumbered after
/// those loads' own, bounds checks included.
Value substitute_producer(const Compute& producer, const Value& body, const Value& at) {
  const size_t n_outer = at->operands.size();
  std::map<std::string, Expr> rename_outer;
  for (size_t k = 0; k < n_outer; ++k) rename_outer["%ind" + std::to_string(k)] = Expr::var(outer_indirect(k));
  std::map<std::string, Expr> vars;
  for (size_t k = 0; k < producer.ranges.size(); ++k) vars[range_var(k)] = substitute(at->index.at(k), rename_outer);
  const Expr mask = substitute(at->mask, rename_outer);
  Value moved = map_indices(body, [&](const Expr& e) { return substitute(e, vars); });
  if (n_outer == 0 && mask == Expr(1)) return moved;
  return replace_loads(moved, [&](const Value& l) -> Value {
    // Every inlined load takes the reader's indirect values, used or not: their bounds checks
    // must survive even when the producer ignores the indexed dimension (a broadcast).
    const bool uses_outer = n_outer > 0;
    std::vector<Value> operands = l->operands;
    std::vector<Expr> bounds = l->bounds;
    std::map<std::string, Expr> to_local;
    if (uses_outer) {
      for (size_t k = 0; k < n_outer; ++k) {
        to_local[outer_indirect(k)] = Expr::var("%ind" + std::to_string(operands.size()));
        operands.push_back(at->operands[k]);
        bounds.push_back(at->bounds.at(k));
      }
    }
    std::vector<Expr> index;
    for (const Expr& e : l->index) index.push_back(substitute(e, to_local));
    return load(l->name, l->dtype, index, substitute(mask * l->mask, to_local), operands, bounds);
  });
}

/// Whether `name`, with the producers it reads inlined (those not in `realized`), can be
/// inlined into a load through indirect indices: its value must come from loads (which take
/// the indirect values and their bounds checks over), never from an index value (which
/// cannot hold a run-time index).
bool inlinable_under_indirection(const LoopProgram& p, const std::string& name, const std::set<std::string>& realized) {
  bool has_load = false, has_index_value = false;
  std::set<const ValueNode*> seen;
  std::set<std::string> visited;
  std::function<void(const std::string&)> visit_compute;
  std::function<void(const Value&)> walk = [&](const Value& v) {
    if (!seen.insert(v.node()).second) return;
    if (v->kind == ValueKind::IndexValue) has_index_value = true;
    if (v->kind == ValueKind::Load) {
      auto it = p.computes.find(v->name);
      if (it == p.computes.end() || realized.count(v->name)) {
        has_load = true;
      } else {
        visit_compute(v->name);
      }
    }
    for (const Value& o : v->operands) walk(o);
  };
  visit_compute = [&](const std::string& c) {
    if (visited.insert(c).second) walk(p.computes.at(c).body);
  };
  visit_compute(name);
  return has_load && !has_index_value;
}

/// Elements of a buffer, or nullopt when a size is symbolic.
std::optional<int64_t> static_numel(const Buffer& b) {
  int64_t n = 1;
  for (const Expr& e : b.sizes) {
    if (!e.is_const()) return std::nullopt;
    n *= e.value();
  }
  return n;
}

/// Points a compute iterates over (outer times reduction), or 0 when a range is symbolic.
int64_t iteration_count(const Compute& c) {
  int64_t n = 1;
  for (const std::vector<Expr>* ranges : {&c.ranges, &c.reduce_ranges}) {
    for (const Expr& e : *ranges) {
      if (!e.is_const()) return 0;
      n *= e.value();
    }
  }
  return n;
}

/// The most points any generated reader of `name` iterates over, looking through views (a
/// view is inlined into its readers).
int64_t reader_iterations(const LoopProgram& p,
                          const std::map<std::string, std::set<std::string>>& readers,
                          const std::string& name, int depth = 0) {
  auto it = readers.find(name);
  if (it == readers.end() || depth > 32) return 0;
  int64_t most = 0;
  for (const std::string& r : it->second) {
    const Compute& reader = p.computes.at(r);
    most = std::max(most, reader.view ? reader_iterations(p, readers, r, depth + 1)
                                      : iteration_count(reader));
  }
  return most;
}

/// How many distinct loads of each buffer the computes' bodies hold: a producer that one
/// reader loads at four window positions (max_pool2d's backward gathering from the pooled
/// gradient) is evaluated four times per reader point when inlined.
std::map<std::string, int64_t> load_sites(const LoopProgram& p) {
  std::map<std::string, int64_t> sites;
  for (const auto& [name, c] : p.computes) {
    for (const Value& l : loads_in(c.body)) ++sites[l->name];
  }
  return sites;
}

/// Which computes stay in memory (non-views only).
std::set<std::string> choose_realized(const LoopProgram& p, const std::set<std::string>& needed,
                                      const InlineOptions& options) {
  const auto readers = compute_readers(p);
  const auto sites = load_sites(p);
  std::set<std::string> realized;
  // Nodes of each body with the producers it carries inlined, in definition order (producers
  // first), each distinct producer counted once.
  std::map<std::string, int64_t> expanded;
  std::set<std::string> gathers;  // bodies that, with what they carry, load through indices
  // Buffers of at least a compute's size that its body, with what it carries, reads.
  std::map<std::string, std::set<std::string>> streams;
  for (const Buffer& b : p.buffers) {
    auto found = p.computes.find(b.name);
    if (found == p.computes.end()) continue;
    const auto& [name, c] = *found;
    int64_t size = node_count(c.body);
    bool gather = false;
    std::set<std::string>& mine = streams[name];
    for (const Value& l : loads_in(c.body)) gather = gather || !l->operands.empty();
    for (const std::string& src : buffers_read(c.body)) {
      auto e = expanded.find(src);
      if (e == expanded.end() || realized.count(src)) {
        if (const std::optional<int64_t> n = static_numel(p.buffer(src)); n && *n >= iteration_count(c) && *n > 1)
          mine.insert(src);
        continue;
      }
      size += e->second;
      gather = gather || gathers.count(src);
      mine.insert(streams[src].begin(), streams[src].end());
    }
    expanded[name] = size;
    if (gather) gathers.insert(name);
    if (c.view) continue;
    auto it = readers.find(name);
    const size_t reader_count = it == readers.end() ? 0 : it->second.size();
    const bool shared_and_large =
        reader_count > 1 && (node_count(c.body) > options.max_shared_inline_nodes ||
                             size > options.max_shared_inline_expanded_nodes);
    // Loaded at several indices by one reader: inlined, all it carries is evaluated per load.
    const auto site_count = sites.find(name);
    const bool gathered_and_large = site_count != sites.end() &&
                                    site_count->second > static_cast<int64_t>(reader_count) &&
                                    size > options.max_shared_inline_nodes;
    const int64_t points = iteration_count(c);
    const bool broadcast_and_large =
        (size >= options.broadcast_realize_min_nodes || gather) && points > 1 &&
        reader_iterations(p, readers, name) >= options.broadcast_realize_factor * points;
    const int64_t s = static_cast<int64_t>(mine.size()), r = static_cast<int64_t>(reader_count);
    const bool streams_cost_more = options.realize_by_streams && r > 1 && r * s > s + 1 + r;
    if (c.is_reduction() || needed.count(name) || shared_and_large || gathered_and_large ||
        broadcast_and_large || streams_cost_more)
      realized.insert(name);
  }
  if (expanded.size() != p.computes.size())
    throw std::logic_error("inline_producers: a compute without a buffer");
  // Producers read through indirect indices that cannot take the indices over stay in memory
  // (to a fixed point: realizing one changes what the others inline).
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& [name, c] : p.computes) {
      for (const Value& l : loads_in(c.body)) {
        auto it = p.computes.find(l->name);
        if (it == p.computes.end() || l->operands.empty() || realized.count(l->name)) continue;
        if (inlinable_under_indirection(p, l->name, realized)) continue;
        // A view is never realized itself: its first non-view sources are.
        std::vector<std::string> pending{l->name};
        while (!pending.empty()) {
          const std::string n = pending.back();
          pending.pop_back();
          const Compute& target = p.computes.at(n);
          if (!target.view) {
            changed = realized.insert(n).second || changed;
            continue;
          }
          for (const std::string& src : buffers_read(target.body)) {
            if (p.computes.count(src) && !realized.count(src)) pending.push_back(src);
          }
        }
      }
    }
  }
  return realized;
}

}  // namespace

LoopProgram inline_producers(const LoopProgram& program, const InlineOptions& options) {
  std::set<std::string> needed = buffers_needed_in_memory(program);
  const std::set<std::string> views = views_to_materialize(program, needed);
  const std::set<std::string> realized = choose_realized(program, needed, options);

  std::map<std::string, Value> inlined;  // compute -> body with its producers inlined
  std::map<std::string, std::set<int32_t>> sources;  // compute -> graph nodes inlined into it
  std::function<Value(const std::string&)> body_of = [&](const std::string& name) -> Value {
    auto done = inlined.find(name);
    if (done != inlined.end()) return done->second;
    const Compute& c = program.computes.at(name);
    std::set<int32_t>& mine = sources[name];
    mine.insert(c.inlined_nodes.begin(), c.inlined_nodes.end());
    Value body = replace_loads(c.body, [&](const Value& l) -> Value {
      auto it = program.computes.find(l->name);
      if (it == program.computes.end() || realized.count(l->name)) return Value();
      Value substituted = substitute_producer(it->second, body_of(l->name), l);
      if (it->second.graph_node >= 0) mine.insert(it->second.graph_node);
      mine.insert(sources[l->name].begin(), sources[l->name].end());
      return substituted;
    });
    const RangeMap ranges = ranges_of(c, program);
    body = map_indices(body, [&](const Expr& e) { return simplify(e, ranges); });
    inlined.emplace(name, body);
    return body;
  };

  LoopProgram out = program;
  for (auto& [name, c] : out.computes) {
    c.body = body_of(name);
    sources[name].erase(c.graph_node);
    c.inlined_nodes.assign(sources[name].begin(), sources[name].end());
  }

  // Kernel steps keep only realized computes; extern view steps materialize needed views.
  std::set<std::string> materialized;
  std::vector<Step> steps;
  std::function<void(const std::string&)> materialize = [&](const std::string& name) {
    if (!views.count(name) || materialized.count(name)) return;
    const Compute& v = program.computes.at(name);
    const std::set<std::string> sources = buffers_read(v.body);
    for (const std::string& src : sources) materialize(src);
    materialized.insert(name);
    Step s;
    s.kind = Step::Kind::Extern;
    s.call.graph_node = v.graph_node;
    s.call.inputs.assign(sources.begin(), sources.end());
    s.call.outputs = {name};
    s.call.view = true;
    steps.push_back(std::move(s));
  };
  for (const Step& s : program.steps) {
    if (s.kind == Step::Kind::Extern) {
      for (const std::string& in : s.call.inputs) materialize(in);
      steps.push_back(s);
      continue;
    }
    Step kept = s;
    kept.kernel.computes.clear();
    for (const std::string& c : s.kernel.computes) {
      if (realized.count(c)) kept.kernel.computes.push_back(c);
    }
    if (!kept.kernel.computes.empty()) steps.push_back(std::move(kept));
  }
  for (const std::string& o : program.outputs) materialize(o);
  out.steps = std::move(steps);
  // Generated readers have inlined every view; the ones left are made by ATen now.
  for (const std::string& v : materialized) out.computes.erase(v);
  return out;
}

}  // namespace inductor_cpp::ir
