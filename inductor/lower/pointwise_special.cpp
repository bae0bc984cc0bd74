/// \file
/// Pointwise lowerings with parameters or type-specific rules: add/sub with alpha, division
/// and its rounding modes, remainder, pow, clamp, shifts, where/masked_fill, lerp, addcmul,
/// conversions (clone, _to_copy, copy, fill). Formulas follow ATen's CPU kernels, so that the
/// generated code computes what eager computes.
#include <cmath>

#include "inductor/lower/elementwise.h"

namespace inductor_cpp::inductor::lowering {
namespace {

using ir::BinaryOp;
using ir::DType;
using ir::UnaryOp;
using Values = std::vector<ir::Value>;

bool number_equals(const ir::Arg& a, double v) {
  if (a.kind == ir::Arg::Kind::Float) return a.float_value == v;
  if (a.kind == ir::Arg::Kind::Int) return static_cast<double>(a.int_value) == v;
  return (a.bool_value ? 1.0 : 0.0) == v;
}

/// add/sub/rsub: self + alpha * other (ATen multiplies alpha into the second operand).
void lower_add_sub(NodeLowering& n, BinaryOp fn, bool reversed) {
  const ir::Arg alpha = n.scalar("alpha", ir::Arg::of_int(1));
  ElementwiseOptions options;
  options.number_in_opmath = true;
  lower_elementwise(
      n, {operand(n, "self"), operand(n, "other")},
      [&](const Values& x, const ElementwiseTypes& t) {
        ir::Value lhs = reversed ? x[1] : x[0];
        ir::Value rhs = reversed ? x[0] : x[1];
        const bool unit_alpha = number_equals(alpha, 1);
        if (t.compute == DType::Bool) {
          if (fn != BinaryOp::add || !unit_alpha) decline("bool subtraction or alpha");
          return bin(BinaryOp::logical_or, lhs, rhs);
        }
        if (alpha.kind == ir::Arg::Kind::Float && !ir::is_floating(t.compute))
          decline("a float alpha with integer tensors");
        if (!unit_alpha) rhs = bin(BinaryOp::mul, scalar_constant(alpha, t.compute), rhs);
        return bin(fn, lhs, rhs);
      },
      options);
}

void lower_div(NodeLowering& n) {
  const auto mode = n.str_arg("rounding_mode");
  ElementwiseOptions options;
  const Operand divisor = operand(n, "other");
  if (!mode) {
    options.promotion = Promotion::IntToFloat;
    options.number_in_opmath = true;
    lower_elementwise(
        n, {operand(n, "self"), divisor},
        [](const Values& x, const ElementwiseTypes&) { return bin(BinaryOp::div, x[0], x[1]); },
        options);
    return;
  }
  if (*mode != "trunc" && *mode != "floor") decline("unknown rounding_mode " + *mode);
  const bool trunc = *mode == "trunc";
  lower_elementwise(
      n, {operand(n, "self"), divisor},
      [&](const Values& x, const ElementwiseTypes& t) {
        if (t.compute == DType::Bool) decline("bool division");
        require_safe_divisor(divisor, t);
        if (ir::is_floating(t.compute)) {
          if (trunc) return un(UnaryOp::trunc, bin(BinaryOp::div, x[0], x[1]));
          return bin(BinaryOp::floordiv, x[0], x[1]);
        }
        return bin(trunc ? BinaryOp::truncdiv : BinaryOp::floordiv, x[0], x[1]);
      },
      options);
}

/// remainder, fmod, floor_divide: integer versions need a divisor known to be nonzero.
void lower_integer_safe_division(NodeLowering& n, BinaryOp fn) {
  const Operand divisor = operand(n, "other");
  lower_elementwise(n, {operand(n, "self"), divisor},
                    [&](const Values& x, const ElementwiseTypes& t) {
                      if (t.compute == DType::Bool) decline("bool division");
                      require_safe_divisor(divisor, t);
                      return bin(fn, x[0], x[1]);
                    });
}

/// pow with a number exponent: the special cases ATen's pow_tensor_scalar kernel takes for
/// floats (x*x for 2, sqrt for 0.5, ...), the generic pow otherwise.
ir::Value pow_by_number(const ir::Value& base, const ir::Value& exponent, const ir::Arg& e) {
  if (!ir::is_floating(base->dtype)) {
    if (number_equals(e, 2)) return bin(BinaryOp::mul, base, base);
    return bin(BinaryOp::pow, base, exponent);
  }
  const ir::Value one = constant_like(1, base);
  const ir::Value square = bin(BinaryOp::mul, base, base);
  if (number_equals(e, 2)) return square;
  if (number_equals(e, 3)) return bin(BinaryOp::mul, square, base);
  if (number_equals(e, 0.5)) return un(UnaryOp::sqrt, base);
  if (number_equals(e, -0.5)) return bin(BinaryOp::div, one, un(UnaryOp::sqrt, base));
  if (number_equals(e, -1)) return bin(BinaryOp::div, one, base);
  if (number_equals(e, -2)) return bin(BinaryOp::div, one, square);
  return bin(BinaryOp::pow, base, exponent);
}

void lower_pow(NodeLowering& n) {
  const Operand base = operand(n, "self");
  const Operand exponent = operand(n, "exponent");
  ElementwiseOptions options;
  options.promotion = Promotion::BoolToLong;
  lower_elementwise(
      n, {base, exponent},
      [&](const Values& x, const ElementwiseTypes& t) {
        if (exponent.is_tensor()) return bin(BinaryOp::pow, x[0], x[1]);
        if (!ir::is_floating(t.compute) && exponent.number.kind == ir::Arg::Kind::Int &&
            exponent.number.int_value < 0)
          decline("integers to negative integer powers raise in ATen");
        return pow_by_number(x[0], x[1], exponent.number);
      },
      options);
}

/// clamp / clamp_min / clamp_max (Scalar and Tensor bounds): min(max(x, lo), hi), NaN
/// propagating like ATen's vectorized kernel; lo > hi gives hi, as in torch.
void lower_clamp(NodeLowering& n, bool has_min, bool has_max) {
  std::vector<Operand> ops = {operand(n, "self")};
  const bool lo = has_min && n.has("min");
  const bool hi = has_max && n.has("max");
  if (!lo && !hi) decline("clamp without bounds");
  if (lo) ops.push_back(operand(n, "min"));
  if (hi) ops.push_back(operand(n, "max"));
  lower_elementwise(n, ops, [lo, hi](const Values& x, const ElementwiseTypes&) {
    ir::Value v = x[0];
    if (lo) v = max_value(v, x[1]);
    if (hi) v = min_value(v, x[lo ? 2 : 1]);
    return v;
  });
}

/// Shifts with ATen's rules for counts outside [0, bits): left gives 0, right gives the sign
/// fill (0 for unsigned).
void lower_shift(NodeLowering& n, bool left) {
  lower_elementwise(n, {operand(n, "self"), operand(n, "other")},
                    [left](const Values& x, const ElementwiseTypes& t) {
                      if (!ir::is_integral(t.compute)) decline("shift of a non-integer type");
                      const int bits = 8 * ir::dtype_size(t.compute);
                      const bool is_signed = t.compute != DType::UInt8;
                      const ir::Value a = x[0], b = x[1];
                      const int64_t limit = left || !is_signed ? bits : bits - 1;
                      const ir::Value outside =
                          bin(BinaryOp::logical_or, bin(BinaryOp::lt, b, constant_like(0, b)),
                              bin(BinaryOp::ge, b, constant_like(static_cast<double>(limit), b)));
                      if (!left && is_signed) {
                        const ir::Value count = ir::where(outside, constant_like(bits - 1, b), b);
                        return bin(BinaryOp::rshift, a, count);
                      }
                      const ir::Value count = ir::where(outside, constant_like(0, b), b);
                      const ir::Value shifted =
                          bin(left ? BinaryOp::lshift : BinaryOp::rshift, a, count);
                      return ir::where(outside, constant_like(0, a), shifted);
                    });
}

void lower_where(NodeLowering& n) {
  const Operand self = operand(n, "self"), other = operand(n, "other");
  ElementwiseOptions options;
  options.leading_conditions = 1;
  options.types = elementwise_types({self, other}, Promotion::Default);
  lower_elementwise(
      n, {Operand{n.tensor("condition"), {}}, self, other},
      [](const Values& x, const ElementwiseTypes&) { return ir::where(x[0], x[1], x[2]); },
      options);
}

/// The types of an op whose result keeps the type of `t` (masked_fill, fill, threshold).
ElementwiseTypes types_of(const TensorInfo& t) {
  return ElementwiseTypes{t.dtype, ir::compute_type(t.dtype), t.dtype};
}

void lower_masked_fill(NodeLowering& n) {
  const TensorInfo self = n.tensor("self");
  ElementwiseOptions options;
  options.leading_conditions = 1;
  options.types = types_of(self);
  lower_elementwise(
      n, {Operand{n.tensor("mask"), {}}, Operand{self, {}}, operand(n, "value")},
      [](const Values& x, const ElementwiseTypes&) { return ir::where(x[0], x[2], x[1]); },
      options);
}

/// lerp as ATen computes it: from the nearer end, depending on |weight| < 0.5.
void lower_lerp(NodeLowering& n) {
  ElementwiseOptions options;
  options.number_in_opmath = true;
  lower_elementwise(
      n, {operand(n, "self"), operand(n, "end"), operand(n, "weight")},
      [](const Values& x, const ElementwiseTypes& t) {
        require_floating(t, "lerp");
        const ir::Value &s = x[0], &e = x[1], &w = x[2];
        const ir::Value diff = bin(BinaryOp::sub, e, s);
        const ir::Value small = bin(BinaryOp::lt, un(UnaryOp::abs, w), constant_like(0.5, w));
        const ir::Value from_start = bin(BinaryOp::add, s, bin(BinaryOp::mul, w, diff));
        const ir::Value from_end = bin(
            BinaryOp::sub, e, bin(BinaryOp::mul, diff, bin(BinaryOp::sub, constant_like(1, w), w)));
        return ir::where(small, from_start, from_end);
      },
      options);
}

/// addcmul: self + value * t1 * t2; addcdiv: self + value * t1 / t2 (ATen's order).
void lower_addc(NodeLowering& n, BinaryOp fn) {
  const ir::Arg value = n.scalar("value", ir::Arg::of_int(1));
  ElementwiseOptions options;
  options.promotion = fn == BinaryOp::div ? Promotion::IntToFloat : Promotion::Default;
  lower_elementwise(
      n, {operand(n, "self"), operand(n, "tensor1"), operand(n, "tensor2")},
      [&](const Values& x, const ElementwiseTypes& t) {
        if (fn == BinaryOp::div) require_floating(t, "addcdiv");
        if (t.compute == DType::Bool) decline("addcmul of bool");
        const ir::Value scaled = bin(BinaryOp::mul, scalar_constant(value, t.compute), x[1]);
        return bin(BinaryOp::add, x[0], bin(fn, scaled, x[2]));
      },
      options);
}

/// A value-preserving copy of `src` (broadcast to the output's shape), converted to the
/// output's type with a C++-style cast (what ATen's copy does).
void lower_conversion(NodeLowering& n, const TensorInfo& src, DType expected,
                      const std::vector<int64_t>& expected_sizes) {
  const OutputInfo out = n.output(0);
  if (out.dtype != expected)
    decline(std::string("expected ") + ir::dtype_name(expected) + " but the graph says " +
            ir::dtype_name(out.dtype));
  expect_output_sizes(out, expected_sizes, "the copy");
  if (out.device != src.device) decline("copy between devices " + src.device + " -> " + out.device);
  const ir::Value v = load_broadcast(src, out.sizes, range_vars(out.sizes.size()));
  n.define(make_pointwise(out.buffer, out.sizes, ir::cast(v, out.dtype), n.node_index()));
}

void lower_to_copy(NodeLowering& n) {
  const TensorInfo src = n.tensor("self");
  check_plain_tensor_args(n);
  n.bool_arg("non_blocking", false);
  n.bool_arg("copy", false);
  const DType target = n.dtype_arg("dtype").value_or(src.dtype);
  lower_conversion(n, src, target, src.sizes);
}

void lower_fill(NodeLowering& n) {
  const TensorInfo self = n.tensor("self");
  const OutputInfo out = n.output(0);
  expect_output_sizes(out, self.sizes, "fill");
  if (out.dtype != self.dtype) decline("fill changes the dtype");
  ir::Value v;
  if (n.is_tensor("value")) {
    const TensorInfo value = n.tensor("value");
    if (value.rank() != 0) decline("fill with a non-scalar tensor");
    v = ir::cast(load_at(value, {}), out.dtype);
  } else {
    v = scalar_constant(n.scalar("value"), out.dtype);
  }
  n.define(make_pointwise(out.buffer, out.sizes, v, n.node_index()));
}

void lower_round_decimals(NodeLowering& n) {
  const int64_t decimals = n.int_arg("decimals", 0);
  lower_elementwise(
      n, {operand(n, "self")}, [decimals](const Values& x, const ElementwiseTypes& t) {
        if (!ir::is_floating(t.compute)) return x[0];
        if (decimals == 0) return un(UnaryOp::round, x[0]);
        // ATen: nearbyint(x * 10^d) / 10^d, or nearbyint(x / 10^-d) * 10^-d for d < 0.
        const ir::Value scale =
            constant_like(std::pow(10.0, static_cast<double>(std::abs(decimals))), x[0]);
        if (decimals > 0)
          return bin(BinaryOp::div, un(UnaryOp::round, bin(BinaryOp::mul, x[0], scale)), scale);
        return bin(BinaryOp::mul, un(UnaryOp::round, bin(BinaryOp::div, x[0], scale)), scale);
      });
}

}  // namespace

void register_pointwise_special_ops(OpTable& table) {
  for (const char* o : {"aten::add.Tensor", "aten::add.Scalar"})
    table.add(o, "self other alpha",
              [](NodeLowering& n) { lower_add_sub(n, BinaryOp::add, false); });
  for (const char* o : {"aten::sub.Tensor", "aten::sub.Scalar"})
    table.add(o, "self other alpha",
              [](NodeLowering& n) { lower_add_sub(n, BinaryOp::sub, false); });
  for (const char* o : {"aten::rsub.Tensor", "aten::rsub.Scalar"})
    table.add(o, "self other alpha",
              [](NodeLowering& n) { lower_add_sub(n, BinaryOp::sub, true); });
  for (const char* o : {"aten::div.Tensor", "aten::div.Scalar"})
    table.add(o, "self other", lower_div);
  for (const char* o : {"aten::div.Tensor_mode", "aten::div.Scalar_mode"})
    table.add(o, "self other rounding_mode", lower_div);
  const std::pair<const char*, BinaryOp> divisions[] = {
      {"aten::remainder.Tensor", BinaryOp::remainder},
      {"aten::remainder.Scalar", BinaryOp::remainder},
      {"aten::remainder.Scalar_Tensor", BinaryOp::remainder},
      {"aten::fmod.Tensor", BinaryOp::fmod},
      {"aten::fmod.Scalar", BinaryOp::fmod},
      {"aten::floor_divide", BinaryOp::floordiv},
      {"aten::floor_divide.Scalar", BinaryOp::floordiv},
  };
  for (const auto& [op, fn] : divisions)
    table.add(op, "self other", [fn = fn](NodeLowering& n) { lower_integer_safe_division(n, fn); });
  for (const char* o : {"aten::pow.Tensor_Tensor", "aten::pow.Tensor_Scalar", "aten::pow.Scalar"})
    table.add(o, "self exponent", lower_pow);
  for (const char* o : {"aten::clamp", "aten::clamp.Tensor"})
    table.add(o, "self min max", [](NodeLowering& n) { lower_clamp(n, true, true); });
  for (const char* o : {"aten::clamp_min", "aten::clamp_min.Tensor"})
    table.add(o, "self min", [](NodeLowering& n) { lower_clamp(n, true, false); });
  for (const char* o : {"aten::clamp_max", "aten::clamp_max.Tensor"})
    table.add(o, "self max", [](NodeLowering& n) { lower_clamp(n, false, true); });
  for (const char* o : {"aten::bitwise_left_shift.Tensor", "aten::bitwise_left_shift.Tensor_Scalar",
                        "aten::bitwise_left_shift.Scalar_Tensor", "aten::__lshift__.Tensor",
                        "aten::__lshift__.Scalar"})
    table.add(o, "self other", [](NodeLowering& n) { lower_shift(n, true); });
  for (const char* o :
       {"aten::bitwise_right_shift.Tensor", "aten::bitwise_right_shift.Tensor_Scalar",
        "aten::bitwise_right_shift.Scalar_Tensor", "aten::__rshift__.Tensor",
        "aten::__rshift__.Scalar"})
    table.add(o, "self other", [](NodeLowering& n) { lower_shift(n, false); });
  for (const char* o : {"aten::where.self", "aten::where.ScalarOther", "aten::where.ScalarSelf",
                        "aten::where.Scalar"})
    table.add(o, "condition self other", lower_where);
  for (const char* o : {"aten::masked_fill.Scalar", "aten::masked_fill.Tensor"})
    table.add(o, "self mask value", lower_masked_fill);
  for (const char* o : {"aten::lerp.Scalar", "aten::lerp.Tensor"})
    table.add(o, "self end weight", lower_lerp);
  table.add("aten::addcmul", "self tensor1 tensor2 value",
            [](NodeLowering& n) { lower_addc(n, BinaryOp::mul); });
  table.add("aten::addcdiv", "self tensor1 tensor2 value",
            [](NodeLowering& n) { lower_addc(n, BinaryOp::div); });
  table.add("aten::clone", "self memory_format", [](NodeLowering& n) {
    const TensorInfo src = n.tensor("self");
    lower_conversion(n, src, src.dtype, src.sizes);
  });
  // torch.tensor(...) inside a compiled function: a copy of the constant Dynamo lifted.
  table.add("aten::lift_fresh_copy", "self", [](NodeLowering& n) {
    const TensorInfo src = n.tensor("self");
    lower_conversion(n, src, src.dtype, src.sizes);
  });
  table.add("aten::_to_copy", "self dtype layout device pin_memory non_blocking memory_format",
            lower_to_copy);
  table.add("aten::to.dtype", "self dtype non_blocking copy memory_format", lower_to_copy);
  table.add("aten::copy", "self src non_blocking", [](NodeLowering& n) {
    const TensorInfo self = n.tensor("self");
    const TensorInfo src = n.tensor("src");
    n.bool_arg("non_blocking", false);
    if (src.device != self.device) decline("copy between devices");
    lower_conversion(n, src, self.dtype, self.sizes);
  });
  for (const char* o : {"aten::fill.Scalar", "aten::fill.Tensor"})
    table.add(o, "self value", lower_fill);
  table.add("aten::round.decimals", "self decimals", lower_round_decimals);
  table.add("aten::abs", "self", [](NodeLowering& n) {
    lower_elementwise(n, {operand(n, "self")}, [](const Values& x, const ElementwiseTypes& t) {
      if (t.compute == DType::Bool || t.compute == DType::UInt8) return x[0];
      return un(UnaryOp::abs, x[0]);
    });
  });
  table.add("aten::signbit", "self", [](NodeLowering& n) {
    ElementwiseOptions options;
    options.promotion = Promotion::AlwaysBool;
    lower_elementwise(
        n, {operand(n, "self")},
        [](const Values& x, const ElementwiseTypes& t) {
          if (ir::is_floating(t.compute)) return un(UnaryOp::signbit, x[0]);
          if (t.compute == DType::Bool || t.compute == DType::UInt8) return zero(DType::Bool);
          return bin(BinaryOp::lt, x[0], constant_like(0, x[0]));
        },
        options);
  });
  table.add("aten::frac", "self", [](NodeLowering& n) {
    lower_elementwise(n, {operand(n, "self")}, [](const Values& x, const ElementwiseTypes& t) {
      require_floating(t, "frac");
      return bin(BinaryOp::sub, x[0], un(UnaryOp::trunc, x[0]));
    });
  });
  table.add("aten::nextafter", "self other", [](NodeLowering& n) {
    lower_elementwise(n, {operand(n, "self"), operand(n, "other")},
                      [](const Values& x, const ElementwiseTypes& t) {
                        // nextafter steps in the storage type: float32 arithmetic would
                        // step by a float32 ulp, not a float16 one.
                        if (t.common != DType::Float32 && t.common != DType::Float64)
                          decline(std::string("nextafter of ") + ir::dtype_name(t.common));
                        return bin(BinaryOp::nextafter, x[0], x[1]);
                      });
  });
}

}  // namespace inductor_cpp::inductor::lowering
