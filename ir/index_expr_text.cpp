/// \file
/// The text form of index expressions: the printer (minimal parentheses, `a - b` for negative
/// terms) and the recursive-descent parser that reads it back, along with sympy's `Min`/`Max`
/// spellings. parse_expr(to_string(e)) == e holds because the printer writes exactly the tree
/// and the parser rebuilds it through the same folding builders.
#include "ir/index_expr.h"

#include <cstring>
#include <limits>
#include <stdexcept>

namespace inductor_cpp::ir {

// ---------------------------------------------------------------------------------------------
// Printer. Precedence levels: comparison < additive < multiplicative < unary < atom.

namespace {

enum Prec { kCmp = 1, kAdd = 2, kMul = 3, kUnary = 4, kAtom = 5 };

bool is_const(const Expr& e, int64_t v) {
  return e.is_const() && e.value() == v;
}

bool is_neg_const(const Expr& e) {
  return e.is_const() && e.value() < 0;
}
/// A negatable constant: its absolute value fits (INT64_MIN does not).
bool is_negatable_neg_const(const Expr& e) {
  return is_neg_const(e) && e.value() != std::numeric_limits<int64_t>::min();
}

int precedence(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::Const:
      return e.value() < 0 ? kUnary : kAtom;
    case ExprKind::Var:
    case ExprKind::Min:
    case ExprKind::Max:
      return kAtom;
    case ExprKind::Add:
      return kAdd;
    case ExprKind::Mul:
      return is_const(e.rhs(), -1) ? kUnary : kMul;
    case ExprKind::FloorDiv:
    case ExprKind::Mod:
      return kMul;
    default:
      return kCmp;
  }
}

bool is_div_or_mod(const Expr& e) {
  return e.kind() == ExprKind::FloorDiv || e.kind() == ExprKind::Mod;
}

void print(const Expr& e, std::string& out);

void print_wrapped(const Expr& e, bool parens, std::string& out) {
  if (parens) out += '(';
  print(e, out);
  if (parens) out += ')';
}

/// Left operand of a multiplicative operator. `//` and `%` operands get parentheses even
/// where precedence does not need them: `(x // 4) % 3` reads better than `x // 4 % 3`.
void print_mul_lhs(const Expr& e, std::string& out) {
  print_wrapped(e, precedence(e) < kMul || is_div_or_mod(e), out);
}

void print_binary_op(const Expr& e, const char* op, std::string& out) {
  print_mul_lhs(e.lhs(), out);
  out += op;
  print_wrapped(e.rhs(), precedence(e.rhs()) <= kMul, out);
}

void print(const Expr& e, std::string& out) {
  switch (e.kind()) {
    case ExprKind::Const:
      out += std::to_string(e.value());
      return;
    case ExprKind::Var:
      out += e.name();
      return;
    case ExprKind::Add: {
      print_wrapped(e.lhs(), precedence(e.lhs()) < kAdd, out);
      const Expr& b = e.rhs();
      if (is_negatable_neg_const(b)) {
        out += " - " + std::to_string(-b.value());
      } else if (b.kind() == ExprKind::Mul && is_const(b.rhs(), -1)) {
        out += " - ";
        print_wrapped(b.lhs(), precedence(b.lhs()) <= kAdd, out);
      } else if (b.kind() == ExprKind::Mul && is_negatable_neg_const(b.rhs())) {
        out += " - ";
        print_mul_lhs(b.lhs(), out);
        out += "*" + std::to_string(-b.rhs().value());
      } else {
        out += " + ";
        print_wrapped(b, precedence(b) <= kAdd, out);
      }
      return;
    }
    case ExprKind::Mul:
      if (is_const(e.rhs(), -1)) {
        out += '-';
        print_wrapped(e.lhs(), precedence(e.lhs()) < kUnary, out);
        return;
      }
      print_binary_op(e, "*", out);
      return;
    case ExprKind::FloorDiv:
      print_binary_op(e, " // ", out);
      return;
    case ExprKind::Mod:
      print_binary_op(e, " % ", out);
      return;
    case ExprKind::Min:
    case ExprKind::Max:
      out += e.kind() == ExprKind::Min ? "min(" : "max(";
      print(e.lhs(), out);
      out += ", ";
      print(e.rhs(), out);
      out += ')';
      return;
    default:
      print_wrapped(e.lhs(), precedence(e.lhs()) <= kCmp, out);
      out += comparison_operator(e.kind());
      print_wrapped(e.rhs(), precedence(e.rhs()) <= kCmp, out);
      return;
  }
}

}  // namespace

std::string to_string(const Expr& e) {
  std::string out;
  print(e, out);
  return out;
}

const char* comparison_operator(ExprKind kind) {
  switch (kind) {
    case ExprKind::Lt:
      return " < ";
    case ExprKind::Le:
      return " <= ";
    case ExprKind::Eq:
      return " == ";
    default:
      return " != ";
  }
}

// ---------------------------------------------------------------------------------------------
// Parser: recursive descent over the grammar
//   comparison := additive [('<' | '<=' | '>' | '>=' | '==' | '!=') additive]
//   additive   := multiplicative (('+' | '-') multiplicative)*
//   multiplicative := unary (('*' | '//' | '%') unary)*
//   unary      := '-' unary | '+' unary | power          ('-' before digits: a negative literal)
//   power      := primary ['**' integer]                  (sympy's s0**2: a product of copies)
//   primary    := integer | identifier | (min|max|Min|Max) '(' comparison ',' comparison ')'
//               | '(' comparison ')'

namespace {

bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '%';
}
bool is_ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

class ExprParser {
 public:
  explicit ExprParser(const std::string& text) : text_(text) {}

  Expr parse_all() {
    Expr e = comparison();
    skip_space();
    if (pos_ != text_.size()) fail("unexpected '" + std::string(1, text_[pos_]) + "'");
    return e;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::invalid_argument("parse_expr: " + what + " at position " + std::to_string(pos_) +
                                " in '" + text_ + "'");
  }

  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }

  /// Consumes `token` if the input continues with it (after spaces).
  bool accept(const char* token) {
    skip_space();
    size_t n = std::strlen(token);
    if (text_.compare(pos_, n, token) != 0) return false;
    pos_ += n;
    return true;
  }

  void expect(const char* token) {
    if (!accept(token)) fail(std::string("expected '") + token + "'");
  }

  Expr comparison() {
    Expr a = additive();
    // Two-character operators first.
    if (accept("<=")) return le(a, additive());
    if (accept(">=")) return le(additive(), a);
    if (accept("==")) return eq(a, additive());
    if (accept("!=")) return ne(a, additive());
    if (accept("<")) return lt(a, additive());
    if (accept(">")) return lt(additive(), a);
    return a;
  }

  Expr additive() {
    Expr a = multiplicative();
    while (true) {
      if (accept("+")) {
        a = a + multiplicative();
      } else if (accept("-")) {
        a = a - multiplicative();
      } else {
        return a;
      }
    }
  }

  Expr multiplicative() {
    Expr a = unary();
    while (true) {
      if (accept("//")) {
        a = floordiv(a, unary());
      } else if (accept("*")) {
        a = a * unary();
      } else if (accept("%")) {
        a = mod(a, unary());
      } else {
        return a;
      }
    }
  }

  Expr unary() {
    if (accept("-")) {
      if (pos_ < text_.size() && is_digit(text_[pos_])) return Expr(integer(/*negative=*/true));
      return Expr(-1) * unary();
    }
    if (accept("+")) return unary();
    return power();
  }

  /// sympy prints a square size (an image's H = W symbol) as `3*s0**2`. Only small
  /// non-negative integer exponents occur in sizes and strides; the power becomes a product.
  Expr power() {
    Expr base = primary();
    if (!accept("**")) return base;
    skip_space();
    if (pos_ >= text_.size() || !is_digit(text_[pos_])) fail("expected an integer exponent");
    const size_t start = pos_;
    const int64_t exponent = integer(/*negative=*/false);
    if (exponent > kMaxExponent) {
      pos_ = start;
      fail("exponent above " + std::to_string(kMaxExponent));
    }
    Expr product(1);
    for (int64_t i = 0; i < exponent; ++i) product = product * base;
    return product;
  }

  static constexpr int64_t kMaxExponent = 8;

  int64_t integer(bool negative) {
    uint64_t v = 0;
    const uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
    size_t start = pos_;
    while (pos_ < text_.size() && is_digit(text_[pos_])) {
      uint64_t d = static_cast<uint64_t>(text_[pos_] - '0');
      if (v > (limit - d) / 10) {
        pos_ = start;
        fail("integer literal out of int64 range");
      }
      v = v * 10 + d;
      ++pos_;
    }
    return negative ? static_cast<int64_t>(0 - v) : static_cast<int64_t>(v);
  }

  Expr primary() {
    skip_space();
    if (pos_ >= text_.size()) fail("unexpected end of input");
    char c = text_[pos_];
    if (is_digit(c)) return Expr(integer(/*negative=*/false));
    if (c == '(') {
      ++pos_;
      Expr e = comparison();
      expect(")");
      return e;
    }
    if (!is_ident_start(c)) fail("unexpected '" + std::string(1, c) + "'");
    size_t start = pos_++;
    while (pos_ < text_.size() && is_ident_char(text_[pos_])) ++pos_;
    std::string name = text_.substr(start, pos_ - start);
    bool is_min = name == "min" || name == "Min";
    bool is_max = name == "max" || name == "Max";
    if (is_min || is_max) {
      size_t save = pos_;
      if (accept("(")) {
        Expr a = comparison();
        expect(",");
        Expr b = comparison();
        expect(")");
        return is_min ? min(a, b) : max(a, b);
      }
      pos_ = save;  // a variable that happens to be called min
    }
    if (name == "%") fail("expected an identifier after '%'");
    return Expr::var(name);
  }

  const std::string& text_;
  size_t pos_ = 0;
};

}  // namespace

Expr parse_expr(const std::string& text) {
  return ExprParser(text).parse_all();
}

}  // namespace inductor_cpp::ir
