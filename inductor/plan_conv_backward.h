/// \file
/// Plan building for convolution backward: an ATen `convolution_backward` extern step of a
/// float32 CPU 2-D convolution (static shapes, groups 1, not transposed) whose output gradient
/// and input are channels-last becomes a "conv2d_backward" runtime::LibraryCall on our
/// library (matrix/conv_backward.h), computing the requested input, weight and bias
/// gradients (strided filters' input gradient by phases; until 2026-11-28 that one stayed an ATen
/// call with output_mask [True, False, False], ours being slower). NCHW graphs (training
/// without channels-last) stay ATen, as the
/// forward convolution does (plan_conv.h), and so does the input gradient of convolutions of
/// fewer than 8 input channels (a convolution with 3 output channels; a stem's weight gradient
/// alone runs on ours, on tiles by filter columns, since 2026-11-28).
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

#include "inductor/plan_matmul.h"

namespace inductor_cpp::inductor {

/// The conv2d_backward step for scheduled extern step `step_index` of `program` (lowered from
/// `g`), or nothing. When the step is a convolution_backward we do not run, `why_not` says why
/// (for the node's decision and the fallbacks log); it stays empty for other ops.
std::optional<MatmulMatch> match_conv_backward(
    const ir::Graph& g, const ir::ScheduledProgram& program, size_t step_index,
    const std::function<int32_t(const std::string&)>& slot_of_buffer, std::string& why_not);

}  // namespace inductor_cpp::inductor
