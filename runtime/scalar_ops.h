/// \file
/// Arithmetic on Python numbers, as graphs with dynamic shapes use it on sizes: `s0 * 2`,
/// `s1 // 2`, `sym_max(s0, 1)`. Dynamo writes these as Python operator calls, not dispatcher
/// ops; the plan names them "sym::<fn>" and the runtime evaluates them here, with Python's
/// semantics (floor division and modulo round toward negative infinity; `/` gives a float;
/// bool is an int in arithmetic). Pure C++, so it is unit-tested without torch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace inductor_cpp::runtime {

using Number = std::variant<bool, int64_t, double>;

enum class ScalarOp {
  Add,
  Sub,
  Mul,
  FloorDiv,
  Mod,
  TrueDiv,
  Pow,
  Neg,
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
  And,
  Or,
  Not,
  Max,
  Min,
  ToFloat,
  ToInt,
  IfThenElse,
  Sum,
};

/// "sym::mul" -> ScalarOp::Mul; nullopt for names we do not know.
std::optional<ScalarOp> scalar_op_from_name(const std::string& op);

/// Evaluates one op. Throws std::invalid_argument on a wrong argument count and
/// std::domain_error on division or modulo by zero (as Python raises ZeroDivisionError).
Number eval_scalar_op(ScalarOp op, const std::vector<Number>& args);

}  // namespace inductor_cpp::runtime
