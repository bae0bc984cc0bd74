/// \file
/// Table-driven pointwise lowerings: one row per plain unary or binary ATen op (math
/// functions, comparisons, bitwise ops). Ops with extra parameters or special cases live in
/// pointwise_special.cpp / pointwise_activations.cpp.
#include <cmath>

#include "inductor/lower/elementwise.h"

namespace inductor_cpp::inductor::lowering {
namespace {

using ir::BinaryOp;
using ir::DType;
using ir::UnaryOp;

/// What a unary op does on types where it is the identity in torch (floor of an int, sign
/// of a bool).
enum class UnaryRule {
  Apply,                ///< always apply the function
  IdentityUnlessFloat,  ///< floor, ceil, round, trunc: integers are already whole
  IdentityOnBool,       ///< sign, sgn: a bool is its own sign
};

struct UnaryRow {
  const char* op;
  UnaryOp fn;
  Promotion promotion;
  UnaryRule rule;
};

constexpr UnaryRow kUnaryOps[] = {
    {"aten::neg", UnaryOp::neg, Promotion::Default, UnaryRule::Apply},
    {"aten::exp", UnaryOp::exp, Promotion::IntToFloat, UnaryRule::Apply},
    {"aten::exp2", UnaryOp::exp2, Promotion::IntToFloat, UnaryRule::Apply},
    {"aten::expm1", UnaryOp::expm1, Promotion::IntToFloat, UnaryRule::Apply},
    {"aten::log", UnaryOp::log, Promotion::IntToFloat, UnaryRule::Apply},
    {"aten::log2", UnaryOp::log2, Promotion::IntToFloat, UnaryRule::Apply},
    {"aten::log10", UnaryOp::log10, Promotion::IntToFloat, UnaryRule::Apply},
    {"aten::log1p", UnaryOp::log1p, Promotion::IntToFloat, UnaryRule::Apply},
    {"aten::sqrt", UnaryOp::sqrt, Promotion::IntToFloat, UnaryRule::Apply},
    {"aten::rsqrt", UnaryOp::rsqrt, Promotion::IntToFloat, UnaryRule::Apply},
    {"aten::reciprocal", UnaryOp::reciprocal, Promotion::IntToFloat, UnaryRule::Apply},
    {"aten::sin", UnaryOp::sin, Promotion::IntToFloat, UnaryRule::Apply},
    {"aten::cos", UnaryOp::cos, Promotion::IntToFloat, UnaryRule::Apply},
    {"aten::tan", UnaryOp::tan, Promotion::IntToFloat, UnaryRule::Apply},
    {"aten::asin", UnaryOp::asin, Promotion::IntToFloat, UnaryRule::Apply},
    {"aten::acos", UnaryOp::acos, Promotion::IntToFloat, UnaryRule::Apply},
    {"aten::atan", UnaryOp::atan, Promotion::IntToFloat, UnaryRule::Apply},
    {"aten::sinh", UnaryOp::sinh, Promotion::IntToFloat, UnaryRule::Apply},
    {"aten::cosh", UnaryOp::cosh, Promotion::IntToFloat, UnaryRule::Apply},
    {"aten::tanh", UnaryOp::tanh, Promotion::IntToFloat, UnaryRule::Apply},
    {"aten::asinh", UnaryOp::asinh, Promotion::IntToFloat, UnaryRule::Apply},
    {"aten::acosh", UnaryOp::acosh, Promotion::IntToFloat, UnaryRule::Apply},
    {"aten::atanh", UnaryOp::atanh, Promotion::IntToFloat, UnaryRule::Apply},
    {"aten::erf", UnaryOp::erf, Promotion::IntToFloat, UnaryRule::Apply},
    {"aten::erfc", UnaryOp::erfc, Promotion::IntToFloat, UnaryRule::Apply},
    {"aten::erfinv", UnaryOp::erfinv, Promotion::IntToFloat, UnaryRule::Apply},
    {"aten::lgamma", UnaryOp::lgamma, Promotion::IntToFloat, UnaryRule::Apply},
    {"aten::sigmoid", UnaryOp::sigmoid, Promotion::IntToFloat, UnaryRule::Apply},
    {"aten::floor", UnaryOp::floor, Promotion::Default, UnaryRule::IdentityUnlessFloat},
    {"aten::ceil", UnaryOp::ceil, Promotion::Default, UnaryRule::IdentityUnlessFloat},
    {"aten::round", UnaryOp::round, Promotion::Default, UnaryRule::IdentityUnlessFloat},
    {"aten::trunc", UnaryOp::trunc, Promotion::Default, UnaryRule::IdentityUnlessFloat},
    {"aten::sign", UnaryOp::sign, Promotion::Default, UnaryRule::IdentityOnBool},
    {"aten::sgn", UnaryOp::sign, Promotion::Default, UnaryRule::IdentityOnBool},
};

ir::Value apply_unary(const UnaryRow& row, const ir::Value& x) {
  const DType t = x->dtype;
  if (row.rule == UnaryRule::IdentityUnlessFloat && !ir::is_floating(t)) return x;
  if (row.rule == UnaryRule::IdentityOnBool && t == DType::Bool) return x;
  // An unsigned value's sign is whether it is nonzero (no negative side to compute).
  if (row.rule == UnaryRule::IdentityOnBool && t == DType::UInt8) {
    return ir::cast(bin(BinaryOp::ne, x, constant_like(0, x)), t);
  }
  return un(row.fn, x);
}

/// Float predicates; on integer and bool types their answer is a constant.
struct PredicateRow {
  const char* op;
  bool on_non_float;  ///< the answer for integers and bools
  std::function<ir::Value(const ir::Value&)> on_float;
};

ir::Value equals_constant(const ir::Value& x, double c) {
  return bin(BinaryOp::eq, x, constant_like(c, x));
}

const std::vector<PredicateRow>& predicate_rows() {
  static const std::vector<PredicateRow> rows = {
      {"aten::isnan", false, [](const ir::Value& x) { return un(UnaryOp::isnan, x); }},
      {"aten::isinf", false, [](const ir::Value& x) { return un(UnaryOp::isinf, x); }},
      {"aten::isfinite", true,
       [](const ir::Value& x) {
         return un(UnaryOp::logical_not,
                   bin(BinaryOp::logical_or, un(UnaryOp::isnan, x), un(UnaryOp::isinf, x)));
       }},
      {"aten::isposinf", false, [](const ir::Value& x) { return equals_constant(x, INFINITY); }},
      {"aten::isneginf", false, [](const ir::Value& x) { return equals_constant(x, -INFINITY); }},
  };
  return rows;
}

struct BinaryRow {
  const char* name;  ///< without overload
  BinaryOp fn;
  Promotion promotion;
  const char* overloads;  ///< space-separated overload names; "" for none
  bool number_in_opmath;
};

constexpr BinaryRow kBinaryOps[] = {
    {"aten::mul", BinaryOp::mul, Promotion::Default, "Tensor Scalar", true},
    {"aten::maximum", BinaryOp::maximum, Promotion::Default, "", false},
    {"aten::minimum", BinaryOp::minimum, Promotion::Default, "", false},
    {"aten::fmax", BinaryOp::fmax, Promotion::Default, "", false},
    {"aten::fmin", BinaryOp::fmin, Promotion::Default, "", false},
    {"aten::max", BinaryOp::maximum, Promotion::Default, "other", false},
    {"aten::min", BinaryOp::minimum, Promotion::Default, "other", false},
    {"aten::atan2", BinaryOp::atan2, Promotion::IntToFloat, "", false},
    {"aten::copysign", BinaryOp::copysign, Promotion::IntToFloat, "Tensor Scalar", false},
    {"aten::hypot", BinaryOp::hypot, Promotion::Default, "", false},
    {"aten::eq", BinaryOp::eq, Promotion::AlwaysBool, "Tensor Scalar", false},
    {"aten::ne", BinaryOp::ne, Promotion::AlwaysBool, "Tensor Scalar", false},
    {"aten::lt", BinaryOp::lt, Promotion::AlwaysBool, "Tensor Scalar", false},
    {"aten::le", BinaryOp::le, Promotion::AlwaysBool, "Tensor Scalar", false},
    {"aten::gt", BinaryOp::gt, Promotion::AlwaysBool, "Tensor Scalar", false},
    {"aten::ge", BinaryOp::ge, Promotion::AlwaysBool, "Tensor Scalar", false},
    {"aten::bitwise_and", BinaryOp::bitwise_and, Promotion::Default, "Tensor Scalar Scalar_Tensor",
     false},
    {"aten::bitwise_or", BinaryOp::bitwise_or, Promotion::Default, "Tensor Scalar Scalar_Tensor",
     false},
    {"aten::bitwise_xor", BinaryOp::bitwise_xor, Promotion::Default, "Tensor Scalar Scalar_Tensor",
     false},
};

/// The op on two values of one type, with torch's meaning on bool (where arithmetic and
/// bitwise ops are logical ones) and on integers (fmax is maximum: no NaN to skip).
ir::Value apply_binary(BinaryOp fn, const ir::Value& a, const ir::Value& b) {
  const DType t = a->dtype;
  if (t == DType::Bool) {
    switch (fn) {
      case BinaryOp::mul:
      case BinaryOp::minimum:
      case BinaryOp::fmin:
      case BinaryOp::bitwise_and:
        return bin(BinaryOp::logical_and, a, b);
      case BinaryOp::maximum:
      case BinaryOp::fmax:
      case BinaryOp::bitwise_or:
        return bin(BinaryOp::logical_or, a, b);
      case BinaryOp::bitwise_xor:
        return bin(BinaryOp::logical_xor, a, b);
      default:
        break;
    }
  }
  if (!ir::is_floating(t)) {
    if (fn == BinaryOp::fmax) return bin(BinaryOp::maximum, a, b);
    if (fn == BinaryOp::fmin) return bin(BinaryOp::minimum, a, b);
  }
  return bin(fn, a, b);
}

std::vector<std::string> split_words(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == ' ') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

/// logical_and/or/xor/not: each operand is tested against zero in its own type (no
/// promotion), the result is bool.
ir::Value truth(const ir::Value& x) {
  if (x->dtype == DType::Bool) return x;
  return bin(BinaryOp::ne, x, constant_like(0, x));
}

void lower_logical(NodeLowering& n, std::optional<BinaryOp> fn) {
  std::vector<TensorInfo> ts = {n.tensor("self")};
  if (fn) ts.push_back(n.tensor("other"));
  const OutputInfo out = n.output(0);
  if (out.dtype != DType::Bool) decline("logical ops with a non-bool result are not generated");
  std::vector<std::vector<int64_t>> shapes;
  for (const TensorInfo& t : ts) shapes.push_back(t.sizes);
  expect_output_sizes(out, broadcast_shapes(shapes), "broadcasting");
  const auto index = range_vars(out.sizes.size());
  std::vector<ir::Value> x;
  for (const TensorInfo& t : ts) {
    // Each operand is tested in its own type: no promotion.
    ir::Value v = load_broadcast(t, out.sizes, index);
    x.push_back(truth(ir::cast(v, ir::compute_type(v->dtype))));
  }
  const ir::Value body = fn ? bin(*fn, x[0], x[1]) : un(UnaryOp::logical_not, x[0]);
  n.define(make_pointwise(out.buffer, out.sizes, body, n.node_index()));
}

}  // namespace

void register_pointwise_ops(OpTable& table) {
  for (const UnaryRow& row : kUnaryOps) {
    table.add(row.op, "self", [row](NodeLowering& n) {
      ElementwiseOptions options;
      options.promotion = row.promotion;
      lower_elementwise(
          n, {operand(n, "self")},
          [row](const std::vector<ir::Value>& x, const ElementwiseTypes&) {
            return apply_unary(row, x[0]);
          },
          options);
    });
  }
  for (const PredicateRow& row : predicate_rows()) {
    table.add(row.op, "self", [row](NodeLowering& n) {
      ElementwiseOptions options;
      options.promotion = Promotion::AlwaysBool;
      lower_elementwise(
          n, {operand(n, "self")},
          [row](const std::vector<ir::Value>& x, const ElementwiseTypes&) {
            if (!ir::is_floating(x[0]->dtype))
              return constant_number(row.on_non_float, DType::Bool);
            return row.on_float(x[0]);
          },
          options);
    });
  }
  for (const BinaryRow& row : kBinaryOps) {
    const LowerFn lower = [row](NodeLowering& n) {
      ElementwiseOptions options;
      options.promotion = row.promotion;
      options.number_in_opmath = row.number_in_opmath;
      lower_elementwise(
          n, {operand(n, "self"), operand(n, "other")},
          [row](const std::vector<ir::Value>& x, const ElementwiseTypes& t) {
            if (row.fn == BinaryOp::hypot && !ir::is_floating(t.compute))
              decline("hypot of integers is not generated");
            return apply_binary(row.fn, x[0], x[1]);
          },
          options);
    };
    const std::vector<std::string> overloads = split_words(row.overloads);
    if (overloads.empty()) table.add(row.name, "self other", lower);
    for (const std::string& o : overloads)
      table.add(std::string(row.name) + "." + o, "self other", lower);
  }
  table.add("aten::logical_not", "self", [](NodeLowering& n) { lower_logical(n, std::nullopt); });
  table.add("aten::logical_and", "self other",
            [](NodeLowering& n) { lower_logical(n, BinaryOp::logical_and); });
  table.add("aten::logical_or", "self other",
            [](NodeLowering& n) { lower_logical(n, BinaryOp::logical_or); });
  table.add("aten::logical_xor", "self other",
            [](NodeLowering& n) { lower_logical(n, BinaryOp::logical_xor); });
  table.add("aten::bitwise_not", "self", [](NodeLowering& n) {
    lower_elementwise(n, {operand(n, "self")},
                      [](const std::vector<ir::Value>& x, const ElementwiseTypes& t) {
                        if (ir::is_floating(t.compute)) decline("bitwise_not of a float");
                        if (t.compute == DType::Bool) return un(UnaryOp::logical_not, x[0]);
                        return un(UnaryOp::bitwise_not, x[0]);
                      });
  });
}

}  // namespace inductor_cpp::inductor::lowering
