/// \file
/// direct_indices (see the header): indirect loads through index values that are functions of
/// the loop indices become loads through index expressions.
#include "ir/passes/direct_indices.h"

#include <optional>
#include <string>

#include "ir/simplify.h"

namespace inductor_cpp::ir {

namespace {

/// Whether the ranges prove lo <= e <= hi.
bool within(const Expr& e, int64_t lo, const Expr& hi, const RangeMap& ranges) {
  return bounds(e, ranges).lo >= lo && bounds(simplify(hi - e, ranges), ranges).lo >= 0;
}

/// `v` as an index expression, when it is one (see the header's list).
std::optional<Expr> as_index(const Value& v, const RangeMap& ranges) {
  const ValueNode& n = *v;
  switch (n.kind) {
    case ValueKind::IndexValue:
      return n.index.at(0);
    case ValueKind::Constant:
      if (!is_integral(n.dtype)) return std::nullopt;
      return Expr(n.int_value);
    case ValueKind::Cast: {
      if (!is_integral(n.dtype) || !is_integral(n.operands[0]->dtype)) return std::nullopt;
      auto x = as_index(n.operands[0], ranges);
      if (!x || dtype_size(n.dtype) >= 8) return x;
      const int64_t limit = dtype_size(n.dtype) == 4 ? INT32_MAX : 0;
      if (limit == 0 || !within(*x, 0, Expr(limit), ranges)) return std::nullopt;
      return x;
    }
    case ValueKind::Where: {
      const Value& cond = n.operands[0];
      if (cond->kind != ValueKind::Binary) return std::nullopt;
      auto a = as_index(cond->operands[0], ranges), b = as_index(cond->operands[1], ranges);
      if (!a || !b) return std::nullopt;
      Expr c;
      switch (cond->binary_op()) {
        case BinaryOp::lt: c = lt(*a, *b); break;
        case BinaryOp::le: c = le(*a, *b); break;
        case BinaryOp::gt: c = lt(*b, *a); break;
        case BinaryOp::ge: c = le(*b, *a); break;
        case BinaryOp::eq: c = eq(*a, *b); break;
        case BinaryOp::ne: c = ne(*a, *b); break;
        default: return std::nullopt;
      }
      c = simplify(c, ranges);
      if (!c.is_const()) return std::nullopt;
      return as_index(n.operands[c.value() != 0 ? 1 : 2], ranges);
    }
    case ValueKind::Binary: {
      if (!is_integral(n.dtype)) return std::nullopt;
      auto a = as_index(n.operands[0], ranges), b = as_index(n.operands[1], ranges);
      if (!a || !b) return std::nullopt;
      const bool positive_divisor = b->is_const() && b->value() > 0;
      const bool nonnegative = bounds(*a, ranges).lo >= 0;
      switch (n.binary_op()) {
        case BinaryOp::add: return simplify(*a + *b, ranges);
        case BinaryOp::sub: return simplify(*a - *b, ranges);
        case BinaryOp::mul: return simplify(*a * *b, ranges);
        case BinaryOp::remainder:
          if (positive_divisor) return simplify(mod(*a, *b), ranges);
          return std::nullopt;
        case BinaryOp::fmod:
          if (positive_divisor && nonnegative) return simplify(mod(*a, *b), ranges);
          return std::nullopt;
        case BinaryOp::floordiv:
          if (positive_divisor) return simplify(floordiv(*a, *b), ranges);
          return std::nullopt;
        case BinaryOp::truncdiv:
          if (positive_divisor && nonnegative) return simplify(floordiv(*a, *b), ranges);
          return std::nullopt;
        default:
          return std::nullopt;
      }
    }
    default:
      return std::nullopt;
  }
}

/// The load through index expressions, or null when some index value does not convert or is
/// not provably in bounds.
Value direct_load(const Value& load, const RangeMap& ranges) {
  const ValueNode& n = *load;
  if (n.operands.empty() || n.bounds.size() != n.operands.size()) return {};
  std::map<std::string, Expr> placeholders;
  for (size_t i = 0; i < n.operands.size(); ++i) {
    auto e = as_index(n.operands[i], ranges);
    if (!e || !within(*e, 0, simplify(n.bounds[i] - Expr(1), ranges), ranges)) return {};
    placeholders["%ind" + std::to_string(i)] = *e;
  }
  std::vector<Expr> index;
  for (const Expr& e : n.index) index.push_back(simplify(substitute(e, placeholders), ranges));
  return ir::load(n.name, n.dtype, std::move(index), simplify(substitute(n.mask, placeholders), ranges));
}

}  // namespace

LoopProgram direct_indices(const LoopProgram& program) {
  LoopProgram out = program;
  for (auto& [name, c] : out.computes) {
    if (!c.body) continue;
    const RangeMap ranges = ranges_of(c, program);
    c.body = replace_loads(c.body, [&](const Value& load) { return direct_load(load, ranges); });
  }
  return out;
}

}  // namespace inductor_cpp::ir
