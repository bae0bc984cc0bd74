/// \file
/// Scalar math of the reference interpreter: unary/binary ops, casts and reduction
/// accumulators with torch's semantics, computed in double / int64 (see ir_interpreter.h).
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>

#include "tests/cpp/ir_interpreter_internal.h"

namespace inductor_cpp::ir::interp {

namespace {

Scalar of_float(double f) {
  return Scalar{f, 0};
}
Scalar of_int(int64_t i) {
  return Scalar{static_cast<double>(i), i};
}
Scalar of_bool(bool b) {
  return of_int(b ? 1 : 0);
}

[[noreturn]] void unsupported(const char* what, const char* op, DType type) {
  throw std::invalid_argument(std::string("interpreter: ") + what + " " + op + " on " +
                              dtype_name(type));
}

double erfinv(double y) {
  if (std::isnan(y) || y < -1 || y > 1) return std::numeric_limits<double>::quiet_NaN();
  if (y == -1 || y == 1) return y * std::numeric_limits<double>::infinity();
  double x = 0;  // Newton on erf(x) - y; erf is smooth and monotonic, so this converges
  for (int k = 0; k < 100; ++k) {
    const double step = (std::erf(x) - y) / (2 / std::sqrt(M_PI) * std::exp(-x * x));
    x -= step;
    if (std::fabs(step) < 1e-17 * std::fmax(1.0, std::fabs(x))) break;
  }
  return x;
}

/// ATen's div_floor_floating.
double floor_divide(double a, double b) {
  if (b == 0) return a / b;
  const double mod = std::fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0 && (b < 0) != (mod < 0)) div -= 1;
  if (div == 0) return std::copysign(0.0, a / b);
  double floored = std::floor(div);
  if (div - floored > 0.5) floored += 1;
  return floored;
}

int64_t checked_divisor(int64_t b, const char* op) {
  if (b == 0) throw std::domain_error(std::string("interpreter: integer ") + op + " by zero");
  return b;
}

int64_t int_pow(int64_t base, int64_t exp, DType type) {
  if (exp < 0) {
    if (base == 1) return 1;
    if (base == -1) return (exp & 1) ? -1 : 1;
    return 0;
  }
  int64_t result = 1;
  for (int64_t k = 0; k < exp; ++k)
    result = wrap_int(static_cast<int64_t>(static_cast<uint64_t>(result) * base), type);
  return result;
}

Scalar unary_int(UnaryOp op, DType type, int64_t a) {
  using U = UnaryOp;
  switch (op) {
    case U::neg:
      return of_int(wrap_int(-a, type));
    case U::abs:
      return of_int(wrap_int(a < 0 ? -a : a, type));
    case U::sign:
      return of_int((a > 0) - (a < 0));
    case U::bitwise_not:
      return of_int(type == DType::Bool ? !a : wrap_int(~a, type));
    case U::logical_not:
      return of_bool(a == 0);
    case U::isnan:
    case U::isinf:
      return of_bool(false);
    case U::signbit:
      return of_bool(a < 0);
    case U::floor:
    case U::ceil:
    case U::round:
    case U::trunc:
      return of_int(a);
    default:
      unsupported("unary", unary_op_name(op), type);
  }
}

Scalar unary_float(UnaryOp op, DType type, double a) {
  using U = UnaryOp;
  switch (op) {
    case U::neg:
      return of_float(-a);
    case U::abs:
      return of_float(std::fabs(a));
    case U::reciprocal:
      return of_float(1 / a);
    case U::sqrt:
      return of_float(std::sqrt(a));
    case U::rsqrt:
      return of_float(1 / std::sqrt(a));
    case U::exp:
      return of_float(std::exp(a));
    case U::exp2:
      return of_float(std::exp2(a));
    case U::expm1:
      return of_float(std::expm1(a));
    case U::log:
      return of_float(std::log(a));
    case U::log2:
      return of_float(std::log2(a));
    case U::log10:
      return of_float(std::log10(a));
    case U::log1p:
      return of_float(std::log1p(a));
    case U::sin:
      return of_float(std::sin(a));
    case U::cos:
      return of_float(std::cos(a));
    case U::tan:
      return of_float(std::tan(a));
    case U::asin:
      return of_float(std::asin(a));
    case U::acos:
      return of_float(std::acos(a));
    case U::atan:
      return of_float(std::atan(a));
    case U::sinh:
      return of_float(std::sinh(a));
    case U::cosh:
      return of_float(std::cosh(a));
    case U::tanh:
      return of_float(std::tanh(a));
    case U::asinh:
      return of_float(std::asinh(a));
    case U::acosh:
      return of_float(std::acosh(a));
    case U::atanh:
      return of_float(std::atanh(a));
    case U::erf:
      return of_float(std::erf(a));
    case U::erfc:
      return of_float(std::erfc(a));
    case U::erfinv:
      return of_float(erfinv(a));
    case U::lgamma:
      return of_float(std::lgamma(a));
    case U::sigmoid:
      return of_float(1 / (1 + std::exp(-a)));
    case U::floor:
      return of_float(std::floor(a));
    case U::ceil:
      return of_float(std::ceil(a));
    case U::round:
      return of_float(std::nearbyint(a));  // half to even (default rounding mode)
    case U::trunc:
      return of_float(std::trunc(a));
    case U::sign:
      return of_float(std::isnan(a) ? 0.0 : (a > 0) - (a < 0));
    case U::signbit:
      return of_bool(std::signbit(a));
    case U::logical_not:
      return of_bool(a == 0);
    case U::isnan:
      return of_bool(std::isnan(a));
    case U::isinf:
      return of_bool(std::isinf(a));
    case U::bitwise_not:
      break;
  }
  unsupported("unary", unary_op_name(op), type);
}

/// The comparisons and logical ops, alike on integers and floats; nullopt for the others.
template <class T>
std::optional<Scalar> comparison(BinaryOp op, T a, T b) {
  using B = BinaryOp;
  switch (op) {
    case B::eq:
      return of_bool(a == b);
    case B::ne:
      return of_bool(a != b);
    case B::lt:
      return of_bool(a < b);
    case B::le:
      return of_bool(a <= b);
    case B::gt:
      return of_bool(a > b);
    case B::ge:
      return of_bool(a >= b);
    case B::logical_and:
      return of_bool(a != 0 && b != 0);
    case B::logical_or:
      return of_bool(a != 0 || b != 0);
    case B::logical_xor:
      return of_bool((a != 0) != (b != 0));
    default:
      return std::nullopt;
  }
}

Scalar binary_int(BinaryOp op, DType type, int64_t a, int64_t b) {
  using B = BinaryOp;
  if (const std::optional<Scalar> r = comparison(op, a, b)) return *r;
  auto arith = [&](int64_t r) { return of_int(wrap_int(r, type)); };
  auto u = [](int64_t x) { return static_cast<uint64_t>(x); };
  switch (op) {
    case B::add:
      return arith(static_cast<int64_t>(u(a) + u(b)));
    case B::sub:
      return arith(static_cast<int64_t>(u(a) - u(b)));
    case B::mul:
      return arith(static_cast<int64_t>(u(a) * u(b)));
    case B::floordiv: {
      const int64_t q = a / checked_divisor(b, "floordiv");
      return arith((a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q);
    }
    case B::truncdiv:
      return arith(a / checked_divisor(b, "truncdiv"));
    case B::remainder: {
      int64_t r = a % checked_divisor(b, "remainder");
      if (r != 0 && (r < 0) != (b < 0)) r += b;
      return arith(r);
    }
    case B::fmod:
      return arith(a % checked_divisor(b, "fmod"));
    case B::pow:
      return arith(int_pow(a, b, type));
    case B::maximum:
    case B::fmax:
      return of_int(a > b ? a : b);
    case B::minimum:
    case B::fmin:
      return of_int(a < b ? a : b);
    case B::bitwise_and:
      return arith(a & b);
    case B::bitwise_or:
      return arith(a | b);
    case B::bitwise_xor:
      return arith(a ^ b);
    case B::lshift:
    case B::rshift:
      // Lowering guards shift counts, so kernels only ever see counts in [0, 64).
      if (b < 0 || b >= 64) throw std::domain_error("interpreter: shift count out of range");
      return arith(op == B::lshift ? static_cast<int64_t>(u(a) << b) : a >> b);
    default:
      unsupported("binary", binary_op_name(op), type);
  }
}

Scalar binary_float(BinaryOp op, DType type, double a, double b) {
  using B = BinaryOp;
  if (const std::optional<Scalar> r = comparison(op, a, b)) return *r;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  switch (op) {
    case B::add:
      return of_float(a + b);
    case B::sub:
      return of_float(a - b);
    case B::mul:
      return of_float(a * b);
    case B::div:
      return of_float(a / b);
    case B::floordiv:
      return of_float(floor_divide(a, b));
    case B::truncdiv:
      return of_float(std::trunc(a / b));
    case B::remainder: {
      double r = std::fmod(a, b);
      if (r != 0 && (b < 0) != (r < 0)) r += b;
      return of_float(r);
    }
    case B::fmod:
      return of_float(std::fmod(a, b));
    case B::pow:
      return of_float(std::pow(a, b));
    case B::maximum:
      return of_float(std::isnan(a) || std::isnan(b) ? nan : std::fmax(a, b));
    case B::minimum:
      return of_float(std::isnan(a) || std::isnan(b) ? nan : std::fmin(a, b));
    case B::fmax:
      return of_float(std::fmax(a, b));
    case B::fmin:
      return of_float(std::fmin(a, b));
    case B::atan2:
      return of_float(std::atan2(a, b));
    case B::copysign:
      return of_float(std::copysign(a, b));
    case B::hypot:
      return of_float(std::hypot(a, b));
    case B::nextafter:
      // Steps in the type's own precision (float16/bfloat16 never get here: lowering declines).
      if (type == DType::Float32)
        return of_float(std::nextafter(static_cast<float>(a), static_cast<float>(b)));
      return of_float(std::nextafter(a, b));
    default:
      unsupported("binary", binary_op_name(op), type);
  }
}

}  // namespace

int64_t wrap_int(int64_t v, DType type) {
  switch (type) {
    case DType::Bool:
      return v != 0;
    case DType::UInt8:
      return static_cast<uint8_t>(v);
    case DType::Int8:
      return static_cast<int8_t>(v);
    case DType::Int16:
      return static_cast<int16_t>(v);
    case DType::Int32:
      return static_cast<int32_t>(v);
    default:
      return v;
  }
}

Scalar convert(Scalar x, DType from, DType to) {
  if (is_floating(to)) return of_float(is_floating(from) ? x.f : static_cast<double>(x.i));
  if (!is_floating(from)) return of_int(wrap_int(x.i, to));
  if (to == DType::Bool) return of_bool(x.f != 0);
  // Float -> int: truncation toward zero; NaN/inf/out of range are undefined in C++ and
  // give INT64_MIN on x86, which is what we return.
  const double t = std::trunc(x.f);
  if (!(t >= -9.2e18 && t <= 9.2e18))
    return of_int(wrap_int(std::numeric_limits<int64_t>::min(), to));
  return of_int(wrap_int(static_cast<int64_t>(t), to));
}

Scalar apply_unary(UnaryOp op, DType type, Scalar x) {
  return is_floating(type) ? unary_float(op, type, x.f) : unary_int(op, type, x.i);
}

Scalar apply_binary(BinaryOp op, DType type, Scalar a, Scalar b) {
  return is_floating(type) ? binary_float(op, type, a.f, b.f) : binary_int(op, type, a.i, b.i);
}

void Accumulator::combine(Scalar v, int64_t position) {
  const bool floating = is_floating(type_);
  const bool first = empty_;
  empty_ = false;
  switch (op_) {
    case ReduceOp::sum:
      if (floating)
        value_.f = (first ? 0.0 : value_.f) + v.f;
      else  // wraps like the int64 arithmetic of generated code, without C++'s UB
        value_.i = static_cast<int64_t>(static_cast<uint64_t>(first ? 0 : value_.i) +
                                        static_cast<uint64_t>(v.i));
      return;
    case ReduceOp::prod:
      if (floating)
        value_.f = (first ? 1.0 : value_.f) * v.f;
      else
        value_.i = static_cast<int64_t>(static_cast<uint64_t>(first ? 1 : value_.i) *
                                        static_cast<uint64_t>(v.i));
      return;
    case ReduceOp::max:
    case ReduceOp::min: {
      const bool is_max = op_ == ReduceOp::max;
      if (first) {
        value_ = v;
      } else if (floating) {
        if (!std::isnan(value_.f) &&
            (std::isnan(v.f) || (is_max ? v.f > value_.f : v.f < value_.f)))
          value_ = v;
      } else if (is_max ? v.i > value_.i : v.i < value_.i) {
        value_ = v;
      }
      return;
    }
    case ReduceOp::argmax:
    case ReduceOp::argmin: {
      const bool is_max = op_ == ReduceOp::argmax;
      bool better;
      if (first) {
        better = true;
      } else if (floating) {
        const bool v_nan = std::isnan(v.f), best_nan = std::isnan(value_.f);
        if (v_nan || best_nan) {
          better = v_nan && (!best_nan || position < position_);
        } else {
          better = (is_max ? v.f > value_.f : v.f < value_.f) ||
                   (v.f == value_.f && position < position_);
        }
      } else {
        better =
            (is_max ? v.i > value_.i : v.i < value_.i) || (v.i == value_.i && position < position_);
      }
      if (better) {
        value_ = v;
        position_ = position;
      }
      return;
    }
    case ReduceOp::any: {
      const bool truth = floating ? v.f != 0 : v.i != 0;
      value_.i = (first ? false : value_.i != 0) || truth;
      return;
    }
    case ReduceOp::all: {
      const bool truth = floating ? v.f != 0 : v.i != 0;
      value_.i = (first ? true : value_.i != 0) && truth;
      return;
    }
    case ReduceOp::welford_m2: {
      const double x = floating ? v.f : static_cast<double>(v.i);
      if (first) value_.f = 0;
      count_ += 1;
      const double delta = x - mean_;
      mean_ += delta / count_;
      value_.f += delta * (x - mean_);
      return;
    }
  }
}

Scalar Accumulator::result() const {
  const bool floating = is_floating(type_);
  const double inf = std::numeric_limits<double>::infinity();
  switch (op_) {
    case ReduceOp::sum:
    case ReduceOp::prod: {
      const int64_t identity = op_ == ReduceOp::sum ? 0 : 1;
      if (floating) return empty_ ? of_float(static_cast<double>(identity)) : value_;
      return of_int(wrap_int(empty_ ? identity : value_.i, type_));
    }
    case ReduceOp::max:
      if (!empty_) return value_;
      return floating ? of_float(-inf) : of_int(std::numeric_limits<int64_t>::min());
    case ReduceOp::min:
      if (!empty_) return value_;
      return floating ? of_float(inf) : of_int(std::numeric_limits<int64_t>::max());
    case ReduceOp::argmax:
    case ReduceOp::argmin:
      return of_int(position_);
    case ReduceOp::any:
      return of_bool(!empty_ && value_.i != 0);
    case ReduceOp::all:
      return of_bool(empty_ || value_.i != 0);
    case ReduceOp::welford_m2:
      return floating ? of_float(empty_ ? 0.0 : value_.f) : of_int(0);
  }
  return value_;
}

}  // namespace inductor_cpp::ir::interp
