/// \file
/// Scalar value expressions: the bodies of loop-level compute nodes and of scheduled kernels.
///
/// A body is a DAG of immutable, interned `Value` nodes, each with an element type: loads from
/// buffers at index expressions, constants, index values, unary/binary math, where, casts.
/// Interning makes equal subtrees the same node, so CSE inside a body is free and structural
/// equality is a pointer compare.
///
/// Typing is explicit: operands of Unary/Binary/Where already have the node's compute type
/// (lowering inserts the Casts that implement torch's type promotion); comparisons and
/// logical ops yield Bool from operands of one type; float16/bfloat16 are loaded, cast to
/// float32 for arithmetic, and cast back before a store.
///
/// Text form (printed by to_string, read back by parse_value in ir/loop_ir_text.h):
///   add(load(%in0, [i0, i1]), 1.0:float32)          unary/binary ops by name
///   where(lt(%a, %b), ...)   cast(load(%3, [i0]), int64)   index(i0*8 + i1, int64)
///   load(%in1, [%ind0], mask=i0 < 5, indirect=[load(%idx, [i0])])   local(acc0, float32)
/// A constant prints as <literal>:<dtype>, literals being integers, decimal floats with
/// enough digits to round-trip, inf, -inf, nan, true, false.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/index_expr.h"

namespace inductor_cpp::ir {

/// The node kinds, listed once.
#define INDUCTOR_CPP_VALUE_KINDS(X) \
  X(Load)                           \
  X(Constant)                       \
  X(IndexValue)                     \
  X(Unary)                          \
  X(Binary)                         \
  X(Where)                          \
  X(Cast)                           \
  X(Local)

/// Unary math; result type = operand type, except the predicates (isnan, isinf, signbit,
/// logical_not), which yield Bool.
#define INDUCTOR_CPP_UNARY_OPS(X) \
  X(neg) X(abs) X(reciprocal) X(sqrt) X(rsqrt) X(exp) X(exp2) X(expm1) X(log) X(log2) X(log10) \
  X(log1p) X(sin) X(cos) X(tan) X(asin) X(acos) X(atan) X(sinh) X(cosh) X(tanh) X(asinh)      \
  X(acosh) X(atanh) X(erf) X(erfc) X(erfinv) X(lgamma) X(sigmoid) X(floor) X(ceil) X(round)   \
  X(trunc) X(sign) X(signbit) X(logical_not) X(bitwise_not) X(isnan) X(isinf)

/// Binary math on two operands of one type; result type = that type, except the comparisons
/// and logical ops, which yield Bool. Integer semantics follow torch: floordiv/remainder are
/// Python-style, truncdiv/fmod C-style; `div` is for floating types only; maximum/minimum
/// propagate NaN, fmax/fmin do not.
#define INDUCTOR_CPP_BINARY_OPS(X)                                                             \
  X(add) X(sub) X(mul) X(div) X(floordiv) X(truncdiv) X(remainder) X(fmod) X(pow) X(maximum) \
  X(minimum) X(fmax) X(fmin) X(atan2) X(copysign) X(hypot) X(nextafter) X(eq) X(ne) X(lt)    \
  X(le) X(gt) X(ge) X(logical_and) X(logical_or) X(logical_xor) X(bitwise_and)              \
  X(bitwise_or) X(bitwise_xor) X(lshift) X(rshift)

enum class ValueKind : uint8_t {
#define INDUCTOR_CPP_ENUM_ENTRY(k) k,
  INDUCTOR_CPP_VALUE_KINDS(INDUCTOR_CPP_ENUM_ENTRY)
};
enum class UnaryOp : uint8_t { INDUCTOR_CPP_UNARY_OPS(INDUCTOR_CPP_ENUM_ENTRY) };
enum class BinaryOp : uint8_t { INDUCTOR_CPP_BINARY_OPS(INDUCTOR_CPP_ENUM_ENTRY) };
#undef INDUCTOR_CPP_ENUM_ENTRY

const char* value_kind_name(ValueKind k);
const char* unary_op_name(UnaryOp op);
const char* binary_op_name(BinaryOp op);
std::optional<UnaryOp> unary_op_from_name(const std::string& name);
std::optional<BinaryOp> binary_op_from_name(const std::string& name);
bool unary_yields_bool(UnaryOp op);
/// Unary math that needs a floating operand (lowering casts integers first, as torch does);
/// false for neg, abs, rounding, sign, logical / bitwise not, isnan and isinf.
bool unary_needs_floating(UnaryOp op);
bool binary_yields_bool(BinaryOp op);

struct ValueNode;

/// A handle to an interned value node; cheap to copy. Null only when default-constructed.
class Value {
 public:
  Value() = default;
  const ValueNode* operator->() const { return node_.get(); }
  const ValueNode& operator*() const { return *node_; }
  explicit operator bool() const { return node_ != nullptr; }
  bool operator==(const Value& o) const { return node_ == o.node_; }
  bool operator!=(const Value& o) const { return node_ != o.node_; }
  size_t hash() const;
  const ValueNode* node() const { return node_.get(); }

 private:
  explicit Value(std::shared_ptr<const ValueNode> n) : node_(std::move(n)) {}
  std::shared_ptr<const ValueNode> node_;
  friend Value intern_value(ValueNode&&);
};

struct ValueNode {
  ValueKind kind;
  DType dtype;
  uint8_t op = 0;               ///< UnaryOp / BinaryOp for those kinds
  std::vector<Value> operands;  ///< Unary 1, Binary 2, Where (cond, then, else), Cast 1,
                                ///< Load: the indirect index values (%ind0, %ind1, ...)
  std::string name;             ///< Load: buffer; Local: local name
  /// Load: one index per buffer dimension in the loop-level IR, a single element offset from
  /// the buffer's data pointer in scheduled kernels. IndexValue: one expression.
  std::vector<Expr> index;
  /// Load only: element is read only where mask != 0, else the value is 0 (of dtype). Const 1
  /// for unmasked loads. Lets padding and cat read "outside" safely.
  Expr mask = Expr(1);
  /// Load only: for each indirect value, the exclusive upper bound it must stay below (the
  /// size of the dimension it indexes). Kernels check 0 <= value < bound at run time and
  /// return kKernelIndexOutOfBounds instead of reading outside the buffer.
  std::vector<Expr> bounds;
  int64_t int_value = 0;  ///< Constant of integral/bool type
  double float_value = 0;  ///< Constant of floating type
  size_t hash = 0;

  UnaryOp unary_op() const { return static_cast<UnaryOp>(op); }
  BinaryOp binary_op() const { return static_cast<BinaryOp>(op); }
};

// Builders; they check operand types and throw std::invalid_argument with a message naming
// the node on violations (verify.h checks whole programs).
Value load(const std::string& buffer, DType dtype, std::vector<Expr> index, Expr mask = Expr(1),
           std::vector<Value> indirect = {}, std::vector<Expr> bounds = {});
Value constant_int(int64_t v, DType dtype);  ///< integral and bool dtypes
Value constant_float(double v, DType dtype);  ///< floating dtypes
Value index_value(const Expr& e, DType dtype);  ///< integral dtype
Value unary(UnaryOp op, const Value& x);
Value binary(BinaryOp op, const Value& a, const Value& b);
Value where(const Value& cond, const Value& then_value, const Value& else_value);
Value cast(const Value& x, DType dtype);  ///< returns x itself when the type already matches
Value local(const std::string& name, DType dtype);

/// Rewrites every index expression in the DAG (Load index and mask, IndexValue).
Value map_indices(const Value& v, const std::function<Expr(const Expr&)>& f);
/// Replaces loads: f returns a replacement or a null Value to keep the load. Bottom-up, each
/// distinct node visited once.
Value replace_loads(const Value& v, const std::function<Value(const Value& load)>& f);
/// `v` with every occurrence of the node `from` replaced by `to` (of the same type).
Value replace_value(const Value& v, const Value& from, const Value& to);
/// Every Load node reachable from v (each once), in a deterministic order.
std::vector<Value> loads_in(const Value& v);
/// Names of buffers v reads.
std::set<std::string> buffers_read(const Value& v);
/// Number of distinct nodes (a cost proxy for fusion).
int64_t node_count(const Value& v);

std::string to_string(const Value& v);

}  // namespace inductor_cpp::ir

template <>
struct std::hash<inductor_cpp::ir::Value> {
  size_t operator()(const inductor_cpp::ir::Value& v) const { return v.hash(); }
};
