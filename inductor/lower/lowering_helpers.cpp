/// \file
/// Small helpers shared by the lowering families: loop variables, broadcast loads, dims,
/// constants converted the way torch converts a Python number to a tensor's type.
#include <algorithm>
#include <cmath>
#include <limits>

#include "inductor/lower/lowering_internal.h"

namespace inductor_cpp::inductor::lowering {

std::vector<ir::Expr> to_exprs(const std::vector<int64_t>& values) {
  return std::vector<ir::Expr>(values.begin(), values.end());
}

std::vector<ir::Expr> range_vars(size_t n) {
  std::vector<ir::Expr> v;
  for (size_t k = 0; k < n; ++k) v.push_back(ir::Expr::var(ir::range_var(k)));
  return v;
}

std::vector<ir::Expr> reduce_vars(size_t n) {
  std::vector<ir::Expr> v;
  for (size_t k = 0; k < n; ++k) v.push_back(ir::Expr::var(ir::reduce_var(k)));
  return v;
}

ir::RangeMap range_map(const std::vector<int64_t>& sizes) {
  ir::RangeMap m;
  for (size_t k = 0; k < sizes.size(); ++k) m[ir::range_var(k)] = ir::Interval{0, sizes[k] - 1};
  return m;
}

ir::Value load_at(const TensorInfo& t, std::vector<ir::Expr> index) {
  if (index.size() != t.rank())
    throw std::logic_error("load of " + t.buffer + " with " + std::to_string(index.size()) +
                           " indices for rank " + std::to_string(t.rank()));
  return ir::load(t.buffer, t.dtype, std::move(index));
}

SliceRange slice_range(const NodeLowering& n, int64_t size) {
  SliceRange r;
  r.step = n.int_arg("step", 1);
  if (r.step <= 0) decline("slice step must be positive");
  int64_t start = n.optional_int("start").value_or(0);
  int64_t end = n.optional_int("end").value_or(size);
  if (start < 0) start += size;
  if (end < 0) end += size;
  r.start = std::clamp<int64_t>(start, 0, size);
  end = std::clamp<int64_t>(end, r.start, size);
  r.length = (end - r.start + r.step - 1) / r.step;
  return r;
}

DiagonalRange diagonal_range(const NodeLowering& n, const std::vector<int64_t>& sizes) {
  if (sizes.size() < 2) decline("diagonal needs two dims");
  DiagonalRange r;
  const int64_t offset = n.int_arg("offset", 0);
  r.dim1 = wrap_dim(n.int_arg("dim1", 0), sizes.size());
  r.dim2 = wrap_dim(n.int_arg("dim2", 1), sizes.size());
  if (r.dim1 == r.dim2) decline("diagonal dims must differ");
  r.row0 = offset >= 0 ? 0 : -offset;
  r.col0 = offset >= 0 ? offset : 0;
  for (size_t d = 0; d < sizes.size(); ++d)
    if (!r.is_diagonal_dim(d)) r.view_sizes.push_back(sizes[d]);
  r.view_sizes.push_back(
      std::max<int64_t>(0, std::min(sizes[r.dim1] - r.row0, sizes[r.dim2] - r.col0)));
  return r;
}

std::string shape_text(const std::vector<int64_t>& sizes) {
  std::string s = "[";
  for (size_t k = 0; k < sizes.size(); ++k) s += (k ? ", " : "") + std::to_string(sizes[k]);
  return s + "]";
}

ir::Value load_broadcast(const TensorInfo& t, const std::vector<int64_t>& out_sizes,
                         const std::vector<ir::Expr>& out_index) {
  if (t.rank() > out_sizes.size())
    decline(t.buffer + " of shape " + shape_text(t.sizes) + " does not broadcast to " +
            shape_text(out_sizes));
  const size_t lead = out_sizes.size() - t.rank();
  std::vector<ir::Expr> index;
  for (size_t d = 0; d < t.rank(); ++d) {
    const int64_t out = out_sizes[lead + d];
    if (t.sizes[d] == 1) {
      index.emplace_back(0);
    } else if (t.sizes[d] == out) {
      index.push_back(out_index[lead + d]);
    } else {
      decline(t.buffer + " of shape " + shape_text(t.sizes) + " does not broadcast to " +
              shape_text(out_sizes));
    }
  }
  return load_at(t, std::move(index));
}

std::vector<int64_t> broadcast_shapes(const std::vector<std::vector<int64_t>>& shapes) {
  size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  std::vector<int64_t> out(rank, 1);
  for (const auto& s : shapes) {
    const size_t lead = rank - s.size();
    for (size_t d = 0; d < s.size(); ++d) {
      int64_t& o = out[lead + d];
      if (s[d] == 1 || s[d] == o) continue;
      if (o != 1) decline("shapes do not broadcast: " + shape_text(s));
      o = s[d];
    }
  }
  return out;
}

ir::Compute make_pointwise(const std::string& name, const std::vector<int64_t>& sizes,
                           ir::Value body, int32_t node, bool view) {
  ir::Compute c;
  c.name = name;
  c.ranges = to_exprs(sizes);
  c.body = std::move(body);
  c.view = view;
  c.graph_node = node;
  return c;
}

int64_t wrap_dim(int64_t dim, size_t rank) {
  const int64_t n = std::max<int64_t>(static_cast<int64_t>(rank), 1);
  if (dim < -n || dim >= n)
    decline("dim " + std::to_string(dim) + " out of range for rank " + std::to_string(rank));
  return dim < 0 ? dim + n : dim;
}

namespace {

/// Wraps an int64 to the width of an integral dtype (two's complement, like a C++ cast).
int64_t wrap_to(int64_t v, ir::DType dtype) {
  switch (dtype) {
    case ir::DType::UInt8:
      return static_cast<uint8_t>(v);
    case ir::DType::Int8:
      return static_cast<int8_t>(v);
    case ir::DType::Int16:
      return static_cast<int16_t>(v);
    case ir::DType::Int32:
      return static_cast<int32_t>(v);
    default:
      return v;
  }
}

int64_t double_to_int(double v) {
  // Out-of-range float -> int casts are undefined in C++ and differ between ATen kernels.
  if (!std::isfinite(v) || std::fabs(v) >= 9.2e18)
    decline("float value out of integer range: " + std::to_string(v));
  return static_cast<int64_t>(v);
}

}  // namespace

ir::Value constant_number(double value, ir::DType dtype) {
  if (ir::is_floating(dtype)) return ir::constant_float(value, dtype);
  if (dtype == ir::DType::Bool) return ir::constant_int(value != 0 ? 1 : 0, dtype);
  return ir::constant_int(wrap_to(double_to_int(value), dtype), dtype);
}

ir::Value scalar_constant(const ir::Arg& scalar, ir::DType dtype) {
  switch (scalar.kind) {
    case ir::Arg::Kind::Float:
      return constant_number(scalar.float_value, dtype);
    case ir::Arg::Kind::Bool:
      return constant_number(scalar.bool_value ? 1.0 : 0.0, dtype);
    case ir::Arg::Kind::Int:
      if (ir::is_floating(dtype))
        return ir::constant_float(static_cast<double>(scalar.int_value), dtype);
      if (dtype == ir::DType::Bool) return ir::constant_int(scalar.int_value != 0, dtype);
      return ir::constant_int(wrap_to(scalar.int_value, dtype), dtype);
    default:
      decline("not a number: " + ir::to_string(scalar));
  }
}

ir::Value zero(ir::DType dtype) {
  return constant_number(0, dtype);
}
ir::Value one(ir::DType dtype) {
  return constant_number(1, dtype);
}

ir::Value index_condition(const ir::Expr& e) {
  return ir::binary(ir::BinaryOp::ne, ir::index_value(e, ir::DType::Int64),
                    ir::constant_int(0, ir::DType::Int64));
}

void check_plain_tensor_args(const NodeLowering& n) {
  if (const ir::Arg* layout = n.arg("layout"); layout && layout->text != "strided")
    decline("layout " + layout->text);
  if (n.bool_arg("pin_memory", false)) decline("pin_memory");
}

void expect_output_sizes(const OutputInfo& out, const std::vector<int64_t>& sizes,
                         const std::string& what) {
  if (out.sizes != sizes)
    decline(what + " gives shape " + shape_text(sizes) + " but the graph says " +
            shape_text(out.sizes));
}

}  // namespace inductor_cpp::inductor::lowering
