/// \file
/// Activation formulas shared by lowering and epilogue selection (activation_formulas.h).
#include "ir/activation_formulas.h"

namespace inductor_cpp::ir {
namespace {

constexpr double kSqrt2 = 1.41421356237309504880;
constexpr double kSqrt1_2 = 0.70710678118654752440;
constexpr double k2_SqrtPi = 1.12837916709551257390;
constexpr double kGeluKappa = 0.044715;

Value c(double v, const Value& like) {
  return constant_float(v, like->dtype);
}

}  // namespace

Value gelu_formula(const Value& x, bool tanh_approx) {
  const auto mul = [](const Value& a, const Value& b) { return binary(BinaryOp::mul, a, b); };
  const auto add = [](const Value& a, const Value& b) { return binary(BinaryOp::add, a, b); };
  if (!tanh_approx)
    return mul(mul(x, c(0.5, x)), add(c(1, x), unary(UnaryOp::erf, mul(x, c(kSqrt1_2, x)))));
  const Value cube = mul(mul(x, x), x);
  const Value inner = mul(c(kSqrt2 * k2_SqrtPi * 0.5, x), add(x, mul(c(kGeluKappa, x), cube)));
  return mul(mul(c(0.5, x), x), add(c(1, x), unary(UnaryOp::tanh, inner)));
}

Value silu_formula(const Value& x) {
  return binary(BinaryOp::div, x,
                binary(BinaryOp::add, c(1, x), unary(UnaryOp::exp, unary(UnaryOp::neg, x))));
}

}  // namespace inductor_cpp::ir
