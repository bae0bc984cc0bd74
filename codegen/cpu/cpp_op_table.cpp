/// \file
/// The CPU emitter's spellings: C++ types, literals, identifiers and reduction ops.
///
/// Unary/binary ops need no table: ic_runtime.h names each function like the IR op
/// (ir::unary_op_name / ir::binary_op_name), for scalars and vectors alike.
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <set>
#include <stdexcept>

#include "codegen/cpu/emit_cpp_internal.h"

namespace inductor_cpp::codegen::cpu_detail {

using ir::ReduceOp;

std::string cpp_type(ir::DType dtype) {
  return ir::dtype_cpp_type(dtype);
}

std::string int64_literal(int64_t v) {
  if (v == INT64_MIN) return "(-9223372036854775807L - 1)";
  std::string text = std::to_string(v);
  if (v > INT32_MAX || v < INT32_MIN) text += "L";
  return v < 0 ? "(" + text + ")" : text;
}

namespace {

/// An exact hexadecimal literal (float: rounded to float first, with the f suffix).
std::string float_literal(double v, bool single) {
  const char* type = single ? "float" : "double";
  if (std::isnan(v)) return std::string("std::numeric_limits<") + type + ">::quiet_NaN()";
  if (std::isinf(v)) {
    return std::string(v < 0 ? "(-" : "(") + "std::numeric_limits<" + type + ">::infinity())";
  }
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%a%s", single ? static_cast<double>(static_cast<float>(v)) : v,
                single ? "f" : "");
  return std::signbit(v) ? "(" + std::string(buf) + ")" : std::string(buf);
}

}  // namespace

std::string constant_literal(const ir::ValueNode& c) {
  switch (c.dtype) {
    case ir::DType::Bool:
      return c.int_value ? "true" : "false";
    case ir::DType::Float32:
      return float_literal(c.float_value, true);
    case ir::DType::Float64:
      return float_literal(c.float_value, false);
    case ir::DType::Float16:
    case ir::DType::BFloat16:
      return cpp_type(c.dtype) + "(" + float_literal(c.float_value, true) + ")";
    default:
      return cpp_type(c.dtype) + "(" + int64_literal(c.int_value) + ")";
  }
}

std::string reduce_identity(ReduceOp op, ir::DType dtype) {
  const std::string t = cpp_type(dtype);
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::welford_m2:
      return t + "(0)";
    case ReduceOp::prod:
      return t + "(1)";
    case ReduceOp::max:
    case ReduceOp::argmax:
      return "ic::lowest<" + t + ">()";
    case ReduceOp::min:
    case ReduceOp::argmin:
      return "ic::highest<" + t + ">()";
    case ReduceOp::any:
      return "false";
    case ReduceOp::all:
      return "true";
  }
  throw std::logic_error("unknown reduce op");
}

std::string reduce_combine_function(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return "ic::add";
    case ReduceOp::prod:
      return "ic::mul";
    case ReduceOp::max:
      return "ic::maximum";
    case ReduceOp::min:
      return "ic::minimum";
    case ReduceOp::any:
      return "ic::logical_or";
    case ReduceOp::all:
      return "ic::logical_and";
    default:
      return "";
  }
}

std::string reduce_horizontal_function(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return "ic::reduce_sum";
    case ReduceOp::prod:
      return "ic::reduce_prod";
    case ReduceOp::max:
      return "ic::reduce_max";
    case ReduceOp::min:
      return "ic::reduce_min";
    case ReduceOp::any:
      return "ic::reduce_any";
    case ReduceOp::all:
      return "ic::reduce_all";
    case ReduceOp::argmax:
      return "ic::reduce_argmax";
    case ReduceOp::argmin:
      return "ic::reduce_argmin";
    case ReduceOp::welford_m2:
      return "ic::reduce_welford_m2";
  }
  throw std::logic_error("unknown reduce op");
}

std::string c_identifier(const std::string& ir_name) {
  static const std::set<std::string> kReserved = {
      "auto",    "bool",        "break",   "case",     "char",   "const",  "continue", "default",
      "do",      "double",      "else",    "enum",     "extern", "float",  "for",      "goto",
      "if",      "int",         "long",    "new",      "delete", "return", "short",    "signed",
      "sizeof",  "static",      "struct",  "switch",   "this",   "true",   "false",    "typedef",
      "union",   "unsigned",    "void",    "volatile", "while",  "std",    "ic",       "bufs",
      "symbols", "num_threads", "int64_t", "int32_t"};
  std::string s;
  for (char c : ir_name) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  const bool ours = s.rfind("tmp", 0) == 0 || s.rfind("buf", 0) == 0 || s.rfind("ic_", 0) == 0 ||
                    s.rfind("ok", 0) == 0;
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0])) || ours || kReserved.count(s)) {
    return "v_" + s;
  }
  return s;
}

}  // namespace inductor_cpp::codegen::cpu_detail
