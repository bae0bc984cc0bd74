/// \file
/// The CPU emitter's values: Value DAG nodes, loads and index expressions as C++ text.
///
/// Each node becomes one typed temporary (`float tmp3 = ic::exp(tmp2);`), emitted once per
/// scope and reused while nothing it reads changes (emit_cpp.cpp invalidates entries on
/// stores, accumulates and around loops that write what they read). Ops are ic:: functions
/// named like the IR ops, overloaded for scalars and ic::Vec, so one spelling serves both.
/// float16/bfloat16 operands of math ops are widened to float and the result narrowed back.
///
/// Loads inside a vector loop, by the index's coefficient in the vector variable:
/// 1 -> contiguous loadu (loadu_n in the tail), 0 -> scalar load, other constants -> strided
/// gather, anything else (non-affine, or through a vector indirect value) -> indexed gather.
/// A mask or an indirect bound check that varies per lane makes the load lane-masked.
#include <cstdint>
#include <functional>
#include <stdexcept>

#include "codegen/cpu/emit_cpp_internal.h"

namespace inductor_cpp::codegen::cpu_detail {

using ir::Expr;
using ir::ExprKind;

namespace {

/// Whether e is >= 0 wherever it is evaluated: loop variables, symbols (sizes) and checked
/// indirect indices are, so // and % of them by positive constants need no floor fix-up.
bool provably_nonnegative(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::Const:
      return e.value() >= 0;
    case ExprKind::Var:
    case ExprKind::Lt:
    case ExprKind::Le:
    case ExprKind::Eq:
    case ExprKind::Ne:
      return true;
    case ExprKind::Mod:
      return e.rhs().is_const() && e.rhs().value() > 0;
    default:
      return provably_nonnegative(e.lhs()) && provably_nonnegative(e.rhs());
  }
}

bool is_minus_one(const Expr& e) {
  return e.is_const() && e.value() == -1;
}

const char* comparison_name(ExprKind k) {
  switch (k) {
    case ExprKind::Lt:
      return "lt";
    case ExprKind::Le:
      return "le";
    case ExprKind::Eq:
      return "eq";
    default:
      return "ne";
  }
}

}  // namespace

bool KernelEmitter::expr_is_vector(const Expr& e) const {
  if (vec_.width == 0) return false;
  if (ir::depends_on(e, vec_.var)) return true;
  for (const auto& [name, emitted] : placeholders) {
    if (emitted.vector && ir::depends_on(e, name)) return true;
  }
  return false;
}

Emitted KernelEmitter::expr(const Expr& e) {
  if (!expr_is_vector(e)) return {scalar_expr(e), false};
  return {vector_expr(e), true};
}

std::string KernelEmitter::scalar_expr(const Expr& e) {
  auto bin = [&](const char* op) {
    return "(" + scalar_expr(e.lhs()) + op + scalar_expr(e.rhs()) + ")";
  };
  auto call = [&](const std::string& f) {
    return f + "(" + scalar_expr(e.lhs()) + ", " + scalar_expr(e.rhs()) + ")";
  };
  switch (e.kind()) {
    case ExprKind::Const:
      return int64_literal(e.value());
    case ExprKind::Var: {
      auto found = placeholders.find(e.name());
      if (found == placeholders.end()) return var_name(e.name());
      if (found->second.vector) {
        throw std::logic_error("vector indirect index " + e.name() + " in a scalar expression");
      }
      return found->second.text;
    }
    case ExprKind::Add: {  // a + (-1)*b and a + (-c) print as subtractions
      const Expr l = e.lhs(), r = e.rhs();
      if (r.kind() == ExprKind::Mul && is_minus_one(r.lhs())) {
        return "(" + scalar_expr(l) + " - " + scalar_expr(r.rhs()) + ")";
      }
      if (l.kind() == ExprKind::Mul && is_minus_one(l.lhs())) {
        return "(" + scalar_expr(r) + " - " + scalar_expr(l.rhs()) + ")";
      }
      if (r.is_const() && r.value() < 0 && r.value() != INT64_MIN) {
        return "(" + scalar_expr(l) + " - " + int64_literal(-r.value()) + ")";
      }
      return bin(" + ");
    }
    case ExprKind::Mul:
      if (is_minus_one(e.lhs())) return "(-" + scalar_expr(e.rhs()) + ")";
      if (is_minus_one(e.rhs())) return "(-" + scalar_expr(e.lhs()) + ")";
      return bin(" * ");
    case ExprKind::FloorDiv:
      if (e.rhs().is_const() && e.rhs().value() > 0 && provably_nonnegative(e.lhs())) {
        return bin(" / ");
      }
      return call("ic::floordiv<int64_t>");
    case ExprKind::Mod:
      if (e.rhs().is_const() && e.rhs().value() > 0 && provably_nonnegative(e.lhs())) {
        return bin(" % ");
      }
      return call("ic::mod");
    case ExprKind::Min:
      return call("std::min<int64_t>");
    case ExprKind::Max:
      return call("std::max<int64_t>");
    case ExprKind::Lt:
    case ExprKind::Le:
    case ExprKind::Eq:
    case ExprKind::Ne:
      return "int64_t" + bin(ir::comparison_operator(e.kind()));
  }
  throw std::logic_error("unknown expression kind");
}

/// D when `index` is S + var // D with S independent of `var` and D dividing `width` (a
/// vector loop's lanes start at a multiple of its width, so lane l reads element l / D past
/// lane 0's); 0 otherwise.
static int64_t repeat_factor(const Expr& index, const std::string& var, int width) {
  std::vector<Expr> terms;
  std::function<void(const Expr&)> split = [&](const Expr& e) {
    if (e.kind() == ExprKind::Add) {
      split(e.lhs());
      split(e.rhs());
    } else {
      terms.push_back(e);
    }
  };
  split(index);
  int64_t factor = 0;
  for (const Expr& t : terms) {
    if (!ir::depends_on(t, var)) continue;
    const bool plain_div = t.kind() == ExprKind::FloorDiv && t.lhs().is_var() &&
                           t.lhs().name() == var && t.rhs().is_const() && t.rhs().value() > 1;
    if (!plain_div || factor != 0) return 0;
    factor = t.rhs().value();
  }
  return factor > 1 && width % factor == 0 ? factor : 0;
}

std::string KernelEmitter::vector_expr(const Expr& e) {
  const std::string w = std::to_string(vec_.width);
  if (!expr_is_vector(e)) return "ic::broadcast<" + w + ", int64_t>(" + scalar_expr(e) + ")";
  bool through_vector_placeholder = false;
  for (const auto& [name, emitted] : placeholders) {
    if (emitted.vector && ir::depends_on(e, name)) through_vector_placeholder = true;
  }
  if (!through_vector_placeholder) {  // affine in the vector var: lane l = e(lane 0) + c*l
    const std::optional<int64_t> c = ir::coefficient_of(e, vec_.var);
    if (c) return "ic::iota<" + w + ">(" + scalar_expr(e) + ", " + int64_literal(*c) + ")";
  }
  auto call = [&](const std::string& f) {
    return f + "(" + vector_expr(e.lhs()) + ", " + vector_expr(e.rhs()) + ")";
  };
  switch (e.kind()) {
    case ExprKind::Var: {
      auto found = placeholders.find(e.name());
      if (found != placeholders.end()) return found->second.text;
      return "ic::iota<" + w + ">(" + vec_.cvar + ")";
    }
    case ExprKind::Add:
      return call("ic::add");
    case ExprKind::Mul:
      return call("ic::mul");
    case ExprKind::FloorDiv:
      return call("ic::floordiv");
    case ExprKind::Mod:
      return call("ic::remainder");
    case ExprKind::Min:
      return call("ic::minimum");
    case ExprKind::Max:
      return call("ic::maximum");
    case ExprKind::Lt:
    case ExprKind::Le:
    case ExprKind::Eq:
    case ExprKind::Ne:
      return "ic::cast<int64_t>(" + call(std::string("ic::") + comparison_name(e.kind())) + ")";
    case ExprKind::Const:
      break;
  }
  throw std::logic_error("constant expression classified as vector");
}

std::string KernelEmitter::as_vector(const Emitted& e, ir::DType dtype) {
  if (e.vector) return e.text;
  return "ic::broadcast<" + std::to_string(vec_.width) + ", " + cpp_type(dtype) + ">(" + e.text +
         ")";
}

Emitted KernelEmitter::value(const ir::Value& v) {
  if (!v) throw std::invalid_argument("kernel " + kernel_.name + ": null value");
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
    auto found = it->values.find(v.node());
    if (found != it->values.end()) return found->second;
  }
  if (std::optional<Emitted> kept = load_kept(v.node())) {
    scopes_.back().values[v.node()] = *kept;
    return *kept;
  }
  Emitted e;
  switch (v->kind) {
    case ir::ValueKind::Constant:
      e = {constant_literal(*v), false};
      break;
    case ir::ValueKind::Local:
      e = read_local(*v);
      break;
    case ir::ValueKind::Load:
      e = load(*v);
      break;
    case ir::ValueKind::IndexValue: {
      const Emitted x = expr(v->index.at(0));
      e = declare(v->dtype, x.vector,
                  v->dtype == ir::DType::Int64
                      ? x.text
                      : "ic::cast<" + cpp_type(v->dtype) + ">(" + x.text + ")");
      break;
    }
    default:
      e = compute(*v);
  }
  store_kept(v.node(), e);
  scopes_.back().values[v.node()] = e;
  return e;
}

Emitted KernelEmitter::read_local(const ir::ValueNode& n) {
  const LocalInfo* info = find_local(n.name);
  if (!info) {
    throw std::invalid_argument("kernel " + kernel_.name + ": local(" + n.name +
                                ") read outside its scope");
  }
  if (!info->accumulator) return {info->cname, info->lanes > 0};
  const std::string& a = info->cname;
  const bool indexed = info->op == ir::ReduceOp::argmax || info->op == ir::ReduceOp::argmin;
  const bool welford = info->op == ir::ReduceOp::welford_m2;
  if (!info->horizontal) {
    return {indexed ? a + "_idx" : (welford ? a + "_m2" : a), info->lanes > 0};
  }
  const std::string f = reduce_horizontal_function(info->op);
  const std::string args =
      indexed ? a + ", " + a + "_idx" : (welford ? a + "_mean, " + a + "_m2, " + a + "_n" : a);
  return declare(n.dtype, false, f + "(" + args + ")");
}

std::optional<Emitted> KernelEmitter::affine_compare(const ir::ValueNode& n) {
  const int k = vec_.width > 0 ? affine_index_operand(n, vec_.var) : -1;
  if (k < 0) return std::nullopt;
  const Emitted other = value(n.operands[1 - k]);
  if (other.vector) return std::nullopt;
  // Lane l of index - other is d0 + c*l; flip its sign for >, >= (and for the mirrored forms).
  const Expr& index = n.operands[k]->index[0];
  const int64_t c = *ir::coefficient_of(index, vec_.var);
  const std::string d0 = "(" + scalar_expr(index) + " - " + other.text + ")";
  std::string f;
  bool flip = false;
  switch (n.binary_op()) {
    case ir::BinaryOp::eq:
      f = "eq";
      break;
    case ir::BinaryOp::ne:
      f = "ne";
      break;
    case ir::BinaryOp::lt:
      f = "lt", flip = k == 1;
      break;
    case ir::BinaryOp::le:
      f = "le", flip = k == 1;
      break;
    case ir::BinaryOp::gt:
      f = "lt", flip = k == 0;
      break;
    default:  // ge
      f = "le", flip = k == 0;
  }
  const std::string w = std::to_string(vec_.width);
  return declare(ir::DType::Bool, true,
                 "ic::affine_" + f + "<" + w + ">(" + (flip ? "-" : "") + d0 + ", " +
                     int64_literal(flip ? -c : c) + ")");
}

Emitted KernelEmitter::compute(const ir::ValueNode& n) {
  if (std::optional<Emitted> affine = affine_compare(n)) return *affine;
  std::vector<Emitted> ops;
  bool vector = false;
  for (const ir::Value& op : n.operands) {
    ops.push_back(value(op));
    vector = vector || ops.back().vector;
  }
  auto operand = [&](size_t i, bool widen) {
    std::string text = vector ? as_vector(ops[i], n.operands[i]->dtype) : ops[i].text;
    return widen ? "ic::cast<float>(" + text + ")" : text;
  };
  switch (n.kind) {
    case ir::ValueKind::Cast:
      if (n.dtype == n.operands[0]->dtype) return ops[0];
      return declare(n.dtype, vector, "ic::cast<" + cpp_type(n.dtype) + ">(" + ops[0].text + ")");
    case ir::ValueKind::Where:
      return declare(
          n.dtype, vector,
          "ic::where(" + ops[0].text + ", " + operand(1, false) + ", " + operand(2, false) + ")");
    case ir::ValueKind::Unary:
    case ir::ValueKind::Binary: {
      const ir::DType operand_type = n.operands[0]->dtype;
      const bool widen = ir::is_reduced_float(operand_type);
      const bool unary = n.kind == ir::ValueKind::Unary;
      if (!unary && n.binary_op() == ir::BinaryOp::div && vector && !ops[1].vector &&
          (operand_type == ir::DType::Float32 || widen)) {
        // The same divisor in every lane (softmax's row sum): a reciprocal and a correction
        // step instead of a vector division (ic_runtime_math.h div_by_invariant).
        std::string call = "ic::div_by_invariant(" + operand(0, widen) + ", " +
                           (widen ? "static_cast<float>(" + ops[1].text + ")" : ops[1].text) + ")";
        if (widen && n.dtype == operand_type)
          call = "ic::cast<" + cpp_type(n.dtype) + ">(" + call + ")";
        return declare(n.dtype, vector, call);
      }
      std::string call =
          std::string("ic::") +
          (unary ? ir::unary_op_name(n.unary_op()) : ir::binary_op_name(n.binary_op())) + "(" +
          operand(0, widen) + (unary ? "" : ", " + operand(1, widen)) + ")";
      if (widen && n.dtype == operand_type)
        call = "ic::cast<" + cpp_type(n.dtype) + ">(" + call + ")";
      return declare(n.dtype, vector, call);
    }
    default:
      throw std::logic_error(std::string("compute() on ") + ir::value_kind_name(n.kind));
  }
}

Emitted KernelEmitter::condition(const Expr& e) {
  const bool vector = expr_is_vector(e);
  if (!vector) {
    if (is_comparison(e)) {
      return {"(" + scalar_expr(e.lhs()) + ir::comparison_operator(e.kind()) +
                  scalar_expr(e.rhs()) + ")",
              false};
    }
    return {"(" + scalar_expr(e) + " != 0)", false};
  }
  const std::string w = std::to_string(vec_.width);
  bool through_vector_placeholder = false;
  for (const auto& [name, emitted] : placeholders) {
    if (emitted.vector && ir::depends_on(e, name)) through_vector_placeholder = true;
  }
  if (!through_vector_placeholder && is_affine_condition(e, vec_.var)) {
    if (is_comparison(e)) {  // lane l: d(lane 0) + c*l compared with 0, in int32 lanes
      const Expr difference = e.lhs() - e.rhs();
      const int64_t c = *ir::coefficient_of(difference, vec_.var);
      return {std::string("ic::affine_") + comparison_name(e.kind()) + "<" + w + ">(" +
                  scalar_expr(difference) + ", " + int64_literal(c) + ")",
              true};
    }
    Emitted a = condition(e.lhs()), b = condition(e.rhs());  // a conjunction
    if (!a.vector) a.text = "ic::broadcast<" + w + ">(" + a.text + ")";
    if (!b.vector) b.text = "ic::broadcast<" + w + ">(" + b.text + ")";
    return {"(" + a.text + " & " + b.text + ")", true};
  }
  if (is_comparison(e)) {
    return {std::string("ic::") + comparison_name(e.kind()) + "(" + vector_expr(e.lhs()) + ", " +
                vector_expr(e.rhs()) + ")",
            true};
  }
  return {"ic::nonzero(" + vector_expr(e) + ")", true};
}

std::string KernelEmitter::load_guard(const ir::ValueNode& n, bool* vector) {
  const std::string w = std::to_string(vec_.width);
  std::vector<Emitted> terms;
  Emitted mask;
  if (!n.mask.is_const()) {
    mask = condition(n.mask);
    terms.push_back(mask);
  }
  for (size_t i = 0; i < n.operands.size() && i < n.bounds.size(); ++i) {
    const Emitted ind = placeholders.at("%ind" + std::to_string(i));
    const Emitted bound = expr(n.bounds[i]);
    if (bound.vector) throw std::invalid_argument("indirect bound varies with the vector lane");
    // Only lanes that will read check their index: the load's mask, and in a tail the
    // active lanes (inactive ones hold whatever the partial loads produced).
    std::string active = mask.text.empty() ? "true" : mask.text;
    bool active_vector = mask.vector;
    if (ind.vector && vec_.tail) {
      active = mask.text.empty() ? tail_mask()
                                 : (mask.vector ? "(" + mask.text + " & " + tail_mask() + ")"
                                                : "(ic::broadcast<" + w + ">(bool" + mask.text +
                                                      ") & " + tail_mask() + ")");
      active_vector = true;
    }
    const bool ok_vector = ind.vector || active_vector;
    const std::string ok = fresh("ok");
    line((ok_vector ? vector_type(ir::DType::Bool) : std::string("bool")) + " " + ok +
         " = ic::check_index(ic_err, " + active + ", " + ind.text + ", " + bound.text + ");");
    terms.push_back({ok, ok_vector});
  }
  *vector = false;
  for (const Emitted& t : terms) *vector = *vector || t.vector;
  std::string guard;
  for (const Emitted& t : terms) {
    if (!guard.empty()) guard += *vector ? " & " : " && ";
    guard += *vector && !t.vector ? "ic::broadcast<" + w + ">(bool(" + t.text + "))" : t.text;
  }
  return guard;
}

Emitted KernelEmitter::load(const ir::ValueNode& n) {
  int k = 0;
  const ir::KernelParam& p = param(n.name, &k);
  if (n.index.size() != 1) {
    throw std::invalid_argument("kernel " + kernel_.name + ": load of " + n.name +
                                " must have one element offset in a scheduled kernel");
  }
  if (p.dtype != n.dtype) {
    throw std::invalid_argument("kernel " + kernel_.name + ": load of " + n.name + " as " +
                                ir::dtype_name(n.dtype) + " but the buffer is " +
                                ir::dtype_name(p.dtype));
  }
  const std::string ptr = "buf" + std::to_string(k);
  const std::string type = cpp_type(n.dtype);
  const std::string zero = type + "(0)";
  if (n.mask.is_const() && n.mask.value() == 0) return {zero, false};
  if (std::optional<Emitted> tile = load_tile_read(n)) return *tile;
  std::map<std::string, Emitted> own;
  for (size_t i = 0; i < n.operands.size(); ++i) {
    Emitted ind = value(n.operands[i]);
    if (n.operands[i]->dtype != ir::DType::Int64) {
      ind = declare(ir::DType::Int64, ind.vector, "ic::cast<int64_t>(" + ind.text + ")");
    }
    own["%ind" + std::to_string(i)] = ind;
  }
  const std::map<std::string, Emitted> outer = std::move(placeholders);
  placeholders = std::move(own);
  const Expr& index = n.index[0];
  bool guard_vector = false;
  const std::string guard = load_guard(n, &guard_vector);
  const bool index_vector = expr_is_vector(index);
  Emitted result;
  if (!index_vector && !guard_vector) {
    const std::string access = ptr + "[" + scalar_expr(index) + "]";
    result = declare(
        n.dtype, false,
        guard.empty() ? access : "(" + guard + ") ? " + type + "(" + access + ") : " + zero);
  } else {
    const std::string w = std::to_string(vec_.width);
    bool through_vector_placeholder = false;
    for (const auto& [name, emitted] : placeholders) {
      if (emitted.vector && ir::depends_on(index, name)) through_vector_placeholder = true;
    }
    const std::optional<int64_t> coefficient =
        through_vector_placeholder ? std::nullopt : ir::coefficient_of(index, vec_.var);
    const std::string base = coefficient ? ptr + " + " + scalar_expr(index) : "";
    const std::string stride = coefficient ? int64_literal(*coefficient) : "";
    const std::string indices = coefficient ? "" : vector_expr(index);
    std::string text;
    if (!guard_vector) {
      const std::string count = vec_.tail ? ", " + vec_.count : "";
      if (coefficient && *coefficient == 1) {
        text = vec_.tail ? "ic::loadu_n<" + w + ">(" + base + count + ")"
                         : "ic::loadu<" + w + ">(" + base + ")";
      } else if (coefficient) {
        text = "ic::gather_strided<" + w + ">(" + base + ", " + stride + count + ")";
      } else if (const int64_t d =
                     through_vector_placeholder ? 0 : repeat_factor(index, vec_.var, vec_.width)) {
        text = "ic::load_repeat<" + w + ", " + std::to_string(d) + ">(" + ptr + " + " +
               scalar_expr(index) + count + ")";
      } else {
        text = "ic::gather<" + w + ">(" + ptr + ", " + indices + count + ")";
      }
      if (!guard.empty()) {
        text = "(" + guard + ") ? " + text + " : ic::broadcast<" + w + ">(" + zero + ")";
      }
    } else {
      const std::string lanes = vec_.tail ? "(" + guard + " & " + tail_mask() + ")" : guard;
      if (coefficient && *coefficient == 1) {
        text = "ic::loadu_masked<" + w + ">(" + base + ", " + lanes + ")";
      } else if (coefficient) {
        text = "ic::gather_strided_masked<" + w + ">(" + base + ", " + stride + ", " + lanes + ")";
      } else {
        text = "ic::gather_masked<" + w + ">(" + ptr + ", " + indices + ", " + lanes + ")";
      }
    }
    result = declare(n.dtype, true, text);
  }
  placeholders = outer;
  return result;
}

}  // namespace inductor_cpp::codegen::cpu_detail
