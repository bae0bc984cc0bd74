/// \file
/// Range-aware simplification of index expressions.
///
/// Loop variables have known ranges (0 <= i0 < 64), and that is what makes index arithmetic
/// from views and reshapes collapse: `(i0*64 + i1) // 64` is `i0` only because 0 <= i1 < 64.
/// The simplifier is a fixed point over local rewrite rules (listed, with tests, in
/// tests/cpp/simplify_test.cpp) driven by interval bounds of subexpressions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "ir/index_expr.h"

namespace inductor_cpp::ir {

/// An inclusive integer interval. Unbounded sides use INT64_MIN / INT64_MAX.
struct Interval {
  int64_t lo;
  int64_t hi;
  bool operator==(const Interval& o) const { return lo == o.lo && hi == o.hi; }
};

/// What is known about variables: loop variables 0..extent-1, symbols >= 0 (or >= 2 for
/// sizes, as Dynamo specializes 0 and 1).
using RangeMap = std::map<std::string, Interval>;

/// Interval bounds of `e`; variables missing from `ranges` are unbounded. Never overflows
/// (saturates to the unbounded sides).
Interval bounds(const Expr& e, const RangeMap& ranges);

/// Simplified, canonical form: sums are flattened and sorted with like terms combined,
/// constants folded, and range rules applied, among them
///   (a*c) // c -> a,    (a*c + b) // c -> a + b // c  when c > 0,
///   x // c -> 0 and x % c -> x  when 0 <= x < c,   (a*c + b) % c -> b % c,
///   min/max decided by bounds, comparisons decided by bounds -> 0/1,
///   (x // c)*c + x % c -> x and x - (x // c)*c -> x % c (digits of one value recombine),
///   (x // a) // b -> x // (a*b),   (x % (a*b)) // a -> (x // a) % b,
///   a variable whose range is a single value -> that value.
/// Idempotent: simplify(simplify(e)) == simplify(e).
Expr simplify(const Expr& e, const RangeMap& ranges = {});

/// True when bounds prove a == b for every assignment in range (after simplification).
bool provably_equal(const Expr& a, const Expr& b, const RangeMap& ranges);

}  // namespace inductor_cpp::ir
