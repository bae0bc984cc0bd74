/// \file
/// Interval bounds of index expressions (simplify.h `bounds`, simplify_internal.h
/// BoundsCalculator): saturating interval arithmetic in which INT64_MIN / INT64_MAX stand for
/// "unbounded" and absorb. Apart from the rewriter (simplify.cpp), which asks these bounds.
#include <algorithm>

#include "ir/simplify_internal.h"

namespace inductor_cpp::ir {
namespace simplify_detail {
namespace {

// Saturating interval arithmetic. kNegInf / kPosInf are "unbounded" and absorb.

int64_t add_lo(int64_t a, int64_t b) {
  if (a == kNegInf || b == kNegInf) return kNegInf;
  if (a == kPosInf || b == kPosInf) return kPosInf;
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return a < 0 ? kNegInf : kPosInf;
  return r;
}

int64_t add_hi(int64_t a, int64_t b) {
  if (a == kPosInf || b == kPosInf) return kPosInf;
  if (a == kNegInf || b == kNegInf) return kNegInf;
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return a < 0 ? kNegInf : kPosInf;
  return r;
}

int64_t mul_sat(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  bool negative = (a < 0) != (b < 0);
  if (!is_finite(a) || !is_finite(b)) return negative ? kNegInf : kPosInf;
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return negative ? kNegInf : kPosInf;
  return r;
}

/// floor(x / d) for d > 0, with unbounded x or d.
int64_t floordiv_sat(int64_t x, int64_t d) {
  if (x == kNegInf || x == kPosInf) return x;
  if (d == kPosInf) return x >= 0 ? 0 : -1;
  return floor_div(x, d);
}

Interval add(Interval a, Interval b) {
  return {add_lo(a.lo, b.lo), add_hi(a.hi, b.hi)};
}

Interval mul(Interval a, Interval b) {
  int64_t c[4] = {mul_sat(a.lo, b.lo), mul_sat(a.lo, b.hi), mul_sat(a.hi, b.lo),
                  mul_sat(a.hi, b.hi)};
  return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
}

Interval negate(Interval a) {
  auto neg = [](int64_t v) {
    if (v == kNegInf) return kPosInf;
    if (v == kPosInf) return kNegInf;
    return -v;
  };
  return {neg(a.hi), neg(a.lo)};
}

Interval floordiv(Interval x, Interval d) {
  if (d.lo <= 0 && d.hi >= 0) return kUnbounded;  // the divisor may be 0 or change sign
  if (d.hi < 0) return floordiv(negate(x), negate(d));
  int64_t c[4] = {floordiv_sat(x.lo, d.lo), floordiv_sat(x.lo, d.hi), floordiv_sat(x.hi, d.lo),
                  floordiv_sat(x.hi, d.hi)};
  return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
}

Interval mod(Interval x, Interval d) {
  if (d.hi < 0) return {add_lo(d.lo, 1), 0};
  if (d.lo <= 0) return kUnbounded;
  if (d.lo == d.hi && is_finite(x.lo) && is_finite(x.hi) &&
      floor_div(x.lo, d.lo) == floor_div(x.hi, d.lo)) {
    int64_t q = floor_div(x.lo, d.lo) * d.lo;
    return {x.lo - q, x.hi - q};
  }
  int64_t top = d.hi == kPosInf ? kPosInf : d.hi - 1;
  if (x.lo >= 0) return {0, std::min(x.hi, top)};
  return {0, top};
}

}  // namespace

Interval compare_to_zero(ExprKind kind, Interval d) {
  bool always = false, never = false;
  switch (kind) {
    case ExprKind::Lt:
      always = d.hi < 0, never = d.lo >= 0;
      break;
    case ExprKind::Le:
      always = d.hi <= 0, never = d.lo > 0;
      break;
    case ExprKind::Eq:
      always = d.lo == 0 && d.hi == 0, never = d.lo > 0 || d.hi < 0;
      break;
    default:
      always = d.lo > 0 || d.hi < 0, never = d.lo == 0 && d.hi == 0;
      break;
  }
  if (always) return {1, 1};
  if (never) return {0, 0};
  return {0, 1};
}

Interval BoundsCalculator::of(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::Const:
      return {e.value(), e.value()};
    case ExprKind::Var: {
      auto it = ranges_.find(e.name());
      return it == ranges_.end() ? kUnbounded : it->second;
    }
    default:
      break;
  }
  auto hit = memo_.find(e.node());
  if (hit != memo_.end()) return hit->second.second;
  Interval a = of(e.lhs()), b = of(e.rhs()), r = kUnbounded;
  switch (e.kind()) {
    case ExprKind::Add:
      r = add(a, b);
      break;
    case ExprKind::Mul:
      r = mul(a, b);
      break;
    case ExprKind::FloorDiv:
      r = floordiv(a, b);
      break;
    case ExprKind::Mod:
      r = mod(a, b);
      break;
    case ExprKind::Min:
      r = {std::min(a.lo, b.lo), std::min(a.hi, b.hi)};
      break;
    case ExprKind::Max:
      r = {std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
      break;
    default:
      r = compare_to_zero(e.kind(), add(a, negate(b)));
      break;
  }
  memo_.emplace(e.node(), std::make_pair(e, r));
  return r;
}

}  // namespace simplify_detail

Interval bounds(const Expr& e, const RangeMap& ranges) {
  return simplify_detail::BoundsCalculator(ranges).of(e);
}

}  // namespace inductor_cpp::ir
