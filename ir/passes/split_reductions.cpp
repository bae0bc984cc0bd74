/// \file
/// Two-stage reductions for long reductions with few outputs.
#include "ir/passes/split_reductions.h"

#include <cmath>
#include <limits>

#include "ir/simplify.h"

namespace inductor_cpp::ir {

namespace {

bool splittable(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::prod:
    case ReduceOp::max:
    case ReduceOp::min:
    case ReduceOp::any:
    case ReduceOp::all:
      return true;
    default:
      return false;
  }
}

std::optional<int64_t> static_product(const std::vector<Expr>& sizes) {
  int64_t n = 1;
  for (const Expr& s : sizes) {
    if (!s.is_const()) return std::nullopt;
    n *= s.value();
  }
  return n;
}

/// The value that leaves `op`'s accumulator unchanged.
Value identity_of(ReduceOp op, DType t) {
  const bool f = is_floating(t);
  const double inf = std::numeric_limits<double>::infinity();
  switch (op) {
    case ReduceOp::sum:
      return f ? constant_float(0, t) : constant_int(0, t);
    case ReduceOp::prod:
      return f ? constant_float(1, t) : constant_int(1, t);
    case ReduceOp::any:
      return constant_int(0, t);
    case ReduceOp::all:
      return constant_int(1, t);
    case ReduceOp::max:
      if (f) return constant_float(-inf, t);
      return constant_int(t == DType::Bool ? 0 : std::numeric_limits<int64_t>::min(), t);
    case ReduceOp::min:
      if (f) return constant_float(inf, t);
      return constant_int(t == DType::Bool ? 1 : std::numeric_limits<int64_t>::max(), t);
    default:
      return Value();
  }
}

Compute first_stage(const Compute& r, int64_t parts, int64_t chunk, int64_t total, const std::string& name) {
  const size_t n_out = r.ranges.size();
  const Expr q = Expr::var(range_var(n_out)) * chunk + Expr::var(reduce_var(0));
  // Delinearize q over the original reduce ranges (row-major).
  std::map<std::string, Expr> vars;
  Expr stride(1);
  for (size_t k = r.reduce_ranges.size(); k-- > 0;) {
    vars[reduce_var(k)] = mod(floordiv(q, stride), r.reduce_ranges[k]);
    stride = stride * r.reduce_ranges[k];
  }
  Value body = map_indices(r.body, [&](const Expr& e) { return substitute(e, vars); });
  if (parts * chunk != total) {
    const Expr in_range = lt(q, Expr(total));
    body = replace_loads(body, [&](const Value& l) -> Value {
      return load(l->name, l->dtype, l->index, in_range * l->mask, l->operands, l->bounds);
    });
    const Value keep = binary(BinaryOp::ne, index_value(in_range, DType::Int64), constant_int(0, DType::Int64));
    body = where(keep, body, identity_of(r.reduce_op, body->dtype));
  }
  Compute c = r;
  c.name = name;
  c.ranges.push_back(Expr(parts));
  c.reduce_ranges = {Expr(chunk)};
  c.body = body;
  return c;
}

}  // namespace

LoopProgram split_reductions(const LoopProgram& program, const SplitOptions& options) {
  LoopProgram out = program;
  out.steps.clear();
  for (const Step& s : program.steps) {
    if (s.kind != Step::Kind::Kernel || s.kernel.computes.size() != 1) {
      out.steps.push_back(s);
      continue;
    }
    const Compute& r = program.computes.at(s.kernel.computes.front());
    const auto outputs = static_product(r.ranges);
    const auto total = static_product(r.reduce_ranges);
    if (!r.is_reduction() || !splittable(r.reduce_op) || !outputs || !total || *outputs > options.max_outputs ||
        *total < options.min_reduction) {
      out.steps.push_back(s);
      continue;
    }
    const int64_t chunk = (*total + options.partials - 1) / options.partials;
    const int64_t parts = (*total + chunk - 1) / chunk;
    const std::string part_name = r.name + ".part";
    Compute first = first_stage(r, parts, chunk, *total, part_name);
    // Simplify the first stage's indexing with its own ranges.
    const RangeMap ranges = ranges_of(first, program);
    first.body = map_indices(first.body, [&](const Expr& e) { return simplify(e, ranges); });

    Buffer part;
    part.name = part_name;
    part.dtype = first.dtype();
    part.sizes = first.ranges;
    part.strides = contiguous_strides(part.sizes);
    part.device = program.buffer(r.name).device;
    out.buffers.push_back(part);

    std::vector<Expr> idx;
    for (size_t k = 0; k < r.ranges.size(); ++k) idx.push_back(Expr::var(range_var(k)));
    idx.push_back(Expr::var(reduce_var(0)));
    Compute second = r;
    second.reduce_ranges = {Expr(parts)};
    second.body = load(part_name, part.dtype, idx);
    out.computes[part_name] = first;
    out.computes[r.name] = second;

    Step first_step;
    first_step.kernel.computes = {part_name};
    out.steps.push_back(first_step);
    out.steps.push_back(s);
  }
  return out;
}

}  // namespace inductor_cpp::ir
