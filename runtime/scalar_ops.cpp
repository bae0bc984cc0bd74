/// \file
/// eval_scalar_op(): Python number semantics over bool / int64 / double.
#include "runtime/scalar_ops.h"

#include <cmath>
#include <stdexcept>
#include <unordered_map>

namespace inductor_cpp::runtime {

namespace {

bool is_double(const Number& n) {
  return std::holds_alternative<double>(n);
}

int64_t as_int(const Number& n) {
  if (const auto* b = std::get_if<bool>(&n)) return *b ? 1 : 0;
  if (const auto* i = std::get_if<int64_t>(&n)) return *i;
  return static_cast<int64_t>(std::get<double>(n));  // truncation, as int(x)
}

double as_double(const Number& n) {
  if (const auto* d = std::get_if<double>(&n)) return *d;
  return static_cast<double>(as_int(n));
}

bool truthy(const Number& n) {
  return is_double(n) ? as_double(n) != 0.0 : as_int(n) != 0;
}

int64_t floor_div(int64_t a, int64_t b) {
  if (b == 0) throw std::domain_error("integer division or modulo by zero");
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t floor_mod(int64_t a, int64_t b) {
  return a - floor_div(a, b) * b;
}

/// +, -, *, max, min: int if both are ints (bools count as ints), else float.
template <typename IntFn, typename DoubleFn>
Number arith(const Number& a, const Number& b, IntFn on_int, DoubleFn on_double) {
  if (is_double(a) || is_double(b)) return on_double(as_double(a), as_double(b));
  return on_int(as_int(a), as_int(b));
}

template <typename Cmp>
Number compare(const Number& a, const Number& b, Cmp cmp) {
  if (is_double(a) || is_double(b)) return cmp(as_double(a), as_double(b));
  return cmp(as_int(a), as_int(b));
}

void expect_arity(ScalarOp op, const std::vector<Number>& args, size_t n) {
  if (args.size() != n)
    throw std::invalid_argument("scalar op " + std::to_string(static_cast<int>(op)) + " takes " +
                                std::to_string(n) + " arguments, got " +
                                std::to_string(args.size()));
}

}  // namespace

std::optional<ScalarOp> scalar_op_from_name(const std::string& op) {
  static const std::unordered_map<std::string, ScalarOp> table = {
      {"sym::add", ScalarOp::Add},   {"sym::sub", ScalarOp::Sub},
      {"sym::mul", ScalarOp::Mul},   {"sym::floordiv", ScalarOp::FloorDiv},
      {"sym::mod", ScalarOp::Mod},   {"sym::truediv", ScalarOp::TrueDiv},
      {"sym::pow", ScalarOp::Pow},   {"sym::neg", ScalarOp::Neg},
      {"sym::eq", ScalarOp::Eq},     {"sym::ne", ScalarOp::Ne},
      {"sym::lt", ScalarOp::Lt},     {"sym::le", ScalarOp::Le},
      {"sym::gt", ScalarOp::Gt},     {"sym::ge", ScalarOp::Ge},
      {"sym::and", ScalarOp::And},   {"sym::or", ScalarOp::Or},
      {"sym::not", ScalarOp::Not},   {"sym::max", ScalarOp::Max},
      {"sym::min", ScalarOp::Min},   {"sym::float", ScalarOp::ToFloat},
      {"sym::int", ScalarOp::ToInt}, {"sym::ite", ScalarOp::IfThenElse},
      {"sym::sum", ScalarOp::Sum},
  };
  auto it = table.find(op);
  if (it == table.end()) return std::nullopt;
  return it->second;
}

Number eval_scalar_op(ScalarOp op, const std::vector<Number>& args) {
  switch (op) {
    case ScalarOp::Neg:
      expect_arity(op, args, 1);
      if (is_double(args[0])) return -as_double(args[0]);
      return -as_int(args[0]);
    case ScalarOp::Not:
      expect_arity(op, args, 1);
      return !truthy(args[0]);
    case ScalarOp::ToFloat:
      expect_arity(op, args, 1);
      return as_double(args[0]);
    case ScalarOp::ToInt:
      expect_arity(op, args, 1);
      return as_int(args[0]);
    case ScalarOp::IfThenElse:
      expect_arity(op, args, 3);
      return truthy(args[0]) ? args[1] : args[2];
    case ScalarOp::Sum: {
      Number total = int64_t{0};
      for (const Number& n : args)
        total = arith(total, n, std::plus<int64_t>(), std::plus<double>());
      return total;
    }
    default:
      break;
  }
  expect_arity(op, args, 2);
  const Number& a = args[0];
  const Number& b = args[1];
  switch (op) {
    case ScalarOp::Add:
      return arith(a, b, std::plus<int64_t>(), std::plus<double>());
    case ScalarOp::Sub:
      return arith(a, b, std::minus<int64_t>(), std::minus<double>());
    case ScalarOp::Mul:
      return arith(a, b, std::multiplies<int64_t>(), std::multiplies<double>());
    case ScalarOp::Max:
      return arith(
          a, b, [](int64_t x, int64_t y) { return std::max(x, y); },
          [](double x, double y) { return std::max(x, y); });
    case ScalarOp::Min:
      return arith(
          a, b, [](int64_t x, int64_t y) { return std::min(x, y); },
          [](double x, double y) { return std::min(x, y); });
    case ScalarOp::FloorDiv:
      if (is_double(a) || is_double(b)) {
        if (as_double(b) == 0.0) throw std::domain_error("float floor division by zero");
        return std::floor(as_double(a) / as_double(b));
      }
      return floor_div(as_int(a), as_int(b));
    case ScalarOp::Mod:
      if (is_double(a) || is_double(b)) {
        if (as_double(b) == 0.0) throw std::domain_error("float modulo by zero");
        const double r = std::fmod(as_double(a), as_double(b));
        return (r != 0.0 && ((r < 0) != (as_double(b) < 0))) ? r + as_double(b) : r;
      }
      return floor_mod(as_int(a), as_int(b));
    case ScalarOp::TrueDiv:
      if (as_double(b) == 0.0) throw std::domain_error("division by zero");
      return as_double(a) / as_double(b);
    case ScalarOp::Pow:
      if (!is_double(a) && !is_double(b) && as_int(b) >= 0) {
        int64_t result = 1, base = as_int(a);
        for (int64_t e = as_int(b); e > 0; e >>= 1, base *= base) {
          if (e & 1) result *= base;
        }
        return result;
      }
      return std::pow(as_double(a), as_double(b));
    case ScalarOp::Eq:
      return compare(a, b, [](auto x, auto y) { return x == y; });
    case ScalarOp::Ne:
      return compare(a, b, [](auto x, auto y) { return x != y; });
    case ScalarOp::Lt:
      return compare(a, b, [](auto x, auto y) { return x < y; });
    case ScalarOp::Le:
      return compare(a, b, [](auto x, auto y) { return x <= y; });
    case ScalarOp::Gt:
      return compare(a, b, [](auto x, auto y) { return x > y; });
    case ScalarOp::Ge:
      return compare(a, b, [](auto x, auto y) { return x >= y; });
    case ScalarOp::And:
      if (std::holds_alternative<bool>(a) && std::holds_alternative<bool>(b))
        return std::get<bool>(a) && std::get<bool>(b);
      return as_int(a) & as_int(b);
    case ScalarOp::Or:
      if (std::holds_alternative<bool>(a) && std::holds_alternative<bool>(b))
        return std::get<bool>(a) || std::get<bool>(b);
      return as_int(a) | as_int(b);
    default:
      throw std::logic_error("eval_scalar_op: unhandled op");
  }
}

}  // namespace inductor_cpp::runtime
