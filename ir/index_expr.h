/// \file
/// Index algebra: immutable, hash-consed symbolic integer expressions.
///
/// Every index, size, stride and loop extent in the loop-level IR is an `Expr`. Nodes are
/// interned: building the same expression twice yields the same node, so equality and hashing
/// are pointer operations and common subexpressions are shared for free. Arithmetic is int64
/// with Python semantics for `//` and `%` (floor division, result of `%` has the divisor's
/// sign). Comparisons evaluate to 0 or 1.
///
/// Builders fold constants and drop identities (x+0, x*1, x*0) so trees stay small; everything
/// that needs variable ranges lives in simplify.h.
///
/// Text form (what to_string prints and parse_expr reads), C-like with Python operators:
///   i0*64 + i1        (i0 + 3) // 4        i1 % 8        min(i0, 5)        i0 < 7
/// Variables are identifiers ([A-Za-z_%][A-Za-z0-9_.]*): loop variables i0, r0, symbols s0,
/// indirect-index placeholders %ind0. parse_expr also reads sympy's spellings of Dynamo's size
/// expressions: Min/Max, and powers with an integer exponent up to 8 (`3*s0**2`, a product).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace inductor_cpp::ir {

/// The node kinds, listed once.
#define INDUCTOR_CPP_EXPR_KINDS(X) \
  X(Const)                         \
  X(Var)                           \
  X(Add)                           \
  X(Mul)                           \
  X(FloorDiv)                      \
  X(Mod)                           \
  X(Min)                           \
  X(Max)                           \
  X(Lt)                            \
  X(Le)                            \
  X(Eq)                            \
  X(Ne)

enum class ExprKind : uint8_t {
#define INDUCTOR_CPP_EXPR_ENUM(k) k,
  INDUCTOR_CPP_EXPR_KINDS(INDUCTOR_CPP_EXPR_ENUM)
#undef INDUCTOR_CPP_EXPR_ENUM
};

const char* expr_kind_name(ExprKind k);

struct ExprNode;

/// A handle to an interned expression node; cheap to copy, never null once built (a
/// default-constructed Expr is the constant 0).
class Expr {
 public:
  Expr();               ///< the constant 0
  Expr(int64_t value);  // NOLINT: implicit, so `i0 * 4 + 1` reads naturally
  static Expr var(const std::string& name);

  ExprKind kind() const;
  bool is_const() const { return kind() == ExprKind::Const; }
  bool is_var() const { return kind() == ExprKind::Var; }
  int64_t value() const;            ///< Const only
  const std::string& name() const;  ///< Var only
  Expr lhs() const;                 ///< binary kinds only
  Expr rhs() const;

  size_t hash() const;
  bool operator==(const Expr& o) const { return node_ == o.node_; }
  bool operator!=(const Expr& o) const { return node_ != o.node_; }
  /// A total order (by structure, stable across runs), for canonical sorting of operands.
  bool operator<(const Expr& o) const;

  const ExprNode* node() const { return node_.get(); }

 private:
  explicit Expr(std::shared_ptr<const ExprNode> node) : node_(std::move(node)) {}
  std::shared_ptr<const ExprNode> node_;
  friend Expr make_expr(ExprKind, Expr, Expr);
};

Expr operator+(const Expr& a, const Expr& b);
Expr operator-(const Expr& a, const Expr& b);  ///< a + (-1)*b
Expr operator*(const Expr& a, const Expr& b);
Expr floordiv(const Expr& a, const Expr& b);
Expr mod(const Expr& a, const Expr& b);
Expr min(const Expr& a, const Expr& b);
Expr max(const Expr& a, const Expr& b);
Expr lt(const Expr& a, const Expr& b);
Expr le(const Expr& a, const Expr& b);
Expr eq(const Expr& a, const Expr& b);
Expr ne(const Expr& a, const Expr& b);

/// Text form, as in the file comment; parse_expr(to_string(e)) == e.
std::string to_string(const Expr& e);
/// The infix spelling of a comparison kind, spaces around: " < ", " <= ", " == ", " != " (the
/// text form and C++ agree on it).
const char* comparison_operator(ExprKind kind);
/// Throws std::invalid_argument with the offending position on malformed text.
Expr parse_expr(const std::string& text);

/// Replaces variables by expressions (all at once, not recursively).
Expr substitute(const Expr& e, const std::map<std::string, Expr>& replacements);
/// Evaluates with Python semantics; throws std::out_of_range naming an unbound variable and
/// std::domain_error on division by zero.
int64_t evaluate(const Expr& e, const std::map<std::string, int64_t>& values);
std::set<std::string> free_vars(const Expr& e);
bool depends_on(const Expr& e, const std::string& var);

/// If `e` is affine in `var` (e(var+1) - e(var) is the same constant everywhere), that
/// constant; nullopt otherwise (var under //, %, min, max or a comparison). Emitters use it:
/// 1 = contiguous vector access, 0 = broadcast, anything else = strided.
std::optional<int64_t> coefficient_of(const Expr& e, const std::string& var);

/// How far `e` moves when `var` steps by one inside the runs a flattened variable makes:
/// `var % c` moves with `var` and `var // c` stays put (except where a run of c ends), and so
/// does anything of `var // c` alone. So `(xf // 3136) * 301056 + xf % 3136` (an NCHW read over
/// flattened N, H*W) is 1 and `((r // 56) % 56) * 5376 + (r % 56) * 96` (a view of an NHWC
/// tensor as [N*H*W, C]) is 96, where coefficient_of (exact everywhere) says nothing. Used to
/// tell how memory is walked, never to compute an address.
std::optional<int64_t> coefficient_within_runs(const Expr& e, const std::string& var);

/// How `e` moves inside chunks of `lanes` consecutive values of `var` that start at multiples
/// of `lanes` (a vector of lanes elements): `coefficient` such that e(b + l) = e(b) +
/// coefficient * l for every chunk start b and 0 <= l < lanes, and whether e(b) = e(0) (mod
/// lanes) for every chunk start (`steps_keep_alignment`: an aligned first chunk means aligned
/// chunks everywhere). Exact, unlike coefficient_within_runs: `xf % 96` and `(xf // 96) * 3072`
/// qualify for lanes 4 (96 is a multiple of 4, so no chunk crosses a run); `xf % 6` does not,
/// nor does `(xf + 1) % 96`. nullopt where e is not of that form.
struct ChunkStep {
  int64_t coefficient = 0;
  bool steps_keep_alignment = false;
};
std::optional<ChunkStep> chunk_step(const Expr& e, const std::string& var, int64_t lanes);

}  // namespace inductor_cpp::ir

template <>
struct std::hash<inductor_cpp::ir::Expr> {
  size_t operator()(const inductor_cpp::ir::Expr& e) const { return e.hash(); }
};
