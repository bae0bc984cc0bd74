/// \file
/// Static metadata of ATen graph values and literal arguments, as the library-call lowering
/// (library_calls.h) checks them: sizes and strides when they are all static, dense row-major
/// and channels-last layouts, literal numbers and int pairs.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/aten_graph.h"

namespace inductor_cpp::inductor::graph_meta {

/// Static sizes and strides of a tensor value.
struct StaticMeta {
  std::vector<int64_t> sizes, strides;
  std::string dtype, device;
};

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

/// How many times `a` (and the items of lists in it) mentions output `output` of node `node`.
int64_t mentions_output(const ir::Arg& a, int64_t node, int64_t output);
/// True when some node argument or graph output mentions output `output` of node `node`.
bool is_output_read(const ir::Graph& g, int64_t node, int64_t output);

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

}  // namespace inductor_cpp::inductor::graph_meta
