/// \file
/// Reductions: sum, prod, mean, amax/amin, max/min (full and .dim with indices),
/// argmax/argmin, var/std/var_mean, any/all, logsumexp.
///
/// A reduction compute has the KEPT dims as ranges and the reduced dims as reduce ranges; its
/// body indexes the input with i<k> for kept dims and r<m> for reduced ones. When the output
/// needs more than that (a cast back to float16, a division for mean, keepdim's size-1 dims),
/// the reduction defines an internal buffer "%<n>.<what>" and the output is a compute over it:
/// a view when it only re-indexes, a pointwise otherwise. Reducing over no dims (a 0-dim
/// input, any.dims with []) is a reduction over one element (reduce range [1]).
#include <cmath>

#include "inductor/lower/elementwise.h"

namespace inductor_cpp::inductor::lowering {
namespace {

using ir::BinaryOp;
using ir::DType;
using ir::ReduceOp;
using ir::UnaryOp;
using Index = std::vector<ir::Expr>;

/// Which input dims a reduction reduces.
struct Axes {
  std::vector<bool> reduced;  ///< per input dim
  std::vector<int64_t> kept_sizes;
  std::vector<int64_t> reduced_sizes;

  int64_t count() const {
    int64_t c = 1;
    for (int64_t s : reduced_sizes) c *= s;
    return c;
  }
};

/// nullopt: all dims. An empty list: all dims when `empty_means_all` (sum, amax, var, ...),
/// none otherwise (any.dims/all.dims).
Axes axes_of(const TensorInfo& t, const std::optional<std::vector<int64_t>>& dims,
             bool empty_means_all = true) {
  Axes a;
  const bool all = !dims || (dims->empty() && empty_means_all);
  a.reduced.assign(t.rank(), all);
  if (!all)
    for (int64_t d : *dims) {
      const int64_t w = wrap_dim(d, t.rank());
      if (t.rank() == 0) continue;
      if (a.reduced[w]) decline("dim " + std::to_string(d) + " appears twice");
      a.reduced[w] = true;
    }
  for (size_t d = 0; d < t.rank(); ++d)
    (a.reduced[d] ? a.reduced_sizes : a.kept_sizes).push_back(t.sizes[d]);
  return a;
}

/// The input index in a reduction body: i<k> for the k-th kept dim, r<m> for the m-th reduced.
Index input_index(const Axes& a) {
  Index index;
  size_t k = 0, m = 0;
  for (bool r : a.reduced)
    index.push_back(ir::Expr::var(r ? ir::reduce_var(m++) : ir::range_var(k++)));
  return index;
}

std::vector<int64_t> output_sizes(const TensorInfo& t, const Axes& a, bool keepdim) {
  if (!keepdim) return a.kept_sizes;
  std::vector<int64_t> sizes = t.sizes;
  for (size_t d = 0; d < sizes.size(); ++d)
    if (a.reduced[d]) sizes[d] = 1;
  return sizes;
}

/// Computes the output from the reduction result (loaded at the kept index).
using Finish = std::function<ir::Value(const ir::Value& acc, const Index& kept_index)>;

struct OutputSpec {
  size_t output = 0;
  DType dtype;              ///< what torch gives; the metadata must agree
  std::string suffix;       ///< name of the internal buffer, when one is needed
  Finish finish = nullptr;  ///< nullptr: the result itself
};

ir::Compute reduction_compute(const std::string& name, const Axes& a, ReduceOp op,
                              const ir::Value& body) {
  ir::Compute c;
  c.name = name;
  c.ranges = to_exprs(a.kept_sizes);
  c.reduce_ranges = a.reduced_sizes.empty() ? to_exprs({1}) : to_exprs(a.reduced_sizes);
  c.reduce_op = op;
  c.body = body;
  return c;
}

/// Defines the reduction and, when needed, the compute that turns it into the output.
/// Returns the name of the buffer holding the reduction's result.
std::string define_reduction_output(NodeLowering& n, const TensorInfo& t, const Axes& a,
                                    bool keepdim, ReduceOp op, const ir::Value& body,
                                    const OutputSpec& spec) {
  const OutputInfo out = n.output(spec.output);
  expect_output_sizes(out, output_sizes(t, a, keepdim), "the reduction");
  if (out.dtype != spec.dtype)
    decline(std::string("reduction gives ") + ir::dtype_name(spec.dtype) + " but the graph says " +
            ir::dtype_name(out.dtype));
  const DType acc_type = ir::reduce_result_type(op, body->dtype);
  const bool reindex = out.sizes.size() != a.kept_sizes.size();
  if (!spec.finish && acc_type == out.dtype && !reindex) {
    n.define(reduction_compute(out.buffer, a, op, body));
    return out.buffer;
  }
  const std::string acc = n.internal_buffer(spec.suffix, acc_type, a.kept_sizes);
  n.define(reduction_compute(acc, a, op, body));

  const Index out_index = range_vars(out.sizes.size());
  Index kept_index;
  for (size_t d = 0; d < out.sizes.size(); ++d)
    if (!keepdim || !a.reduced[d]) kept_index.push_back(out_index[d]);
  ir::Value v = ir::load(acc, acc_type, kept_index);
  if (spec.finish) v = spec.finish(v, kept_index);
  // Not a view compute even when it only re-indexes the accumulator (keepdim): a view that
  // must be materialized is done by running its node's ATen op on the source buffer, which is
  // right for view ops only (amax on the accumulator would reduce it again).
  n.define(make_pointwise(out.buffer, out.sizes, ir::cast(v, out.dtype), n.node_index()));
  return acc;
}

/// The input's elements in `type`'s compute type (float16 accumulates in float32).
ir::Value input_as(const TensorInfo& t, const Axes& a, DType type) {
  return ir::cast(ir::cast(load_at(t, input_index(a)), type), ir::compute_type(type));
}

bool bool_or_integral(DType t) {
  return t == DType::Bool || ir::is_integral(t);
}

/// sum / prod: bool and integers accumulate in int64 unless a dtype is given.
void lower_sum_like(NodeLowering& n, ReduceOp op, const std::optional<std::vector<int64_t>>& dims,
                    bool keepdim) {
  const TensorInfo t = n.tensor("self");
  const DType type =
      n.dtype_arg("dtype").value_or(bool_or_integral(t.dtype) ? DType::Int64 : t.dtype);
  if (type == DType::Bool) decline("sum/prod with a bool result");
  const Axes a = axes_of(t, dims);
  define_reduction_output(n, t, a, keepdim, op, input_as(t, a, type),
                          OutputSpec{0, type, op == ReduceOp::sum ? "sum" : "prod"});
}

/// mean = sum / count, computed in float32 for float16/bfloat16 and rounded once.
void lower_mean(NodeLowering& n, const std::optional<std::vector<int64_t>>& dims, bool keepdim) {
  const TensorInfo t = n.tensor("self");
  const DType type = n.dtype_arg("dtype").value_or(t.dtype);
  if (!ir::is_floating(type)) decline("mean of a non-floating type");
  const Axes a = axes_of(t, dims);
  const double count = static_cast<double>(a.count());
  define_reduction_output(n, t, a, keepdim, ReduceOp::sum, input_as(t, a, type),
                          OutputSpec{0, type, "sum", [count](const ir::Value& acc, const Index&) {
                                       return bin(BinaryOp::div, acc, constant_like(count, acc));
                                     }});
}

/// max/min values (amax, max(), max.dim's values); on bool they are any/all.
void define_extremum(NodeLowering& n, const TensorInfo& t, const Axes& a, bool keepdim, bool is_max,
                     size_t output) {
  const bool is_bool = t.dtype == DType::Bool;
  const ReduceOp op =
      is_bool ? (is_max ? ReduceOp::any : ReduceOp::all) : (is_max ? ReduceOp::max : ReduceOp::min);
  define_reduction_output(n, t, a, keepdim, op, input_as(t, a, t.dtype),
                          OutputSpec{output, t.dtype, is_max ? "max" : "min"});
}

/// argmax/argmin (and max.dim's indices): bool compares as 0/1.
void define_arg_extremum(NodeLowering& n, const TensorInfo& t, const Axes& a, bool keepdim,
                         bool is_max, size_t output) {
  const DType type = t.dtype == DType::Bool ? DType::UInt8 : t.dtype;
  define_reduction_output(n, t, a, keepdim, is_max ? ReduceOp::argmax : ReduceOp::argmin,
                          input_as(t, a, type),
                          OutputSpec{output, DType::Int64, is_max ? "argmax" : "argmin"});
}

void lower_max_dim(NodeLowering& n, bool is_max) {
  const TensorInfo t = n.tensor("self");
  const Axes a = axes_of(t, std::vector<int64_t>{n.int_arg("dim")});
  const bool keepdim = n.bool_arg("keepdim", false);
  define_extremum(n, t, a, keepdim, is_max, 0);
  define_arg_extremum(n, t, a, keepdim, is_max, 1);
}

/// The correction of var/std: `correction` (default 1) or `unbiased` (true -> 1).
double correction_of(const NodeLowering& n) {
  if (n.has("correction")) return n.number("correction");
  return n.bool_arg("unbiased", true) ? 1.0 : 0.0;
}

/// var / std (and var_mean's var): m2 / max(0, N - correction), as ATen's Welford projection.
void lower_variance(NodeLowering& n, const std::optional<std::vector<int64_t>>& dims, bool is_std,
                    bool with_mean) {
  const TensorInfo t = n.tensor("self");
  if (!ir::is_floating(t.dtype)) decline("var/std of a non-floating type");
  const bool keepdim = n.bool_arg("keepdim", false);
  const Axes a = axes_of(t, dims);
  const double divisor = std::max(0.0, static_cast<double>(a.count()) - correction_of(n));
  const ir::Value body = input_as(t, a, t.dtype);
  define_reduction_output(n, t, a, keepdim, ReduceOp::welford_m2, body,
                          OutputSpec{0, t.dtype, "m2", [=](const ir::Value& m2, const Index&) {
                                       const ir::Value var =
                                           bin(BinaryOp::div, m2, constant_like(divisor, m2));
                                       return is_std ? un(UnaryOp::sqrt, var) : var;
                                     }});
  if (!with_mean) return;
  const double count = static_cast<double>(a.count());
  define_reduction_output(
      n, t, a, keepdim, ReduceOp::sum, body,
      OutputSpec{1, t.dtype, "sum", [count](const ir::Value& acc, const Index&) {
                   return bin(BinaryOp::div, acc, constant_like(count, acc));
                 }});
}

ir::Value truth(const ir::Value& x) {
  if (x->dtype == DType::Bool) return x;
  return bin(BinaryOp::ne, x, constant_like(0, x));
}

/// any/all: bool results (uint8 for uint8 inputs, as torch keeps that type).
void lower_any_all(NodeLowering& n, bool is_any, const std::optional<std::vector<int64_t>>& dims,
                   bool keepdim) {
  const TensorInfo t = n.tensor("self");
  const Axes a = axes_of(t, dims, /*empty_means_all=*/false);
  const DType result = t.dtype == DType::UInt8 ? DType::UInt8 : DType::Bool;
  const ir::Value body = truth(ir::cast(load_at(t, input_index(a)), ir::compute_type(t.dtype)));
  define_reduction_output(n, t, a, keepdim, is_any ? ReduceOp::any : ReduceOp::all, body,
                          OutputSpec{0, result, is_any ? "any" : "all"});
}

/// logsumexp as torch's reference: m = amax (0 where it is +-inf, so that all -inf rows give
/// -inf and +inf rows give +inf), then log(sum(exp(x - m))) + m.
void lower_logsumexp(NodeLowering& n) {
  const TensorInfo t = n.tensor("self");
  const std::vector<int64_t> dims = n.int_list("dim");
  if (dims.empty()) decline("logsumexp over an empty dim list");
  const bool keepdim = n.bool_arg("keepdim", false);
  const DType type = ir::is_floating(t.dtype) ? t.dtype : DType::Float32;
  const Axes a = axes_of(t, dims);
  const ir::Value x = input_as(t, a, type);
  const std::string max_buffer = n.internal_buffer("max", x->dtype, a.kept_sizes);
  n.define(reduction_compute(max_buffer, a, ReduceOp::max, x));
  const auto safe_max = [&](const Index& kept_index) {
    const ir::Value m = ir::load(max_buffer, x->dtype, kept_index);
    return ir::where(un(UnaryOp::isinf, m), constant_like(0, m), m);
  };
  Index kept_vars;
  for (size_t k = 0; k < a.kept_sizes.size(); ++k)
    kept_vars.push_back(ir::Expr::var(ir::range_var(k)));
  const ir::Value body = un(UnaryOp::exp, bin(BinaryOp::sub, x, safe_max(kept_vars)));
  define_reduction_output(n, t, a, keepdim, ReduceOp::sum, body,
                          OutputSpec{0, type, "sumexp", [&](const ir::Value& s, const Index& kept) {
                                       return bin(BinaryOp::add, un(UnaryOp::log, s),
                                                  safe_max(kept));
                                     }});
}

}  // namespace

void register_reduction_ops(OpTable& table) {
  table.add("aten::sum.dim_IntList", "self dim keepdim dtype", [](NodeLowering& n) {
    lower_sum_like(n, ReduceOp::sum, n.optional_int_list("dim"), n.bool_arg("keepdim", false));
  });
  table.add("aten::sum", "self dtype",
            [](NodeLowering& n) { lower_sum_like(n, ReduceOp::sum, std::nullopt, false); });
  table.add("aten::prod.dim_int", "self dim keepdim dtype", [](NodeLowering& n) {
    lower_sum_like(n, ReduceOp::prod, std::vector<int64_t>{n.int_arg("dim")},
                   n.bool_arg("keepdim", false));
  });
  table.add("aten::prod", "self dtype",
            [](NodeLowering& n) { lower_sum_like(n, ReduceOp::prod, std::nullopt, false); });
  table.add("aten::mean.dim", "self dim keepdim dtype", [](NodeLowering& n) {
    lower_mean(n, n.optional_int_list("dim"), n.bool_arg("keepdim", false));
  });
  table.add("aten::mean", "self dtype",
            [](NodeLowering& n) { lower_mean(n, std::nullopt, false); });
  for (bool is_max : {true, false}) {
    const std::string name = is_max ? "max" : "min";
    table.add("aten::a" + name, "self dim keepdim", [is_max](NodeLowering& n) {
      const TensorInfo t = n.tensor("self");
      const auto dims = n.optional_int_list("dim").value_or(std::vector<int64_t>{});
      define_extremum(n, t, axes_of(t, dims), n.bool_arg("keepdim", false), is_max, 0);
    });
    table.add("aten::" + name, "self", [is_max](NodeLowering& n) {
      const TensorInfo t = n.tensor("self");
      define_extremum(n, t, axes_of(t, std::nullopt), false, is_max, 0);
    });
    table.add("aten::" + name + ".dim", "self dim keepdim",
              [is_max](NodeLowering& n) { lower_max_dim(n, is_max); });
    table.add("aten::arg" + name, "self dim keepdim", [is_max](NodeLowering& n) {
      const TensorInfo t = n.tensor("self");
      const auto dim = n.optional_int("dim");
      const Axes a = dim ? axes_of(t, std::vector<int64_t>{*dim}) : axes_of(t, std::nullopt);
      define_arg_extremum(n, t, a, n.bool_arg("keepdim", false), is_max, 0);
    });
  }
  for (const auto& [op, is_std, with_mean] :
       {std::tuple{"var", false, false}, {"std", true, false}, {"var_mean", false, true}}) {
    const bool s = is_std, m = with_mean;
    const std::string base = std::string("aten::") + op;
    table.add(base + ".correction", "self dim correction keepdim",
              [s, m](NodeLowering& n) { lower_variance(n, n.optional_int_list("dim"), s, m); });
    table.add(base + ".dim", "self dim unbiased keepdim",
              [s, m](NodeLowering& n) { lower_variance(n, n.optional_int_list("dim"), s, m); });
    table.add(base, "self unbiased",
              [s, m](NodeLowering& n) { lower_variance(n, std::nullopt, s, m); });
  }
  for (bool is_any : {true, false}) {
    const std::string base = is_any ? "aten::any" : "aten::all";
    table.add(base, "self",
              [is_any](NodeLowering& n) { lower_any_all(n, is_any, std::nullopt, false); });
    table.add(base + ".dim", "self dim keepdim", [is_any](NodeLowering& n) {
      lower_any_all(n, is_any, std::vector<int64_t>{n.int_arg("dim")},
                    n.bool_arg("keepdim", false));
    });
    table.add(base + ".dims", "self dim keepdim", [is_any](NodeLowering& n) {
      lower_any_all(n, is_any, n.optional_int_list("dim"), n.bool_arg("keepdim", false));
    });
  }
  table.add("aten::logsumexp", "self dim keepdim", lower_logsumexp);
}

}  // namespace inductor_cpp::inductor::lowering
