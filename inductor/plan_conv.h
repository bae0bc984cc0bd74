/// \file
/// Plan building for convolutions: an ATen `convolution` extern step over a static float32 CPU
/// 2-D convolution (groups 1, not transposed) whose input and output are channels-last
/// becomes a "conv2d" runtime::LibraryCall on our NHWC direct convolution
/// (matrix/conv.h, run by runtime/conv_step.h), its bias the first epilogue op, and the
/// following activation / residual-add kernel folded into the epilogue (plan_epilogue.h).
/// NCHW convolutions stay ATen: our kernel reads and writes NHWC only, and converting layouts
/// around it would cost more than MKL-DNN's NCHW path saves (the channels-last FX pass makes
/// conv-heavy inference graphs NHWC).
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <set>
#include <string>

#include "inductor/plan_matmul.h"

namespace inductor_cpp::inductor {

/// `g` with each convolution we run (the checks of match_conv but epilogue absorption) that
/// reads its weight through a layout copy `aten::clone(input or constant)` (the channels-last
/// FX pass adds one per weight) reading the source instead, or nothing when there is none. The
/// copy, now usually unused, is dropped by dead-code elimination; the conv2d step packs the
/// weight from any layout and caches the packed copy while the source does not change, where
/// a fresh copy every call would be packed every call.
std::optional<ir::Graph> read_conv_weights_in_place(const ir::Graph& g);

/// The conv2d step for scheduled extern step `step_index` of `program` (lowered from `g`), or
/// nothing. When the step is a convolution we do not run, `why_not` says why (for the node's
/// decision and the fallbacks log); it stays empty for other ops. `slot_of_buffer`,
/// `into_inputs` and `fused` (tile epilogues: a consumer that is no chain of epilogue ops nor a
/// batch-norm pairing) as for match_matmul.
std::optional<MatmulMatch> match_conv(
    const ir::Graph& g, const ir::ScheduledProgram& program, size_t step_index,
    const std::set<std::string>& into_inputs,
    const std::function<int32_t(const std::string&)>& slot_of_buffer, std::string& why_not,
    const ir::LoopProgram* fused = nullptr);

}  // namespace inductor_cpp::inductor
