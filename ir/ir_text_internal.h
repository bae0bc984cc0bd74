/// \file
/// Private to the IR text printers and parsers (ir_text.cpp, program_text.cpp,
/// kernel_text.cpp): a cursor over one line of text with the small lexing steps they share,
/// and the value printer/parser working on it.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/index_expr.h"
#include "ir/ir_text.h"
#include "ir/value.h"

namespace inductor_cpp::ir::text {

/// What Cursor::fail throws: a message that already says where.
struct ParseError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

/// Reads a piece of text left to right; every failure throws std::invalid_argument saying
/// where (line, if known, and column) and what was expected.
class Cursor {
 public:
  /// `line` 0: not part of a multi-line text (no line number in messages).
  explicit Cursor(std::string text, int line = 0) : text_(std::move(text)), line_(line) {}

  void skip_spaces();
  /// True when only spaces are left.
  bool at_end();
  /// The next non-space character, '\0' at the end.
  char peek();
  /// Skips spaces; if the text continues with `s`, consumes it and returns true.
  bool consume(const std::string& s);
  void expect(const std::string& s);
  /// Fails unless only spaces are left.
  void expect_end();
  /// A name: buffer (%in0, %5.1), variable, keyword ([A-Za-z0-9_.%]+).
  std::string name(const char* what = "a name");
  /// A run of non-space characters.
  std::string token(const char* what);
  int64_t integer();
  /// A constant's literal: the characters up to ':' (or a space or delimiter).
  std::string literal();
  DType dtype();
  /// An index expression running up to the next ',', ')', ']' or '}' outside brackets.
  Expr expr();
  /// Everything left, as an index expression.
  Expr rest_as_expr();
  /// `open` expr, expr, ... `close` (possibly empty).
  std::vector<Expr> expr_list(char open, char close);
  /// The unread text.
  std::string rest() const { return text_.substr(pos_); }

  [[noreturn]] void fail(const std::string& what) const;
  /// Fails pointing at an earlier position (from position()).
  [[noreturn]] void fail_at(size_t position, const std::string& what) const;
  size_t position() const { return pos_; }

 private:
  Expr parse_expr_text(const std::string& s, size_t at) const;

  std::string text_;
  size_t pos_ = 0;
  int line_;
};

/// Names separated by ", ", "" printed as `_` (extern inputs and outputs, library operands).
std::string names_text(const std::vector<std::string>& names);
/// Names separated by ',' up to `close` (not consumed), or to the end when close is '\0';
/// `_` reads as "".
std::vector<std::string> parse_names(Cursor& c, char close);

/// Reads a library clause after its `library ` keyword (library_text's form, ir_text.h), up to
/// the end of what it recognizes; the caller checks what follows.
LibraryCall parse_library_at(Cursor& c, const BufferTypes& known);

/// Reads one value at the cursor (not the rest of the text).
Value parse_value_at(Cursor& c, const BufferTypes& known);

/// "[a, b]" with the given brackets.
std::string expr_list_text(const std::vector<Expr>& exprs, char open = '[', char close = ']');
/// Shortest text that reads back to exactly `v` (sign of zero included); always has a '.', an
/// exponent, or is inf/-inf/nan/-nan, so it never reads as an integer.
std::string float_text(double v);

}  // namespace inductor_cpp::ir::text
