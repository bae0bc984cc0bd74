/// \file
/// Tests of the value DAG: interning (including NaN constants), builder type checks, the op
/// name tables, and the walks (map_indices, replace_loads, loads_in, buffers_read, node_count).
#include "ir/value.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace inductor_cpp::ir {
namespace {

Expr v(const char* name) {
  return Expr::var(name);
}

Value load_f32(const char* buffer, const Expr& index) {
  return load(buffer, DType::Float32, {index});
}

/// Expects `f` to throw std::invalid_argument whose message contains `needle`.
template <typename F>
void expect_type_error(F f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no exception; expected one mentioning '" << needle << "'";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(ValueTest, InterningSharesEqualSubtrees) {
  Value a = binary(BinaryOp::add, load_f32("x", v("i0")), constant_float(1.0, DType::Float32));
  Value b = binary(BinaryOp::add, load_f32("x", v("i0")), constant_float(1.0, DType::Float32));
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.hash(), b.hash());
  EXPECT_NE(a, binary(BinaryOp::add, load_f32("x", v("i1")), constant_float(1.0, DType::Float32)));
  EXPECT_NE(a, binary(BinaryOp::add, load_f32("y", v("i0")), constant_float(1.0, DType::Float32)));
  EXPECT_NE(load(("x"), DType::Float32, {v("i0")}, lt(v("i0"), 3)), load_f32("x", v("i0")));
  EXPECT_NE(constant_int(1, DType::Int64), constant_int(1, DType::Int32));
  EXPECT_NE(constant_float(0.0, DType::Float32), constant_float(-0.0, DType::Float32));
  EXPECT_EQ(local("acc0", DType::Float32), local("acc0", DType::Float32));
  EXPECT_EQ(std::hash<Value>()(a), a.hash());
  EXPECT_EQ(Value().hash(), 0u);
}

TEST(ValueTest, NanConstantsIntern) {
  double nan = std::numeric_limits<double>::quiet_NaN();
  Value a = constant_float(nan, DType::Float32);
  Value b = constant_float(nan, DType::Float32);
  Value c = constant_float(-nan, DType::Float32);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a, c);
  EXPECT_TRUE(std::isnan(a->float_value));
  EXPECT_NE(a, constant_float(nan, DType::Float64));
  EXPECT_EQ(constant_float(INFINITY, DType::Float64), constant_float(INFINITY, DType::Float64));
}

TEST(ValueTest, BuildersSetTypesAndFields) {
  Value x = load_f32("x", v("i0"));
  EXPECT_EQ(x->kind, ValueKind::Load);
  EXPECT_EQ(x->name, "x");
  EXPECT_EQ(x->mask, Expr(1));
  EXPECT_EQ(unary(UnaryOp::exp, x)->dtype, DType::Float32);
  EXPECT_EQ(unary(UnaryOp::isnan, x)->dtype, DType::Bool);
  EXPECT_EQ(binary(BinaryOp::lt, x, x)->dtype, DType::Bool);
  EXPECT_EQ(binary(BinaryOp::mul, x, x)->binary_op(), BinaryOp::mul);
  Value cond = binary(BinaryOp::gt, x, constant_float(0, DType::Float32));
  Value w = where(cond, x, constant_float(0, DType::Float32));
  EXPECT_EQ(w->dtype, DType::Float32);
  ASSERT_EQ(w->operands.size(), 3u);
  EXPECT_EQ(w->operands[0], cond);
  EXPECT_EQ(cast(x, DType::Float32), x);
  Value c = cast(x, DType::Float16);
  EXPECT_EQ(c->kind, ValueKind::Cast);
  EXPECT_EQ(c->dtype, DType::Float16);
  EXPECT_EQ(constant_int(5, DType::Bool)->int_value, 1);
  EXPECT_EQ(index_value(v("i0") * 2, DType::Int64)->index[0], v("i0") * 2);
}

TEST(ValueTest, BuildersRejectTypeErrors) {
  Value f = load_f32("x", v("i0"));
  Value i = load("n", DType::Int64, {v("i0")});
  Value b = load("m", DType::Bool, {v("i0")});
  expect_type_error([&] { binary(BinaryOp::add, f, i); }, "different types");
  expect_type_error([&] { binary(BinaryOp::div, i, i); }, "floating");
  expect_type_error([&] { binary(BinaryOp::bitwise_and, f, f); }, "integer");
  expect_type_error([&] { binary(BinaryOp::sub, b, b); }, "bool");
  expect_type_error([&] { where(f, f, f); }, "condition must be bool");
  expect_type_error([&] { where(b, f, i); }, "different types");
  expect_type_error([&] { unary(UnaryOp::exp, i); }, "floating");
  expect_type_error([&] { unary(UnaryOp::bitwise_not, f); }, "integer");
  expect_type_error([&] { index_value(v("i0"), DType::Float32); }, "integral");
  expect_type_error([&] { index_value(v("i0"), DType::Bool); }, "integral");
  expect_type_error([&] { constant_int(1, DType::Float32); }, "integral");
  expect_type_error([&] { constant_float(1, DType::Int32); }, "floating");
  expect_type_error([&] { load("x", DType::Float32, {v("%ind0")}, Expr(1), {f}, {Expr(4)}); },
                    "integer type");
  expect_type_error([&] { load("x", DType::Float32, {v("%ind0")}, Expr(1), {i}, {}); }, "bounds");
  expect_type_error([&] { unary(UnaryOp::neg, Value()); }, "null");
  // Allowed: integer ops that torch defines.
  EXPECT_EQ(binary(BinaryOp::floordiv, i, i)->dtype, DType::Int64);
  EXPECT_EQ(unary(UnaryOp::abs, i)->dtype, DType::Int64);
  EXPECT_EQ(binary(BinaryOp::logical_and, b, b)->dtype, DType::Bool);
}

TEST(ValueTest, OpNameTablesRoundTrip) {
  for (int k = 0; k <= static_cast<int>(UnaryOp::isinf); ++k) {
    auto op = static_cast<UnaryOp>(k);
    EXPECT_EQ(unary_op_from_name(unary_op_name(op)), op);
  }
  for (int k = 0; k <= static_cast<int>(BinaryOp::rshift); ++k) {
    auto op = static_cast<BinaryOp>(k);
    EXPECT_EQ(binary_op_from_name(binary_op_name(op)), op);
  }
  EXPECT_EQ(unary_op_from_name("nope"), std::nullopt);
  EXPECT_EQ(binary_op_from_name("add"), BinaryOp::add);
  EXPECT_STREQ(value_kind_name(ValueKind::IndexValue), "IndexValue");
  EXPECT_TRUE(unary_yields_bool(UnaryOp::signbit));
  EXPECT_FALSE(unary_yields_bool(UnaryOp::sign));
  EXPECT_TRUE(binary_yields_bool(BinaryOp::ge));
  EXPECT_TRUE(binary_yields_bool(BinaryOp::logical_xor));
  EXPECT_FALSE(binary_yields_bool(BinaryOp::bitwise_xor));
}

TEST(ValueTest, IndirectLoads) {
  Value idx = load("idx", DType::Int64, {v("i0")});
  Value gathered =
      load("table", DType::Float32, {v("%ind0"), v("i1")}, Expr(1), {idx}, {Expr(100)});
  ASSERT_EQ(gathered->operands.size(), 1u);
  EXPECT_EQ(gathered->bounds[0], Expr(100));
  std::vector<Value> loads = loads_in(gathered);
  ASSERT_EQ(loads.size(), 2u);
  EXPECT_EQ(loads[0], idx);  // operands before their users
  EXPECT_EQ(loads[1], gathered);
  EXPECT_EQ(buffers_read(gathered), (std::set<std::string>{"idx", "table"}));
}

TEST(ValueTest, MapIndicesRewritesIndexMaskAndIndexValues) {
  Expr i0 = v("i0"), i1 = v("i1");
  Value body = binary(BinaryOp::add, load("x", DType::Int64, {i0, i1}, lt(i0, 3)),
                      index_value(i0 * 4, DType::Int64));
  Value mapped = map_indices(body, [&](const Expr& e) { return substitute(e, {{"i0", i1 + 1}}); });
  Value expected = binary(BinaryOp::add, load("x", DType::Int64, {i1 + 1, i1}, lt(i1 + 1, 3)),
                          index_value((i1 + 1) * 4, DType::Int64));
  EXPECT_EQ(mapped, expected);
  // Identity rewrite: the same node back.
  EXPECT_EQ(map_indices(body, [](const Expr& e) { return e; }), body);
}

TEST(ValueTest, ReplaceLoadsIsBottomUpAndVisitsEachNodeOnce) {
  Value x = load_f32("x", v("i0"));
  Value y = load_f32("y", v("i0"));
  Value body = binary(BinaryOp::mul, binary(BinaryOp::add, x, y), x);
  int calls = 0;
  Value replaced = replace_loads(body, [&](const Value& l) -> Value {
    ++calls;
    if (l->name == "x") return unary(UnaryOp::exp, load_f32("z", l->index[0]));
    return Value();
  });
  EXPECT_EQ(calls, 2);  // x is shared: visited once
  Value ez = unary(UnaryOp::exp, load_f32("z", v("i0")));
  EXPECT_EQ(replaced, binary(BinaryOp::mul, binary(BinaryOp::add, ez, y), ez));
  EXPECT_EQ(replace_loads(body, [](const Value&) { return Value(); }), body);
  expect_type_error(
      [&] { replace_loads(body, [](const Value&) { return constant_int(1, DType::Int64); }); },
      "replaced by a value of type int64");
}

TEST(ValueTest, ReplaceLoadsSeesRebuiltIndirectOperands) {
  Value idx = load("idx", DType::Int64, {v("i0")});
  Value g = load("t", DType::Float32, {v("%ind0")}, Expr(1), {idx}, {Expr(10)});
  Value out = replace_loads(g, [](const Value& l) -> Value {
    if (l->name == "idx") return constant_int(3, DType::Int64);
    return Value();
  });
  ASSERT_EQ(out->kind, ValueKind::Load);
  EXPECT_EQ(out->operands[0], constant_int(3, DType::Int64));
}

TEST(ValueTest, NodeCountCountsDistinctNodes) {
  Value x = load_f32("x", v("i0"));
  Value sq = binary(BinaryOp::mul, x, x);
  EXPECT_EQ(node_count(sq), 2);
  EXPECT_EQ(node_count(binary(BinaryOp::add, sq, sq)), 3);
  EXPECT_EQ(node_count(Value()), 0);
}

// A subtree used twice is replaced at both uses; a value without it comes back as it was.
TEST(ValueTest, ReplaceValueSwapsEverySharedUse) {
  const Value x = load("%a", DType::Float32, {Expr::var("i0")});
  const Value part = binary(BinaryOp::mul, x, constant_float(2, DType::Float32));
  const Value body = binary(BinaryOp::add, part, unary(UnaryOp::exp, part));
  const Value t = load("%t", DType::Float32, {Expr::var("i0")});
  EXPECT_EQ(replace_value(body, part, t), binary(BinaryOp::add, t, unary(UnaryOp::exp, t)));
  EXPECT_EQ(replace_value(x, part, t), x);
  EXPECT_THROW(replace_value(body, part, constant_int(1, DType::Int64)), std::invalid_argument);
}

}  // namespace
}  // namespace inductor_cpp::ir
