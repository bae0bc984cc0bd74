/// \file
/// Turns an ATen-level graph into an execution plan: assigns value slots, decides for each
/// node how it runs, and computes when each slot can be freed.
///
/// Code generation is not built yet, so every node runs as an ATen call through the c10
/// dispatcher; this is the place where generated-kernel steps will take nodes over.
#pragma once

#include <string>
#include <vector>

#include "ir/aten_graph.h"
#include "runtime/plan.h"

namespace inductor_cpp::inductor {

/// How one graph node was handled, for logs and explain().
struct NodeDecision {
  int32_t node = -1;
  bool generated = false;
  std::string reason;  ///< why it falls back, when it does
};

struct PlanBuild {
  runtime::Plan plan;
  std::vector<NodeDecision> decisions;
};

PlanBuild build_plan(const ir::Graph& graph);

}  // namespace inductor_cpp::inductor
