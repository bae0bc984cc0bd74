/// \file
/// avg_pool2d and _adaptive_avg_pool2d, forward and backward (see pooling_internal.h for the
/// window machinery). Divisors follow ATen's CPU kernels: avg_pool2d divides the window sum by
/// divisor_override, or the window size clipped to the padded input (count_include_pad) or
/// to the input; int64 avg_pool2d truncates as ATen's integer kernel does. Adaptive windows
/// are [floor(o*in/out), ceil((o+1)*in/out)), of varying size: the window is the largest one,
/// masked, and the sum is divided by the row extent, then by the column extent (ATen's
/// `sum / kh / kw`, two roundings). The backward ops divide each window's gradient the same
/// way before summing.
#include "inductor/lower/pooling_internal.h"

namespace inductor_cpp::inductor::lowering::pooling {
namespace {

/// avg_pool2d's divisor for the window at (rows, cols), as ATen computes it.
Expr avg_divisor(const Geometry& g, const Expr& rows, const Expr& cols, bool count_include_pad) {
  const auto extent = [count_include_pad](const WindowDim& d, const Expr& o) {
    const Expr start = d.start(o);
    const Expr end = ir::min(start + Expr(d.kernel), Expr(d.in + d.pad));
    if (count_include_pad) return end - start;
    return ir::min(end, Expr(d.in)) - ir::max(start, Expr(0));
  };
  return extent(g.h, rows) * extent(g.w, cols);
}

/// `sum / divisor` in the sum's type: truncating for int64 as ATen's integer kernel does.
ir::Value divide(const ir::Value& sum, const ir::Value& divisor_int64) {
  if (ir::is_integral(sum->dtype))
    return bin(BinaryOp::truncdiv, sum, ir::cast(divisor_int64, sum->dtype));
  return bin(BinaryOp::div, sum, ir::cast(divisor_int64, sum->dtype));
}

struct AvgOptions {
  bool count_include_pad = true;
  std::optional<int64_t> divisor_override;
};

AvgOptions avg_options(const NodeLowering& n) {
  AvgOptions o;
  o.count_include_pad = n.bool_arg("count_include_pad", true);
  o.divisor_override = n.optional_int("divisor_override");
  if (o.divisor_override && *o.divisor_override == 0) decline("divisor_override 0 (ATen raises)");
  return o;
}

ir::Value divisor_value(const AvgOptions& a, const Geometry& g, const PoolVars& v, const Expr& rows,
                        const Expr& cols) {
  if (a.divisor_override) return int64_const(*a.divisor_override);
  return int64_of(v.simplify(avg_divisor(g, rows, cols, a.count_include_pad)));
}

void lower_avg_pool(NodeLowering& n) {
  const TensorInfo self = n.tensor("self");
  if (!ir::is_floating(self.dtype) && self.dtype != DType::Int64)
    decline(std::string("avg_pool2d of ") + ir::dtype_name(self.dtype) + " (ATen has no kernel)");
  const Geometry g = window_geometry(n, self, /*has_dilation=*/false);
  const AvgOptions a = avg_options(n);
  const OutputInfo out = n.output(0);
  expect_output_sizes(out, g.out_sizes(), "avg_pool2d");
  expect_dtype(out, self.dtype, "avg_pool2d");

  const DType compute = ir::compute_type(self.dtype);
  const PoolVars v(g.out_sizes(), g.h.kernel, g.w.kernel);
  const Expr h = g.h.start(v.row) + v.r0;
  const Expr w = g.w.start(v.col) + v.r1;
  const Expr inside = v.simplify(ir::le(Expr(0), h) * ir::lt(h, Expr(g.h.in)) * ir::le(Expr(0), w) *
                                 ir::lt(w, Expr(g.w.in)));
  const ir::Value x = ir::cast(ir::load(self.buffer, self.dtype, v.at(h, w), inside), compute);
  define_pooled(n, out, v, ReduceOp::sum, x, "sum", [&](const ir::Value& sum, const PoolVars& o) {
    return divide(sum, divisor_value(a, g, o, o.row, o.col));
  });
}

void lower_avg_pool_backward(NodeLowering& n) {
  const TensorInfo grad = n.tensor("grad_output");
  const TensorInfo self = n.tensor("self");
  const Geometry g = window_geometry(n, self, /*has_dilation=*/false);
  const AvgOptions a = avg_options(n);
  if (!ir::is_floating(grad.dtype)) decline("avg_pool2d backward of a non-floating type");
  require_same_sizes(grad, g.out_sizes(), "grad_output");
  const OutputInfo out = n.output(0);
  expect_output_sizes(out, g.in_sizes(), "avg_pool2d backward");
  expect_dtype(out, grad.dtype, "avg_pool2d backward");

  const Gather gather = gather_windows(g, /*check_end=*/true);
  const PoolVars& v = gather.vars;
  const GatherDim &gh = gather.h, &gw = gather.w;
  const Expr& valid = gather.valid;
  const DType compute = ir::compute_type(grad.dtype);
  const ir::Value dy =
      ir::cast(ir::load(grad.buffer, grad.dtype, v.at(gh.o, gw.o), valid), compute);
  ir::Value share = divide(dy, divisor_value(a, g, v, gh.o, gw.o));
  if (valid != Expr(1)) share = ir::where(index_condition(valid), share, zero(compute));
  define_pooled(n, out, v, ReduceOp::sum, share, "sum", nullptr);
}

/// One dim of adaptive pooling: output o averages input [floor(o*in/out), ceil((o+1)*in/out)).
struct AdaptiveDim {
  int64_t in = 1, out = 1;

  Expr start(const Expr& o) const { return ir::floordiv(o * Expr(in), Expr(out)); }
  Expr end(const Expr& o) const {
    return ir::floordiv((o + Expr(1)) * Expr(in) + Expr(out - 1), Expr(out));
  }
  /// The largest window.
  int64_t max_extent() const {
    int64_t m = 0;
    for (int64_t o = 0; o < out; ++o)
      m = std::max(m, ir::evaluate(end(Expr(o)) - start(Expr(o)), {}));
    return m;
  }
  /// The windows containing input row i: [first(i), last(i)].
  Expr first(const Expr& i) const { return ir::floordiv(i * Expr(out), Expr(in)); }
  Expr last(const Expr& i) const {
    return ir::floordiv((i + Expr(1)) * Expr(out) + Expr(in - 1), Expr(in)) - Expr(1);
  }
  int64_t max_windows() const {
    int64_t m = 0;
    for (int64_t i = 0; i < in; ++i)
      m = std::max(m, ir::evaluate(last(Expr(i)) - first(Expr(i)) + Expr(1), {}));
    return m;
  }
};

std::pair<AdaptiveDim, AdaptiveDim> adaptive_dims(const TensorInfo& self,
                                                  const std::vector<int64_t>& out_hw) {
  const size_t rank = self.rank();
  return {AdaptiveDim{self.sizes[rank - 2], out_hw[0]},
          AdaptiveDim{self.sizes[rank - 1], out_hw[1]}};
}

/// ATen's `x / kh / kw` (two roundings, in this order).
ir::Value divide_by_extents(const ir::Value& x, const AdaptiveDim& dh, const AdaptiveDim& dw,
                            const PoolVars& v, const Expr& rows, const Expr& cols) {
  const auto extent = [&](const AdaptiveDim& d, const Expr& o) {
    return ir::cast(int64_of(v.simplify(d.end(o) - d.start(o))), x->dtype);
  };
  return bin(BinaryOp::div, bin(BinaryOp::div, x, extent(dh, rows)), extent(dw, cols));
}

void lower_adaptive_avg_pool(NodeLowering& n) {
  const TensorInfo self = n.tensor("self");
  if (!ir::is_floating(self.dtype)) decline("adaptive_avg_pool2d of a non-floating type");
  std::vector<int64_t> batch = batch_of(self, "adaptive_avg_pool2d");
  const std::vector<int64_t> out_hw = n.int_list("output_size");
  if (out_hw.size() != 2 || out_hw[0] <= 0 || out_hw[1] <= 0)
    decline("adaptive_avg_pool2d output_size must be two positive sizes");
  const auto [dh, dw] = adaptive_dims(self, out_hw);
  std::vector<int64_t> sizes = batch;
  sizes.insert(sizes.end(), out_hw.begin(), out_hw.end());
  const OutputInfo out = n.output(0);
  expect_output_sizes(out, sizes, "adaptive_avg_pool2d");
  expect_dtype(out, self.dtype, "adaptive_avg_pool2d");

  const int64_t kh = dh.max_extent(), kw = dw.max_extent();
  const PoolVars v(sizes, kh, kw);
  const Expr inside = v.simplify(ir::lt(v.r0, dh.end(v.row) - dh.start(v.row)) *
                                 ir::lt(v.r1, dw.end(v.col) - dw.start(v.col)));
  const ir::Value x =
      ir::cast(ir::load(self.buffer, self.dtype,
                        v.at(dh.start(v.row) + v.r0, dw.start(v.col) + v.r1), inside),
               ir::compute_type(self.dtype));
  define_pooled(n, out, v, ReduceOp::sum, x, "sum",
                [&, dh = dh, dw = dw](const ir::Value& sum, const PoolVars& o) {
                  return divide_by_extents(sum, dh, dw, o, o.row, o.col);
                });
}

void lower_adaptive_avg_pool_backward(NodeLowering& n) {
  const TensorInfo grad = n.tensor("grad_output");
  const TensorInfo self = n.tensor("self");
  if (!ir::is_floating(grad.dtype)) decline("adaptive_avg_pool2d backward of a non-floating type");
  const std::vector<int64_t> batch = batch_of(self, "adaptive_avg_pool2d backward");
  if (grad.rank() != self.rank() || !std::equal(batch.begin(), batch.end(), grad.sizes.begin()))
    decline("grad_output does not match the input's batch dims");
  const size_t rank = grad.rank();
  const auto [dh, dw] = adaptive_dims(self, {grad.sizes[rank - 2], grad.sizes[rank - 1]});
  const OutputInfo out = n.output(0);
  expect_output_sizes(out, self.sizes, "adaptive_avg_pool2d backward");
  expect_dtype(out, grad.dtype, "adaptive_avg_pool2d backward");

  const int64_t count_h = dh.max_windows(), count_w = dw.max_windows();
  const PoolVars v(self.sizes, count_h, count_w);
  const Expr oh = dh.first(v.row) + v.r0, ow = dw.first(v.col) + v.r1;
  const Expr valid = v.simplify(ir::le(oh, dh.last(v.row)) * ir::le(ow, dw.last(v.col)));
  const DType compute = ir::compute_type(grad.dtype);
  const ir::Value dy = ir::cast(ir::load(grad.buffer, grad.dtype, v.at(oh, ow), valid), compute);
  ir::Value share = divide_by_extents(dy, dh, dw, v, oh, ow);
  if (valid != Expr(1)) share = ir::where(index_condition(valid), share, zero(compute));
  define_pooled(n, out, v, ReduceOp::sum, share, "sum", nullptr);
}

}  // namespace

void register_average_pooling_ops(OpTable& table) {
  table.add("aten::avg_pool2d",
            "self kernel_size stride padding ceil_mode count_include_pad divisor_override",
            lower_avg_pool);
  table.add("aten::avg_pool2d_backward",
            "grad_output self kernel_size stride padding ceil_mode count_include_pad "
            "divisor_override",
            lower_avg_pool_backward);
  table.add("aten::_adaptive_avg_pool2d", "self output_size", lower_adaptive_avg_pool);
  table.add("aten::_adaptive_avg_pool2d_backward", "grad_output self",
            lower_adaptive_avg_pool_backward);
}

}  // namespace inductor_cpp::inductor::lowering::pooling
