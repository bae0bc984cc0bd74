/// \file
/// Kernel metadata: the FLOP estimate and the JSON form stored as kernels.json.
#include "inductor/kernel_info.h"

#include <limits>
#include <map>
#include <set>

#include "ir/simplify.h"

namespace inductor_cpp::inductor {

using nlohmann::json;

namespace {

constexpr int64_t kSaturated = std::numeric_limits<int64_t>::max() / 4;

int64_t saturating_mul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  if (a > kSaturated / b) return kSaturated;
  return a * b;
}

int64_t saturating_add(int64_t a, int64_t b) {
  return a > kSaturated - b ? kSaturated : a + b;
}

bool is_math(const ir::ValueNode& n) {
  return n.kind == ir::ValueKind::Unary || n.kind == ir::ValueKind::Binary ||
         n.kind == ir::ValueKind::Where;
}

/// Distinct math nodes reachable from v (interning makes shared subtrees one node).
int64_t math_nodes(const ir::Value& v) {
  if (!v) return 0;
  std::set<const ir::ValueNode*> seen;
  std::vector<const ir::ValueNode*> stack{v.node()};
  int64_t count = 0;
  while (!stack.empty()) {
    const ir::ValueNode* n = stack.back();
    stack.pop_back();
    if (!seen.insert(n).second) continue;
    if (is_math(*n)) ++count;
    for (const ir::Value& operand : n->operands) stack.push_back(operand.node());
  }
  return count;
}

int64_t combine_cost(ir::ReduceOp op) {
  return op == ir::ReduceOp::welford_m2 ? 4 : 1;
}

/// Iterations of a loop: its extent, or the extent's upper bound when it depends on outer
/// loop variables.
int64_t trip_count(const ir::Stmt& loop, const ir::RangeMap& ranges) {
  if (loop.extent.is_const()) return std::max<int64_t>(loop.extent.value(), 0);
  const ir::Interval b = ir::bounds(loop.extent, ranges);
  if (b.hi <= 0) return 0;
  return std::min(b.hi, kSaturated);
}

/// What the walk knows: loop variable ranges, and each accumulator's reduce op (declared by
/// its DefineAccumulator; the Accumulate statements name it only).
struct WalkState {
  ir::RangeMap ranges;
  std::map<std::string, ir::ReduceOp> accumulators;
};

int64_t flops_of(const std::vector<ir::Stmt>& body, WalkState& state) {
  ir::RangeMap& ranges = state.ranges;
  int64_t total = 0;
  for (const ir::Stmt& s : body) {
    switch (s.kind) {
      case ir::StmtKind::For: {
        const int64_t trips = trip_count(s, ranges);
        if (trips == 0) break;
        ranges[s.var] = ir::Interval{0, trips - 1};
        total = saturating_add(total, saturating_mul(trips, flops_of(s.body, state)));
        ranges.erase(s.var);
        break;
      }
      case ir::StmtKind::Accumulate: {
        const auto declared = state.accumulators.find(s.name);
        const ir::ReduceOp op =
            declared != state.accumulators.end() ? declared->second : s.reduce_op;
        total = saturating_add(total, math_nodes(s.value) + combine_cost(op));
        break;
      }
      case ir::StmtKind::Let:
      case ir::StmtKind::Store:
        total = saturating_add(total, math_nodes(s.value));
        break;
      case ir::StmtKind::DefineAccumulator:
        state.accumulators[s.name] = s.reduce_op;
        break;
    }
  }
  return total;
}

}  // namespace

int64_t estimate_flops(const ir::Kernel& kernel) {
  WalkState state;
  return flops_of(kernel.body, state);
}

json kernel_infos_to_json(const std::vector<KernelInfo>& kernels) {
  json out = json::array();
  for (const KernelInfo& k : kernels) {
    json params = json::array();
    for (const KernelParamInfo& p : k.params) {
      params.push_back(json{{"buffer", p.buffer},
                            {"dtype", p.dtype},
                            {"sizes", p.sizes},
                            {"strides", p.strides},
                            {"written", p.written}});
    }
    out.push_back(json{{"name", k.name},
                       {"params", std::move(params)},
                       {"graph_nodes", k.graph_nodes},
                       {"flops", k.flops},
                       {"text", k.text}});
  }
  return out;
}

std::vector<KernelInfo> kernel_infos_from_json(const json& j) {
  std::vector<KernelInfo> out;
  for (const json& k : j) {
    KernelInfo info;
    info.name = k.at("name").get<std::string>();
    for (const json& p : k.at("params")) {
      info.params.push_back({p.at("buffer").get<std::string>(), p.at("dtype").get<std::string>(),
                             p.at("sizes").get<std::vector<int64_t>>(),
                             p.at("strides").get<std::vector<int64_t>>(),
                             p.at("written").get<bool>()});
    }
    info.graph_nodes = k.at("graph_nodes").get<std::vector<int32_t>>();
    info.flops = k.at("flops").get<int64_t>();
    info.text = k.at("text").get<std::string>();
    out.push_back(std::move(info));
  }
  return out;
}

}  // namespace inductor_cpp::inductor
