/// \file
/// Shared by the lowering files (private to inductor/lower/): the per-node context a lowering
/// reads its arguments from and writes its computes to, the op table type, and small helpers
/// for loop variables, loads and dims.
///
/// A lowering is a function `void(NodeLowering&)`. It reads the node's arguments by schema
/// parameter name, and defines one compute per output buffer (plus internal buffers when it
/// needs intermediate results). When it cannot express the node exactly it calls decline():
/// nothing it defined so far is kept, and the node runs as an ATen call.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "ir/aten_graph.h"
#include "ir/loop_ir.h"

namespace inductor_cpp::inductor::lowering {

/// Thrown by a lowering that cannot express its node exactly; what() is the reason shown in
/// logs ("dtype complex64 not supported").
class Decline : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
[[noreturn]] void decline(const std::string& reason);

/// A tensor argument with a static, non-empty shape and one of our element types.
struct TensorInfo {
  std::string buffer;
  ir::DType dtype = ir::DType::Float32;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  int64_t offset = 0;
  ir::BufferOrigin origin = ir::BufferOrigin::Computed;
  std::string device;

  size_t rank() const { return sizes.size(); }
  int64_t numel() const;
};

/// An output of the node being lowered (its metadata is the truth lowerings check against).
struct OutputInfo {
  std::string buffer;
  ir::DType dtype = ir::DType::Float32;
  std::vector<int64_t> sizes;
  std::string device;
};

/// The node being lowered: its arguments by schema parameter name, its outputs, and the
/// computes and internal buffers defined so far (committed only if the lowering succeeds).
class NodeLowering {
 public:
  /// `params`: the schema's parameter names in order (positional args map to them by
  /// position, kwargs by name); an argument beyond them or a kwarg not among them declines.
  NodeLowering(const ir::Graph& graph, const ir::LoopProgram& program, int32_t node_index,
               const std::vector<std::string>& params);

  const ir::Node& node() const { return graph_.nodes.at(node_index_); }
  int32_t node_index() const { return node_index_; }

  // ---- arguments ----
  /// The argument given for `param`, or nullptr when it is absent or None (the default).
  const ir::Arg* arg(const std::string& param) const;
  bool has(const std::string& param) const { return arg(param) != nullptr; }
  /// True when `param` is a tensor reference (Input/Constant/Value of a tensor).
  bool is_tensor(const std::string& param) const;
  /// The tensor `param` refers to; declines when absent or not usable (symbolic, empty, ...).
  TensorInfo tensor(const std::string& param) const;
  TensorInfo tensor_of(const ir::Arg& ref) const;
  /// An int literal; `fallback` when absent; declines on anything else.
  int64_t int_arg(const std::string& param, std::optional<int64_t> fallback = std::nullopt) const;
  std::optional<int64_t> optional_int(const std::string& param) const;
  bool bool_arg(const std::string& param, bool fallback) const;
  /// A list of int literals (a single int is a one-element list, as torch's int[1] allows).
  std::vector<int64_t> int_list(const std::string& param) const;
  std::optional<std::vector<int64_t>> optional_int_list(const std::string& param) const;
  /// A Python number literal (Int, Float or Bool); `fallback` when absent. Numbers computed at
  /// run time (graph inputs, sym:: results) decline.
  ir::Arg scalar(const std::string& param, std::optional<ir::Arg> fallback = std::nullopt) const;
  double number(const std::string& param, std::optional<double> fallback = std::nullopt) const;
  std::optional<std::string> str_arg(const std::string& param) const;
  /// A dtype argument; declines for a dtype we have no element type for.
  std::optional<ir::DType> dtype_arg(const std::string& param) const;

  // ---- outputs ----
  size_t output_count() const { return node().outputs.size(); }
  /// Every output has a zero size (the node computes nothing).
  bool outputs_are_empty() const;
  OutputInfo output(size_t k = 0) const;

  // ---- results ----
  /// Defines a compute (named like an output or an internal buffer made by internal_buffer).
  void define(ir::Compute compute);
  /// Turns the views defined so far into ordinary computes (the `*_copy` ops: a view's
  /// elements in a new tensor).
  void make_views_copies();
  /// A new contiguous computed buffer "<first output>.<suffix>" for intermediate results.
  std::string internal_buffer(const std::string& suffix, ir::DType dtype,
                              const std::vector<int64_t>& sizes);

  const std::vector<ir::Compute>& computes() const { return computes_; }
  const std::vector<ir::Buffer>& internal_buffers() const { return internal_buffers_; }

 private:
  const ir::Graph& graph_;
  const ir::LoopProgram& program_;
  int32_t node_index_;
  std::map<std::string, const ir::Arg*> args_;
  std::vector<ir::Compute> computes_;
  std::vector<ir::Buffer> internal_buffers_;
};

using LowerFn = std::function<void(NodeLowering&)>;

/// One row of the op table: the schema's parameter names and the lowering, or, for ops we
/// deliberately leave to ATen, the reason.
struct OpLowering {
  std::vector<std::string> params;
  LowerFn lower;
  std::string fallback_reason;
};

/// Full schema name ("aten::add.Tensor") -> lowering.
class OpTable {
 public:
  /// `params`: the parameter names, space separated ("self other alpha").
  void add(const std::string& op, const std::string& params, LowerFn lower);
  /// An op that always runs as ATen, for `reason` (rather than "no lowering").
  void add_fallback(const std::string& op, const std::string& reason);
  const OpLowering* find(const std::string& op) const;

 private:
  std::map<std::string, OpLowering> rows_;
};

// One registration function per op family (each in its own file).
void register_pointwise_ops(OpTable& table);
void register_pointwise_special_ops(OpTable& table);
void register_activation_ops(OpTable& table);
void register_reduction_ops(OpTable& table);
void register_view_ops(OpTable& table);
void register_rearrange_ops(OpTable& table);
void register_indexing_ops(OpTable& table);
void register_creation_ops(OpTable& table);
void register_pooling_ops(OpTable& table);
void register_scan_ops(OpTable& table);

// ---- helpers ----

std::vector<ir::Expr> to_exprs(const std::vector<int64_t>& values);
/// i0 .. i{n-1} / r0 .. r{n-1} as expressions.
std::vector<ir::Expr> range_vars(size_t n);
std::vector<ir::Expr> reduce_vars(size_t n);
/// Ranges of i0.. over `sizes` (for simplify()).
ir::RangeMap range_map(const std::vector<int64_t>& sizes);

/// A plain load of `t` at one index per dimension.
ir::Value load_at(const TensorInfo& t, std::vector<ir::Expr> index);
/// A load of `t` broadcast (right-aligned) to `out_sizes`, at `out_index`: size-1 dims of `t`
/// index with 0. Declines when `t` does not broadcast to `out_sizes`.
ir::Value load_broadcast(const TensorInfo& t, const std::vector<int64_t>& out_sizes,
                         const std::vector<ir::Expr>& out_index);
/// torch's broadcast of several shapes; declines when they do not broadcast.
std::vector<int64_t> broadcast_shapes(const std::vector<std::vector<int64_t>>& shapes);

/// A pointwise (or view) compute over `sizes` defining `name`.
ir::Compute make_pointwise(const std::string& name, const std::vector<int64_t>& sizes,
                           ir::Value body, int32_t node, bool view = false);

/// The elements slice(dim, start, end, step) takes along a dim of `size`, by torch's rules:
/// negative bounds count from the end, bounds clamp to [0, size], an empty range stays empty.
/// Reads the node's "start", "end" and "step" arguments; declines on a step below 1.
struct SliceRange {
  int64_t start = 0, step = 1, length = 0;
};
SliceRange slice_range(const NodeLowering& n, int64_t size);

/// The elements diagonal(offset, dim1, dim2) takes from a tensor of `sizes`: element k of the
/// diagonal is at (row0 + k, col0 + k) in (dim1, dim2). `view_sizes` is the diagonal view's
/// shape (the other dims in order, then the diagonal). Reads the node's "offset", "dim1" and
/// "dim2" arguments; declines on fewer than two dims or equal dims.
struct DiagonalRange {
  int64_t dim1 = 0, dim2 = 1, row0 = 0, col0 = 0;
  std::vector<int64_t> view_sizes;
  bool is_diagonal_dim(size_t d) const {
    return static_cast<int64_t>(d) == dim1 || static_cast<int64_t>(d) == dim2;
  }
};
DiagonalRange diagonal_range(const NodeLowering& n, const std::vector<int64_t>& sizes);

/// Wraps a possibly negative dim like torch (a 0-dim tensor accepts 0 and -1).
int64_t wrap_dim(int64_t dim, size_t rank);

/// A constant of `dtype` holding the Python number `scalar`, converted as a C++ cast would
/// (float -> int truncates, int wraps to the width, nonzero -> true).
ir::Value scalar_constant(const ir::Arg& scalar, ir::DType dtype);
ir::Value constant_number(double value, ir::DType dtype);
/// 0 / 1 of any dtype.
ir::Value zero(ir::DType dtype);
ir::Value one(ir::DType dtype);

/// A Bool value from an index expression that evaluates to 0 or 1.
ir::Value index_condition(const ir::Expr& e);

/// Declines unless the layout argument (if given) is strided and pin_memory is not set: the
/// tensor-creating ops only produce plain strided tensors. (A device argument is checked
/// through the output's metadata.)
void check_plain_tensor_args(const NodeLowering& n);

/// Checks that the output has `sizes`; declines naming `what` otherwise.
void expect_output_sizes(const OutputInfo& out, const std::vector<int64_t>& sizes,
                         const std::string& what);
std::string shape_text(const std::vector<int64_t>& sizes);

}  // namespace inductor_cpp::inductor::lowering
