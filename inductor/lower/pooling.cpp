/// \file
/// 2-D pooling, forward and backward: max_pool2d_with_indices (+ backward), avg_pool2d (+
/// backward), _adaptive_avg_pool2d (+ backward), on (C, H, W) and (N, C, H, W) inputs.
///
/// This file: max_pool2d_with_indices and its backward, and the op table rows of the family
/// (avg and adaptive pooling are in pooling_average.cpp, the window machinery in
/// pooling_window.cpp, see pooling_internal.h). Windows combine unrolled into pointwise
/// computes when they have at most 25 positions, as reductions over r0, r1 otherwise. A window
/// position outside the input is a masked load: -inf (lowest for integers) for max, 0 for
/// sums. Backward ops are gathers: each input position sums grad_output over the windows that
/// may contain it (at most ceil(span / stride) per dim), with a mask for those that do not
/// exist.
///
/// max_pool2d's indices follow ATen's kernel (`val > max || isnan(val)`): the first maximum
/// wins ties, the LAST NaN of a window wins, and a window whose real values are all -inf
/// (lowest) points at its first in-bounds position. Unrolled, that is ATen's loop itself; as
/// reductions it takes three (max, argmax, last NaN position), which horizontal fusion can
/// put in one loop nest.
/// The backward assumes its indices came from the forward (each inside its own window), as
/// in every training graph: it compares each window's saved index with the input position.
#include <limits>

#include "inductor/lower/pooling_internal.h"

namespace inductor_cpp::inductor::lowering {
namespace {

using namespace pooling;
using Index = std::vector<Expr>;

ir::Value lowest_value(DType t) {
  switch (t) {
    case DType::UInt8:
      return ir::constant_int(0, t);
    case DType::Int8:
      return ir::constant_int(std::numeric_limits<int8_t>::lowest(), t);
    case DType::Int16:
      return ir::constant_int(std::numeric_limits<int16_t>::lowest(), t);
    case DType::Int32:
      return ir::constant_int(std::numeric_limits<int32_t>::lowest(), t);
    case DType::Int64:
      return ir::constant_int(std::numeric_limits<int64_t>::lowest(), t);
    default:
      return ir::constant_float(-std::numeric_limits<double>::infinity(), t);
  }
}

/// The input position (as int64 values) that a window's argmax position `a` (row-major in
/// [kernel_h, kernel_w]) reads.
std::pair<ir::Value, ir::Value> position_of(const ir::Value& a, const Geometry& g,
                                            const PoolVars& v) {
  const ir::Value kh = g.w.kernel == 1 ? a : bin(BinaryOp::floordiv, a, int64_const(g.w.kernel));
  const ir::Value kw =
      g.w.kernel == 1 ? int64_const(0) : bin(BinaryOp::remainder, a, int64_const(g.w.kernel));
  const auto step = [](const ir::Value& k, int64_t dilation) {
    return dilation == 1 ? k : bin(BinaryOp::mul, k, int64_const(dilation));
  };
  return {bin(BinaryOp::add, int64_of(v.simplify(g.h.start(v.row))), step(kh, g.h.dilation)),
          bin(BinaryOp::add, int64_of(v.simplify(g.w.start(v.col))), step(kw, g.w.dilation))};
}

/// Whether some window of `d` reads before 0 / at or past `in`.
bool reads_before(const WindowDim& d) {
  return d.pad > 0;
}
bool reads_past(const WindowDim& d) {
  return (d.out - 1) * d.stride - d.pad + d.span() > d.in;
}

/// The first in-bounds row of the window starting at `start`.
Expr first_inside(const Expr& start, int64_t dilation) {
  return start +
         Expr(dilation) *
             ir::floordiv(ir::max(Expr(0), Expr(0) - start) + Expr(dilation - 1), Expr(dilation));
}

/// `value` in [0, size) as a bool value, with only the checks that can fail.
ir::Value inside_value(const ir::Value& value, const WindowDim& d, ir::Value acc) {
  const auto conj = [&acc](const ir::Value& c) {
    acc = acc ? bin(BinaryOp::logical_and, acc, c) : c;
  };
  if (reads_before(d)) conj(bin(BinaryOp::ge, value, int64_const(0)));
  if (reads_past(d)) conj(bin(BinaryOp::lt, value, int64_const(d.in)));
  return acc;
}

/// max_pool2d's index with an unrolled window: ATen's loop itself (`take = x > best ||
/// isnan(x)` over the in-bounds positions in row-major order, starting from the first one).
ir::Value unrolled_max_index(const PoolVars& v, const ir::Value& x, const Expr& inside,
                             const Expr& position, const Expr& first) {
  ir::Value best = lowest_value(x->dtype);
  ir::Value index = int64_of(first);
  for (int64_t a = 0; a < v.reduce0; ++a)
    for (int64_t b = 0; b < v.reduce1; ++b) {
      const Expr in_bounds = v.at_position(inside, a, b);
      if (in_bounds == Expr(0)) continue;
      const ir::Value xv = v.at_position(x, a, b);
      ir::Value take = bin(BinaryOp::gt, xv, best);
      if (ir::is_floating(xv->dtype))
        take = bin(BinaryOp::logical_or, take, un(ir::UnaryOp::isnan, xv));
      if (in_bounds != Expr(1)) take = bin(BinaryOp::logical_and, index_condition(in_bounds), take);
      best = ir::where(take, xv, best);
      const ir::Value here = int64_of(v.at_position(position, a, b));
      if (here != index) index = ir::where(take, here, index);
    }
  return index;
}

void lower_max_pool(NodeLowering& n) {
  const TensorInfo self = n.tensor("self");
  if (self.dtype == DType::Bool) decline("max_pool2d of bool (ATen has no kernel)");
  const Geometry g = window_geometry(n, self, /*has_dilation=*/true);
  const OutputInfo values = n.output(0), indices = n.output(1);
  expect_output_sizes(values, g.out_sizes(), "max_pool2d");
  expect_output_sizes(indices, g.out_sizes(), "max_pool2d indices");
  expect_dtype(values, self.dtype, "max_pool2d");
  expect_dtype(indices, DType::Int64, "max_pool2d indices");

  const DType compute = ir::compute_type(self.dtype);
  const PoolVars v(g.out_sizes(), g.h.kernel, g.w.kernel);
  const Expr h = g.h.start(v.row) + v.r0 * Expr(g.h.dilation);
  const Expr w = g.w.start(v.col) + v.r1 * Expr(g.w.dilation);
  const Expr inside = v.simplify(ir::le(Expr(0), h) * ir::lt(h, Expr(g.h.in)) * ir::le(Expr(0), w) *
                                 ir::lt(w, Expr(g.w.in)));
  const ir::Value x = ir::cast(ir::load(self.buffer, self.dtype, v.at(h, w), inside), compute);
  const ir::Value padded =
      inside == Expr(1) ? x : ir::where(index_condition(inside), x, lowest_value(compute));
  define_pooled(n, values, v, ReduceOp::max, padded, "max", nullptr);
  const Expr first = v.simplify(first_inside(g.h.start(v.row), g.h.dilation) * Expr(g.w.in) +
                                first_inside(g.w.start(v.col), g.w.dilation));
  if (v.unrolled()) {
    const ir::Value index = unrolled_max_index(v, x, inside, h * Expr(g.w.in) + w, first);
    n.define(make_pointwise(indices.buffer, indices.sizes, index, n.node_index()));
    return;
  }

  const std::string argmax = n.internal_buffer("argmax", DType::Int64, g.out_sizes());
  n.define(reduction(argmax, g.out_sizes(), g.h.kernel, g.w.kernel, ReduceOp::argmax, padded));
  const PoolVars o(g.out_sizes(), 1, 1);
  const Index out_index = range_vars(g.out_sizes().size());
  const auto [row, col] = position_of(ir::load(argmax, DType::Int64, out_index), g, o);
  ir::Value index = bin(BinaryOp::add, bin(BinaryOp::mul, row, int64_const(g.w.in)), col);
  // Padding wins a tie only when every real value is -inf (lowest): ATen then points at the
  // window's first in-bounds position.
  if (const ir::Value in_bounds = inside_value(col, g.w, inside_value(row, g.h, {})))
    index = ir::where(in_bounds, index, int64_of(first));
  if (ir::is_floating(self.dtype)) {
    const ir::Value nan_position = ir::where(
        un(ir::UnaryOp::isnan, x), int64_of(v.simplify(h * Expr(g.w.in) + w)), int64_const(-1));
    const std::string last_nan = n.internal_buffer("last_nan", DType::Int64, g.out_sizes());
    n.define(
        reduction(last_nan, g.out_sizes(), g.h.kernel, g.w.kernel, ReduceOp::max, nan_position));
    const ir::Value nan_at = ir::load(last_nan, DType::Int64, out_index);
    index = ir::where(bin(BinaryOp::ge, nan_at, int64_const(0)), nan_at, index);
  }
  n.define(make_pointwise(indices.buffer, indices.sizes, index, n.node_index()));
}

void lower_max_pool_backward(NodeLowering& n) {
  const TensorInfo grad = n.tensor("grad_output");
  const TensorInfo self = n.tensor("self");
  const TensorInfo saved = n.tensor("indices");
  const Geometry g = window_geometry(n, self, /*has_dilation=*/true);
  if (!ir::is_floating(grad.dtype)) decline("max_pool2d backward of a non-floating type");
  require_same_sizes(grad, g.out_sizes(), "grad_output");
  require_same_sizes(saved, g.out_sizes(), "indices");
  if (saved.dtype != DType::Int64) decline("max_pool2d indices must be int64");
  const OutputInfo out = n.output(0);
  expect_output_sizes(out, g.in_sizes(), "max_pool2d backward");
  expect_dtype(out, grad.dtype, "max_pool2d backward");

  const Gather gather = gather_windows(g, /*check_end=*/false);
  const PoolVars& v = gather.vars;
  const GatherDim &gh = gather.h, &gw = gather.w;
  const Expr& valid = gather.valid;
  const Index window = v.at(gh.o, gw.o);
  const DType compute = ir::compute_type(grad.dtype);
  const ir::Value dy = ir::cast(ir::load(grad.buffer, grad.dtype, window, valid), compute);
  const ir::Value picked = ir::load(saved.buffer, saved.dtype, window, valid);
  ir::Value here = bin(BinaryOp::eq, picked, int64_of(v.simplify(v.row * Expr(g.w.in) + v.col)));
  if (valid != Expr(1)) here = bin(BinaryOp::logical_and, index_condition(valid), here);
  define_pooled(n, out, v, ReduceOp::sum, ir::where(here, dy, zero(compute)), "sum", nullptr);
}

}  // namespace

void register_pooling_ops(OpTable& table) {
  table.add("aten::max_pool2d_with_indices", "self kernel_size stride padding dilation ceil_mode",
            lower_max_pool);
  table.add("aten::max_pool2d_with_indices_backward",
            "grad_output self kernel_size stride padding dilation ceil_mode indices",
            lower_max_pool_backward);
  pooling::register_average_pooling_ops(table);
}

}  // namespace inductor_cpp::inductor::lowering
