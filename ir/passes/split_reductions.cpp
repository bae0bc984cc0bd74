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

/// The first stage: `parts` partial reductions of `chunk` elements each. The part index is the
/// last output index, or the first when `part_first` (the original output indices shift up).
Compute first_stage(const Compute& r, int64_t parts, int64_t chunk, int64_t total, const std::string& name,
                    bool part_first = false) {
  const size_t n_out = r.ranges.size();
  const Expr q = Expr::var(range_var(part_first ? 0 : n_out)) * chunk + Expr::var(reduce_var(0));
  // Delinearize q over the original reduce ranges (row-major).
  std::map<std::string, Expr> vars;
  if (part_first) {
    for (size_t k = 0; k < n_out; ++k) vars[range_var(k)] = Expr::var(range_var(k + 1));
  }
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
  if (part_first)
    c.ranges.insert(c.ranges.begin(), Expr(parts));
  else
    c.ranges.push_back(Expr(parts));
  c.reduce_ranges = {Expr(chunk)};
  c.body = body;
  return c;
}

/// Whether `r` reduces down columns: every load's element offset (its indices times the
/// buffer's strides) is contiguous (coefficient 1) or constant in the last output index and
/// constant or strided (|coefficient| ≥ 16) in each reduce index, with at least one load
/// contiguous in the one and strided in the other.
bool reduces_down_columns(const Compute& r, const LoopProgram& program) {
  if (r.ranges.empty()) return false;
  const std::string inner = range_var(r.ranges.size() - 1);
  bool ok = true, column_walk = false;
  replace_loads(r.body, [&](const Value& l) -> Value {
    const Buffer& b = program.buffer(l->name);
    if (!l->operands.empty() || b.strides.size() != l->index.size()) ok = false;  // indirect
    Expr offset(0);
    for (size_t d = 0; ok && d < l->index.size(); ++d) offset = offset + l->index[d] * b.strides[d];
    const std::optional<int64_t> across = coefficient_of(offset, inner);
    if (!across || (*across != 0 && *across != 1)) ok = false;
    bool strided = false;
    for (size_t k = 0; ok && k < r.reduce_ranges.size(); ++k) {
      const std::optional<int64_t> down = coefficient_of(offset, reduce_var(k));
      if (!down || (*down != 0 && std::abs(*down) < 16)) ok = false;
      strided = strided || (down && *down != 0);
    }
    column_walk = column_walk || (ok && across && *across == 1 && strided);
    return l;
  });
  return ok && column_walk;
}

/// The two stages of `r` (one kernel step `s`) over `parts` chunks of `chunk` reduced
/// elements, the partials in buffer <name>.part laid out [outputs..., part], or
/// [part, outputs...] when part_first.
void emit_two_stages(const LoopProgram& program, LoopProgram& out, const Step& s, const Compute& r,
                     int64_t parts, int64_t chunk, int64_t total, bool part_first) {
  const std::string part_name = r.name + ".part";
  Compute first = first_stage(r, parts, chunk, total, part_name, part_first);
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
  if (part_first)
    idx.insert(idx.begin(), Expr::var(reduce_var(0)));
  else
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
    if (!r.is_reduction() || !splittable(r.reduce_op) || !outputs || !total) {
      out.steps.push_back(s);
      continue;
    }
    if (*outputs <= options.max_outputs && *total >= options.min_reduction) {
      const int64_t chunk = (*total + options.partials - 1) / options.partials;
      emit_two_stages(program, out, s, r, (*total + chunk - 1) / chunk, chunk, *total, false);
      continue;
    }
    // A column reduction walks one column of every row per vector of outputs: a new page per
    // row (TLB misses past a few hundred rows) and one line per row for the prefetchers. In
    // chunks of column_chunk rows the first stage reads that many rows side by side along
    // whole rows; the second reduces the (total / column_chunk) partial rows.
    if (options.column_chunk > 0 && *total >= 2 * options.column_chunk &&
        *outputs * *total >= options.column_min_elements && reduces_down_columns(r, program)) {
      const int64_t chunk = options.column_chunk;
      emit_two_stages(program, out, s, r, (*total + chunk - 1) / chunk, chunk, *total, true);
      continue;
    }
    out.steps.push_back(s);
  }
  return out;
}

}  // namespace inductor_cpp::ir
