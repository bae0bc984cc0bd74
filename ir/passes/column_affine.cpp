/// \file
/// Per-column affine folding (column_affine.h).
#include "ir/passes/column_affine.h"

#include <cctype>
#include <optional>

namespace inductor_cpp::ir {
namespace {

/// One level of an affine run: `inner` (which holds the accumulator) combined with the
/// per-column `operand`.
struct AffineLevel {
  BinaryOp op;
  Value operand;
  Value inner;
  bool inner_first;
};

class Folder {
 public:
  Folder(const EpilogueShape& shape, const std::function<const Buffer*(const std::string&)>& buffer_of,
         const std::string& prefix, const std::string& device)
      : shape_(shape), buffer_of_(buffer_of), prefix_(prefix), device_(device) {}

  Value fold(const Value& v) {
    if (!mentions_accumulator(v)) return v;
    if (level_of(v)) return fold_run(v);
    switch (v->kind) {
      case ValueKind::Unary:
        return unary(v->unary_op(), fold(v->operands[0]));
      case ValueKind::Binary:
        return binary(v->binary_op(), fold(v->operands[0]), fold(v->operands[1]));
      case ValueKind::Where:
        return where(fold(v->operands[0]), fold(v->operands[1]), fold(v->operands[2]));
      case ValueKind::Cast:
        return cast(fold(v->operands[0]), v->dtype);
      default:
        return v;
    }
  }

  FoldedEpilogue result(const Value& epilogue) {
    FoldedEpilogue out;
    out.epilogue = epilogue;
    out.buffers = std::move(buffers_);
    out.computes = std::move(computes_);
    return out;
  }

 private:
  std::string column() const { return range_var(shape_.column_dim); }

  /// True when `v` depends on the column index alone (and on no accumulator).
  bool per_column(const Value& v) const {
    if (mentions_accumulator(v) || v->dtype != DType::Float32) return false;
    const auto only_column = [this](const Expr& e) {
      for (const std::string& name : free_vars(e))
        if (name != column() && name.size() > 1 && (name[0] == 'i' || name[0] == 'r') && std::isdigit(name[1]))
          return false;
      return true;
    };
    std::function<bool(const Value&)> check = [&](const Value& x) {
      if (x->kind == ValueKind::Local) return false;
      for (const Expr& e : x->index)
        if (!only_column(e)) return false;
      if (!only_column(x->mask)) return false;
      for (const Value& o : x->operands)
        if (!check(o)) return false;
      return true;
    };
    return check(v);
  }

  std::optional<AffineLevel> level_of(const Value& v) const {
    if (v->kind != ValueKind::Binary || v->dtype != DType::Float32) return std::nullopt;
    const BinaryOp op = v->binary_op();
    if (op != BinaryOp::add && op != BinaryOp::sub && op != BinaryOp::mul) return std::nullopt;
    const bool first = mentions_accumulator(v->operands[0]), second = mentions_accumulator(v->operands[1]);
    if (first == second) return std::nullopt;
    const Value& operand = first ? v->operands[1] : v->operands[0];
    if (!per_column(operand)) return std::nullopt;
    return AffineLevel{op, operand, first ? v->operands[0] : v->operands[1], first};
  }

  // Affine maps y·s + t with null s meaning 1 and null t meaning 0.
  static Value times(const Value& a, const Value& b) {
    if (!a) return b;
    if (!b) return a;
    return binary(BinaryOp::mul, a, b);
  }
  static Value plus(const Value& a, const Value& b) {
    if (!a) return b;
    if (!b) return a;
    return binary(BinaryOp::add, a, b);
  }
  static Value negated(const Value& a) { return a ? unary(UnaryOp::neg, a) : constant_float(-1, DType::Float32); }

  /// The run of affine levels from `v` down, applied to its folded inner value.
  Value fold_run(const Value& v) {
    Value s, t;  // the run so far, from the top: T(y) = y·s + t
    Value x = v;
    while (const auto level = level_of(x)) {
      const Value& p = level->operand;
      if (level->op == BinaryOp::mul) {
        s = times(s, p);
      } else if (level->op == BinaryOp::add) {
        t = plus(times(s, p), t);
      } else if (level->inner_first) {  // y - p
        t = plus(t, negated(times(s, p)));
      } else {  // p - y
        t = plus(times(s, p), t);
        s = negated(s);
      }
      x = level->inner;
    }
    Value y = fold(x);
    if (s) y = binary(BinaryOp::mul, y, plain_scale(s) ? s : vector_of(s, "_scale"));
    if (t) y = binary(BinaryOp::add, y, plain_vector(t) ? t : vector_of(t, "_shift"));
    return y;
  }

  bool plain_vector(const Value& v) const {
    if (v->kind != ValueKind::Load || v->mask != Expr(1) || !v->operands.empty()) return false;
    const Buffer* b = buffer_of_(v->name);
    if (!b || b->dtype != DType::Float32) return false;
    // A load that selection reads as a vector along the columns: one index is the column, the
    // rest 0, and the buffer has as many elements as there are columns.
    const auto ops = select_epilogue_ops(binary(BinaryOp::add, epilogue_accumulator(DType::Float32), v), shape_,
                                         buffer_of_);
    return ops && ops->size() == 1 && ops->front().kind == EpilogueOpKind::bias_col;
  }
  bool plain_scale(const Value& v) const {
    return (v->kind == ValueKind::Constant && v->dtype == DType::Float32) || plain_vector(v);
  }

  /// A new compute over the columns evaluating `v`; a load of it at the column index.
  Value vector_of(const Value& v, const char* what) {
    const Expr columns = shape_.sizes.at(shape_.column_dim);
    Compute c;
    c.name = prefix_ + what + std::to_string(computes_.size());
    c.ranges = {columns};
    c.body = map_indices(v, [this](const Expr& e) { return substitute(e, {{column(), Expr::var(range_var(0))}}); });
    Buffer b;
    b.name = c.name;
    b.dtype = DType::Float32;
    b.sizes = {columns};
    b.strides = {Expr(1)};
    b.origin = BufferOrigin::Computed;
    b.device = device_;
    buffers_.push_back(b);
    computes_.push_back(c);
    return load(c.name, DType::Float32, {Expr::var(column())});
  }

  const EpilogueShape& shape_;
  const std::function<const Buffer*(const std::string&)>& buffer_of_;
  std::string prefix_, device_;
  std::vector<Buffer> buffers_;
  std::vector<Compute> computes_;
};

}  // namespace

FoldedEpilogue fold_column_affine(const Value& epilogue, const EpilogueShape& shape,
                                  const std::function<const Buffer*(const std::string&)>& buffer_of,
                                  const std::string& prefix, const std::string& device) {
  if (!epilogue) return {};
  Folder folder(shape, buffer_of, prefix, device);
  const Value folded = folder.fold(epilogue);
  return folder.result(folded);
}

}  // namespace inductor_cpp::ir
