/// \file
/// Private to the simplifier (simplify.cpp, simplify_bounds.cpp, simplify_poly.cpp): the two
/// tools its rewrite rules stand on. Interval bounds of expressions (simplify_bounds.cpp),
/// saturating so that unbounded sides absorb; and the polynomial normal form of sums and
/// products, with the "digits" of a value that // and % produce (simplify_poly.cpp).
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <unordered_map>
#include <utility>

#include "ir/simplify.h"

namespace inductor_cpp::ir::simplify_detail {

constexpr int64_t kNegInf = std::numeric_limits<int64_t>::min();
constexpr int64_t kPosInf = std::numeric_limits<int64_t>::max();
constexpr Interval kUnbounded{kNegInf, kPosInf};

inline bool is_finite(int64_t v) {
  return v != kNegInf && v != kPosInf;
}

/// floor(a / b) for b != 0 (not INT64_MIN / -1).
inline int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

/// a mod b in [0, b) for b > 0.
inline int64_t floor_mod(int64_t a, int64_t b) {
  int64_t r = a % b;
  return r < 0 ? r + b : r;
}

/// 1 / 0 / unknown for a comparison of d against 0, from d's interval.
Interval compare_to_zero(ExprKind kind, Interval d);

/// Interval bounds with a per-call memo (keys held alive, so addresses are never reused).
class BoundsCalculator {
 public:
  explicit BoundsCalculator(const RangeMap& ranges) : ranges_(ranges) {}

  Interval of(const Expr& e);

 private:
  const RangeMap& ranges_;
  std::unordered_map<const ExprNode*, std::pair<Expr, Interval>> memo_;
};

// Polynomial normal form (simplify_poly.cpp). Coefficients wrap on overflow.

inline int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
inline int64_t wrap_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

/// constant + sum of coefficient * monomial; no zero coefficients; monomials never constant.
struct Poly {
  std::map<Expr, int64_t> terms;
  int64_t constant = 0;

  void add_term(const Expr& monomial, int64_t coef) {
    if (coef == 0) return;
    auto [it, inserted] = terms.emplace(monomial, coef);
    if (inserted) return;
    it->second = wrap_add(it->second, coef);
    if (it->second == 0) terms.erase(it);
  }
  void add_poly(const Poly& o, int64_t scale = 1) {
    constant = wrap_add(constant, wrap_mul(o.constant, scale));
    for (const auto& [m, c] : o.terms) add_term(m, wrap_mul(c, scale));
  }
  /// The single monomial with coefficient 1 and no constant, if that is all there is.
  const Expr* single_monomial() const {
    if (constant != 0 || terms.size() != 1 || terms.begin()->second != 1) return nullptr;
    return &terms.begin()->first;
  }
};

/// a * b, like terms combined (a repeated comparison factor is the factor itself: 0 or 1).
Poly multiply(const Poly& a, const Poly& b);

/// The polynomial of an already simplified expression.
Poly to_poly(const Expr& e);

/// The canonical sum of `p`: its monomials in order, then the constant.
Expr from_poly(const Poly& p);

/// gcd of |values|; 0 when all are 0; nullopt if one is INT64_MIN (no absolute value).
std::optional<int64_t> gcd_of(const Poly& p, int64_t c);

/// p / g, every coefficient and the constant divisible by g.
Poly divide_exact(const Poly& p, int64_t g);

/// A "digit" of x: (x mod hi) // lo, with lo dividing hi; hi == 0 means no modulus.
///   x // lo  ->  (x, lo, 0)      x % hi  ->  (x, 1, hi)      (x // lo) % n  ->  (x, lo, lo*n)
struct Digit {
  Expr x;
  int64_t lo;
  int64_t hi;
};

/// The digit that monomial `m` is (x // c, x % c, (x // a) % b with positive constants), if any.
std::optional<Digit> as_digit(const Expr& m);

}  // namespace inductor_cpp::ir::simplify_detail
