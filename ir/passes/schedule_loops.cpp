/// \file
/// Loop ordering by strides and merging of compatible adjacent loops.
#include "ir/passes/schedule_loops.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>

namespace inductor_cpp::ir {

void collect_index_exprs(const Value& v, std::vector<Expr>& out) {
  std::set<const ValueNode*> seen;
  std::function<void(const Value&)> walk = [&](const Value& x) {
    if (!seen.insert(x.node()).second) return;
    if (x->kind == ValueKind::Load) {
      out.insert(out.end(), x->index.begin(), x->index.end());
      if (x->mask != Expr(1)) out.push_back(x->mask);
    }
    if (x->kind == ValueKind::IndexValue) out.insert(out.end(), x->index.begin(), x->index.end());
    for (const Value& o : x->operands) walk(o);
  };
  walk(v);
}

void collect_load_offsets(const Value& v, std::vector<Expr>& out) {
  std::set<const ValueNode*> seen;
  std::function<void(const Value&)> walk = [&](const Value& x) {
    if (!seen.insert(x.node()).second) return;
    if (x->kind == ValueKind::Load) out.insert(out.end(), x->index.begin(), x->index.end());
    for (const Value& o : x->operands) walk(o);
  };
  walk(v);
}

std::vector<LoopDim> order_by_stride(std::vector<LoopDim> dims, const Expr& reference) {
  std::vector<int64_t> coef;
  for (const LoopDim& d : dims) {
    std::optional<int64_t> c = coefficient_of(reference, d.var);
    if (!c) return dims;
    coef.push_back(std::abs(*c));
  }
  std::vector<size_t> order(dims.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  // Broadcast dims (coefficient 0) keep their place relative to each other and go outermost
  // only if that does not break up contiguous ones; a stable sort on decreasing coefficient
  // with zeros treated as "unknown" (kept in place) would be ideal; keep it simple: only
  // reorder when every dim has a nonzero coefficient.
  if (std::count(coef.begin(), coef.end(), 0)) return dims;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return coef[a] > coef[b]; });
  std::vector<LoopDim> out;
  for (size_t k : order) out.push_back(dims[k]);
  return out;
}

namespace {

bool mergeable(const LoopDim& a, const LoopDim& b, const std::vector<Expr>& exprs) {
  if (!b.extent.is_const()) return false;
  for (const Expr& e : exprs) {
    const std::optional<int64_t> ca = coefficient_of(e, a.var);
    const std::optional<int64_t> cb = coefficient_of(e, b.var);
    if (!ca || !cb) return false;
    if (*ca != *cb * b.extent.value()) return false;
  }
  return true;
}

}  // namespace

std::vector<LoopDim> merge_dims(const std::vector<LoopDim>& dims, const std::vector<Expr>& exprs,
                                std::map<std::string, Expr>& substitutions) {
  std::vector<LoopDim> out;
  std::vector<Expr> current = exprs;
  for (const LoopDim& d : dims) {
    if (!out.empty() && mergeable(out.back(), d, current)) {
      const LoopDim a = out.back();
      out.back() = LoopDim{d.var, a.extent * d.extent};
      substitutions[a.var] = Expr(0);
      for (Expr& e : current) e = substitute(e, {{a.var, Expr(0)}});
      continue;
    }
    out.push_back(d);
  }
  return out;
}

}  // namespace inductor_cpp::ir

namespace inductor_cpp::ir {

LoopDim flatten_dims(const std::vector<LoopDim>& dims, const std::string& flat_var,
                     std::map<std::string, Expr>& substitutions) {
  if (dims.size() == 1) return dims.front();
  const Expr flat = Expr::var(flat_var);
  Expr extent(1);
  for (auto it = dims.rbegin(); it != dims.rend(); ++it) {
    const Expr position = extent == Expr(1) ? flat : floordiv(flat, extent);
    // The outermost dim needs no % (the flat index stays below the product of all extents).
    substitutions[it->var] = std::next(it) == dims.rend() ? position : mod(position, it->extent);
    extent = extent * it->extent;
  }
  return {flat_var, extent};
}

}  // namespace inductor_cpp::ir
