/// \file
/// The simplifier's rule table (input text, variable ranges, expected text), plus properties
/// checked on every row and on random expressions: idempotence, value preservation on random
/// assignments within the ranges, and soundness of the interval bounds.
#include "ir/simplify.h"

#include <gtest/gtest.h>

#include <random>

namespace inductor_cpp::ir {
namespace {

struct Row {
  const char* input;
  RangeMap ranges;
  const char* expected;
};

/// Loop variables of a 2x3x4 iteration space (a contiguous [2, 3, 4] tensor), and a flat index
/// over the same 24 elements.
const RangeMap kView = {{"i0", {0, 1}}, {"i1", {0, 2}}, {"i2", {0, 3}}, {"i", {0, 23}}};
const RangeMap kNone = {};

const std::vector<Row>& rule_table() {
  static const std::vector<Row> rows = {
      // Sums: flattening, like terms, constant folding, canonical order.
      {"x + 0", kNone, "x"},
      {"x*1", kNone, "x"},
      {"x*0 + 3", kNone, "3"},
      {"1 + x + 2", kNone, "x + 3"},
      {"i1 + i0*4", kNone, "i0*4 + i1"},
      {"i10 + i2 + i1", kNone, "i1 + i2 + i10"},
      {"x - x", kNone, "0"},
      {"x + x", kNone, "x*2"},
      {"x*3 - x*3 + y", kNone, "y"},
      {"(x + 1)*4", kNone, "x*4 + 4"},
      {"(x + 1)*(x - 1)", kNone, "x*x - 1"},
      {"2*(x*3)", kNone, "x*6"},
      {"y*x - x*y", kNone, "0"},
      {"x - (y - x)", kNone, "x*2 - y"},
      {"-(x + 2) + 5", kNone, "-x + 3"},
      // A variable with a one-value range is that constant (size-1 dimensions).
      {"i0*8 + j", {{"i0", {0, 0}}}, "j"},
      // (a*c) // c -> a, and (a*c + b) // c -> a + b // c for c > 0.
      {"(x*4) // 4", kNone, "x"},
      {"(x*8) // 4", kNone, "x*2"},
      {"(x*4 + y) // 4", kNone, "x + y // 4"},
      {"(x*4 + 5) // 4", kNone, "x + 1"},
      {"(x*4 + y + 5) // 4", kNone, "x + (y + 1) // 4 + 1"},
      {"(i0*64 + i1) // 64", {{"i1", {0, 63}}}, "i0"},
      {"(i0*64 + i1 + 64) // 64", {{"i1", {0, 63}}}, "i0 + 1"},
      {"(i0*64 - i1 + 63) // 64", {{"i1", {0, 63}}}, "i0"},
      {"x // 1", kNone, "x"},
      {"(x*2 + 1) // 2", kNone, "x"},
      {"x // -2", kNone, "-x // 2"},
      // x // c -> 0 and x % c -> x when 0 <= x < c.
      {"i1 // 64", {{"i1", {0, 63}}}, "0"},
      {"i1 % 64", {{"i1", {0, 63}}}, "i1"},
      {"i1 % 64", {{"i1", {0, 64}}}, "i1 % 64"},
      {"(i1 + 64) % 64", {{"i1", {0, 63}}}, "i1"},
      {"(i1 + 1) // 64", {{"i1", {0, 62}}}, "0"},
      // (a*c + b) % c -> b % c.
      {"(x*4 + y) % 4", kNone, "y % 4"},
      {"(x*4 + 6) % 4", kNone, "2"},
      {"(x*5 + y) % 4", kNone, "(x + y) % 4"},
      {"(x*6) % 4", kNone, "(x % 2)*2"},
      {"(x*2) // 4", kNone, "x // 2"},
      // Nested divisions and moduli.
      {"(x // 4) // 3", kNone, "x // 12"},
      {"(x % 12) % 4", kNone, "x % 4"},
      {"(x % 4) % 12", kNone, "x % 4"},
      {"(x % 12) // 4", kNone, "(x // 4) % 3"},
      {"(x*4 + y // 2) // 4", kNone, "x + y // 8"},
      // Views and reshapes: a [2, 3, 4] tensor indexed through its flat offset and back.
      {"((i0*12 + i1*4 + i2) // 4) % 3", kView, "i1"},
      {"(i0*12 + i1*4 + i2) // 12", kView, "i0"},
      {"(i0*12 + i1*4 + i2) % 4", kView, "i2"},
      {"(i0*12 + i1*4 + i2) % 12", kView, "i1*4 + i2"},
      {"((i0*12 + i1*4 + i2) // 4) % 3*4 + (i0*12 + i1*4 + i2) % 4", kView, "i1*4 + i2"},
      {"(i // 12)*12 + ((i // 4) % 3)*4 + i % 4", kView, "i"},
      {"((i // 4) % 3)*4 + i % 4", kView, "i % 12"},
      {"(i // 12)*3 + (i // 4) % 3", kView, "i // 4"},
      {"x - (x // 4)*4", kNone, "x % 4"},
      {"x % 12 - ((x // 4) % 3)*4", kNone, "x % 4"},
      {"x // 4 - (x // 12)*3", kNone, "(x // 4) % 3"},
      {"(x // 4)*4 + x % 4 + 1", kNone, "x + 1"},
      {"(x // 4)*8 + (x % 4)*2", kNone, "x*2"},
      {"(x // 4)*4 + x % 2", kNone, "(x // 4)*4 + x % 2"},
      {"(i1*4 + i2) // 2", kView, "i1*2 + i2 // 2"},
      // Transpose of [3, 4] read through a flat index of the transposed [4, 3] view.
      {"(i // 3) + (i % 3)*4", {{"i", {0, 11}}}, "i // 3 + (i % 3)*4"},
      // Broadcast of a size-1 dimension: the index of the broadcast dim vanishes.
      {"i0*0 + i1", kView, "i1"},
      // min / max decided by bounds, or by the bounds of the difference.
      {"min(i1, 5)", {{"i1", {0, 3}}}, "i1"},
      {"max(i1, 5)", {{"i1", {0, 3}}}, "5"},
      {"min(x, x + 1)", kNone, "x"},
      {"max(x + 2, x - 1)", kNone, "x + 2"},
      {"min(y, x)", kNone, "min(x, y)"},
      {"max(x, x)", kNone, "x"},
      {"min(i1, 2)", {{"i1", {0, 3}}}, "min(i1, 2)"},
      // Comparisons decided by bounds -> 0 / 1; otherwise constants move right.
      {"i1 < 64", {{"i1", {0, 63}}}, "1"},
      {"i1 < 0", {{"i1", {0, 63}}}, "0"},
      {"i1 + 3 < 7", {{"i1", {0, 63}}}, "i1 < 4"},
      {"i1 <= 63", {{"i1", {0, 63}}}, "1"},
      {"x == x", kNone, "1"},
      {"x + 1 == x", kNone, "0"},
      {"x != x + 1", kNone, "1"},
      {"i1 == 3", {{"i1", {0, 2}}}, "0"},
      {"x < y", kNone, "x < y"},
      {"x + 1 < y", kNone, "x < y - 1"},
      {"i0 < i1 + 4", {{"i0", {0, 3}}, {"i1", {0, 10}}}, "1"},
      // Division by symbols: only what bounds decide.
      {"i1 // s0", {{"i1", {0, 1}}, {"s0", {2, 100}}}, "0"},
      {"i1 % s0", {{"i1", {0, 1}}, {"s0", {2, 100}}}, "i1"},
      {"s0 // s0", {{"s0", {2, 100}}}, "1"},
      {"(i1 + s0) // s0", {{"s0", {2, 100}}}, "(i1 + s0) // s0"},
      // Comparisons and min/max inside arithmetic.
      {"(i1 < 4)*8 + 0", {{"i1", {0, 3}}}, "8"},
      {"(x < 4)*(x < 4)*(y < 2)", kNone, "(x < 4)*(y < 2)"},
      {"(1 <= i1)*(i1 < 5)", {{"i1", {1, 4}}}, "1"},
      {"(1 <= i1)*(i1 < 5)", {{"i1", {0, 9}}}, "(i1 < 5)*(1 <= i1)"},
      {"min(i1, 3) + 1 - 1", {{"i1", {0, 10}}}, "min(i1, 3)"},
  };
  return rows;
}

std::string describe(const Row& row) {
  std::string s = "'" + std::string(row.input) + "' with";
  for (const auto& [name, iv] : row.ranges)
    s += " " + std::to_string(iv.lo) + "<=" + name + "<=" + std::to_string(iv.hi);
  return s;
}

/// A random assignment within the ranges; unbounded variables get small values of either sign.
std::map<std::string, int64_t> random_assignment(const std::set<std::string>& vars,
                                                 const RangeMap& ranges, std::mt19937& rng) {
  std::map<std::string, int64_t> values;
  for (const std::string& v : vars) {
    auto it = ranges.find(v);
    int64_t lo = -40, hi = 40;
    if (it != ranges.end()) {
      lo = std::max<int64_t>(it->second.lo, -1000);
      hi = std::min<int64_t>(it->second.hi, 1000);
    }
    values[v] = std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  }
  return values;
}

/// simplify(e) evaluates like e, its bounds hold, and simplifying again changes nothing.
void check_properties(const Expr& e, const RangeMap& ranges, std::mt19937& rng,
                      const std::string& what) {
  Expr s = simplify(e, ranges);
  ASSERT_EQ(simplify(s, ranges), s) << "not idempotent: " << what << " -> " << to_string(s)
                                    << " -> " << to_string(simplify(s, ranges));
  ASSERT_EQ(parse_expr(to_string(s)), s) << "round trip of " << to_string(s);
  Interval b = bounds(s, ranges);
  std::set<std::string> vars = free_vars(e);
  for (int trial = 0; trial < 24; ++trial) {
    auto values = random_assignment(vars, ranges, rng);
    int64_t expected;
    try {
      expected = evaluate(e, values);
    } catch (const std::domain_error&) {
      continue;  // the input divides by zero here; nothing to preserve
    }
    int64_t got = evaluate(s, values);
    std::string at;
    for (const auto& [n, x] : values) at += " " + n + "=" + std::to_string(x);
    ASSERT_EQ(got, expected) << what << " -> " << to_string(s) << " at" << at;
    ASSERT_LE(b.lo, got) << "bounds of " << to_string(s) << " at" << at;
    ASSERT_GE(b.hi, got) << "bounds of " << to_string(s) << " at" << at;
    Interval bi = bounds(e, ranges);
    ASSERT_TRUE(bi.lo <= expected && expected <= bi.hi) << "bounds of " << what << " at" << at;
  }
}

TEST(SimplifyTest, RuleTable) {
  for (const Row& row : rule_table()) {
    Expr out = simplify(parse_expr(row.input), row.ranges);
    EXPECT_EQ(to_string(out), row.expected) << describe(row);
  }
}

TEST(SimplifyTest, RuleTableRowsAreIdempotentAndPreserveValues) {
  std::mt19937 rng(1234);
  for (const Row& row : rule_table()) {
    SCOPED_TRACE(describe(row));
    check_properties(parse_expr(row.input), row.ranges, rng, row.input);
  }
}

/// Random expressions in the shapes views, reshapes, padding and indirect indexing produce.
class RandomExprGenerator {
 public:
  explicit RandomExprGenerator(std::mt19937& rng) : rng_(rng) {}

  Expr generate(int depth) {
    if (depth == 0 || pick(0, 9) < 2) return leaf();
    switch (pick(0, 12)) {
      case 0:
      case 1:
        return generate(depth - 1) + generate(depth - 1);
      case 2:
        return generate(depth - 1) - generate(depth - 1);
      case 3:
      case 4:
        return generate(depth - 1) * Expr(pick(-3, 16));
      case 5:
        return generate(depth - 1) * generate(depth - 1);
      case 6:
      case 7:
        return floordiv(generate(depth - 1), divisor());
      case 8:
      case 9:
        return mod(generate(depth - 1), divisor());
      case 10:
        return pick(0, 1) ? min(generate(depth - 1), generate(depth - 1))
                          : max(generate(depth - 1), generate(depth - 1));
      default: {
        Expr a = generate(depth - 1), b = generate(depth - 1);
        switch (pick(0, 3)) {
          case 0:
            return lt(a, b);
          case 1:
            return le(a, b);
          case 2:
            return eq(a, b);
          default:
            return ne(a, b);
        }
      }
    }
  }

  /// A flat-offset style expression: sum of strided variables, then digits of it.
  Expr view_like() {
    Expr flat = Expr::var("i0") * 12 + Expr::var("i1") * 4 + Expr::var("i2");
    Expr e = flat;
    for (int k = pick(1, 3); k > 0; --k) {
      int64_t c = std::vector<int64_t>{1, 2, 3, 4, 6, 12, 24}[pick(0, 6)];
      e = pick(0, 1) ? floordiv(e, c) : mod(e, c);
      if (pick(0, 2) == 0)
        e = e * pick(1, 4) + mod(flat, std::vector<int64_t>{2, 4, 12}[pick(0, 2)]);
    }
    return e;
  }

 private:
  int64_t pick(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }
  Expr divisor() {
    if (pick(0, 9) == 0) return Expr::var("s0");  // ranges keep s0 >= 1
    if (pick(0, 9) == 0) return Expr(pick(-4, -1));
    return Expr(std::vector<int64_t>{1, 2, 3, 4, 6, 8, 12, 16}[pick(0, 7)]);
  }
  Expr leaf() {
    static const char* names[] = {"i0", "i1", "i2", "x", "s0"};
    if (pick(0, 3) == 0) return Expr(pick(-6, 20));
    return Expr::var(names[pick(0, 4)]);
  }
  std::mt19937& rng_;
};

TEST(SimplifyTest, RandomExpressionsKeepTheirValues) {
  std::mt19937 rng(42);
  RandomExprGenerator gen(rng);
  const RangeMap ranges = {
      {"i0", {0, 1}}, {"i1", {0, 2}}, {"i2", {0, 3}}, {"s0", {1, 9}}};  // x unbounded
  for (int n = 0; n < 1500; ++n) {
    Expr e = gen.generate(4);
    check_properties(e, ranges, rng, to_string(e));
    if (HasFatalFailure()) return;
  }
  for (int n = 0; n < 500; ++n) {
    Expr e = gen.view_like();
    check_properties(e, ranges, rng, to_string(e));
    if (HasFatalFailure()) return;
  }
}

TEST(SimplifyTest, ViewIndicesCollapseToLoopVariables) {
  // Every digit extraction of the flat offset of a contiguous [2, 3, 4] tensor is one loop
  // variable: this is what makes view/reshape chains free.
  Expr flat = parse_expr("i0*12 + i1*4 + i2");
  EXPECT_EQ(simplify(floordiv(flat, 12), kView), Expr::var("i0"));
  EXPECT_EQ(simplify(mod(floordiv(flat, 4), 3), kView), Expr::var("i1"));
  EXPECT_EQ(simplify(mod(flat, 4), kView), Expr::var("i2"));
  // Reshape [2, 3, 4] -> [6, 4] -> [24] and back.
  Expr j0 = floordiv(flat, 4), j1 = mod(flat, 4);
  EXPECT_EQ(simplify(j0 * 4 + j1, kView), simplify(flat, kView));
}

TEST(SimplifyTest, BoundsByIntervalArithmetic) {
  RangeMap r = {{"i", {0, 9}}, {"j", {-3, 4}}};
  EXPECT_EQ(bounds(parse_expr("i*4 + j"), r), (Interval{-3, 40}));
  EXPECT_EQ(bounds(parse_expr("i*j"), r), (Interval{-27, 36}));
  EXPECT_EQ(bounds(parse_expr("i // 4"), r), (Interval{0, 2}));
  EXPECT_EQ(bounds(parse_expr("j // 2"), r), (Interval{-2, 2}));
  EXPECT_EQ(bounds(parse_expr("j % 8"), r), (Interval{0, 7}));
  EXPECT_EQ(bounds(parse_expr("i % 16"), r), (Interval{0, 9}));
  EXPECT_EQ(bounds(parse_expr("(i + 10) % 10"), r), (Interval{0, 9}));
  EXPECT_EQ(bounds(parse_expr("x % -3"), r), (Interval{-2, 0}));
  EXPECT_EQ(bounds(parse_expr("min(i, j)"), r), (Interval{-3, 4}));
  EXPECT_EQ(bounds(parse_expr("max(i, 5)"), r), (Interval{5, 9}));
  EXPECT_EQ(bounds(parse_expr("i < 10"), r), (Interval{1, 1}));
  EXPECT_EQ(bounds(parse_expr("i < 5"), r), (Interval{0, 1}));
  const int64_t kMin = std::numeric_limits<int64_t>::min();
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(bounds(parse_expr("x"), r), (Interval{kMin, kMax}));
  EXPECT_EQ(bounds(parse_expr("x*0 + i"), r), (Interval{0, 9}));
  EXPECT_EQ(bounds(parse_expr("i + x"), r), (Interval{kMin, kMax}));
  EXPECT_EQ(bounds(parse_expr("x % 4"), r), (Interval{0, 3}));
  EXPECT_EQ(bounds(parse_expr("x // 4"), r), (Interval{kMin, kMax}));
  // Saturates instead of overflowing.
  EXPECT_EQ(bounds(parse_expr("i*4611686018427387904*(i + 1)"), r), (Interval{0, kMax}));
  EXPECT_EQ(bounds(parse_expr("9223372036854775807 + i"), r).hi, kMax);
  EXPECT_EQ(bounds(parse_expr("i // x"), r), (Interval{kMin, kMax}));
}

TEST(SimplifyTest, ProvablyEqual) {
  EXPECT_TRUE(
      provably_equal(parse_expr("(i0*12 + i1*4 + i2) // 4"), parse_expr("i0*3 + i1"), kView));
  EXPECT_TRUE(provably_equal(parse_expr("x*2"), parse_expr("x + x"), kNone));
  EXPECT_FALSE(provably_equal(parse_expr("x // 2"), parse_expr("x"), kNone));
  EXPECT_FALSE(provably_equal(parse_expr("i1 // 2"), parse_expr("0"), kView));
  EXPECT_TRUE(provably_equal(parse_expr("i1 // 4"), parse_expr("0"), kView));
}

TEST(SimplifyTest, TerminatesOnDeepAndLargeInputs) {
  Expr e = Expr::var("x");
  for (int k = 0; k < 40; ++k) e = floordiv(e + k, 2) * 2 + mod(e, 3);
  Expr s = simplify(e, kNone);
  EXPECT_EQ(simplify(s, kNone), s);
  Expr sum;
  for (int k = 0; k < 300; ++k) sum = sum + Expr::var("v" + std::to_string(k % 37)) * (k + 1);
  EXPECT_EQ(free_vars(simplify(sum)).size(), 37u);
}

}  // namespace
}  // namespace inductor_cpp::ir
