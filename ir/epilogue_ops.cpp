/// \file
/// Epilogue selection (epilogue_ops.h): reading an epilogue expression from its root down to the
/// accumulator, one fixed library operation per level.
#include "ir/epilogue_ops.h"

#include <cfloat>
#include <unordered_map>

#include "ir/activation_formulas.h"
#include "ir/simplify.h"

namespace inductor_cpp::ir {

const char* epilogue_op_kind_name(EpilogueOpKind kind) {
  switch (kind) {
#define INDUCTOR_CPP_NAME_ENTRY(k) \
  case EpilogueOpKind::k:          \
    return #k;
    INDUCTOR_CPP_EPILOGUE_OP_KINDS(INDUCTOR_CPP_NAME_ENTRY)
#undef INDUCTOR_CPP_NAME_ENTRY
  }
  return "?";
}

bool EpilogueOp::operator==(const EpilogueOp& o) const {
  return kind == o.kind && buffer == o.buffer && a == o.a && b == o.b;
}

EpilogueShape epilogue_shape(const LibraryCall& call, const Buffer& domain) {
  EpilogueShape shape;
  shape.sizes = domain.sizes;
  const size_t rank = domain.sizes.size();
  if (call.op == LibraryOp::conv2d) {
    shape.column_dim = 1;  // [N, C, H, W]: a channel is a column of the [N·H·W, C] matrix
  } else if (rank > 0) {
    shape.column_dim = rank - 1;
    if (rank == 2 && (call.op == LibraryOp::mm || call.op == LibraryOp::addmm)) shape.row_dim = 0;
  }
  return shape;
}

namespace {

bool mentions(const Value& v, std::unordered_map<const ValueNode*, bool>& memo) {
  if (!v) return false;
  auto it = memo.find(v.node());
  if (it != memo.end()) return it->second;
  bool found = v->kind == ValueKind::Local && v->name == kEpilogueAccumulator;
  for (const Value& o : v->operands) found = found || mentions(o, memo);
  memo[v.node()] = found;
  return found;
}

/// The element types of library epilogues: float32, bfloat16 (the AMX GEMM's bias ops) and
/// float16 (a GPU addmm's bias).
bool library_dtype(DType t) {
  return t == DType::Float32 || t == DType::BFloat16 || t == DType::Float16;
}

/// How a load in an epilogue relates to the output.
enum class LoadRole { Other, Aligned, Column, Row };

Expr numel(const std::vector<Expr>& sizes) {
  Expr n(1);
  for (const Expr& s : sizes) n = n * s;
  return simplify(n);
}

/// Whether `index` reads a vector along dim `d` of the domain: i<d> in one place, zeros elsewhere,
/// from a buffer of as many elements as that dim has.
bool is_vector_along(const std::vector<Expr>& index, const Buffer& b, const EpilogueShape& shape, size_t d) {
  size_t found = 0;
  for (const Expr& e : index) {
    if (e == Expr::var(range_var(d))) {
      ++found;
    } else if (e != Expr(0)) {
      return false;
    }
  }
  return found == 1 && numel(b.sizes) == simplify(shape.sizes[d]);
}

LoadRole role_of(const Value& v, const EpilogueShape& shape,
                 const std::function<const Buffer*(const std::string&)>& buffer_of) {
  if (v->kind != ValueKind::Load || !library_dtype(v->dtype) || v->mask != Expr(1) || !v->operands.empty())
    return LoadRole::Other;
  const Buffer* b = buffer_of(v->name);
  if (!b || b->dtype != v->dtype || b->sizes.size() != v->index.size()) return LoadRole::Other;
  bool aligned = b->sizes == shape.sizes;
  for (size_t k = 0; aligned && k < v->index.size(); ++k)  // a size-1 dim's index simplifies to 0
    aligned = v->index[k] == Expr::var(range_var(k)) || (v->index[k] == Expr(0) && shape.sizes[k] == Expr(1));
  if (aligned) return LoadRole::Aligned;
  if (is_vector_along(v->index, *b, shape, shape.column_dim)) return LoadRole::Column;
  if (shape.row_dim && is_vector_along(v->index, *b, shape, *shape.row_dim)) return LoadRole::Row;
  return LoadRole::Other;
}

std::optional<double> float_constant(const Value& v) {
  if (v->kind != ValueKind::Constant || v->dtype != DType::Float32) return std::nullopt;
  return v->float_value;
}

/// One level of the expression: the operation at `v`'s root and the operand it applies to.
struct Level {
  EpilogueOp op;
  Value inner;
};

class Selector {
 public:
  Selector(const EpilogueShape& shape, const std::function<const Buffer*(const std::string&)>& buffer_of)
      : shape_(shape), buffer_of_(buffer_of) {}

  std::optional<Level> level(const Value& v) {
    if (auto l = activation(v)) return l;
    if (v->kind != ValueKind::Binary) return std::nullopt;
    const BinaryOp op = v->binary_op();
    if (op != BinaryOp::add && op != BinaryOp::mul) return std::nullopt;
    const bool left = has_acc(v->operands[0]), right = has_acc(v->operands[1]);
    if (left == right) return std::nullopt;
    const Value& inner = left ? v->operands[0] : v->operands[1];
    const Value& data = left ? v->operands[1] : v->operands[0];
    if (op == BinaryOp::mul) {
      if (auto c = float_constant(data)) return Level{{EpilogueOpKind::scale, "", *c, 0}, inner};
    }
    const LoadRole role = role_of(data, shape_, buffer_of_);
    const auto with = [&](EpilogueOpKind kind) { return Level{{kind, data->name, 0, 0}, inner}; };
    if (op == BinaryOp::add && role == LoadRole::Aligned) return with(EpilogueOpKind::residual);
    if (op == BinaryOp::add && role == LoadRole::Column) return with(EpilogueOpKind::bias_col);
    if (op == BinaryOp::add && role == LoadRole::Row) return with(EpilogueOpKind::bias_row);
    if (op == BinaryOp::mul && role == LoadRole::Aligned) return with(EpilogueOpKind::mul);
    if (op == BinaryOp::mul && role == LoadRole::Column) return with(EpilogueOpKind::scale_col);
    return std::nullopt;
  }

  bool has_acc(const Value& v) { return mentions(v, memo_); }

 private:
  /// A data-free activation at v's root.
  std::optional<Level> activation(const Value& v) {
    const auto op = [&v](EpilogueOpKind kind, const Value& inner, double a = 0, double b = 0) {
      return Level{{kind, "", a, b}, inner};
    };
    if (v->kind == ValueKind::Unary && v->unary_op() == UnaryOp::tanh) return op(EpilogueOpKind::tanh, v->operands[0]);
    if (v->kind == ValueKind::Unary && v->unary_op() == UnaryOp::sigmoid)
      return op(EpilogueOpKind::sigmoid, v->operands[0]);
    if (v->kind == ValueKind::Binary && v->binary_op() == BinaryOp::div && silu_formula(v->operands[0]) == v)
      return op(EpilogueOpKind::silu, v->operands[0]);
    if (v->kind == ValueKind::Binary && v->binary_op() == BinaryOp::mul) {
      const Value& left = v->operands[0];
      if (left->kind == ValueKind::Binary && left->binary_op() == BinaryOp::mul) {
        if (gelu_formula(left->operands[0], false) == v) return op(EpilogueOpKind::gelu, left->operands[0]);
        if (gelu_formula(left->operands[1], true) == v) return op(EpilogueOpKind::gelu_tanh, left->operands[1]);
      }
    }
    if (v->kind != ValueKind::Binary) return std::nullopt;
    const BinaryOp b = v->binary_op();
    if (b != BinaryOp::maximum && b != BinaryOp::minimum) return std::nullopt;
    const auto bound = float_constant(v->operands[1]);
    if (!bound || !has_acc(v->operands[0])) return std::nullopt;
    const Value& x = v->operands[0];
    if (b == BinaryOp::maximum) {
      if (*bound == 0) return op(EpilogueOpKind::relu, x);
      return op(EpilogueOpKind::clamp, x, *bound, FLT_MAX);
    }
    // minimum(maximum(y, lo), hi): one clamp
    if (x->kind == ValueKind::Binary && x->binary_op() == BinaryOp::maximum) {
      const auto lo = float_constant(x->operands[1]);
      if (lo && *lo <= *bound && has_acc(x->operands[0])) return op(EpilogueOpKind::clamp, x->operands[0], *lo, *bound);
    }
    return op(EpilogueOpKind::clamp, x, -FLT_MAX, *bound);
  }

  const EpilogueShape& shape_;
  const std::function<const Buffer*(const std::string&)>& buffer_of_;
  std::unordered_map<const ValueNode*, bool> memo_;
};

std::optional<std::vector<EpilogueOp>> fail(std::string* why_not, const std::string& why) {
  if (why_not) *why_not = why;
  return std::nullopt;
}

}  // namespace

bool mentions_accumulator(const Value& v) {
  std::unordered_map<const ValueNode*, bool> memo;
  return mentions(v, memo);
}

std::optional<std::vector<EpilogueOp>> select_epilogue_ops(
    const Value& epilogue, const EpilogueShape& shape,
    const std::function<const Buffer*(const std::string&)>& buffer_of, std::string* why_not) {
  std::vector<EpilogueOp> outer_first;
  if (!epilogue) return outer_first;
  Selector selector(shape, buffer_of);
  Value v = epilogue;
  while (!(v->kind == ValueKind::Local && v->name == kEpilogueAccumulator)) {
    if (!library_dtype(v->dtype)) return fail(why_not, "a " + std::string(dtype_name(v->dtype)) + " epilogue");
    const auto level = selector.level(v);
    if (!level) return fail(why_not, "no library epilogue operation for " + to_string(v));
    outer_first.push_back(level->op);
    v = level->inner;
  }
  return std::vector<EpilogueOp>(outer_first.rbegin(), outer_first.rend());
}

bool gpu_epilogue_fits(LibraryOp op, const std::vector<EpilogueOp>& ops, std::string* why_not) {
  const auto no = [why_not](const std::string& why) {
    if (why_not) *why_not = why;
    return false;
  };
  const auto kind_at = [&ops](size_t k) { return k < ops.size() ? std::optional(ops[k].kind) : std::nullopt; };
  using K = EpilogueOpKind;
  size_t k = 0;
  if (op == LibraryOp::conv2d) {
    if (kind_at(k) == K::bias_col) ++k;
  } else if (op == LibraryOp::mm || op == LibraryOp::addmm || op == LibraryOp::bmm) {
    if (kind_at(k) == K::scale) ++k;  // alpha
    const auto c = kind_at(k);
    const bool has_c = c == K::bias_col || c == K::residual || (c == K::bias_row && op != LibraryOp::bmm);
    if (has_c) ++k;  // cuBLAS's C, beta 1
    const auto act = kind_at(k);
    if (has_c && op != LibraryOp::bmm && (act == K::relu || act == K::gelu_tanh)) ++k;  // cuBLASLt's
  } else if (!ops.empty()) {
    return no(std::string("a GPU ") + library_op_name(op) + " takes no epilogue");
  }
  if (k == ops.size()) return true;
  return no(std::string("the GPU's ") + library_op_name(op) + " does not apply " + epilogue_ops_text(ops));
}

std::string epilogue_ops_text(const std::vector<EpilogueOp>& ops) {
  std::string out;
  for (const EpilogueOp& op : ops) {
    if (!out.empty()) out += " -> ";
    out += epilogue_op_kind_name(op.kind);
    if (!op.buffer.empty()) {
      out += "(" + op.buffer + ")";
    } else if (op.kind == EpilogueOpKind::scale) {
      out += "(" + std::to_string(op.a) + ")";
    } else if (op.kind == EpilogueOpKind::clamp) {
      out += "(" + std::to_string(op.a) + ", " + std::to_string(op.b) + ")";
    }
  }
  return out;
}

}  // namespace inductor_cpp::ir
