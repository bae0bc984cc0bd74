/// \file
/// Activation functions and their backward ops (relu, gelu, silu, hardtanh, ... and
/// *_backward), written with the formulas of ATen's CPU kernels so generated code computes
/// what eager computes. The backward ops matter for training graphs, where AOT autograd keeps
/// them whole.
#include <cmath>

#include "inductor/lower/elementwise.h"
#include "ir/activation_formulas.h"

namespace inductor_cpp::inductor::lowering {
namespace {

using ir::BinaryOp;
using ir::UnaryOp;
using Values = std::vector<ir::Value>;

constexpr double kSqrt2 = 1.41421356237309504880;
constexpr double kSqrt1_2 = 0.70710678118654752440;
constexpr double k2_SqrtPi = 1.12837916709551257390;
constexpr double kGeluKappa = 0.044715;

ir::Value add(const ir::Value& a, const ir::Value& b) {
  return bin(BinaryOp::add, a, b);
}
ir::Value sub(const ir::Value& a, const ir::Value& b) {
  return bin(BinaryOp::sub, a, b);
}
ir::Value mul(const ir::Value& a, const ir::Value& b) {
  return bin(BinaryOp::mul, a, b);
}
ir::Value div(const ir::Value& a, const ir::Value& b) {
  return bin(BinaryOp::div, a, b);
}
ir::Value c(double v, const ir::Value& like) {
  return constant_like(v, like);
}

/// An activation of `self` with the scalar parameters it reads through `n`.
using Activation = std::function<ir::Value(const ir::Value& x, const NodeLowering& n)>;

void lower_activation(NodeLowering& n, const char* name, bool float_only, const Activation& f) {
  lower_elementwise(n, {operand(n, "self")}, [&](const Values& x, const ElementwiseTypes& t) {
    if (float_only) require_floating(t, name);
    if (t.compute == ir::DType::Bool) decline(std::string(name) + " of bool");
    return f(x[0], n);
  });
}

/// hardsigmoid's relu6(x + 3) / 6 core.
ir::Value relu6_of_x_plus_3(const ir::Value& x) {
  return min_value(max_value(add(x, c(3, x)), c(0, x)), c(6, x));
}

ir::Value sigmoid_of(const ir::Value& x) {
  return div(c(1, x), add(c(1, x), un(UnaryOp::exp, un(UnaryOp::neg, x))));
}

ir::Value gelu_backward(const ir::Value& grad, const ir::Value& x, bool tanh_approx) {
  if (!tanh_approx) {
    const double beta = k2_SqrtPi * kSqrt1_2 * 0.5;
    const ir::Value cdf = mul(c(0.5, x), add(c(1, x), un(UnaryOp::erf, mul(x, c(kSqrt1_2, x)))));
    const ir::Value pdf = mul(c(beta, x), un(UnaryOp::exp, mul(mul(x, x), c(-0.5, x))));
    return mul(grad, add(cdf, mul(x, pdf)));
  }
  const double beta = kSqrt2 * k2_SqrtPi * 0.5;
  const ir::Value x_sq = mul(x, x);
  const ir::Value x_cube = mul(x_sq, x);
  const ir::Value inner = mul(c(beta, x), add(x, mul(c(kGeluKappa, x), x_cube)));
  const ir::Value tanh_inner = un(UnaryOp::tanh, inner);
  const ir::Value left = mul(c(0.5, x), x);
  const ir::Value right = add(c(1, x), tanh_inner);
  const ir::Value left_derivative = mul(c(0.5, x), right);
  const ir::Value tanh_derivative = sub(c(1, x), mul(tanh_inner, tanh_inner));
  const ir::Value inner_derivative = mul(c(beta, x), add(c(1, x), mul(c(3 * kGeluKappa, x), x_sq)));
  const ir::Value right_derivative = mul(mul(left, tanh_derivative), inner_derivative);
  return mul(grad, add(left_derivative, right_derivative));
}

bool tanh_approximation(const NodeLowering& n) {
  const std::string mode = n.str_arg("approximate").value_or("none");
  if (mode != "none" && mode != "tanh") decline("gelu approximate=" + mode);
  return mode == "tanh";
}

/// A backward op of (grad_output, <param>): promotion over both, as ATen's binary kernels.
void lower_backward(NodeLowering& n, const char* name, const std::string& second, bool float_only,
                    const std::function<ir::Value(const ir::Value& grad, const ir::Value& x)>& f) {
  lower_elementwise(n, {operand(n, "grad_output"), operand(n, second)},
                    [&](const Values& v, const ElementwiseTypes& t) {
                      if (float_only) require_floating(t, name);
                      if (t.compute == ir::DType::Bool) decline(std::string(name) + " of bool");
                      return f(v[0], v[1]);
                    });
}

}  // namespace

void register_activation_ops(OpTable& table) {
  table.add("aten::relu", "self", [](NodeLowering& n) {
    lower_activation(n, "relu", false,
                     [](const ir::Value& x, const NodeLowering&) { return max_value(x, c(0, x)); });
  });
  table.add("aten::leaky_relu", "self negative_slope", [](NodeLowering& n) {
    lower_activation(n, "leaky_relu", true, [](const ir::Value& x, const NodeLowering& n) {
      const ir::Value slope = c(n.number("negative_slope", 0.01), x);
      return ir::where(bin(BinaryOp::gt, x, c(0, x)), x, mul(x, slope));
    });
  });
  table.add("aten::hardtanh", "self min_val max_val", [](NodeLowering& n) {
    lower_activation(n, "hardtanh", false, [](const ir::Value& x, const NodeLowering& n) {
      return min_value(max_value(x, c(n.number("min_val", -1), x)), c(n.number("max_val", 1), x));
    });
  });
  table.add("aten::hardsigmoid", "self", [](NodeLowering& n) {
    lower_activation(n, "hardsigmoid", true, [](const ir::Value& x, const NodeLowering&) {
      return div(relu6_of_x_plus_3(x), c(6, x));
    });
  });
  table.add("aten::hardswish", "self", [](NodeLowering& n) {
    lower_activation(n, "hardswish", true, [](const ir::Value& x, const NodeLowering&) {
      return div(mul(x, relu6_of_x_plus_3(x)), c(6, x));
    });
  });
  table.add("aten::silu", "self", [](NodeLowering& n) {
    lower_activation(n, "silu", true, [](const ir::Value& x, const NodeLowering&) {
      return ir::silu_formula(x);
    });
  });
  table.add("aten::gelu", "self approximate", [](NodeLowering& n) {
    const bool tanh_approx = tanh_approximation(n);
    lower_activation(n, "gelu", true, [tanh_approx](const ir::Value& x, const NodeLowering&) {
      return ir::gelu_formula(x, tanh_approx);
    });
  });
  table.add("aten::elu", "self alpha scale input_scale", [](NodeLowering& n) {
    lower_activation(n, "elu", true, [](const ir::Value& x, const NodeLowering& n) {
      const double alpha = n.number("alpha", 1), scale = n.number("scale", 1);
      const double input_scale = n.number("input_scale", 1);
      const ir::Value negative =
          mul(un(UnaryOp::expm1, mul(x, c(input_scale, x))), c(alpha * scale, x));
      return ir::where(bin(BinaryOp::le, x, c(0, x)), negative, mul(x, c(scale, x)));
    });
  });
  table.add("aten::softplus", "self beta threshold", [](NodeLowering& n) {
    lower_activation(n, "softplus", true, [](const ir::Value& x, const NodeLowering& n) {
      const ir::Value beta = c(n.number("beta", 1), x);
      const ir::Value scaled = mul(x, beta);
      const ir::Value soft = div(un(UnaryOp::log1p, un(UnaryOp::exp, scaled)), beta);
      return ir::where(bin(BinaryOp::gt, scaled, c(n.number("threshold", 20), x)), x, soft);
    });
  });
  table.add("aten::mish", "self", [](NodeLowering& n) {
    lower_activation(n, "mish", true, [](const ir::Value& x, const NodeLowering&) {
      return mul(x, un(UnaryOp::tanh, un(UnaryOp::log1p, un(UnaryOp::exp, x))));
    });
  });
  table.add("aten::threshold", "self threshold value", [](NodeLowering& n) {
    lower_activation(n, "threshold", false, [](const ir::Value& x, const NodeLowering& n) {
      const ir::Value below =
          bin(BinaryOp::le, x, scalar_constant(n.scalar("threshold"), x->dtype));
      return ir::where(below, scalar_constant(n.scalar("value"), x->dtype), x);
    });
  });

  table.add("aten::threshold_backward", "grad_output self threshold", [](NodeLowering& n) {
    const ir::Arg threshold = n.scalar("threshold");
    lower_backward(
        n, "threshold_backward", "self", false, [&](const ir::Value& grad, const ir::Value& x) {
          const ir::Value below = bin(BinaryOp::le, x, scalar_constant(threshold, x->dtype));
          return ir::where(below, c(0, grad), grad);
        });
  });
  table.add("aten::sigmoid_backward", "grad_output output", [](NodeLowering& n) {
    lower_backward(n, "sigmoid_backward", "output", true,
                   [](const ir::Value& grad, const ir::Value& y) {
                     return mul(mul(grad, sub(c(1, y), y)), y);
                   });
  });
  table.add("aten::tanh_backward", "grad_output output", [](NodeLowering& n) {
    lower_backward(n, "tanh_backward", "output", true,
                   [](const ir::Value& grad, const ir::Value& y) {
                     return mul(grad, sub(c(1, y), mul(y, y)));
                   });
  });
  table.add("aten::silu_backward", "grad_output self", [](NodeLowering& n) {
    lower_backward(n, "silu_backward", "self", true, [](const ir::Value& grad, const ir::Value& x) {
      const ir::Value s = sigmoid_of(x);
      return mul(mul(grad, s), add(c(1, x), mul(x, sub(c(1, x), s))));
    });
  });
  table.add("aten::hardtanh_backward", "grad_output self min_val max_val", [](NodeLowering& n) {
    const double lo = n.number("min_val"), hi = n.number("max_val");
    lower_backward(
        n, "hardtanh_backward", "self", false, [&](const ir::Value& grad, const ir::Value& x) {
          const ir::Value outside = bin(BinaryOp::logical_or, bin(BinaryOp::le, x, c(lo, x)),
                                        bin(BinaryOp::ge, x, c(hi, x)));
          return ir::where(outside, c(0, grad), grad);
        });
  });
  table.add("aten::leaky_relu_backward", "grad_output self negative_slope self_is_result",
            [](NodeLowering& n) {
              const double slope = n.number("negative_slope");
              n.bool_arg("self_is_result", false);  // same formula either way
              lower_backward(n, "leaky_relu_backward", "self", true,
                             [&](const ir::Value& grad, const ir::Value& x) {
                               return ir::where(bin(BinaryOp::gt, x, c(0, x)), grad,
                                                mul(grad, c(slope, grad)));
                             });
            });
  table.add("aten::gelu_backward", "grad_output self approximate", [](NodeLowering& n) {
    const bool tanh_approx = tanh_approximation(n);
    lower_backward(n, "gelu_backward", "self", true,
                   [tanh_approx](const ir::Value& grad, const ir::Value& x) {
                     return gelu_backward(grad, x, tanh_approx);
                   });
  });
}

}  // namespace inductor_cpp::inductor::lowering
