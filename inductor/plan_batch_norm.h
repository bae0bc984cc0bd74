/// \file
/// Recognising eval-mode BatchNorm after a convolution, so the conv2d plan step can absorb it
/// into its epilogue (plan_epilogue.h) as one "batch_norm" op: the runtime turns it into a
/// per-channel scale and shift, x·s[c] + t[c] with s = weight / sqrt(var + eps) and
/// t = bias - mean·s (runtime/conv_step.h).
///
/// Eval BatchNorm reaches our graph decomposed (torch's `_native_batch_norm_legit_no_training`
/// decomposition, python/inductor_cpp/decompositions.py):
///
///     %1 = sub.Tensor(%conv, unsqueeze(unsqueeze(_to_copy(%mean))))
///     %2 = mul.Tensor(%1, unsqueeze(unsqueeze(%invstd)))
///          with %invstd = mul(reciprocal(sqrt(add(_to_copy(%var), eps))), 1)
///     %3 = mul.Tensor(%2, unsqueeze(unsqueeze(%weight)))    (affine only)
///     %4 = add.Tensor(%3, unsqueeze(unsqueeze(%bias)))      (affine only)
///
/// The per-element nodes form a chain on the convolution's output; the per-channel operands
/// are graph inputs or constants (float32 vectors of the output channels) seen through views
/// that keep their element order (unsqueeze, view, reshape), float32 copies, and, for the
/// inverse standard deviation, add(eps) → sqrt → reciprocal (or rsqrt) → optional mul(1).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "inductor/plan_epilogue.h"
#include "ir/aten_graph.h"
#include "runtime/plan.h"

namespace inductor_cpp::inductor::matrix_plan {

/// An eval batch norm applied to a node's [N, C, H, W] output.
struct BatchNormMatch {
  runtime::MatmulEpilogue op;   ///< kind "batch_norm", a = eps, params = mean, var, w, b
  std::vector<int32_t> chain;   ///< the per-element nodes, in order (sub, mul, [mul], [add])
  std::set<int32_t> helpers;    ///< per-channel nodes feeding the chain (views, copies, ...)
  std::set<std::string> reads;  ///< buffers of the parameter vectors
};

/// The batch norm whose first node is `first` (a `sub.Tensor(producer, mean)`) on node
/// `producer`'s output of sizes `out_sizes` ([N, C, H, W]), or nothing. Each chain node but the
/// last must be read by the next one only (callers check the graph-wide readers);
/// `slot_of_buffer` gives the parameters' slots.
std::optional<BatchNormMatch> match_batch_norm(
    const ir::Graph& g, int64_t producer, int32_t first, const std::vector<int64_t>& out_sizes,
    const std::function<int32_t(const std::string&)>& slot_of_buffer);

/// Two convolutions feeding one kernel, each followed by an eval batch norm, their sum then
/// a chain of epilogue ops: resnet's downsample block end, relu(bn2(conv2(.)) + bn(conv(x))).
/// The first of the two steps writes its batch norm's output (instead of its raw output); the
/// second absorbs its own batch norm, the add of that buffer as a residual, and the rest, and
/// the kernel is dropped. Both convolution steps get the same answer (a pure function of the
/// program), so the first never writes a buffer that nothing reads.
struct PairedAbsorption {
  size_t first_step = 0, second_step = 0;  ///< scheduled steps of the two convolutions
  runtime::MatmulEpilogue first_op;        ///< the first convolution's batch norm
  std::string first_written;               ///< the buffer it writes: its batch norm's output
  std::vector<int64_t> first_strides;
  std::vector<int32_t> first_nodes;  ///< graph nodes of that batch norm
  Absorbed second;                   ///< what the second convolution absorbs
};

/// The paired absorption that scheduled step `index` (one of the two convolutions) takes part
/// in, or nothing. `conv_output(step)` gives the output meta of a step we run as a conv2d
/// step, nothing for other steps.
std::optional<PairedAbsorption> paired_absorption(
    const ir::Graph& g, const ir::ScheduledProgram& program, size_t index,
    const std::function<std::optional<StaticMeta>(size_t)>& conv_output,
    const std::set<std::string>& into_inputs,
    const std::function<int32_t(const std::string&)>& slot_of_buffer);

}  // namespace inductor_cpp::inductor::matrix_plan
