/// \file
/// Value DAG: op-name tables, the interning table, the type-checking builders and the DAG
/// walks (map_indices, replace_loads, loads_in, ...). The text form (to_string) lives in
/// ir_text.cpp with the rest of the IR printer.
///
/// Interning follows index_expr.cpp: one process-wide table of weak references keyed by a
/// structural hash over every field (operands and expressions by their interned identity),
/// guarded by a mutex and swept when it has doubled since the last sweep.
#include "ir/value.h"
#include "ir/intern_table.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

namespace inductor_cpp::ir {

// ---------------------------------------------------------------------------------------------
// Name tables.

const char* value_kind_name(ValueKind k) {
  switch (k) {
#define INDUCTOR_CPP_NAME_CASE(k) \
  case ValueKind::k:              \
    return #k;
    INDUCTOR_CPP_VALUE_KINDS(INDUCTOR_CPP_NAME_CASE)
#undef INDUCTOR_CPP_NAME_CASE
  }
  return "?";
}

const char* unary_op_name(UnaryOp op) {
  switch (op) {
#define INDUCTOR_CPP_NAME_CASE(k) \
  case UnaryOp::k:                \
    return #k;
    INDUCTOR_CPP_UNARY_OPS(INDUCTOR_CPP_NAME_CASE)
#undef INDUCTOR_CPP_NAME_CASE
  }
  return "?";
}

const char* binary_op_name(BinaryOp op) {
  switch (op) {
#define INDUCTOR_CPP_NAME_CASE(k) \
  case BinaryOp::k:               \
    return #k;
    INDUCTOR_CPP_BINARY_OPS(INDUCTOR_CPP_NAME_CASE)
#undef INDUCTOR_CPP_NAME_CASE
  }
  return "?";
}

std::optional<UnaryOp> unary_op_from_name(const std::string& name) {
#define INDUCTOR_CPP_FROM_NAME(k) \
  if (name == #k) return UnaryOp::k;
  INDUCTOR_CPP_UNARY_OPS(INDUCTOR_CPP_FROM_NAME)
#undef INDUCTOR_CPP_FROM_NAME
  return std::nullopt;
}

std::optional<BinaryOp> binary_op_from_name(const std::string& name) {
#define INDUCTOR_CPP_FROM_NAME(k) \
  if (name == #k) return BinaryOp::k;
  INDUCTOR_CPP_BINARY_OPS(INDUCTOR_CPP_FROM_NAME)
#undef INDUCTOR_CPP_FROM_NAME
  return std::nullopt;
}

bool unary_yields_bool(UnaryOp op) {
  return op == UnaryOp::isnan || op == UnaryOp::isinf || op == UnaryOp::signbit ||
         op == UnaryOp::logical_not;
}

bool binary_yields_bool(BinaryOp op) {
  switch (op) {
    case BinaryOp::eq:
    case BinaryOp::ne:
    case BinaryOp::lt:
    case BinaryOp::le:
    case BinaryOp::gt:
    case BinaryOp::ge:
    case BinaryOp::logical_and:
    case BinaryOp::logical_or:
    case BinaryOp::logical_xor:
      return true;
    default:
      return false;
  }
}

// ---------------------------------------------------------------------------------------------
// Interning.

namespace {

uint64_t double_bits(double d) {
  uint64_t bits;
  std::memcpy(&bits, &d, sizeof bits);
  return bits;
}

size_t structural_hash(const ValueNode& n) {
  size_t h = mix_hash(static_cast<size_t>(n.kind) + 1, static_cast<uint64_t>(n.dtype));
  h = mix_hash(h, n.op);
  for (const Value& v : n.operands) h = mix_hash(h, v.hash());
  h = mix_hash(h, string_hash(n.name));
  h = mix_hash(h, n.index.size());
  for (const Expr& e : n.index) h = mix_hash(h, e.hash());
  h = mix_hash(h, n.mask.hash());
  h = mix_hash(h, n.bounds.size());
  for (const Expr& e : n.bounds) h = mix_hash(h, e.hash());
  h = mix_hash(h, static_cast<uint64_t>(n.int_value));
  return mix_hash(h, double_bits(n.float_value));
}

bool same_structure(const ValueNode& a, const ValueNode& b) {
  // Float constants compare by bit pattern: NaN equals itself, -0.0 differs from 0.0.
  return a.kind == b.kind && a.dtype == b.dtype && a.op == b.op && a.operands == b.operands &&
         a.name == b.name && a.index == b.index && a.mask == b.mask && a.bounds == b.bounds &&
         a.int_value == b.int_value && double_bits(a.float_value) == double_bits(b.float_value);
}

class ValueTable {
 public:
  std::shared_ptr<const ValueNode> intern(ValueNode&& node) {
    node.hash = structural_hash(node);
    return table_.intern(
        node.hash, [&](const ValueNode& existing) { return same_structure(existing, node); },
        [&] { return std::make_shared<const ValueNode>(std::move(node)); });
  }

 private:
  InternTable<ValueNode> table_;
};

ValueTable& value_table() {
  static ValueTable* table = new ValueTable();  // never destroyed: Values may outlive statics
  return *table;
}

}  // namespace

Value intern_value(ValueNode&& node) {
  return Value(value_table().intern(std::move(node)));
}

size_t Value::hash() const {
  return node_ ? node_->hash : 0;
}

// ---------------------------------------------------------------------------------------------
// Builders.

namespace {

[[noreturn]] void type_error(const std::string& node, const std::string& what) {
  throw std::invalid_argument(node + ": " + what);
}

void require_value(const Value& v, const std::string& node, const char* role) {
  if (!v) type_error(node, std::string("null ") + role + " operand");
}

std::string describe(const Value& v) {
  return std::string(value_kind_name(v->kind)) + " of type " + dtype_name(v->dtype);
}

bool binary_needs_floating(BinaryOp op) {
  switch (op) {
    case BinaryOp::div:
    case BinaryOp::fmax:
    case BinaryOp::fmin:
    case BinaryOp::atan2:
    case BinaryOp::copysign:
    case BinaryOp::hypot:
    case BinaryOp::nextafter:
      return true;
    default:
      return false;
  }
}

bool is_bitwise(BinaryOp op) {
  return op == BinaryOp::bitwise_and || op == BinaryOp::bitwise_or || op == BinaryOp::bitwise_xor ||
         op == BinaryOp::lshift || op == BinaryOp::rshift;
}

/// Arithmetic torch refuses on bool (sub, division, powers, remainders).
bool binary_rejects_bool(BinaryOp op) {
  switch (op) {
    case BinaryOp::sub:
    case BinaryOp::floordiv:
    case BinaryOp::truncdiv:
    case BinaryOp::remainder:
    case BinaryOp::fmod:
    case BinaryOp::pow:
    case BinaryOp::lshift:
    case BinaryOp::rshift:
      return true;
    default:
      return false;
  }
}

}  // namespace

bool unary_needs_floating(UnaryOp op) {
  switch (op) {
    case UnaryOp::neg:
    case UnaryOp::abs:
    case UnaryOp::floor:
    case UnaryOp::ceil:
    case UnaryOp::round:
    case UnaryOp::trunc:
    case UnaryOp::sign:
    case UnaryOp::signbit:
    case UnaryOp::logical_not:
    case UnaryOp::bitwise_not:
    case UnaryOp::isnan:
    case UnaryOp::isinf:
      return false;
    default:
      return true;
  }
}

Value load(const std::string& buffer, DType dtype, std::vector<Expr> index, Expr mask,
           std::vector<Value> indirect, std::vector<Expr> bounds) {
  const std::string node = "load(" + buffer + ")";
  if (buffer.empty()) type_error("load", "empty buffer name");
  if (indirect.size() != bounds.size())
    type_error(node, std::to_string(indirect.size()) + " indirect values but " +
                         std::to_string(bounds.size()) + " bounds");
  for (const Value& v : indirect) {
    require_value(v, node, "indirect");
    if (!is_integral(v->dtype))
      type_error(node, "indirect index must be of an integer type, got " + describe(v));
  }
  ValueNode n;
  n.kind = ValueKind::Load;
  n.dtype = dtype;
  n.name = buffer;
  n.index = std::move(index);
  n.mask = std::move(mask);
  n.operands = std::move(indirect);
  n.bounds = std::move(bounds);
  return intern_value(std::move(n));
}

Value constant_int(int64_t v, DType dtype) {
  if (!is_integral(dtype) && dtype != DType::Bool)
    type_error("constant_int",
               std::string("dtype must be integral or bool, got ") + dtype_name(dtype));
  ValueNode n;
  n.kind = ValueKind::Constant;
  n.dtype = dtype;
  n.int_value = dtype == DType::Bool ? (v != 0) : v;
  return intern_value(std::move(n));
}

Value constant_float(double v, DType dtype) {
  if (!is_floating(dtype))
    type_error("constant_float", std::string("dtype must be floating, got ") + dtype_name(dtype));
  ValueNode n;
  n.kind = ValueKind::Constant;
  n.dtype = dtype;
  // One NaN: payload and sign of a NaN carry no meaning here, and a single bit pattern makes
  // all NaN constants of a type intern to one node.
  n.float_value = std::isnan(v) ? std::numeric_limits<double>::quiet_NaN() : v;
  return intern_value(std::move(n));
}

Value index_value(const Expr& e, DType dtype) {
  if (!is_integral(dtype))
    type_error("index(" + to_string(e) + ")",
               std::string("dtype must be integral, got ") + dtype_name(dtype));
  ValueNode n;
  n.kind = ValueKind::IndexValue;
  n.dtype = dtype;
  n.index = {e};
  return intern_value(std::move(n));
}

Value unary(UnaryOp op, const Value& x) {
  const std::string node = unary_op_name(op);
  require_value(x, node, "the");
  DType t = x->dtype;
  if (unary_needs_floating(op) && !is_floating(t))
    type_error(node, "needs a floating operand, got " + describe(x));
  if (op == UnaryOp::bitwise_not && is_floating(t))
    type_error(node, "needs an integer or bool operand, got " + describe(x));
  if (op == UnaryOp::neg && t == DType::Bool)
    type_error(node, "negation of a bool operand (use logical_not)");
  ValueNode n;
  n.kind = ValueKind::Unary;
  n.dtype = unary_yields_bool(op) ? DType::Bool : t;
  n.op = static_cast<uint8_t>(op);
  n.operands = {x};
  return intern_value(std::move(n));
}

Value binary(BinaryOp op, const Value& a, const Value& b) {
  const std::string node = binary_op_name(op);
  require_value(a, node, "left");
  require_value(b, node, "right");
  if (a->dtype != b->dtype)
    type_error(node, "operands of different types: " + describe(a) + " and " + describe(b) +
                         " (lowering must cast them to one type)");
  DType t = a->dtype;
  if (binary_needs_floating(op) && !is_floating(t))
    type_error(node, "needs floating operands, got " + std::string(dtype_name(t)));
  if (is_bitwise(op) && is_floating(t))
    type_error(node, "needs integer or bool operands, got " + std::string(dtype_name(t)));
  if (binary_rejects_bool(op) && t == DType::Bool) type_error(node, "not defined on bool operands");
  ValueNode n;
  n.kind = ValueKind::Binary;
  n.dtype = binary_yields_bool(op) ? DType::Bool : t;
  n.op = static_cast<uint8_t>(op);
  n.operands = {a, b};
  return intern_value(std::move(n));
}

Value where(const Value& cond, const Value& then_value, const Value& else_value) {
  require_value(cond, "where", "condition");
  require_value(then_value, "where", "then");
  require_value(else_value, "where", "else");
  if (cond->dtype != DType::Bool)
    type_error("where", "condition must be bool, got " + describe(cond));
  if (then_value->dtype != else_value->dtype)
    type_error("where", "branches of different types: " + describe(then_value) + " and " +
                            describe(else_value));
  ValueNode n;
  n.kind = ValueKind::Where;
  n.dtype = then_value->dtype;
  n.operands = {cond, then_value, else_value};
  return intern_value(std::move(n));
}

Value cast(const Value& x, DType dtype) {
  require_value(x, "cast", "the");
  if (x->dtype == dtype) return x;
  ValueNode n;
  n.kind = ValueKind::Cast;
  n.dtype = dtype;
  n.operands = {x};
  return intern_value(std::move(n));
}

Value local(const std::string& name, DType dtype) {
  if (name.empty()) type_error("local", "empty name");
  ValueNode n;
  n.kind = ValueKind::Local;
  n.dtype = dtype;
  n.name = name;
  return intern_value(std::move(n));
}

// ---------------------------------------------------------------------------------------------
// Walks.

namespace {

/// The same node with other operands and expressions; the node itself when nothing changed.
/// Builders are bypassed on purpose: the node was already checked, and rewrites keep types.
Value with_parts(const Value& v, std::vector<Value> operands, std::vector<Expr> index, Expr mask) {
  if (operands == v->operands && index == v->index && mask == v->mask) return v;
  ValueNode n = *v;
  n.operands = std::move(operands);
  n.index = std::move(index);
  n.mask = std::move(mask);
  return intern_value(std::move(n));
}

using Memo = std::unordered_map<const ValueNode*, Value>;

Value map_indices_memo(const Value& v, const std::function<Expr(const Expr&)>& f, Memo& memo) {
  auto hit = memo.find(v.node());
  if (hit != memo.end()) return hit->second;
  std::vector<Value> operands;
  operands.reserve(v->operands.size());
  for (const Value& o : v->operands) operands.push_back(map_indices_memo(o, f, memo));
  std::vector<Expr> index = v->index;
  Expr mask = v->mask;
  if (v->kind == ValueKind::Load || v->kind == ValueKind::IndexValue) {
    for (Expr& e : index) e = f(e);
  }
  if (v->kind == ValueKind::Load) mask = f(mask);
  Value result = with_parts(v, std::move(operands), std::move(index), std::move(mask));
  memo.emplace(v.node(), result);
  return result;
}

Value replace_loads_memo(const Value& v, const std::function<Value(const Value&)>& f, Memo& memo) {
  auto hit = memo.find(v.node());
  if (hit != memo.end()) return hit->second;
  std::vector<Value> operands;
  operands.reserve(v->operands.size());
  for (const Value& o : v->operands) operands.push_back(replace_loads_memo(o, f, memo));
  Value result = with_parts(v, std::move(operands), v->index, v->mask);
  if (result->kind == ValueKind::Load) {
    Value replacement = f(result);
    if (replacement && replacement->dtype != result->dtype)
      throw std::invalid_argument(std::string("replace_loads: load of ") + result->name + " (" +
                                  dtype_name(result->dtype) + ") replaced by a value of type " +
                                  dtype_name(replacement->dtype));
    if (replacement) result = replacement;
  }
  memo.emplace(v.node(), result);
  return result;
}

Value replace_value_memo(const Value& v, const Value& from, const Value& to, Memo& memo) {
  if (v == from) return to;
  auto hit = memo.find(v.node());
  if (hit != memo.end()) return hit->second;
  std::vector<Value> operands;
  operands.reserve(v->operands.size());
  for (const Value& o : v->operands) operands.push_back(replace_value_memo(o, from, to, memo));
  Value result = with_parts(v, std::move(operands), v->index, v->mask);
  memo.emplace(v.node(), result);
  return result;
}

/// Post-order walk over distinct nodes: operands before their users, first operand first.
void visit_post_order(const Value& v, std::unordered_set<const ValueNode*>& seen,
                      const std::function<void(const Value&)>& visit) {
  if (!seen.insert(v.node()).second) return;
  for (const Value& o : v->operands) visit_post_order(o, seen, visit);
  visit(v);
}

}  // namespace

Value map_indices(const Value& v, const std::function<Expr(const Expr&)>& f) {
  if (!v) return v;
  Memo memo;
  return map_indices_memo(v, f, memo);
}

Value replace_loads(const Value& v, const std::function<Value(const Value& load)>& f) {
  if (!v) return v;
  Memo memo;
  return replace_loads_memo(v, f, memo);
}

Value replace_value(const Value& v, const Value& from, const Value& to) {
  if (!v || !from) return v;
  if (to && to->dtype != from->dtype)
    throw std::invalid_argument(std::string("replace_value: a ") + dtype_name(from->dtype) + " value replaced by a " +
                                dtype_name(to->dtype) + " one");
  Memo memo;
  return replace_value_memo(v, from, to, memo);
}

std::vector<Value> loads_in(const Value& v) {
  std::vector<Value> loads;
  if (!v) return loads;
  std::unordered_set<const ValueNode*> seen;
  visit_post_order(v, seen, [&](const Value& n) {
    if (n->kind == ValueKind::Load) loads.push_back(n);
  });
  return loads;
}

std::set<std::string> buffers_read(const Value& v) {
  std::set<std::string> names;
  for (const Value& l : loads_in(v)) names.insert(l->name);
  return names;
}

int64_t node_count(const Value& v) {
  if (!v) return 0;
  std::unordered_set<const ValueNode*> seen;
  visit_post_order(v, seen, [](const Value&) {});
  return static_cast<int64_t>(seen.size());
}

}  // namespace inductor_cpp::ir
