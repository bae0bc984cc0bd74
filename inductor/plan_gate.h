/// \file
/// Two matmuls feeding one gate kernel, `act(x @ w1) * (x @ w2)` (the GLU family: SwiGLU's
/// `silu(x @ w1) * (x @ w3)`, `sigmoid(a) * b`, `tanh(a) * b`, ...). No single matrix step can
/// absorb that kernel: each of its two chains starts at a different matmul. So the matmul
/// scheduled first absorbs its own chain up to the product (unary epilogue ops only: the
/// activation, a scale, a clamp) and writes the activated value instead of its raw output; the
/// second absorbs the product with that value as a ready operand (plan_epilogue.h,
/// Materialized), and whatever follows it. The kernel is gone and the raw output of the first
/// matmul is never stored. When the first matmul is the plain operand, the second absorbs the
/// whole chain on its own (absorbable, plan_epilogue.h), so pairing is not needed.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "inductor/plan_epilogue.h"
#include "ir/aten_graph.h"
#include "ir/passes/schedule.h"
#include "runtime/plan.h"

namespace inductor_cpp::inductor::matrix_plan {

struct GatePair {
  size_t first_step = 0, second_step = 0;          ///< scheduled steps of the two matmuls
  std::vector<runtime::MatmulEpilogue> first_ops;  ///< the first matmul's activation chain
  std::string first_written;                       ///< the buffer it writes: the activated value
  std::vector<int64_t> first_sizes, first_strides;  ///< its sizes (after reshapes) and strides
  std::vector<int32_t> first_nodes;  ///< graph nodes of that chain
  Absorbed second;                   ///< what the second matmul absorbs
};

/// The gate pairing that scheduled step `index` (one of the two matmuls) takes part in, or
/// nothing. `matmul_output(step)` gives the output meta of a step we run as a 2-D mm / addmm
/// matrix step with static sizes, nothing for any other step.
std::optional<GatePair> paired_gate(
    const ir::Graph& g, const ir::ScheduledProgram& program, size_t index,
    const std::function<std::optional<StaticMeta>(size_t)>& matmul_output,
    const std::set<std::string>& into_inputs,
    const std::function<int32_t(const std::string&)>& slot_of_buffer);

}  // namespace inductor_cpp::inductor::matrix_plan
