/// \file
/// Range-aware simplification: the division/modulo/min/max/comparison rules that ranges
/// enable, over interval bounds (simplify_bounds.cpp) and a polynomial normal form for sums
/// and products (simplify_poly.cpp).
///
/// How it works. `simplify` rewrites bottom-up. Sums and products become a `Poly` (constant +
/// coefficient per monomial, a monomial being a sorted product of atoms: variables, //, %,
/// min, max, comparisons) and are rebuilt in one canonical order, which combines like terms
/// and folds constants. `x // c` and `x % c` split `x` into the part that is a multiple of c and
/// the rest, and decide the rest by its bounds. Sums of "digits" of one value, such as
/// `(x // 4)*4 + x % 4`, are recombined (the inverse of what views and reshapes generate).
/// Every rule makes the tree smaller or moves it toward the canonical order, so the top-level
/// loop reaches a fixed point in a pass or two; it is capped anyway.
#include "ir/simplify.h"

#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/simplify_internal.h"

namespace inductor_cpp::ir {
namespace {

using namespace simplify_detail;

class Simplifier {
 public:
  explicit Simplifier(const RangeMap& ranges) : ranges_(ranges), bounds_(ranges) {}

  /// One bottom-up pass.
  Expr run(const Expr& e) {
    if (e.is_const()) return e;
    if (e.is_var()) {
      auto it = ranges_.find(e.name());
      if (it != ranges_.end() && it->second.lo == it->second.hi && is_finite(it->second.lo))
        return Expr(it->second.lo);
      return e;
    }
    auto hit = memo_.find(e.node());
    if (hit != memo_.end()) return hit->second.second;
    Expr a = run(e.lhs()), b = run(e.rhs()), r;
    switch (e.kind()) {
      case ExprKind::Add: {
        Poly p = to_poly(a);
        p.add_poly(to_poly(b));
        r = finish(std::move(p));
        break;
      }
      case ExprKind::Mul:
        r = finish(multiply(to_poly(a), to_poly(b)));
        break;
      case ExprKind::FloorDiv:
        r = simplify_floordiv(a, b);
        break;
      case ExprKind::Mod:
        r = simplify_mod(a, b);
        break;
      case ExprKind::Min:
      case ExprKind::Max:
        r = simplify_min_max(e.kind(), a, b);
        break;
      default:
        r = simplify_comparison(e.kind(), a, b);
        break;
    }
    memo_.emplace(e.node(), std::make_pair(e, r));
    return r;
  }

  Interval bounds(const Expr& e) { return bounds_.of(e); }

 private:
  /// Canonical sum of a polynomial whose monomials are simplified, after recombining digits.
  Expr finish(Poly p) {
    combine_digits(p);
    return from_poly(p);
  }

  /// Sums of digits of one x recombine (digits [a, b) and [b, c) of x, c possibly "none"):
  ///   merge:  D[b, c)*(b/a)*k + D[a, b)*k  ->  D[a, c)*k     e.g. (x // 4)*4 + x % 4 -> x
  ///   split:  D[a, c)*k - D[b, c)*(b/a)*k  ->  D[a, b)*k     e.g. x - (x // 4)*4 -> x % 4
  /// Repeats until no pair matches; each rewrite removes a term.
  void combine_digits(Poly& p) {
    for (int round = 0; round < 64; ++round) {
      if (!combine_one_digit_pair(p)) return;
    }
  }

  bool combine_one_digit_pair(Poly& p) {
    std::vector<std::pair<Expr, Digit>> digits;
    for (const auto& [m, c] : p.terms) {
      if (auto d = as_digit(m)) {
        digits.emplace_back(m, *d);
      } else if (m.kind() != ExprKind::Mul) {
        digits.emplace_back(m, Digit{m, 1, 0});  // an atom is all of its digits
      }
    }
    if (digits.size() < 2) return false;
    for (const auto& [m1, d1] : digits) {
      for (const auto& [m2, d2] : digits) {
        if (m1 == m2 || d1.x != d2.x) continue;
        int64_t k1 = p.terms.at(m1), k2 = p.terms.at(m2);
        if (d2.hi == d1.lo && k1 == wrap_mul(k2, d1.lo / d2.lo)) {
          replace_pair(p, m1, m2, make_digit(d1.x, d2.lo, d1.hi), k2);  // merge
          return true;
        }
        if (d1.hi == d2.hi && d1.lo < d2.lo && d2.lo % d1.lo == 0 &&
            k2 == wrap_mul(-k1, d2.lo / d1.lo)) {
          replace_pair(p, m1, m2, make_digit(d1.x, d1.lo, d2.lo), k1);  // split
          return true;
        }
      }
    }
    return false;
  }

  void replace_pair(Poly& p, const Expr& m1, const Expr& m2, const Expr& digit, int64_t k) {
    Expr keep1 = m1, keep2 = m2;  // the erases below may destroy what m1, m2 refer to
    p.terms.erase(keep1);
    p.terms.erase(keep2);
    p.add_poly(to_poly(digit), k);
  }

  Expr make_digit(const Expr& x, int64_t lo, int64_t hi) {
    Expr q = lo == 1 ? x : simplify_floordiv(x, Expr(lo));
    return hi == 0 ? q : simplify_mod(q, Expr(hi / lo));
  }

  Expr negated(const Expr& e) {
    Poly p;
    p.add_poly(to_poly(e), -1);
    return from_poly(p);
  }

  Expr simplify_floordiv(const Expr& a, const Expr& b) {
    if (!b.is_const()) {
      Interval bb = bounds(b), ba = bounds(a);
      if (bb.lo > 0 && ba.lo >= 0 && ba.hi < bb.lo) return Expr(0);
      if (a == b && (bb.lo > 0 || bb.hi < 0)) return Expr(1);
      return floordiv(a, b);
    }
    int64_t c = b.value();
    if (c == 0 || a.is_const() || c == 1) return floordiv(a, b);
    if (c < 0) {
      // floor(a / c) == floor(-a / -c): keep divisors positive.
      if (c == kNegInf) return floordiv(a, b);
      return simplify_floordiv(negated(a), Expr(-c));
    }
    // Split a = c*quotient + rest, where quotient collects the terms divisible by c and
    // rest keeps the others plus the constant's remainder in [0, c).
    Poly p = to_poly(a), quotient, rest;
    quotient.constant = floor_div(p.constant, c);
    rest.constant = floor_mod(p.constant, c);
    for (const auto& [m, k] : p.terms) {
      if (k % c == 0) {
        quotient.add_term(m, k / c);
      } else {
        rest.add_term(m, k);
      }
    }
    quotient.add_poly(to_poly(divide_rest(rest, c)));
    return finish(std::move(quotient));
  }

  /// rest // c for c > 0, where no term of rest is a multiple of c.
  Expr divide_rest(const Poly& rest, int64_t c) {
    if (rest.terms.empty()) return Expr(floor_div(rest.constant, c));
    Expr x = from_poly(rest);
    Interval bx = bounds(x);
    if (is_finite(bx.lo) && is_finite(bx.hi) && floor_div(bx.lo, c) == floor_div(bx.hi, c))
      return Expr(floor_div(bx.lo, c));
    if (const Expr* m = rest.single_monomial()) {
      // (y // d) // c -> y // (d*c);  (y % (c*n)) // c -> (y // c) % n.
      if (auto d = as_digit(*m)) {
        int64_t lo;
        if (d->hi == 0 && !__builtin_mul_overflow(d->lo, c, &lo))
          return simplify_floordiv(d->x, Expr(lo));
        if (d->lo == 1 && d->hi % c == 0)
          return simplify_mod(simplify_floordiv(d->x, Expr(c)), Expr(d->hi / c));
      }
    }
    auto g = gcd_of(rest, c);
    if (g && *g > 1) return simplify_floordiv(from_poly(divide_exact(rest, *g)), Expr(c / *g));
    return floordiv(x, Expr(c));
  }

  Expr simplify_mod(const Expr& a, const Expr& b) {
    if (!b.is_const()) {
      Interval bb = bounds(b), ba = bounds(a);
      if (a == b) return Expr(0);
      if (bb.lo > 0 && ba.lo >= 0 && ba.hi < bb.lo) return a;
      return mod(a, b);
    }
    int64_t c = b.value();
    if (c <= 0 || a.is_const() || c == 1) return mod(a, b);
    // Multiples of c vanish; coefficients of magnitude >= c reduce into [0, c).
    Poly p = to_poly(a), rest;
    rest.constant = floor_mod(p.constant, c);
    for (const auto& [m, k] : p.terms) {
      if (k % c == 0) continue;
      rest.add_term(m, (k >= c || k <= -c) ? floor_mod(k, c) : k);
    }
    if (rest.terms.empty()) return Expr(rest.constant);
    Expr x = from_poly(rest);
    Interval bx = bounds(x);
    if (is_finite(bx.lo) && is_finite(bx.hi) && floor_div(bx.lo, c) == floor_div(bx.hi, c)) {
      rest.constant = wrap_add(rest.constant, wrap_mul(-floor_div(bx.lo, c), c));
      return finish(std::move(rest));
    }
    if (const Expr* m = rest.single_monomial()) {
      // (y % (c*n)) % c -> y % c.
      auto d = as_digit(*m);
      if (d && d->lo == 1 && d->hi % c == 0) return simplify_mod(d->x, b);
    }
    auto g = gcd_of(rest, c);
    if (g && *g > 1) {
      // (g*y) % (g*n) == g*(y % n).
      Expr inner = simplify_mod(from_poly(divide_exact(rest, *g)), Expr(c / *g));
      Poly scaled;
      scaled.add_poly(to_poly(inner), *g);
      return finish(std::move(scaled));
    }
    return mod(x, b);
  }

  /// a - b as a canonical expression.
  Expr difference(const Expr& a, const Expr& b) {
    Poly p = to_poly(a);
    p.add_poly(to_poly(b), -1);
    return from_poly(p);
  }

  Expr simplify_min_max(ExprKind kind, const Expr& a, const Expr& b) {
    if (a == b) return a;
    bool is_min = kind == ExprKind::Min;
    Interval d = bounds(difference(a, b));
    if (d.hi <= 0) return is_min ? a : b;  // a <= b everywhere
    if (d.lo >= 0) return is_min ? b : a;
    Interval ba = bounds(a), bb = bounds(b);
    if (ba.hi <= bb.lo) return is_min ? a : b;
    if (bb.hi <= ba.lo) return is_min ? b : a;
    // Commutative: operands in structural order, a constant last (min(i1, 2)).
    bool swap = a.is_const() || (!b.is_const() && b < a);
    const Expr& first = swap ? b : a;
    const Expr& second = swap ? a : b;
    return is_min ? min(first, second) : max(first, second);
  }

  Expr simplify_comparison(ExprKind kind, const Expr& a, const Expr& b) {
    Interval decided = compare_to_zero(kind, bounds(difference(a, b)));
    if (decided.lo == decided.hi) return Expr(decided.lo);
    // Canonical: a constant on the left moves to the right (i0 + 3 < 7  ->  i0 < 4).
    Expr lhs = a, rhs = b;
    Poly pa = to_poly(a);
    if (!pa.terms.empty() && pa.constant != 0) {
      Poly pb = to_poly(b);
      pb.constant = wrap_add(pb.constant, -pa.constant);
      pa.constant = 0;
      lhs = from_poly(pa);
      rhs = from_poly(pb);
    }
    switch (kind) {
      case ExprKind::Lt:
        return lt(lhs, rhs);
      case ExprKind::Le:
        return le(lhs, rhs);
      case ExprKind::Eq:
        return eq(lhs, rhs);
      default:
        return ne(lhs, rhs);
    }
  }

  const RangeMap& ranges_;
  BoundsCalculator bounds_;
  std::unordered_map<const ExprNode*, std::pair<Expr, Expr>> memo_;
};

}  // namespace

Expr simplify(const Expr& e, const RangeMap& ranges) {
  Simplifier simplifier(ranges);
  Expr current = e;
  for (int pass = 0; pass < 8; ++pass) {
    Expr next = simplifier.run(current);
    if (next == current) return current;
    current = next;
  }
  return current;
}

bool provably_equal(const Expr& a, const Expr& b, const RangeMap& ranges) {
  if (a == b) return true;
  Expr d = simplify(a - b, ranges);
  Interval bd = bounds(d, ranges);
  return bd.lo == 0 && bd.hi == 0;
}

}  // namespace inductor_cpp::ir