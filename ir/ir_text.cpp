/// \file
/// Text form of values (printer and parser), and the lexing cursor the program and kernel
/// parsers share. Values print as nested calls; see ir/value.h and ir/ir_text.h for the
/// syntax.
#include "ir/ir_text.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "ir/ir_text_internal.h"

namespace inductor_cpp::ir {
namespace text {

namespace {

bool is_name_char(char ch) {
  return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.' || ch == '%';
}

bool same_bits(double a, double b) {
  return std::memcmp(&a, &b, sizeof(double)) == 0;
}

}  // namespace

// ---- Cursor -------------------------------------------------------------------------------

void Cursor::skip_spaces() {
  while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
}

bool Cursor::at_end() {
  skip_spaces();
  return pos_ >= text_.size();
}

char Cursor::peek() {
  skip_spaces();
  return pos_ < text_.size() ? text_[pos_] : '\0';
}

bool Cursor::consume(const std::string& s) {
  skip_spaces();
  if (text_.compare(pos_, s.size(), s) != 0) return false;
  pos_ += s.size();
  return true;
}

void Cursor::expect(const std::string& s) {
  if (!consume(s)) fail("expected '" + s + "'");
}

void Cursor::expect_end() {
  if (!at_end()) fail("unexpected text");
}

std::string Cursor::name(const char* what) {
  skip_spaces();
  size_t end = pos_;
  while (end < text_.size() && is_name_char(text_[end])) ++end;
  if (end == pos_) fail(std::string("expected ") + what);
  std::string result = text_.substr(pos_, end - pos_);
  pos_ = end;
  return result;
}

std::string Cursor::token(const char* what) {
  skip_spaces();
  size_t end = pos_;
  while (end < text_.size() && !std::isspace(static_cast<unsigned char>(text_[end]))) ++end;
  if (end == pos_) fail(std::string("expected ") + what);
  std::string result = text_.substr(pos_, end - pos_);
  pos_ = end;
  return result;
}

int64_t Cursor::integer() {
  skip_spaces();
  const size_t start = pos_;
  std::string digits;
  if (pos_ < text_.size() && (text_[pos_] == '-' || text_[pos_] == '+')) digits += text_[pos_++];
  while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
    digits += text_[pos_++];
  }
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(digits.c_str(), &end, 10);
  if (digits.empty() || end != digits.c_str() + digits.size() || errno == ERANGE) {
    pos_ = start;
    fail("expected an integer");
  }
  return v;
}

std::string Cursor::literal() {
  skip_spaces();
  const size_t start = pos_;
  while (pos_ < text_.size() && !std::isspace(static_cast<unsigned char>(text_[pos_])) &&
         std::strchr(":,)]", text_[pos_]) == nullptr) {
    ++pos_;
  }
  return text_.substr(start, pos_ - start);
}

DType Cursor::dtype() {
  skip_spaces();
  const size_t start = pos_;
  const std::string n = name("a dtype");
  if (auto t = dtype_from_name(n)) return *t;
  fail_at(start, "unknown dtype '" + n + "'");
}

Expr Cursor::expr() {
  skip_spaces();
  const size_t start = pos_;
  int depth = 0;
  for (; pos_ < text_.size(); ++pos_) {
    const char ch = text_[pos_];
    if (ch == '(' || ch == '[') {
      ++depth;
    } else if (ch == ')' || ch == ']' || ch == '}' || ch == ',') {
      if (depth == 0) break;
      if (ch != ',') --depth;
    }
  }
  return parse_expr_text(text_.substr(start, pos_ - start), start);
}

Expr Cursor::rest_as_expr() {
  skip_spaces();
  const size_t start = pos_;
  pos_ = text_.size();
  return parse_expr_text(text_.substr(start), start);
}

Expr Cursor::parse_expr_text(const std::string& s, size_t at) const {
  if (s.find_first_not_of(" \t") == std::string::npos) fail_at(at, "expected an index expression");
  try {
    return parse_expr(s);
  } catch (const std::invalid_argument& e) {  // parse_expr's own message
    fail_at(at, "bad index expression '" + s + "': " + e.what());
  }
}

std::vector<Expr> Cursor::expr_list(char open, char close) {
  expect(std::string(1, open));
  std::vector<Expr> result;
  if (consume(std::string(1, close))) return result;
  do {
    result.push_back(expr());
  } while (consume(","));
  expect(std::string(1, close));
  return result;
}

void Cursor::fail_at(size_t position, const std::string& what) const {
  Cursor where(*this);
  where.pos_ = position;
  where.fail(what);
}

void Cursor::fail(const std::string& what) const {
  std::string where = line_ > 0 ? "line " + std::to_string(line_) + ", " : "";
  where += "column " + std::to_string(pos_ + 1);
  std::string context = text_.substr(pos_, 40);
  if (context.empty()) context = "<end>";
  throw ParseError(where + ": " + what + " at '" + context + "' in: " + text_);
}

// ---- Printing -----------------------------------------------------------------------------

std::string expr_list_text(const std::vector<Expr>& exprs, char open, char close) {
  std::string out(1, open);
  for (size_t k = 0; k < exprs.size(); ++k) {
    if (k > 0) out += ", ";
    out += to_string(exprs[k]);
  }
  out += close;
  return out;
}

std::string float_text(double v) {
  if (std::isnan(v)) return std::signbit(v) ? "-nan" : "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (same_bits(std::strtod(buf, nullptr), v)) break;
  }
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

namespace {

std::string literal_text(const ValueNode& n) {
  if (n.dtype == DType::Bool) return n.int_value != 0 ? "true" : "false";
  if (is_floating(n.dtype)) return float_text(n.float_value);
  return std::to_string(n.int_value);
}

void print_value(std::string& out, const Value& v, const BufferTypes& known, bool all_types) {
  if (!v) {
    out += "<null>";
    return;
  }
  const ValueNode& n = *v;
  switch (n.kind) {
    case ValueKind::Load: {
      out += "load(" + n.name;
      auto it = known.find(n.name);
      if (all_types || it == known.end() || it->second != n.dtype) {
        out += std::string(":") + dtype_name(n.dtype);
      }
      out += ", " + expr_list_text(n.index);
      if (n.mask != Expr(1)) out += ", mask=" + to_string(n.mask);
      if (!n.operands.empty()) {
        out += ", indirect=[";
        for (size_t k = 0; k < n.operands.size(); ++k) {
          if (k > 0) out += ", ";
          print_value(out, n.operands[k], known, all_types);
        }
        out += "]";
      }
      if (!n.bounds.empty()) out += ", bounds=" + expr_list_text(n.bounds);
      out += ")";
      return;
    }
    case ValueKind::Constant:
      out += literal_text(n) + ":" + dtype_name(n.dtype);
      return;
    case ValueKind::IndexValue:
      out += "index(" + to_string(n.index.at(0)) + ", " + dtype_name(n.dtype) + ")";
      return;
    case ValueKind::Local:
      out += "local(" + n.name + ", " + dtype_name(n.dtype) + ")";
      return;
    case ValueKind::Cast:
      out += "cast(";
      print_value(out, n.operands.at(0), known, all_types);
      out += std::string(", ") + dtype_name(n.dtype) + ")";
      return;
    case ValueKind::Unary:
    case ValueKind::Binary:
    case ValueKind::Where:
      out += n.kind == ValueKind::Unary    ? unary_op_name(n.unary_op())
             : n.kind == ValueKind::Binary ? binary_op_name(n.binary_op())
                                           : "where";
      out += "(";
      for (size_t k = 0; k < n.operands.size(); ++k) {
        if (k > 0) out += ", ";
        print_value(out, n.operands[k], known, all_types);
      }
      out += ")";
      return;
  }
}

// ---- Parsing ------------------------------------------------------------------------------

bool starts_literal(const std::string& rest) {
  if (rest.empty()) return false;
  const char ch = rest[0];
  if (std::isdigit(static_cast<unsigned char>(ch)) || ch == '-' || ch == '+' || ch == '.') {
    return true;
  }
  for (const char* word : {"inf:", "nan:", "true:", "false:"}) {
    if (rest.compare(0, std::strlen(word), word) == 0) return true;
  }
  return false;
}

double parse_float_literal(const std::string& s, Cursor& c) {
  if (s == "nan") return std::nan("");
  if (s == "-nan") return -std::nan("");
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size()) c.fail("bad float literal '" + s + "'");
  return v;
}

Value parse_constant(Cursor& c) {
  const std::string literal = c.literal();
  c.expect(":");
  const DType t = c.dtype();
  if (is_floating(t)) return constant_float(parse_float_literal(literal, c), t);
  if (t == DType::Bool) {
    if (literal != "true" && literal != "false") c.fail("bool literal must be true or false");
    return constant_int(literal == "true" ? 1 : 0, t);
  }
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(literal.c_str(), &end, 10);
  if (literal.empty() || end != literal.c_str() + literal.size() || errno == ERANGE) {
    c.fail("bad integer literal '" + literal + "'");
  }
  return constant_int(v, t);
}

Value parse_load(Cursor& c, const BufferTypes& known) {
  c.skip_spaces();
  const size_t start = c.position();
  const std::string buffer = c.name("a buffer name");
  std::optional<DType> dtype;
  if (c.consume(":")) {
    dtype = c.dtype();
  } else if (auto it = known.find(buffer); it != known.end()) {
    dtype = it->second;
  } else {
    c.fail_at(start, "load of " + buffer + " needs its dtype (load(" + buffer + ":float32, ...))");
  }
  c.expect(",");
  std::vector<Expr> index = c.expr_list('[', ']');
  Expr mask(1);
  std::vector<Value> indirect;
  std::vector<Expr> bounds;
  while (c.consume(",")) {
    const std::string key = c.name("mask=, indirect= or bounds=");
    c.expect("=");
    if (key == "mask") {
      mask = c.expr();
    } else if (key == "indirect") {
      c.expect("[");
      if (!c.consume("]")) {
        do {
          indirect.push_back(parse_value_at(c, known));
        } while (c.consume(","));
        c.expect("]");
      }
    } else if (key == "bounds") {
      bounds = c.expr_list('[', ']');
    } else {
      c.fail("unknown load argument '" + key + "'");
    }
  }
  c.expect(")");
  return load(buffer, *dtype, std::move(index), mask, std::move(indirect), std::move(bounds));
}

Value parse_call(Cursor& c, const BufferTypes& known) {
  c.skip_spaces();
  const size_t start = c.position();
  const std::string op = c.name("a value");
  if (c.peek() == ':') c.fail_at(start, "unknown literal '" + op + "'");
  c.expect("(");
  if (op == "load") return parse_load(c, known);
  Value result;
  if (op == "index") {
    const Expr e = c.expr();
    c.expect(",");
    result = index_value(e, c.dtype());
  } else if (op == "local") {
    const std::string n = c.name("a local name");
    c.expect(",");
    result = local(n, c.dtype());
  } else if (op == "cast") {
    const Value x = parse_value_at(c, known);
    c.expect(",");
    result = cast(x, c.dtype());
  } else if (op == "where") {
    const Value cond = parse_value_at(c, known);
    c.expect(",");
    const Value a = parse_value_at(c, known);
    c.expect(",");
    result = where(cond, a, parse_value_at(c, known));
  } else if (auto u = unary_op_from_name(op)) {
    result = unary(*u, parse_value_at(c, known));
  } else if (auto b = binary_op_from_name(op)) {
    const Value x = parse_value_at(c, known);
    c.expect(",");
    result = binary(*b, x, parse_value_at(c, known));
  } else {
    c.fail_at(start, "unknown value op '" + op + "'");
  }
  c.expect(")");
  return result;
}

}  // namespace

Value parse_value_at(Cursor& c, const BufferTypes& known) {
  c.skip_spaces();
  const size_t start = c.position();
  try {
    if (starts_literal(c.rest())) return parse_constant(c);
    return parse_call(c, known);
  } catch (const ParseError&) {
    throw;
  } catch (const std::invalid_argument& e) {
    c.fail_at(start, e.what());  // a builder's type error: say where it is
  }
}

}  // namespace text

std::string to_string(const Value& v) {
  std::string out;
  text::print_value(out, v, {}, /*all_types=*/true);
  return out;
}

std::string to_string(const Value& v, const BufferTypes& known) {
  std::string out;
  text::print_value(out, v, known, /*all_types=*/false);
  return out;
}

Value parse_value(const std::string& s, const BufferTypes& known) {
  text::Cursor c(s);
  Value v = text::parse_value_at(c, known);
  c.expect_end();
  return v;
}

}  // namespace inductor_cpp::ir
