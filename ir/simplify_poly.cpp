/// \file
/// The polynomial normal form behind the simplifier (simplify_internal.h): sums and products
/// as constant + coefficient per monomial, rebuilt in one canonical order (which combines like
/// terms and folds constants), and the "digits" of a value that // and % produce. Apart from
/// the rewrite rules (simplify.cpp), which work on these forms.
#include <algorithm>
#include <iterator>
#include <numeric>
#include <vector>

#include "ir/simplify_internal.h"

namespace inductor_cpp::ir::simplify_detail {
namespace {

void collect_factors(const Expr& m, std::vector<Expr>& out) {
  if (m.kind() == ExprKind::Mul) {
    collect_factors(m.lhs(), out);
    collect_factors(m.rhs(), out);
    return;
  }
  out.push_back(m);
}

Expr product_monomial(const Expr& a, const Expr& b) {
  std::vector<Expr> fa, fb, merged;
  collect_factors(a, fa);
  collect_factors(b, fb);
  std::merge(fa.begin(), fa.end(), fb.begin(), fb.end(), std::back_inserter(merged));
  // Comparisons are 0 or 1, so a repeated comparison factor is the factor itself.
  auto repeated_comparison = [](const Expr& x, const Expr& y) {
    return x == y && x.kind() >= ExprKind::Lt;
  };
  merged.erase(std::unique(merged.begin(), merged.end(), repeated_comparison), merged.end());
  Expr m = merged[0];
  for (size_t i = 1; i < merged.size(); ++i) m = m * merged[i];
  return m;
}

}  // namespace

Poly multiply(const Poly& a, const Poly& b) {
  Poly r;
  r.constant = wrap_mul(a.constant, b.constant);
  for (const auto& [m, c] : a.terms) r.add_term(m, wrap_mul(c, b.constant));
  for (const auto& [m, c] : b.terms) r.add_term(m, wrap_mul(c, a.constant));
  for (const auto& [ma, ca] : a.terms)
    for (const auto& [mb, cb] : b.terms) r.add_term(product_monomial(ma, mb), wrap_mul(ca, cb));
  return r;
}

Poly to_poly(const Expr& e) {
  Poly p;
  switch (e.kind()) {
    case ExprKind::Const:
      p.constant = e.value();
      return p;
    case ExprKind::Add:
      p = to_poly(e.lhs());
      p.add_poly(to_poly(e.rhs()));
      return p;
    case ExprKind::Mul:
      return multiply(to_poly(e.lhs()), to_poly(e.rhs()));
    default:
      p.add_term(e, 1);
      return p;
  }
}

Expr from_poly(const Poly& p) {
  Expr sum;
  bool first = true;
  for (const auto& [m, c] : p.terms) {
    Expr term = c == 1 ? m : m * Expr(c);
    sum = first ? term : sum + term;
    first = false;
  }
  return sum + Expr(p.constant);
}

std::optional<int64_t> gcd_of(const Poly& p, int64_t c) {
  auto abs_or_fail = [](int64_t v) -> std::optional<int64_t> {
    if (v == kNegInf) return std::nullopt;
    return v < 0 ? -v : v;
  };
  auto g = abs_or_fail(c);
  auto k = abs_or_fail(p.constant);
  if (!g || !k) return std::nullopt;
  int64_t r = std::gcd(*g, *k);
  for (const auto& [m, coef] : p.terms) {
    auto a = abs_or_fail(coef);
    if (!a) return std::nullopt;
    r = std::gcd(r, *a);
  }
  return r;
}

Poly divide_exact(const Poly& p, int64_t g) {
  Poly r;
  r.constant = p.constant / g;
  for (const auto& [m, c] : p.terms) r.add_term(m, c / g);
  return r;
}

std::optional<Digit> as_digit(const Expr& m) {
  auto positive_const = [](const Expr& e) { return e.is_const() && e.value() > 0; };
  if (m.kind() == ExprKind::FloorDiv && positive_const(m.rhs()))
    return Digit{m.lhs(), m.rhs().value(), 0};
  if (m.kind() != ExprKind::Mod || !positive_const(m.rhs())) return std::nullopt;
  const Expr& inner = m.lhs();
  if (inner.kind() == ExprKind::FloorDiv && positive_const(inner.rhs())) {
    int64_t hi;
    if (__builtin_mul_overflow(inner.rhs().value(), m.rhs().value(), &hi)) return std::nullopt;
    return Digit{inner.lhs(), inner.rhs().value(), hi};
  }
  return Digit{inner, 1, m.rhs().value()};
}

}  // namespace inductor_cpp::ir::simplify_detail
