/// \file
/// Index algebra: the interning table, the folding builders, structural order, evaluation,
/// substitution and the affine-coefficient query. The text form is in index_expr_text.cpp.
///
/// Interning: one process-wide table of weak references keyed by a structural hash, guarded by
/// a mutex. Children are interned before their parents, so "same structure" is "same kind,
/// same payload, same child pointers". Dead entries are swept when the table has doubled since
/// the last sweep, so unused expressions are freed and the table stays proportional to the live
/// set.
#include "ir/index_expr.h"
#include "ir/intern_table.h"

#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

namespace inductor_cpp::ir {

struct ExprNode {
  ExprKind kind;
  int64_t value = 0;  // Const
  std::string name;   // Var
  // Binary kinds; null for leaves. Raw shared pointers rather than Expr: a default Expr is
  // itself an interned node, which a leaf cannot hold.
  std::shared_ptr<const ExprNode> lhs, rhs;
  size_t hash = 0;
};

namespace {

bool is_leaf(ExprKind k) {
  return k == ExprKind::Const || k == ExprKind::Var;
}

/// The interning table (weak entries: it never keeps an expression alive).
class ExprTable {
 public:
  using NodePtr = std::shared_ptr<const ExprNode>;

  NodePtr intern(ExprKind kind, int64_t value, const std::string& name, const NodePtr& lhs,
                 const NodePtr& rhs) {
    size_t h = mix_hash(static_cast<size_t>(kind) + 1, static_cast<uint64_t>(value));
    h = mix_hash(h, string_hash(name));
    if (lhs) h = mix_hash(mix_hash(h, lhs->hash), rhs->hash);
    return table_.intern(
        h,
        [&](const ExprNode& n) {
          return n.kind == kind && n.value == value && n.name == name && n.lhs == lhs &&
                 n.rhs == rhs;
        },
        [&] {
          auto node = std::make_shared<ExprNode>();
          node->kind = kind;
          node->value = value;
          node->name = name;
          node->lhs = lhs;
          node->rhs = rhs;
          node->hash = h;
          return NodePtr(node);
        });
  }

 private:
  InternTable<ExprNode> table_;
};

ExprTable& expr_table() {
  static ExprTable* table = new ExprTable();  // never destroyed: Exprs may outlive statics
  return *table;
}

// Wrapping int64 arithmetic (the documented overflow behaviour of folding and evaluation).
int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t wrap_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

bool is_const(const Expr& e, int64_t v) {
  return e.is_const() && e.value() == v;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Python-semantics integer helpers, shared by folding and evaluation.

namespace {

int64_t python_floordiv(int64_t a, int64_t b) {
  if (b == 0) throw std::domain_error("index expression: division by zero");
  if (b == -1) return static_cast<int64_t>(0 - static_cast<uint64_t>(a));  // wraps at INT64_MIN
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t python_mod(int64_t a, int64_t b) {
  if (b == 0) throw std::domain_error("index expression: modulo by zero");
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

}  // namespace

const char* expr_kind_name(ExprKind k) {
  switch (k) {
#define INDUCTOR_CPP_EXPR_NAME(k) \
  case ExprKind::k:               \
    return #k;
    INDUCTOR_CPP_EXPR_KINDS(INDUCTOR_CPP_EXPR_NAME)
#undef INDUCTOR_CPP_EXPR_NAME
  }
  return "?";
}

// ---------------------------------------------------------------------------------------------
// Handles.

Expr::Expr() : Expr(int64_t{0}) {}

Expr::Expr(int64_t value)
    : node_(expr_table().intern(ExprKind::Const, value, "", nullptr, nullptr)) {}

Expr Expr::var(const std::string& name) {
  // The text form must read the name back: [A-Za-z_%][A-Za-z0-9_.]*.
  auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  bool valid = !name.empty() && (letter(name[0]) || (name[0] == '%' && name.size() > 1));
  for (size_t i = 1; valid && i < name.size(); ++i)
    valid = letter(name[i]) || (name[i] >= '0' && name[i] <= '9') || name[i] == '.';
  if (!valid) throw std::invalid_argument("Expr::var: '" + name + "' is not an identifier");
  return Expr(expr_table().intern(ExprKind::Var, 0, name, nullptr, nullptr));
}

ExprKind Expr::kind() const {
  return node_->kind;
}

int64_t Expr::value() const {
  if (node_->kind != ExprKind::Const)
    throw std::logic_error(std::string("Expr::value on a ") + expr_kind_name(node_->kind));
  return node_->value;
}

const std::string& Expr::name() const {
  if (node_->kind != ExprKind::Var)
    throw std::logic_error(std::string("Expr::name on a ") + expr_kind_name(node_->kind));
  return node_->name;
}

Expr Expr::lhs() const {
  if (is_leaf(node_->kind))
    throw std::logic_error(std::string("Expr::lhs on a ") + expr_kind_name(node_->kind));
  return Expr(node_->lhs);
}

Expr Expr::rhs() const {
  if (is_leaf(node_->kind))
    throw std::logic_error(std::string("Expr::rhs on a ") + expr_kind_name(node_->kind));
  return Expr(node_->rhs);
}

size_t Expr::hash() const {
  return node_->hash;
}

namespace {

/// Variable names compare "naturally": a common prefix, then trailing digits by number, so
/// i2 sorts before i10.
int compare_names(const std::string& a, const std::string& b) {
  auto split = [](const std::string& s) {
    size_t p = s.size();
    while (p > 0 && s[p - 1] >= '0' && s[p - 1] <= '9') --p;
    return p;
  };
  size_t pa = split(a), pb = split(b);
  int c = a.compare(0, pa, b, 0, pb);
  if (c != 0) return c < 0 ? -1 : 1;
  // Same prefix: shorter digit string (ignoring leading zeros would be nicer, but names are
  // ours) is the smaller number; equal lengths compare lexicographically.
  size_t la = a.size() - pa, lb = b.size() - pb;
  if (la != lb) return la < lb ? -1 : 1;
  c = a.compare(pa, la, b, pb, lb);
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

int compare_exprs(const ExprNode* a, const ExprNode* b) {
  if (a == b) return 0;
  if (a->kind != b->kind) return a->kind < b->kind ? -1 : 1;
  switch (a->kind) {
    case ExprKind::Const:
      return a->value < b->value ? -1 : (a->value > b->value ? 1 : 0);
    case ExprKind::Var:
      return compare_names(a->name, b->name);
    default: {
      int c = compare_exprs(a->lhs.get(), b->lhs.get());
      return c != 0 ? c : compare_exprs(a->rhs.get(), b->rhs.get());
    }
  }
}

}  // namespace

bool Expr::operator<(const Expr& o) const {
  return compare_exprs(node(), o.node()) < 0;
}

/// Builds a binary node as is, with no folding (the builders below decide what to build).
Expr make_expr(ExprKind kind, Expr lhs, Expr rhs) {
  return Expr(expr_table().intern(kind, 0, "", lhs.node_, rhs.node_));
}

// ---------------------------------------------------------------------------------------------
// Builders: constant folding and identities only; everything range-aware is in simplify*.cpp.

Expr operator+(const Expr& a, const Expr& b) {
  if (a.is_const() && b.is_const()) return Expr(wrap_add(a.value(), b.value()));
  if (is_const(a, 0)) return b;
  if (is_const(b, 0)) return a;
  if (a.is_const()) return b + a;  // constants on the right
  if (b.is_const() && a.kind() == ExprKind::Add && a.rhs().is_const())
    return a.lhs() + Expr(wrap_add(a.rhs().value(), b.value()));
  return make_expr(ExprKind::Add, a, b);
}

Expr operator*(const Expr& a, const Expr& b) {
  if (a.is_const() && b.is_const()) return Expr(wrap_mul(a.value(), b.value()));
  if (is_const(a, 0) || is_const(b, 0)) return Expr(0);
  if (is_const(a, 1)) return b;
  if (is_const(b, 1)) return a;
  if (a.is_const()) return b * a;
  if (b.is_const() && a.kind() == ExprKind::Mul && a.rhs().is_const())
    return a.lhs() * Expr(wrap_mul(a.rhs().value(), b.value()));
  return make_expr(ExprKind::Mul, a, b);
}

Expr operator-(const Expr& a, const Expr& b) {
  return a + Expr(-1) * b;
}

Expr floordiv(const Expr& a, const Expr& b) {
  if (b.is_const() && b.value() != 0) {
    if (a.is_const()) return Expr(python_floordiv(a.value(), b.value()));
    if (b.value() == 1) return a;
  }
  if (is_const(a, 0) && b.is_const() && b.value() != 0) return Expr(0);
  return make_expr(ExprKind::FloorDiv, a, b);
}

Expr mod(const Expr& a, const Expr& b) {
  if (b.is_const() && b.value() != 0) {
    if (a.is_const()) return Expr(python_mod(a.value(), b.value()));
    if (b.value() == 1 || b.value() == -1) return Expr(0);
    if (is_const(a, 0)) return Expr(0);
  }
  return make_expr(ExprKind::Mod, a, b);
}

Expr min(const Expr& a, const Expr& b) {
  if (a.is_const() && b.is_const()) return Expr(std::min(a.value(), b.value()));
  if (a == b) return a;
  return make_expr(ExprKind::Min, a, b);
}

Expr max(const Expr& a, const Expr& b) {
  if (a.is_const() && b.is_const()) return Expr(std::max(a.value(), b.value()));
  if (a == b) return a;
  return make_expr(ExprKind::Max, a, b);
}

Expr lt(const Expr& a, const Expr& b) {
  if (a.is_const() && b.is_const()) return Expr(a.value() < b.value() ? 1 : 0);
  if (a == b) return Expr(0);
  return make_expr(ExprKind::Lt, a, b);
}

Expr le(const Expr& a, const Expr& b) {
  if (a.is_const() && b.is_const()) return Expr(a.value() <= b.value() ? 1 : 0);
  if (a == b) return Expr(1);
  return make_expr(ExprKind::Le, a, b);
}

Expr eq(const Expr& a, const Expr& b) {
  if (a.is_const() && b.is_const()) return Expr(a.value() == b.value() ? 1 : 0);
  if (a == b) return Expr(1);
  return make_expr(ExprKind::Eq, a, b);
}

Expr ne(const Expr& a, const Expr& b) {
  if (a.is_const() && b.is_const()) return Expr(a.value() != b.value() ? 1 : 0);
  if (a == b) return Expr(0);
  return make_expr(ExprKind::Ne, a, b);
}

namespace {

Expr rebuild(ExprKind kind, const Expr& a, const Expr& b) {
  switch (kind) {
    case ExprKind::Add:
      return a + b;
    case ExprKind::Mul:
      return a * b;
    case ExprKind::FloorDiv:
      return floordiv(a, b);
    case ExprKind::Mod:
      return mod(a, b);
    case ExprKind::Min:
      return min(a, b);
    case ExprKind::Max:
      return max(a, b);
    case ExprKind::Lt:
      return lt(a, b);
    case ExprKind::Le:
      return le(a, b);
    case ExprKind::Eq:
      return eq(a, b);
    case ExprKind::Ne:
      return ne(a, b);
    default:
      throw std::logic_error("rebuild: not a binary kind");
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Walks.

namespace {

Expr substitute_memo(const Expr& e, const std::map<std::string, Expr>& replacements,
                     std::unordered_map<const ExprNode*, Expr>& memo) {
  if (e.is_const()) return e;
  if (e.is_var()) {
    auto it = replacements.find(e.name());
    return it == replacements.end() ? e : it->second;
  }
  auto hit = memo.find(e.node());
  if (hit != memo.end()) return hit->second;
  Expr a = substitute_memo(e.lhs(), replacements, memo);
  Expr b = substitute_memo(e.rhs(), replacements, memo);
  Expr result = (a == e.lhs() && b == e.rhs()) ? e : rebuild(e.kind(), a, b);
  memo.emplace(e.node(), result);
  return result;
}

}  // namespace

Expr substitute(const Expr& e, const std::map<std::string, Expr>& replacements) {
  if (replacements.empty()) return e;
  std::unordered_map<const ExprNode*, Expr> memo;
  return substitute_memo(e, replacements, memo);
}

int64_t evaluate(const Expr& e, const std::map<std::string, int64_t>& values) {
  switch (e.kind()) {
    case ExprKind::Const:
      return e.value();
    case ExprKind::Var: {
      auto it = values.find(e.name());
      if (it == values.end())
        throw std::out_of_range("evaluate: unbound variable '" + e.name() + "'");
      return it->second;
    }
    default:
      break;
  }
  int64_t a = evaluate(e.lhs(), values);
  int64_t b = evaluate(e.rhs(), values);
  switch (e.kind()) {
    case ExprKind::Add:
      return wrap_add(a, b);
    case ExprKind::Mul:
      return wrap_mul(a, b);
    case ExprKind::FloorDiv:
      return python_floordiv(a, b);
    case ExprKind::Mod:
      return python_mod(a, b);
    case ExprKind::Min:
      return std::min(a, b);
    case ExprKind::Max:
      return std::max(a, b);
    case ExprKind::Lt:
      return a < b;
    case ExprKind::Le:
      return a <= b;
    case ExprKind::Eq:
      return a == b;
    case ExprKind::Ne:
      return a != b;
    default:
      throw std::logic_error("evaluate: unknown kind");
  }
}

namespace {

void collect_vars(const Expr& e, std::set<std::string>& out) {
  if (e.is_const()) return;
  if (e.is_var()) {
    out.insert(e.name());
    return;
  }
  collect_vars(e.lhs(), out);
  collect_vars(e.rhs(), out);
}

}  // namespace

std::set<std::string> free_vars(const Expr& e) {
  std::set<std::string> out;
  collect_vars(e, out);
  return out;
}

bool depends_on(const Expr& e, const std::string& var) {
  if (e.is_const()) return false;
  if (e.is_var()) return e.name() == var;
  return depends_on(e.lhs(), var) || depends_on(e.rhs(), var);
}

std::optional<int64_t> coefficient_of(const Expr& e, const std::string& var) {
  if (!depends_on(e, var)) return 0;
  switch (e.kind()) {
    case ExprKind::Var:
      return 1;
    case ExprKind::Add: {
      auto a = coefficient_of(e.lhs(), var), b = coefficient_of(e.rhs(), var);
      if (!a || !b) return std::nullopt;
      return wrap_add(*a, *b);
    }
    case ExprKind::Mul: {
      // Affine only when the other factor is a constant.
      if (e.rhs().is_const()) {
        auto a = coefficient_of(e.lhs(), var);
        if (!a) return std::nullopt;
        return wrap_mul(*a, e.rhs().value());
      }
      if (e.lhs().is_const()) {
        auto b = coefficient_of(e.rhs(), var);
        if (!b) return std::nullopt;
        return wrap_mul(*b, e.lhs().value());
      }
      return std::nullopt;
    }
    case ExprKind::FloorDiv:
    case ExprKind::Mod: {
      // (k*v + rest) // c == (k/c)*v + rest // c exactly when c divides k (and the % drops
      // the multiple of c), so those stay affine.
      if (!e.rhs().is_const() || e.rhs().value() == 0) return std::nullopt;
      auto a = coefficient_of(e.lhs(), var);
      int64_t c = e.rhs().value();
      if (!a || *a % c != 0) return std::nullopt;
      if (e.kind() == ExprKind::Mod) return 0;
      return *a / c;
    }
    default:
      return std::nullopt;
  }
}

std::optional<int64_t> coefficient_within_runs(const Expr& e, const std::string& var) {
  if (!depends_on(e, var)) return 0;
  switch (e.kind()) {
    case ExprKind::Var:
      return 1;
    case ExprKind::Add: {
      auto a = coefficient_within_runs(e.lhs(), var), b = coefficient_within_runs(e.rhs(), var);
      if (!a || !b) return std::nullopt;
      return wrap_add(*a, *b);
    }
    case ExprKind::Mul: {
      const Expr& constant = e.rhs().is_const() ? e.rhs() : e.lhs();
      const Expr& other = e.rhs().is_const() ? e.lhs() : e.rhs();
      if (!constant.is_const()) return std::nullopt;
      auto a = coefficient_within_runs(other, var);
      if (!a) return std::nullopt;
      return wrap_mul(*a, constant.value());
    }
    case ExprKind::Mod:
    case ExprKind::FloorDiv: {
      if (!e.rhs().is_const() || e.rhs().value() <= 1) return coefficient_of(e, var);
      const auto inner = coefficient_within_runs(e.lhs(), var);
      if (inner == std::optional<int64_t>(0)) return 0;  // stays put: so does its // or %
      if (inner != std::optional<int64_t>(1)) return coefficient_of(e, var);
      return e.kind() == ExprKind::Mod ? 1 : 0;
    }
    default:
      return std::nullopt;
  }
}

std::optional<ChunkStep> chunk_step(const Expr& e, const std::string& var, int64_t lanes) {
  if (!depends_on(e, var)) return ChunkStep{0, true};
  switch (e.kind()) {
    case ExprKind::Var:
      return ChunkStep{1, true};
    case ExprKind::Add: {
      const auto a = chunk_step(e.lhs(), var, lanes), b = chunk_step(e.rhs(), var, lanes);
      if (!a || !b) return std::nullopt;
      return ChunkStep{wrap_add(a->coefficient, b->coefficient),
                       a->steps_keep_alignment && b->steps_keep_alignment};
    }
    case ExprKind::Mul: {
      const Expr& constant = e.rhs().is_const() ? e.rhs() : e.lhs();
      const Expr& other = e.rhs().is_const() ? e.lhs() : e.rhs();
      if (!constant.is_const()) return std::nullopt;
      const auto a = chunk_step(other, var, lanes);
      if (!a) return std::nullopt;
      return ChunkStep{wrap_mul(a->coefficient, constant.value()),
                       a->steps_keep_alignment || constant.value() % lanes == 0};
    }
    case ExprKind::Mod:
    case ExprKind::FloorDiv: {
      // Only `var // d` and `var % d` with whole chunks per run: chunk starts are multiples of
      // lanes, so are the run starts, and no chunk crosses one.
      if (e.lhs().kind() != ExprKind::Var || !e.rhs().is_const() || e.rhs().value() <= 0 ||
          e.rhs().value() % lanes != 0)
        return std::nullopt;
      if (e.kind() == ExprKind::Mod) return ChunkStep{1, true};
      return ChunkStep{0, false};  // steps by one per run
    }
    default:
      return std::nullopt;
  }
}

}  // namespace inductor_cpp::ir
