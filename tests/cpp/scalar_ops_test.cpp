/// \file
/// Scalar ops follow Python's number semantics (a rule table: op, args, expected).
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/scalar_ops.h"

namespace inductor_cpp::runtime {
namespace {

Number run(const char* name, std::vector<Number> args) {
  auto op = scalar_op_from_name(name);
  EXPECT_TRUE(op.has_value()) << name;
  return eval_scalar_op(*op, args);
}

TEST(ScalarOps, PythonIntegerSemantics) {
  struct Case {
    const char* op;
    std::vector<Number> args;
    Number expected;
  };
  const Case cases[] = {
      {"sym::add", {int64_t{2}, int64_t{3}}, int64_t{5}},
      {"sym::sub", {int64_t{2}, int64_t{3}}, int64_t{-1}},
      {"sym::mul", {int64_t{4}, int64_t{6}}, int64_t{24}},
      {"sym::floordiv", {int64_t{7}, int64_t{2}}, int64_t{3}},
      {"sym::floordiv", {int64_t{-7}, int64_t{2}}, int64_t{-4}},  // toward -inf, not zero
      {"sym::floordiv", {int64_t{7}, int64_t{-2}}, int64_t{-4}},
      {"sym::mod", {int64_t{-7}, int64_t{3}}, int64_t{2}},  // sign of the divisor
      {"sym::mod", {int64_t{7}, int64_t{-3}}, int64_t{-2}},
      {"sym::pow", {int64_t{3}, int64_t{4}}, int64_t{81}},
      {"sym::neg", {int64_t{5}}, int64_t{-5}},
      {"sym::max", {int64_t{5}, int64_t{9}}, int64_t{9}},
      {"sym::min", {int64_t{5}, int64_t{9}}, int64_t{5}},
      {"sym::sum", {int64_t{1}, int64_t{2}, int64_t{3}}, int64_t{6}},
      {"sym::int", {2.9}, int64_t{2}},
      {"sym::ite", {true, int64_t{1}, int64_t{2}}, int64_t{1}},
      {"sym::add", {true, int64_t{1}}, int64_t{2}},  // bool is an int
  };
  for (const Case& c : cases) EXPECT_EQ(run(c.op, c.args), c.expected) << c.op;
}

TEST(ScalarOps, FloatsAndComparisons) {
  EXPECT_EQ(run("sym::truediv", {int64_t{7}, int64_t{2}}), Number{3.5});
  EXPECT_EQ(run("sym::add", {int64_t{1}, 0.5}), Number{1.5});
  EXPECT_EQ(run("sym::floordiv", {-7.0, int64_t{2}}), Number{-4.0});
  EXPECT_EQ(run("sym::mod", {-7.5, 2.0}), Number{0.5});
  EXPECT_EQ(run("sym::pow", {int64_t{2}, int64_t{-1}}), Number{0.5});
  EXPECT_EQ(run("sym::float", {int64_t{3}}), Number{3.0});
  EXPECT_EQ(run("sym::lt", {int64_t{1}, 1.5}), Number{true});
  EXPECT_EQ(run("sym::eq", {int64_t{2}, 2.0}), Number{true});
  EXPECT_EQ(run("sym::ge", {int64_t{1}, int64_t{2}}), Number{false});
  EXPECT_EQ(run("sym::and", {true, false}), Number{false});
  EXPECT_EQ(run("sym::or", {true, false}), Number{true});
  EXPECT_EQ(run("sym::not", {int64_t{0}}), Number{true});
}

TEST(ScalarOps, ErrorsAsPythonRaisesThem) {
  EXPECT_THROW(run("sym::floordiv", {int64_t{1}, int64_t{0}}), std::domain_error);
  EXPECT_THROW(run("sym::mod", {int64_t{1}, int64_t{0}}), std::domain_error);
  EXPECT_THROW(run("sym::truediv", {1.0, 0.0}), std::domain_error);
  EXPECT_THROW(run("sym::add", {int64_t{1}}), std::invalid_argument);
  EXPECT_FALSE(scalar_op_from_name("sym::frobnicate").has_value());
  EXPECT_FALSE(scalar_op_from_name("aten::add").has_value());
}

}  // namespace
}  // namespace inductor_cpp::runtime
