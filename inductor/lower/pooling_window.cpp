/// \file
/// The window machinery of the pooling lowerings (pooling_internal.h): reading the window
/// arguments as torch does, loop variables, and combining a window unrolled or as a reduction.
#include "inductor/lower/pooling_internal.h"

namespace inductor_cpp::inductor::lowering::pooling {
namespace {

/// torch's pooling_output_shape: with ceil_mode the last window must start inside the input
/// or the left padding.
int64_t pooled_size(int64_t in, int64_t kernel, int64_t pad, int64_t stride, int64_t dilation,
                    bool ceil_mode) {
  const int64_t num = in + 2 * pad - dilation * (kernel - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  const int64_t q = num >= 0 ? num / stride : -((-num + stride - 1) / stride);
  int64_t out = q + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

/// A list argument of one or two ints, as (rows, columns); `fallback` when absent or empty.
std::pair<int64_t, int64_t> pair_arg(const NodeLowering& n, const std::string& param,
                                     std::optional<std::pair<int64_t, int64_t>> fallback) {
  const auto list = n.optional_int_list(param);
  if (!list || list->empty()) {
    if (!fallback) decline(param + " missing");
    return *fallback;
  }
  if (list->size() == 1) return {(*list)[0], (*list)[0]};
  if (list->size() == 2) return {(*list)[0], (*list)[1]};
  decline(param + " must have one or two values");
}

/// sum or max of `body` over the window, unrolled in row-major order.
ir::Value unrolled_combine(const PoolVars& v, ReduceOp op, const ir::Value& body) {
  ir::Value acc;
  for (int64_t a = 0; a < v.reduce0; ++a)
    for (int64_t b = 0; b < v.reduce1; ++b) {
      const ir::Value term = v.at_position(body, a, b);
      if (!acc) {
        acc = term;
      } else {
        acc = op == ReduceOp::sum ? bin(BinaryOp::add, acc, term) : max_value(acc, term);
      }
    }
  return acc;
}

}  // namespace

std::vector<int64_t> batch_of(const TensorInfo& t, const char* what) {
  if (t.rank() != 3 && t.rank() != 4)
    decline(std::string(what) + " of a " + std::to_string(t.rank()) + "-D input");
  return std::vector<int64_t>(t.sizes.begin(), t.sizes.end() - 2);
}

Geometry window_geometry(const NodeLowering& n, const TensorInfo& self, bool has_dilation) {
  Geometry g;
  g.batch = batch_of(self, "pooling");
  const auto kernel = pair_arg(n, "kernel_size", std::nullopt);
  const auto stride = pair_arg(n, "stride", kernel);
  const auto pad = pair_arg(n, "padding", std::pair<int64_t, int64_t>{0, 0});
  const auto dil = has_dilation ? pair_arg(n, "dilation", std::pair<int64_t, int64_t>{1, 1})
                                : std::pair<int64_t, int64_t>{1, 1};
  const bool ceil_mode = n.bool_arg("ceil_mode", false);
  const size_t rank = self.rank();
  const std::pair<int64_t, int64_t> in{self.sizes[rank - 2], self.sizes[rank - 1]};
  for (int d = 0; d < 2; ++d) {
    WindowDim& w = d == 0 ? g.h : g.w;
    const auto get = [d](const std::pair<int64_t, int64_t>& p) {
      return d == 0 ? p.first : p.second;
    };
    w.in = get(in);
    w.kernel = get(kernel);
    w.stride = get(stride);
    w.pad = get(pad);
    w.dilation = get(dil);
    if (w.kernel <= 0 || w.stride <= 0 || w.dilation <= 0 || w.pad < 0 || w.pad > w.kernel / 2)
      decline("invalid pooling parameters (ATen raises)");
    w.out = pooled_size(w.in, w.kernel, w.pad, w.stride, w.dilation, ceil_mode);
    if (w.out < 1) decline("pooling output would be empty (ATen raises)");
  }
  return g;
}

PoolVars::PoolVars(const std::vector<int64_t>& sizes, int64_t reduce0_, int64_t reduce1_)
    : reduce0(reduce0_), reduce1(reduce1_), ranges(range_map(sizes)) {
  const std::vector<Expr> vars = range_vars(sizes.size());
  batch.assign(vars.begin(), vars.end() - 2);
  row = vars[vars.size() - 2];
  col = vars.back();
  ranges[ir::reduce_var(0)] = ir::Interval{0, reduce0 - 1};
  ranges[ir::reduce_var(1)] = ir::Interval{0, reduce1 - 1};
}

std::vector<Expr> PoolVars::at(const Expr& rows, const Expr& cols) const {
  std::vector<Expr> index = batch;
  index.push_back(simplify(rows));
  index.push_back(simplify(cols));
  return index;
}

Expr PoolVars::at_position(const Expr& e, int64_t a, int64_t b) const {
  return simplify(ir::substitute(e, {{ir::reduce_var(0), Expr(a)}, {ir::reduce_var(1), Expr(b)}}));
}

ir::Value PoolVars::at_position(const ir::Value& body, int64_t a, int64_t b) const {
  return ir::map_indices(body, [&](const Expr& e) { return at_position(e, a, b); });
}

ir::Compute reduction(const std::string& name, const std::vector<int64_t>& sizes, int64_t reduce0,
                      int64_t reduce1, ReduceOp op, const ir::Value& body) {
  ir::Compute c;
  c.name = name;
  c.ranges = to_exprs(sizes);
  c.reduce_ranges = to_exprs({reduce0, reduce1});
  c.reduce_op = op;
  c.body = body;
  return c;
}

void define_pooled(NodeLowering& n, const OutputInfo& out, const PoolVars& v, ReduceOp op,
                   const ir::Value& body, const std::string& suffix, const Finish& finish) {
  const int64_t reduce0 = v.reduce0, reduce1 = v.reduce1;
  if (v.unrolled()) {
    ir::Value result = unrolled_combine(v, op, body);
    if (finish) result = finish(result, v);
    n.define(make_pointwise(out.buffer, out.sizes, ir::cast(result, out.dtype), n.node_index()));
    return;
  }
  if (!finish && body->dtype == out.dtype) {
    n.define(reduction(out.buffer, out.sizes, reduce0, reduce1, op, body));
    return;
  }
  const std::string acc = n.internal_buffer(suffix, body->dtype, out.sizes);
  n.define(reduction(acc, out.sizes, reduce0, reduce1, op, body));
  const PoolVars o(out.sizes, 1, 1);
  ir::Value result = ir::load(acc, body->dtype, range_vars(out.sizes.size()));
  if (finish) result = finish(result, o);
  n.define(make_pointwise(out.buffer, out.sizes, ir::cast(result, out.dtype), n.node_index()));
}

namespace {

GatherDim windows_containing(const WindowDim& d, const Expr& in_var, const Expr& r,
                             bool check_end) {
  GatherDim gd;
  gd.count = std::min((d.span() + d.stride - 1) / d.stride, d.out);
  const Expr top = ir::min(ir::floordiv(in_var + Expr(d.pad), Expr(d.stride)), Expr(d.out - 1));
  gd.o = top - Expr(gd.count - 1) + r;
  gd.valid = ir::le(Expr(0), gd.o);
  if (check_end) gd.valid = gd.valid * ir::lt(in_var, d.start(gd.o) + Expr(d.span()));
  return gd;
}

}  // namespace

Gather gather_windows(const Geometry& g, bool check_end) {
  const GatherDim probe_h = windows_containing(g.h, Expr(0), Expr(0), check_end);
  const GatherDim probe_w = windows_containing(g.w, Expr(0), Expr(0), check_end);
  const PoolVars v(g.in_sizes(), probe_h.count, probe_w.count);
  const GatherDim gh = windows_containing(g.h, v.row, v.r0, check_end);
  const GatherDim gw = windows_containing(g.w, v.col, v.r1, check_end);
  const Expr valid = v.simplify(gh.valid * gw.valid);
  return {v, gh, gw, valid};
}

void expect_dtype(const OutputInfo& out, DType dtype, const char* what) {
  if (out.dtype != dtype)
    decline(std::string(what) + " gives " + ir::dtype_name(dtype) + " but the graph says " +
            ir::dtype_name(out.dtype));
}

void require_same_sizes(const TensorInfo& t, const std::vector<int64_t>& sizes, const char* what) {
  if (t.sizes != sizes)
    decline(std::string(what) + " has shape " + shape_text(t.sizes) + ", expected " +
            shape_text(sizes));
}

ir::Value int64_of(const Expr& e) {
  return ir::index_value(e, DType::Int64);
}
ir::Value int64_const(int64_t v) {
  return ir::constant_int(v, DType::Int64);
}

}  // namespace inductor_cpp::inductor::lowering::pooling
