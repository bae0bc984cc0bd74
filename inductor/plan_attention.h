/// \file
/// Plan building for attention: an ATen `_scaled_dot_product_flash_attention_for_cpu` extern
/// step (what `F.scaled_dot_product_attention` becomes on the CPU) of float32 [batch, heads,
/// length, dim] tensors, no dropout, a positive scale, an optional float32 or bool attention
/// mask broadcastable to the scores (not with is_causal), and at most 512 keys (ours is 1.1-1.8x
/// ATen's kernel there, level with it on longer sequences) becomes an "attention"
/// runtime::LibraryCall on our library (matrix/attention.h), which also writes the op's
/// logsumexp when something reads it (a training forward saves it for the backward); the op's
/// backward (`..._for_cpu_backward`) becomes an "attention_backward" one
/// (matrix/attention_backward.h) under the same conditions. Symbolic sizes (Dynamo's
/// dynamic batch or sequence length) are taken too: the step's outputs then carry no sizes and
/// the runtime allocates ATen's layout per call, and checks the key count per call (over 512:
/// ATen's kernel). The rest stays ATen with the reason in the node's decision.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <set>
#include <string>

#include "inductor/plan_matmul.h"

namespace inductor_cpp::inductor {

/// The attention step for scheduled extern step `step_index` of `program` (lowered from `g`),
/// or nothing. `used`: the buffer names some node or graph output reads. When the step is a
/// flash attention we do not run, `why_not` says why; it stays empty for other ops.
std::optional<MatmulMatch> match_attention(
    const ir::Graph& g, const ir::ScheduledProgram& program, size_t step_index,
    const std::function<int32_t(const std::string&)>& slot_of_buffer,
    const std::set<std::string>& used, std::string& why_not);

/// The "attention_backward" step for an ATen `_scaled_dot_product_flash_attention_for_cpu_backward`
/// under the forward's conditions (static float32 shapes, no dropout, a positive scale, a mask
/// as the forward's, at most 512 keys), or nothing; why_not as match_attention's.
std::optional<MatmulMatch> match_attention_backward(
    const ir::Graph& g, const ir::ScheduledProgram& program, size_t step_index,
    const std::function<int32_t(const std::string&)>& slot_of_buffer, std::string& why_not);

}  // namespace inductor_cpp::inductor
