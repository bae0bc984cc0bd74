/// \file
/// What the matrix plan steps (plan_matmul.h, plan_conv.h) share: static tensor metadata of
/// graph values, literal arguments, and the epilogue absorption — finding the one pointwise
/// kernel after a matrix step whose whole work is a chain of epilogue ops (relu, gelu,
/// gelu-tanh, silu, clamp/hardtanh, residual add) applied to the step's output, so the matrix
/// step can write the kernel's output itself and the kernel is dropped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/aten_graph.h"
#include "ir/passes/schedule.h"
#include "runtime/plan.h"

namespace inductor_cpp::inductor::matrix_plan {

/// Static sizes and strides of a tensor value.
struct StaticMeta {
  std::vector<int64_t> sizes, strides;
  std::string dtype, device;
};

/// The meta of a graph input, constant or node output; nothing for a symbolic or missing one.
std::optional<StaticMeta> meta_of(const ir::Graph& g, const ir::Arg& a);
/// A float32 CPU tensor of rank `rank` with no empty dim.
bool is_f32_cpu(const std::optional<StaticMeta>& m, size_t rank);
/// Dense row-major (size-1 dims may have any stride).
bool is_row_major(const StaticMeta& m);
/// A dense NHWC [N, C, H, W] tensor: channels-last strides (size-1 dims may have any stride).
bool is_channels_last(const StaticMeta& m);

std::optional<double> number(const ir::Arg& a);
/// Positional argument `pos` or keyword `name` of `node`; nullptr when absent (the default).
const ir::Arg* find_arg(const ir::Node& node, size_t pos, const std::string& name);
/// A number argument, `fallback` when absent; nothing when present but not a literal number.
std::optional<double> number_or(const ir::Node& node, size_t pos, const std::string& name,
                                double fallback);
bool is_tensor_ref(const ir::Arg& a);
/// "aten::mm.default" -> "aten::mm".
std::string op_name(const std::string& op);

/// A kernel step whose work a matrix step's epilogue does.
struct Absorbed {
  size_t step = 0;                           ///< the scheduled kernel step
  std::vector<runtime::MatmulEpilogue> ops;  ///< appended to the matrix step's epilogue
  std::string written;                       ///< the buffer the matrix step now writes
  std::vector<int64_t> strides;              ///< its strides
  std::vector<int32_t> nodes;                ///< graph nodes the kernel computed
};

/// The kernel step that the epilogue of matrix node `producer` (scheduled step `index`, output
/// meta `out_meta`) can absorb, or nothing. It must be the only reader of the output, after it,
/// compute nothing but a chain of epilogue ops starting at the output (each intermediate read
/// by the next op only), write one buffer of the same sizes whose layout passes `layout_ok`,
/// and read nothing but the output and residuals already materialized before `index`.
std::optional<Absorbed> absorbable(
    const ir::Graph& g, const ir::ScheduledProgram& program, size_t index, int64_t producer,
    const StaticMeta& out_meta, const std::function<bool(const StaticMeta&)>& layout_ok,
    const std::set<std::string>& into_inputs,
    const std::function<int32_t(const std::string&)>& slot_of_buffer);

}  // namespace inductor_cpp::inductor::matrix_plan
