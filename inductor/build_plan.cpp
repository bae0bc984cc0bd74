/// \file
/// Slot assignment, ATen steps and lifetimes (see build_plan.h).
#include "inductor/build_plan.h"

#include <limits>
#include <map>

#include "inductor/graph_json.h"

namespace inductor_cpp::inductor {

using ir::Arg;
using runtime::PlanArg;

namespace {

constexpr int32_t kLivesForever = std::numeric_limits<int32_t>::max();

/// Maps every value of the graph to a slot; node outputs nobody reads get none.
class SlotTable {
 public:
  explicit SlotTable(const ir::Graph& g) : graph_(g) {
    next_ = static_cast<int32_t>(g.inputs.size() + g.constants.size());
    for (size_t n = 0; n < g.nodes.size(); ++n) {
      for (const Arg& a : g.nodes[n].args) reserve(a);
      for (const auto& kw : g.nodes[n].kwargs) reserve(kw.second);
    }
    for (const Arg& a : g.outputs) reserve(a);
  }

  int32_t slot_of(const Arg& a) const {
    switch (a.kind) {
      case Arg::Kind::Input:
        return static_cast<int32_t>(a.index);
      case Arg::Kind::Constant:
        return static_cast<int32_t>(graph_.inputs.size() + a.index);
      case Arg::Kind::Value: {
        auto it = node_slots_.find({a.index, a.output});
        return it == node_slots_.end() ? -1 : it->second;
      }
      default:
        return -1;
    }
  }

  int32_t num_slots() const { return next_; }

 private:
  void reserve(const Arg& a) {
    if (a.kind == Arg::Kind::List) {
      for (const Arg& item : a.items) reserve(item);
      return;
    }
    if (a.kind != Arg::Kind::Value) return;
    auto [it, inserted] = node_slots_.try_emplace({a.index, a.output}, next_);
    if (inserted) ++next_;
  }

  const ir::Graph& graph_;
  std::map<std::pair<int64_t, int64_t>, int32_t> node_slots_;
  int32_t next_ = 0;
};

PlanArg to_plan_arg(const Arg& a, const SlotTable& slots) {
  if (a.is_tensor_ref()) return PlanArg::of_slot(slots.slot_of(a));
  if (a.kind == Arg::Kind::List) {
    std::vector<PlanArg> items;
    for (const Arg& item : a.items) items.push_back(to_plan_arg(item, slots));
    return PlanArg::of_list(std::move(items));
  }
  return PlanArg::of_literal(arg_to_json(a));
}

void note_uses(const PlanArg& a, int32_t step, std::vector<int32_t>& last_use) {
  if (a.kind == PlanArg::Kind::Slot) {
    if (last_use[a.slot] != kLivesForever) last_use[a.slot] = std::max(last_use[a.slot], step);
    return;
  }
  for (const PlanArg& item : a.items) note_uses(item, step, last_use);
}

void mark_forever(const PlanArg& a, std::vector<int32_t>& last_use) {
  if (a.kind == PlanArg::Kind::Slot) last_use[a.slot] = kLivesForever;
  for (const PlanArg& item : a.items) mark_forever(item, last_use);
}

}  // namespace

PlanBuild build_plan(const ir::Graph& g) {
  SlotTable slots(g);
  PlanBuild out;
  runtime::Plan& plan = out.plan;
  plan.num_inputs = static_cast<int32_t>(g.inputs.size());
  plan.num_constants = static_cast<int32_t>(g.constants.size());
  plan.num_slots = slots.num_slots();

  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const ir::Node& node = g.nodes[n];
    runtime::Step step;
    step.node = static_cast<int32_t>(n);
    step.call.op = node.op;
    for (const Arg& a : node.args) step.call.args.push_back(to_plan_arg(a, slots));
    for (const auto& [name, a] : node.kwargs)
      step.call.kwargs.emplace_back(name, to_plan_arg(a, slots));
    for (size_t k = 0; k < node.outputs.size(); ++k)
      step.call.outs.push_back(
          slots.slot_of(Arg::value(static_cast<int64_t>(n), static_cast<int64_t>(k))));
    plan.steps.push_back(std::move(step));
    out.decisions.push_back(
        {static_cast<int32_t>(n), false, "no generated kernel for this op yet"});
    ++plan.ops_fallback;
  }
  for (const Arg& a : g.outputs) plan.outputs.push_back(to_plan_arg(a, slots));

  // Lifetimes: a slot dies after the last step that reads it, unless a graph output holds it.
  std::vector<int32_t> last_use(plan.num_slots, -1);
  for (const PlanArg& a : plan.outputs) mark_forever(a, last_use);
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const auto step = static_cast<int32_t>(s);
    for (const PlanArg& a : plan.steps[s].call.args) note_uses(a, step, last_use);
    for (const auto& kw : plan.steps[s].call.kwargs) note_uses(kw.second, step, last_use);
  }
  for (int32_t slot = 0; slot < plan.num_slots; ++slot) {
    const int32_t last = last_use[slot];
    if (last == kLivesForever) continue;
    if (last >= 0) {
      plan.steps[last].free_after.push_back(slot);
    } else if (slot < plan.num_inputs + plan.num_constants) {
      plan.free_at_start.push_back(slot);
    }
  }
  return out;
}

}  // namespace inductor_cpp::inductor
