/// \file
/// Tests of the index algebra: interning, builder folding, the text form (print/parse round
/// trip and precedence), evaluation with Python floor semantics, substitution and the affine
/// coefficient query.
#include "ir/index_expr.h"

#include <gtest/gtest.h>

#include <limits>
#include <thread>

namespace inductor_cpp::ir {
namespace {

Expr v(const char* name) {
  return Expr::var(name);
}

TEST(IndexExprTest, InterningMakesEqualStructuresTheSameNode) {
  Expr a = v("i0") * 64 + v("i1");
  Expr b = v("i0") * 64 + v("i1");
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.node(), b.node());
  EXPECT_EQ(a.hash(), b.hash());
  EXPECT_NE(a, v("i1") + v("i0") * 64);  // structure, not value
  EXPECT_EQ(Expr(), Expr(0));
  EXPECT_EQ(Expr(7), Expr(3) + Expr(4));
  EXPECT_NE(v("i0"), v("i1"));
}

TEST(IndexExprTest, InterningIsThreadSafe) {
  std::vector<std::thread> threads;
  std::vector<Expr> results(8);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([t, &results] {
      Expr e;
      for (int i = 0; i < 2000; ++i) e = floordiv(v("i0") * (i % 17 + 2) + v("i1"), 5) + mod(e, 7);
      results[t] = e;
    });
  }
  for (auto& th : threads) th.join();
  for (const Expr& e : results) EXPECT_EQ(e, results[0]);
}

TEST(IndexExprTest, UnusedNodesAreFreedAndRebuilt) {
  // Builds far more distinct nodes than the sweep threshold; they die immediately. Rebuilding
  // one afterwards must yield a valid, equal node.
  for (int i = 0; i < 20000; ++i) (void)(v("s_tmp") * (i + 2));
  Expr a = v("s_tmp") * 12345;
  Expr b = v("s_tmp") * 12345;
  EXPECT_EQ(a, b);
  EXPECT_EQ(to_string(a), "s_tmp*12345");
}

TEST(IndexExprTest, BuildersFoldConstantsAndIdentities) {
  Expr x = v("x");
  EXPECT_EQ(x + 0, x);
  EXPECT_EQ(Expr(0) + x, x);
  EXPECT_EQ(x * 1, x);
  EXPECT_EQ(Expr(1) * x, x);
  EXPECT_EQ(x * 0, Expr(0));
  EXPECT_EQ(floordiv(x, 1), x);
  EXPECT_EQ(floordiv(Expr(0), 5), Expr(0));
  EXPECT_EQ(mod(x, 1), Expr(0));
  EXPECT_EQ(mod(Expr(0), 3), Expr(0));
  EXPECT_EQ(floordiv(Expr(-7), 2), Expr(-4));
  EXPECT_EQ(mod(Expr(-7), 2), Expr(1));
  EXPECT_EQ(Expr(3) + x, x + 3);
  EXPECT_EQ(Expr(3) * x, x * 3);
  EXPECT_EQ(x + 3 + 4, x + 7);
  EXPECT_EQ(x * 3 * 4, x * 12);
  EXPECT_EQ(x - x * 2, x + x * -2);
  EXPECT_EQ(min(Expr(3), 5), Expr(3));
  EXPECT_EQ(max(x, x), x);
  EXPECT_EQ(lt(Expr(3), 5), Expr(1));
  EXPECT_EQ(le(x, x), Expr(1));
  EXPECT_EQ(ne(x, x), Expr(0));
  // Division by a constant zero stays symbolic (evaluate reports it).
  EXPECT_EQ(floordiv(Expr(4), 0).kind(), ExprKind::FloorDiv);
}

TEST(IndexExprTest, PrintsWithMinimalParentheses) {
  Expr i0 = v("i0"), i1 = v("i1"), i2 = v("i2");
  EXPECT_EQ(to_string(i0 * 64 + i1), "i0*64 + i1");
  EXPECT_EQ(to_string(floordiv(i0 + 3, 4)), "(i0 + 3) // 4");
  EXPECT_EQ(to_string(mod(i1, 8)), "i1 % 8");
  EXPECT_EQ(to_string(min(i0, 5)), "min(i0, 5)");
  EXPECT_EQ(to_string(lt(i0, 7)), "i0 < 7");
  EXPECT_EQ(to_string(i0 - i1), "i0 - i1");
  EXPECT_EQ(to_string(i0 - i1 * 3), "i0 - i1*3");
  EXPECT_EQ(to_string(i0 - 5), "i0 - 5");
  EXPECT_EQ(to_string(i0 - (i1 + i2)), "i0 - (i1 + i2)");
  EXPECT_EQ(to_string(i0 * -1), "-i0");
  EXPECT_EQ(to_string(i0 * -3), "i0*-3");
  EXPECT_EQ(to_string(mod(floordiv(i0 * 12 + i1 * 4 + i2, 4), 3)),
            "((i0*12 + i1*4 + i2) // 4) % 3");
  EXPECT_EQ(to_string(floordiv(i0, 4) * 3), "(i0 // 4)*3");
  EXPECT_EQ(to_string(i0 * (i1 + 1)), "i0*(i1 + 1)");
  EXPECT_EQ(to_string(i0 + (i1 + i2)), "i0 + (i1 + i2)");
  EXPECT_EQ(to_string(i0 + i1 + i2), "i0 + i1 + i2");
  EXPECT_EQ(to_string(lt(i0 + 1, i1 * 2)), "i0 + 1 < i1*2");
  EXPECT_EQ(to_string(eq(lt(i0, 1), 0)), "(i0 < 1) == 0");
  EXPECT_EQ(to_string(Expr(-4)), "-4");
  EXPECT_EQ(to_string(v("%ind0") * 3), "%ind0*3");
}

TEST(IndexExprTest, ParsesSympySpellingsAndOperators) {
  Expr i0 = v("i0"), i1 = v("i1");
  EXPECT_EQ(parse_expr("Min(i0, 5)"), min(i0, 5));
  EXPECT_EQ(parse_expr("Max(i0, i1)"), max(i0, i1));
  EXPECT_EQ(parse_expr("i0 // 4 % 3"), mod(floordiv(i0, 4), 3));
  EXPECT_EQ(parse_expr("-i0 // 4"), floordiv(i0 * -1, 4));
  EXPECT_EQ(parse_expr("  ( i0 +1 )*2"), (i0 + 1) * 2);
  EXPECT_EQ(parse_expr("i0 > i1"), lt(i1, i0));
  EXPECT_EQ(parse_expr("i0 >= 3"), le(Expr(3), i0));
  EXPECT_EQ(parse_expr("i1 % %ind0"), mod(i1, v("%ind0")));
  EXPECT_EQ(parse_expr("-9223372036854775808"), Expr(std::numeric_limits<int64_t>::min()));
  EXPECT_EQ(parse_expr("min + 1"), v("min") + 1);
  // sympy's powers (a square image's stride): products; '**' binds tighter than '-' and '*'.
  Expr s0 = v("s0");
  EXPECT_EQ(parse_expr("3*s0**2"), Expr(3) * (s0 * s0));
  EXPECT_EQ(parse_expr("-s0**2"), Expr(-1) * (s0 * s0));
  EXPECT_EQ(parse_expr("(s0 + 1)** 3"), (s0 + 1) * (s0 + 1) * (s0 + 1));
  EXPECT_EQ(parse_expr("s0**0"), Expr(1));
}

TEST(IndexExprTest, VariableNamesMustBeIdentifiers) {
  for (const char* bad : {"", "0x", "a b", "a-b", "x%", "%"})
    EXPECT_THROW(Expr::var(bad), std::invalid_argument) << bad;
  EXPECT_EQ(Expr::var("i0_blk").name(), "i0_blk");
  EXPECT_EQ(Expr::var("%ind0").name(), "%ind0");
}

TEST(IndexExprTest, ParseErrorsNameThePosition) {
  for (const char* bad : {"", "i0 +", "(i0", "i0 i1", "min(i0)", "3 $ 4", "99999999999999999999",
                          "i0 < 1 < 2", "%", "s0**", "s0**s1", "s0**-1", "s0**99"}) {
    try {
      parse_expr(bad);
      ADD_FAILURE() << "parsed: '" << bad << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("position"), std::string::npos) << e.what();
    }
  }
}

TEST(IndexExprTest, PrintParseRoundTrip) {
  Expr i0 = v("i0"), i1 = v("i1"), i2 = v("i2"), s0 = v("s0");
  const int64_t kMin = std::numeric_limits<int64_t>::min();
  std::vector<Expr> cases = {Expr(0),
                             Expr(-17),
                             Expr(kMin),
                             i0 + kMin,
                             i0 * kMin,
                             i0 + i1 * -1,
                             i0 * -1 + i1,
                             (i0 + i1) * -1,
                             i0 - (i0 + i1) * 2,
                             floordiv(i0 * -1, 4),
                             mod(i0, -3),
                             floordiv(i0, s0 * 2),
                             floordiv(floordiv(i0, 2), 3),
                             mod(mod(i0, 6), 4),
                             i0 * floordiv(i1, 3),
                             i0 * (i1 * i2),
                             (i0 * i1) * i2,
                             min(i0 + 1, max(i1, 3)) * 2,
                             lt(i0, i1) * 4 + eq(i2, 0),
                             ne(lt(i0, 2), le(i1, 3)),
                             lt(lt(i0, 1), 1),
                             floordiv(i0, 4) * -1,
                             i0 - floordiv(i1, 2) * 3,
                             i0 * (i1 * -1),
                             floordiv(Expr(-3), i0),
                             mod(Expr(kMin), i0),
                             i0 + (i1 + 2),
                             (i0 + 2) + i1,
                             i0 + i1 * -1 * i2,
                             min(i0, i1) * -1,
                             i0 - lt(i1, 3) * 2,
                             v("%ind0") * 8 + v("x.y_z")};
  for (const Expr& e : cases) {
    std::string text = to_string(e);
    EXPECT_EQ(parse_expr(text), e) << text << " reparsed as " << to_string(parse_expr(text));
  }
}

TEST(IndexExprTest, EvaluateUsesPythonFloorSemantics) {
  Expr x = v("x"), y = v("y");
  std::map<std::string, int64_t> env = {{"x", -7}, {"y", 2}};
  EXPECT_EQ(evaluate(floordiv(x, y), env), -4);
  EXPECT_EQ(evaluate(mod(x, y), env), 1);
  EXPECT_EQ(evaluate(floordiv(y, x), env), -1);
  EXPECT_EQ(evaluate(mod(y, x), env), -5);
  EXPECT_EQ(evaluate(mod(x, Expr(-2)), env), -1);
  EXPECT_EQ(evaluate(floordiv(x, Expr(-2)), env), 3);
  EXPECT_EQ(evaluate(x * 3 + y, env), -19);
  EXPECT_EQ(evaluate(min(x, y) + max(x, y), env), -5);
  EXPECT_EQ(evaluate(lt(x, y) + le(y, y) + eq(x, y) + ne(x, y), env), 3);
  EXPECT_THROW(evaluate(floordiv(x, y - 2), env), std::domain_error);
  EXPECT_THROW(evaluate(mod(x, y - 2), env), std::domain_error);
  try {
    evaluate(x + v("zz"), env);
    ADD_FAILURE() << "no throw";
  } catch (const std::out_of_range& e) {
    EXPECT_NE(std::string(e.what()).find("zz"), std::string::npos);
  }
}

TEST(IndexExprTest, SubstituteReplacesAllAtOnce) {
  Expr x = v("x"), y = v("y");
  Expr e = x * 4 + y;
  EXPECT_EQ(substitute(e, {{"x", y}, {"y", x}}), y * 4 + x);
  EXPECT_EQ(substitute(e, {{"x", Expr(2)}}), y + 8);
  EXPECT_EQ(substitute(e, {}), e);
  EXPECT_EQ(substitute(e, {{"z", Expr(1)}}), e);
}

TEST(IndexExprTest, FreeVarsAndDependsOn) {
  Expr e = parse_expr("i0*4 + min(i1, s0) // 2");
  EXPECT_EQ(free_vars(e), (std::set<std::string>{"i0", "i1", "s0"}));
  EXPECT_TRUE(depends_on(e, "s0"));
  EXPECT_FALSE(depends_on(e, "i2"));
  EXPECT_TRUE(free_vars(Expr(3)).empty());
}

TEST(IndexExprTest, CoefficientOf) {
  auto coef = [](const char* text, const char* var) {
    return coefficient_of(parse_expr(text), var);
  };
  EXPECT_EQ(coef("i0*64 + i1", "i1"), 1);
  EXPECT_EQ(coef("i0*64 + i1", "i0"), 64);
  EXPECT_EQ(coef("i0*64 + i1", "i2"), 0);
  EXPECT_EQ(coef("(i0 + i1)*3 - i1", "i1"), 2);
  EXPECT_EQ(coef("i1 - i1", "i1"), 0);
  EXPECT_EQ(coef("i0*s0 + i1", "i0"), std::nullopt);
  EXPECT_EQ(coef("i0*s0 + i1", "i1"), 1);
  EXPECT_EQ(coef("i1 // 4", "i1"), std::nullopt);
  EXPECT_EQ(coef("(i1*8 + i0) // 4", "i1"), 2);
  EXPECT_EQ(coef("(i1*8 + i0) % 4", "i1"), 0);
  EXPECT_EQ(coef("(i1*8 + i0) % 4", "i0"), std::nullopt);
  EXPECT_EQ(coef("i1 % 4", "i1"), std::nullopt);
  EXPECT_EQ(coef("min(i1, 3)", "i1"), std::nullopt);
  EXPECT_EQ(coef("i1 < 3", "i1"), std::nullopt);
  EXPECT_EQ(coef("(i1 < 3)*i0", "i0"), std::nullopt);
}

// Within the runs of flattened dims: % moves with its variable, // and what only reads it
// stay put; anything else falls back to coefficient_of.
TEST(IndexExprTest, CoefficientWithinRuns) {
  auto coef = [](const char* text, const char* var) {
    return coefficient_within_runs(parse_expr(text), var);
  };
  EXPECT_EQ(coef("(xf // 3136)*301056 + xf % 3136", "xf"), 1);
  EXPECT_EQ(coef("(r0 // 3136)*301056 + ((r0 // 56) % 56)*5376 + (r0 % 56)*96 + i0", "r0"), 96);
  EXPECT_EQ(coef("(r0 // 3136)*301056 + ((r0 // 56) % 56)*5376 + (r0 % 56)*96 + i0", "i0"), 1);
  EXPECT_EQ(coef("i0*64 + i1", "i0"), 64);
  EXPECT_EQ(coef("(i1*2) % 4", "i1"), std::nullopt);
  EXPECT_EQ(coef("i0*s0 + i1", "i0"), std::nullopt);
}

TEST(IndexExprTest, ChunkStep) {
  auto step = [](const char* text, int64_t lanes) { return chunk_step(parse_expr(text), "xf", lanes); };
  // A per-(image, channel) view of an NHWC tensor: runs of 96 channels, whole chunks of 4.
  const auto nhwc = step("y2*96 + (xf // 96)*301056 + xf % 96", 4);
  ASSERT_TRUE(nhwc.has_value());
  EXPECT_EQ(nhwc->coefficient, 1);
  EXPECT_TRUE(nhwc->steps_keep_alignment);
  // A per-image value: stays put within chunks, steps by 3136 (a multiple of 4) per run.
  const auto per_image = step("y2 + (xf // 96)*3136", 4);
  ASSERT_TRUE(per_image.has_value());
  EXPECT_EQ(per_image->coefficient, 0);
  EXPECT_TRUE(per_image->steps_keep_alignment);
  // Runs of 6 split chunks of 4; an offset run, too; a run step of 3 loses alignment.
  EXPECT_EQ(step("(xf // 6)*600 + xf % 6", 4), std::nullopt);
  EXPECT_EQ(step("(xf + 1) % 96", 4), std::nullopt);
  EXPECT_FALSE(step("(xf // 96)*3 + xf % 96", 4)->steps_keep_alignment);
  EXPECT_EQ(step("xf*2", 4)->coefficient, 2);
  // Check the claim by enumeration.
  const Expr e = parse_expr("(xf // 8)*20 + xf % 8");
  for (int64_t b = 0; b < 64; b += 4) {
    for (int64_t l = 0; l < 4; ++l) {
      EXPECT_EQ(evaluate(e, {{"xf", b + l}}), evaluate(e, {{"xf", b}}) + l);
    }
    EXPECT_EQ(evaluate(e, {{"xf", b}}) % 4, 0);
  }
  EXPECT_EQ(chunk_step(e, "xf", 4)->coefficient, 1);
}

TEST(IndexExprTest, StructuralOrderIsTotalAndNatural) {
  EXPECT_TRUE(v("i2") < v("i10"));
  EXPECT_FALSE(v("i10") < v("i2"));
  EXPECT_TRUE(v("a") < v("b"));
  EXPECT_TRUE(Expr(3) < v("a"));
  EXPECT_FALSE(v("a") < v("a"));
  Expr a = parse_expr("i0 // 4"), b = parse_expr("i0 // 5");
  EXPECT_TRUE(a < b);
  EXPECT_FALSE(b < a);
  EXPECT_EQ(std::string(expr_kind_name(ExprKind::FloorDiv)), "FloorDiv");
}

}  // namespace
}  // namespace inductor_cpp::ir
