/// \file
/// Two-stage reductions for long reductions with few outputs.
#include "ir/passes/split_reductions.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <set>

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

/// Whether some load of `r` walks down columns: its element offset is contiguous (coefficient
/// 1) in the last output index and strided (|coefficient| >= 16 within runs) in a reduce index. Unlike
/// reduces_down_columns, the other loads may index anyhow (gathers, clamped windows).
bool walks_down_columns(const Compute& r, const LoopProgram& program) {
  if (r.ranges.empty()) return false;
  const std::string inner = range_var(r.ranges.size() - 1);
  bool found = false;
  replace_loads(r.body, [&](const Value& l) -> Value {
    const Buffer& b = program.buffer(l->name);
    if (!l->operands.empty() || b.strides.size() != l->index.size()) return l;
    Expr offset(0);
    for (size_t d = 0; d < l->index.size(); ++d) offset = offset + l->index[d] * b.strides[d];
    if (coefficient_of(offset, inner) != std::optional<int64_t>(1)) return l;
    for (size_t k = 0; k < r.reduce_ranges.size(); ++k) {
      // Within runs: a view of an NHWC tensor as [N*H*W, C] reads (r // 56 % 56) * 5376 +
      // (r % 56) * 96, a column walk coefficient_of cannot see.
      const std::optional<int64_t> down = coefficient_within_runs(offset, reduce_var(k));
      found = found || (down && std::abs(*down) >= 16);
    }
    return l;
  });
  return found;
}

/// How a few-column reduction is cut: the first `dims` reduce ranges, flattened (`head`
/// elements), into `parts` runs of `head / parts`; the later reduce ranges stay whole.
struct LeadingSplit {
  size_t dims = 0;
  int64_t parts = 0;
  int64_t per_part = 0;
};

/// The constants `r`'s loads divide a reduce index by (`// c`, `% c`): the run lengths of a
/// flattened view (a [N*H*W, C] view of an NHWC tensor reads r0 // 3136, r0 // 56 % 56, r0 % 56).
std::vector<int64_t> reduce_run_lengths(const Compute& r) {
  std::set<std::string> reduce_vars;
  for (size_t k = 0; k < r.reduce_ranges.size(); ++k) reduce_vars.insert(reduce_var(k));
  std::vector<int64_t> runs;
  std::function<void(const Expr&)> walk = [&](const Expr& e) {
    if (e.is_const() || e.is_var()) return;
    if ((e.kind() == ExprKind::FloorDiv || e.kind() == ExprKind::Mod) && e.rhs().is_const() &&
        e.rhs().value() > 1) {
      const std::set<std::string> vars = free_vars(e.lhs());
      if (std::any_of(vars.begin(), vars.end(), [&](const std::string& v) { return reduce_vars.count(v) > 0; }))
        runs.push_back(e.rhs().value());
    }
    walk(e.lhs());
    walk(e.rhs());
  };
  replace_loads(r.body, [&](const Value& l) -> Value {
    for (const Expr& e : l->index) walk(e);
    return l;
  });
  return runs;
}

/// The fewest leading reduce ranges whose product has a divisor in [target / 2, target], cut by
/// such a divisor (or, with all of them, one in [target / 4, target]); nullopt when none has.
/// Exact divisors only: no masked tail, and each part's loops stay the original loops (no
/// division per element). Of the divisors, the one whose parts are whole runs of the most of
/// `runs` (reduce_run_lengths), then the largest: cut at image boundaries, a view's
/// (part * 3136 + r) // 3136 simplifies to the part, where parts of 1568 pixels would keep a
/// division per element and misalign the view's rows.
std::optional<LeadingSplit> leading_split(const std::vector<Expr>& reduce_ranges, int64_t target,
                                          const std::vector<int64_t>& runs = {}) {
  int64_t head = 1;
  for (size_t dims = 1; dims <= reduce_ranges.size(); ++dims) {
    head *= reduce_ranges[dims - 1].value();
    const int64_t fewest = dims == reduce_ranges.size() ? target / 4 : target / 2;
    std::optional<LeadingSplit> best;
    int64_t best_broken = 0;
    for (int64_t parts = std::min(head, target); parts >= std::max<int64_t>(fewest, 2); --parts) {
      if (head % parts != 0) continue;
      const int64_t per_part = head / parts;
      const int64_t broken = std::count_if(runs.begin(), runs.end(), [&](int64_t c) {
        return c < head && per_part % c != 0;
      });
      if (!best || broken < best_broken) {
        best = LeadingSplit{dims, parts, per_part};
        best_broken = broken;
      }
    }
    if (best) return best;
  }
  return std::nullopt;
}

/// The first stage of a few-column reduction: ranges [part, outputs...], reduce ranges
/// [head / parts, later reduce ranges...]; the part index selects a run of the flattened
/// leading reduce ranges.
Compute leading_first_stage(const Compute& r, const LeadingSplit& split, const std::string& name) {
  std::map<std::string, Expr> vars;
  for (size_t k = 0; k < r.ranges.size(); ++k) vars[range_var(k)] = Expr::var(range_var(k + 1));
  const Expr h = Expr::var(range_var(0)) * split.per_part + Expr::var(reduce_var(0));
  Expr stride(1);
  for (size_t k = split.dims; k-- > 0;) {
    const Expr q = floordiv(h, stride);
    vars[reduce_var(k)] = k == 0 ? q : mod(q, r.reduce_ranges[k]);
    stride = stride * r.reduce_ranges[k];
  }
  for (size_t k = split.dims; k < r.reduce_ranges.size(); ++k)
    vars[reduce_var(k)] = Expr::var(reduce_var(k - split.dims + 1));
  Compute c = r;
  c.name = name;
  c.ranges.insert(c.ranges.begin(), Expr(split.parts));
  c.reduce_ranges = {Expr(split.per_part)};
  c.reduce_ranges.insert(c.reduce_ranges.end(), r.reduce_ranges.begin() + split.dims, r.reduce_ranges.end());
  c.body = map_indices(r.body, [&](const Expr& e) { return substitute(e, vars); });
  return c;
}

/// The number of leading reduce ranges of `r` ahead of its contiguous block: walking from the
/// last reduce range back, a range stays in the block while every direct load that moves with
/// the reduction has it at the stride of a dense layout (1 for the last). 0 when the loads do
/// not fit (indirect, or no load contiguous in the last reduce range).
size_t strided_head_dims(const Compute& r, const LoopProgram& program) {
  const size_t n = r.reduce_ranges.size();
  std::vector<Expr> offsets;
  bool ok = n >= 2;
  replace_loads(r.body, [&](const Value& l) -> Value {
    const Buffer& b = program.buffer(l->name);
    if (!l->operands.empty() || b.strides.size() != l->index.size()) ok = false;
    Expr offset(0);
    for (size_t d = 0; ok && d < l->index.size(); ++d) offset = offset + l->index[d] * b.strides[d];
    bool moves = false;
    for (size_t k = 0; ok && k < n; ++k) moves = moves || coefficient_of(offset, reduce_var(k)) != std::optional<int64_t>(0);
    if (ok && moves) offsets.push_back(offset);
    return l;
  });
  if (!ok || offsets.empty()) return 0;
  int64_t stride = 1;
  for (size_t k = n; k-- > 0;) {
    for (const Expr& offset : offsets) {
      if (coefficient_of(offset, reduce_var(k)) != std::optional<int64_t>(stride)) return k + 1 == n ? 0 : k + 1;
    }
    stride *= r.reduce_ranges[k].value();
  }
  return 0;  // all contiguous: a plain row, nothing to cut off
}

/// The first stage that cuts off a strided head of `head_dims` reduce ranges, one part per head
/// position: ranges [head positions, outputs...], reduce ranges the block's.
Compute head_first_stage(const Compute& r, size_t head_dims, const std::string& name) {
  std::map<std::string, Expr> vars;
  for (size_t k = 0; k < r.ranges.size(); ++k) vars[range_var(k)] = Expr::var(range_var(k + 1));
  const Expr part = Expr::var(range_var(0));
  Expr stride(1);
  for (size_t k = head_dims; k-- > 0;) {
    const Expr q = floordiv(part, stride);
    vars[reduce_var(k)] = k == 0 ? q : mod(q, r.reduce_ranges[k]);
    stride = stride * r.reduce_ranges[k];
  }
  for (size_t k = head_dims; k < r.reduce_ranges.size(); ++k) vars[reduce_var(k)] = Expr::var(reduce_var(k - head_dims));
  Compute c = r;
  c.name = name;
  c.ranges.insert(c.ranges.begin(), stride);
  c.reduce_ranges.assign(r.reduce_ranges.begin() + static_cast<std::ptrdiff_t>(head_dims), r.reduce_ranges.end());
  c.body = map_indices(r.body, [&](const Expr& e) { return substitute(e, vars); });
  return c;
}

/// The strided-head first stage of `r` (SplitOptions::strided_head_max_parts), if that path
/// applies.
std::optional<Compute> strided_head_first_stage(const Compute& r, const LoopProgram& program,
                                                const SplitOptions& options, int64_t outputs) {
  if (options.strided_head_max_parts <= 0 || outputs > options.strided_head_max_outputs) return std::nullopt;
  const size_t head_dims = strided_head_dims(r, program);
  if (head_dims == 0) return std::nullopt;
  int64_t head = 1, block = 1;
  for (size_t k = 0; k < r.reduce_ranges.size(); ++k) (k < head_dims ? head : block) *= r.reduce_ranges[k].value();
  if (block < options.strided_head_min_block || head < 2) return std::nullopt;
  const std::string name = r.name + ".part";
  if (head <= options.strided_head_max_parts) return head_first_stage(r, head_dims, name);
  const std::vector<Expr> head_ranges(r.reduce_ranges.begin(), r.reduce_ranges.begin() + static_cast<std::ptrdiff_t>(head_dims));
  const auto split = leading_split(head_ranges, options.strided_head_max_parts);
  if (!split) return std::nullopt;
  return leading_first_stage(r, *split, name);
}

/// The few-columns first stage of `r` (SplitOptions::few_columns_parts), if that path applies:
/// a column reduction with few outputs (a batch norm's per-channel sums over N*H*W pixels) cut
/// into about `few_columns_parts` runs of its leading reduce ranges. The CPU schedule gives
/// threads whole vectors of columns, the GPU's column kernels one block per few columns: 64 or
/// 96 channels would run on one thread, or on one of the GPU's 132 multiprocessors.
std::optional<Compute> few_columns_first_stage(const Compute& r, const LoopProgram& program,
                                               const SplitOptions& options) {
  const auto outputs = static_product(r.ranges);
  const auto total = static_product(r.reduce_ranges);
  if (options.few_columns_parts <= 0 || !outputs || !total ||
      *outputs > options.few_columns_max_outputs ||
      *outputs * *total < options.few_columns_min_elements || !walks_down_columns(r, program))
    return std::nullopt;
  const auto split = leading_split(r.reduce_ranges, options.few_columns_parts, reduce_run_lengths(r));
  if (!split) return std::nullopt;
  return leading_first_stage(r, *split, r.name + ".part");
}

/// The two stages of `r` (one kernel step `s`): `first` (named <r>.part, ranges with the part
/// index last, or first when part_first) and r reduced again over the parts.
void emit_two_stages(const LoopProgram& program, LoopProgram& out, const Step& s, const Compute& r,
                     Compute first, bool part_first, const SplitOptions& options) {
  const std::string& part_name = first.name;
  const int64_t parts = (part_first ? first.ranges.front() : first.ranges.back()).value();
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
  const std::vector<Expr> part_index = idx;
  Compute second = r;
  second.reduce_ranges = {Expr(parts)};
  second.body = load(part_name, part.dtype, idx);
  if (part_first && parts >= 16 && parts % 8 == 0 && r.reduce_op == ReduceOp::sum &&
      is_floating(part.dtype)) {
    // 64 float partials summed in a row lose up to 64 roundings at the total's magnitude
    // (65536 x ~100 per column: 2x eager's error). Eight at a time in a balanced tree, then
    // those eight sums in a row: within eager's error (tests/python/test_codegen.py).
    std::vector<Value> group;
    for (int64_t j = 0; j < 8; ++j) {
      idx.front() = Expr::var(reduce_var(0)) * 8 + j;
      group.push_back(load(part_name, part.dtype, idx));
    }
    for (size_t width = group.size(); width > 1; width /= 2) {
      for (size_t j = 0; j < width / 2; ++j) group[j] = binary(BinaryOp::add, group[2 * j], group[2 * j + 1]);
    }
    second.reduce_ranges = {Expr(parts / 8)};
    second.body = group.front();
  }
  out.computes[part_name] = first;
  out.computes[r.name] = second;

  Step first_step;
  first_step.kernel.computes = {part_name};
  out.steps.push_back(first_step);
  if (options.float64_totals && r.reduce_op == ReduceOp::sum && is_floating(part.dtype) &&
      part.dtype != DType::Float64) {
    // The parts summed in float64 (<r>.total), then rounded once to r's type: the total's own
    // roundings at its magnitude go (a mean of 1000 + noise over 70000 elements: 2.7x eager's
    // error from float32 totals, within it from float64 ones).
    Compute total = r;
    total.name = r.name + ".total";
    total.reduce_ranges = {Expr(parts)};
    total.body = cast(load(part_name, part.dtype, part_index), DType::Float64);
    Buffer wide = part;
    wide.name = total.name;
    wide.dtype = DType::Float64;
    wide.sizes = r.ranges;
    wide.strides = contiguous_strides(wide.sizes);
    out.buffers.push_back(wide);
    std::vector<Expr> kept;
    for (size_t k = 0; k < r.ranges.size(); ++k) kept.push_back(Expr::var(range_var(k)));
    Compute rounded = r;
    rounded.reduce_ranges.clear();
    rounded.body = cast(load(total.name, DType::Float64, kept), part.dtype);
    out.computes[total.name] = std::move(total);
    out.computes[r.name] = std::move(rounded);
    Step total_step;
    total_step.kernel.computes = {r.name + ".total"};
    out.steps.push_back(total_step);
  }
  out.steps.push_back(s);
}

/// The first stage that splits `r`, and whether its part index comes first; nullopt when r
/// stays one stage. The paths, in order of preference, are described in split_reductions.h.
std::optional<std::pair<Compute, bool>> first_stage_for(const Compute& r, const LoopProgram& program,
                                                        const SplitOptions& options) {
  const auto outputs = static_product(r.ranges);
  const auto total = static_product(r.reduce_ranges);
  if (!r.is_reduction() || r.is_scan() || !splittable(r.reduce_op) || !outputs || !total) return std::nullopt;
  const std::string part_name = r.name + ".part";
  if (auto first = strided_head_first_stage(r, program, options, *outputs)) return std::make_pair(std::move(*first), true);
  // Few columns (a batch norm's per-channel sums over N*H*W pixels): the scheduler can give
  // threads only whole vectors of columns, so 64 channels run on one thread. Cut the
  // reduction into about `few_columns_parts` runs of its leading reduce ranges instead.
  if (auto first = few_columns_first_stage(r, program, options)) return std::make_pair(std::move(*first), true);
  if (*outputs <= options.max_outputs && *total >= options.min_reduction) {
    const int64_t chunk = (*total + options.partials - 1) / options.partials;
    return std::make_pair(first_stage(r, (*total + chunk - 1) / chunk, chunk, *total, part_name, false),
                          false);
  }
  // A column reduction walks one column of every row per vector of outputs: a new page per
  // row (TLB misses past a few hundred rows) and one line per row for the prefetchers. In
  // chunks of column_chunk rows the first stage reads that many rows side by side along
  // whole rows; the second reduces the (total / column_chunk) partial rows.
  if (options.column_chunk > 0 && *total >= 2 * options.column_chunk &&
      *outputs * *total >= options.column_min_elements && reduces_down_columns(r, program)) {
    const int64_t chunk = options.column_chunk;
    return std::make_pair(first_stage(r, (*total + chunk - 1) / chunk, chunk, *total, part_name, true),
                          true);
  }
  return std::nullopt;
}

/// The sum compute that var_mean's lowering gives `m2` beside it (same ranges, reduce ranges
/// and body: interned values compare by identity), if any.
const Compute* matching_sum(const Compute& m2, const LoopProgram& program) {
  for (const auto& [name, c] : program.computes) {
    if (c.reduce_op == ReduceOp::sum && c.body == m2.body && c.ranges == m2.ranges &&
        c.reduce_ranges == m2.reduce_ranges && &c != &m2)
      return &c;
  }
  return nullptr;
}

/// welford_m2 rewritten as the second pass of the two-pass variance: the sum of squared
/// deviations from sum / count, the sum read from its buffer.
Compute two_pass_m2(const Compute& m2, const Compute& sum) {
  int64_t count = 1;
  for (const Expr& e : m2.reduce_ranges) count *= e.value();
  std::vector<Expr> kept;
  for (size_t k = 0; k < m2.ranges.size(); ++k) kept.push_back(Expr::var(range_var(k)));
  const DType t = m2.body->dtype;
  const Value mean = binary(BinaryOp::div, load(sum.name, t, kept), constant_float(static_cast<double>(count), t));
  const Value deviation = binary(BinaryOp::sub, m2.body, mean);
  Compute c = m2;
  c.reduce_op = ReduceOp::sum;
  c.body = binary(BinaryOp::mul, deviation, deviation);
  return c;
}

/// The second stage of a welford_m2 split like its sum (`sum_part` [parts, outputs...] beside
/// `m2_part`): Chan's combine, sum over parts of M2_p + n_p (mean_p - mean)^2, every part
/// holding n_p = total / parts elements and `sum` the sum's final value.
Compute chan_second_stage(const Compute& m2, const std::string& m2_part, const std::string& sum_part,
                          const std::string& sum, int64_t parts) {
  int64_t total = 1;
  for (const Expr& e : m2.reduce_ranges) total *= e.value();
  const DType t = m2.body->dtype;
  std::vector<Expr> kept, part_index{Expr::var(reduce_var(0))};
  for (size_t k = 0; k < m2.ranges.size(); ++k) {
    kept.push_back(Expr::var(range_var(k)));
    part_index.push_back(Expr::var(range_var(k)));
  }
  const double per_part = static_cast<double>(total / parts);
  const Value mean = binary(BinaryOp::div, load(sum, t, kept), constant_float(static_cast<double>(total), t));
  const Value part_mean = binary(BinaryOp::div, load(sum_part, t, part_index), constant_float(per_part, t));
  const Value deviation = binary(BinaryOp::sub, part_mean, mean);
  const Value spread = binary(BinaryOp::mul, constant_float(per_part, t), binary(BinaryOp::mul, deviation, deviation));
  Compute c = m2;
  c.reduce_op = ReduceOp::sum;
  c.reduce_ranges = {Expr(parts)};
  c.body = binary(BinaryOp::add, load(m2_part, t, part_index), spread);
  return c;
}

/// The step that computes `compute` alone, if any.
const Step* step_of(const std::string& compute, const LoopProgram& program) {
  for (const Step& s : program.steps) {
    if (s.kind == Step::Kind::Kernel && s.kernel.computes == std::vector<std::string>{compute}) return &s;
  }
  return nullptr;
}

/// Emits step `s` (computing `r` alone): split in two stages when a path applies, else as is.
void emit_step(const LoopProgram& program, LoopProgram& out, const Step& s, const Compute& r,
               const SplitOptions& options) {
  if (auto first = first_stage_for(r, program, options)) {
    emit_two_stages(program, out, s, r, std::move(first->first), first->second, options);
    return;
  }
  out.steps.push_back(s);
}

}  // namespace

LoopProgram split_reductions(const LoopProgram& program, const SplitOptions& options) {
  LoopProgram out = program;
  out.steps.clear();
  std::set<std::string> hoisted;  // sums emitted ahead of the variance that reads them
  for (const Step& s : program.steps) {
    if (s.kind != Step::Kind::Kernel || s.kernel.computes.size() != 1) {
      out.steps.push_back(s);
      continue;
    }
    const std::string& name = s.kernel.computes.front();
    if (hoisted.count(name)) continue;
    const Compute& r = program.computes.at(name);
    // A variance whose reduction a path would split (a batch norm's per-channel variance) runs
    // as the two-pass algorithm on the CPU: Welford's update has no split here and divides per
    // element, while its mean's sum is computed beside it anyway. The sum is hoisted ahead
    // (same body, so its inputs are ready); the deviations' sum is then split like any sum.
    const bool static_variance = r.reduce_op == ReduceOp::welford_m2 && options.two_pass_variance &&
                                 static_product(r.ranges) && static_product(r.reduce_ranges);
    const Compute* sum = static_variance ? matching_sum(r, program) : nullptr;
    // A variance with a strided head (a batch norm's on the GPU): both stages of its sum, then
    // Welford's first stage per part and Chan's combine, reading the input once.
    const bool welford = r.reduce_op == ReduceOp::welford_m2 && static_product(r.ranges) &&
                         static_product(r.reduce_ranges);
    const Compute* beside = welford ? matching_sum(r, program) : nullptr;
    auto head = beside ? strided_head_first_stage(r, program, options, *static_product(r.ranges)) : std::nullopt;
    // Where the two-pass variance is off (the GPU), a few-column variance (a channels-last
    // batch norm's) splits the same way: Chan's combine needs only equal parts.
    if (beside && !head && !options.two_pass_variance) head = few_columns_first_stage(r, program, options);
    const Step* beside_step = beside ? step_of(beside->name, program) : nullptr;
    if (head && beside_step) {
      if (!step_of(beside->name, out)) {
        emit_step(program, out, *beside_step, *beside, options);
        hoisted.insert(beside->name);
      }
      const std::string sum_part = beside->name + ".part";
      auto it = out.computes.find(sum_part);
      if (it != out.computes.end() && it->second.ranges == head->ranges) {
        const int64_t parts = head->ranges.front().value();
        const std::string m2_part = head->name;
        emit_two_stages(program, out, s, r, std::move(*head), true, options);
        out.computes[r.name] = chan_second_stage(r, m2_part, sum_part, beside->name, parts);
        continue;
      }
    }
    if (sum) {
      const Compute deviations = two_pass_m2(r, *sum);
      const Step* sum_step = step_of(sum->name, program);
      if (sum_step && first_stage_for(deviations, program, options)) {
        if (!step_of(sum->name, out)) {  // not yet emitted
          emit_step(program, out, *sum_step, *sum, options);
          hoisted.insert(sum->name);
        }
        emit_step(program, out, s, deviations, options);
        continue;
      }
    }
    emit_step(program, out, s, r, options);
  }
  return out;
}

}  // namespace inductor_cpp::ir
