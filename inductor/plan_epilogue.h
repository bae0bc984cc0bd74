/// \file
/// What the matrix plan steps (plan_matmul.h, plan_conv.h) share: static tensor metadata of
/// graph values, literal arguments, and the epilogue absorption — finding the one pointwise
/// kernel after a matrix step whose whole work is a chain of epilogue ops (eval batch norm on
/// convolutions, relu, gelu, gelu-tanh, silu, clamp/hardtanh, residual add) applied to the
/// step's output, so the matrix step can write the kernel's output itself and the kernel is
/// dropped.
#pragma once

#include <array>
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

/// How many times `a` (and the items of lists in it) mentions any output of node `node`.
int64_t mentions(const ir::Arg& a, int64_t node);
/// How many times node `user`'s arguments mention any output of node `node`.
int64_t mentions(const ir::Node& user, int64_t node);
/// The recorded meta of a graph input, constant or node output (sizes may be symbolic), or null.
const ir::TensorMeta* tensor_meta_of(const ir::Graph& g, const ir::Arg& a);
/// The meta of a graph input, constant or node output; nothing for a symbolic or missing one.
std::optional<StaticMeta> meta_of(const ir::Graph& g, const ir::Arg& a);
/// A CPU tensor of dtype `dtype` (torch name) and rank `rank` with no empty dim.
bool is_cpu_tensor(const std::optional<StaticMeta>& m, size_t rank, const std::string& dtype);
/// is_cpu_tensor for float32.
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
/// A literal list of two ints ([1, 1]); a single int counts for both.
std::optional<std::array<int64_t, 2>> int_pair(const ir::Arg& a);
/// "aten::mm.default" -> "aten::mm".
std::string op_name(const std::string& op);

/// A kernel step whose work a matrix step's epilogue does.
struct Absorbed {
  size_t step = 0;                           ///< the scheduled kernel step
  std::vector<runtime::MatmulEpilogue> ops;  ///< appended to the matrix step's epilogue
  std::string written;                       ///< the buffer the matrix step now writes
  std::vector<int64_t> sizes, strides;       ///< its sizes and strides
  std::vector<int32_t> nodes;                ///< graph nodes the kernel computed
};

/// The buffers scheduled step `s` reads (inputs of an extern call; a kernel's reads that it
/// does not also write).
std::set<std::string> buffers_read(const ir::ScheduledStep& s);

/// True when `buffer` holds its value before scheduled step `index` runs: a graph input or
/// constant, or written by an earlier step.
bool ready_before(const ir::ScheduledProgram& program, const std::string& buffer, size_t index);

/// True when graph node `node`'s value is read by node `next` (once) and nothing else (not a
/// graph output either).
bool only_read_by(const ir::Graph& g, const ir::ScheduledProgram& program, int32_t node,
                  int32_t next);

/// A data-free epilogue op (relu, gelu, gelu-tanh, silu, sigmoid, tanh, clamp / hardtanh, a
/// literal scale) that node `act` applies to node `prev`'s output; nothing for anything else
/// (residuals and gates need data).
std::optional<runtime::MatmulEpilogue> activation_of(const ir::Node& act, int64_t prev);

/// The graph node that reads node `node`'s value, when exactly one does, once (and the value
/// is not a graph output).
std::optional<int32_t> sole_reader_node(const ir::Graph& g, const ir::ScheduledProgram& program,
                                        int32_t node);

/// The one step reading node `producer`'s output (written by scheduled step `index`): a kernel
/// after it writing one buffer; nothing when the output is a graph output or has other readers.
std::optional<size_t> sole_reader_kernel(const ir::Graph& g, const ir::ScheduledProgram& program,
                                         size_t index, int64_t producer);

/// A value that an earlier matrix step writes in a kernel's stead (the first of two
/// convolutions feeding one kernel writes its batch norm's output, plan_batch_norm.h): the
/// kernel's chain may add it as a residual, and the nodes computing it are no longer the
/// kernel's.
struct Materialized {
  int32_t node = -1;            ///< the graph node whose value the earlier step writes
  std::set<int32_t> nodes;      ///< the kernel's nodes that step computes
  std::set<std::string> reads;  ///< buffers the kernel read for them
};

/// The kernel step that the epilogue of matrix node `producer` (scheduled step `index`, output
/// meta `out_meta`) can absorb, or nothing. It must be the only reader of the output, after it,
/// compute nothing but a chain of epilogue ops starting at the output (each intermediate read
/// by the next op only), write one buffer of the same sizes whose layout passes `layout_ok`,
/// and read nothing but the output and residuals already materialized before `index`. With
/// `batch_norm` (convolutions: an [N, C, H, W] output), the chain may start with an eval batch
/// norm (plan_batch_norm.h), which also reads its parameter vectors (graph inputs/constants).
/// With `materialized`, that value counts as a ready residual (see Materialized). With
/// `allow_reshapes`, the chain may also reshape a dense row-major value into another dense
/// row-major one (view / _unsafe_view / reshape, e.g. Linear's addmm on [B·S, N] viewed as
/// [B, S, N]): the step then writes the reshaped buffer (Absorbed::sizes), which holds the
/// same elements in the same order.
std::optional<Absorbed> absorbable(const ir::Graph& g, const ir::ScheduledProgram& program,
                                   size_t index, int64_t producer, const StaticMeta& out_meta,
                                   const std::function<bool(const StaticMeta&)>& layout_ok,
                                   const std::set<std::string>& into_inputs,
                                   const std::function<int32_t(const std::string&)>& slot_of_buffer,
                                   bool batch_norm = false,
                                   const Materialized* materialized = nullptr,
                                   bool allow_reshapes = false);

}  // namespace inductor_cpp::inductor::matrix_plan
