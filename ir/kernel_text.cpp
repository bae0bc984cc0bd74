/// \file
/// Text form of scheduled kernels: kernel_to_text (declared in ir/kernel_ir.h) and
/// parse_kernel. One statement per line; a For opens a `{ ... }` block. Syntax in
/// ir/kernel_ir.h and ir/ir_text.h.
#include <regex>
#include <sstream>
#include <stdexcept>

#include "ir/ir_text.h"
#include "ir/ir_text_internal.h"
#include "ir/kernel_ir.h"

namespace inductor_cpp::ir {
namespace {

using text::Cursor;

std::string loop_header(const Stmt& s) {
  std::string line = "for " + s.var + " in 0.." + to_string(s.extent);
  if (s.parallel)
    line += s.chunk == 0 ? " parallel" : " parallel(chunk=" + std::to_string(s.chunk) + ")";
  if (s.vector_width > 0) line += " vector(" + std::to_string(s.vector_width) + ")";
  if (s.gpu_threads > 0) line += " gpu(threads=" + std::to_string(s.gpu_threads) + ")";
  return line + " {";
}

void print_stmts(std::string& out, const std::vector<Stmt>& body, const BufferTypes& types,
                 int depth) {
  const std::string indent(2 * depth, ' ');
  for (const Stmt& s : body) {
    switch (s.kind) {
      case StmtKind::For:
        out += indent + loop_header(s) + "\n";
        print_stmts(out, s.body, types, depth + 1);
        out += indent + "}\n";
        break;
      case StmtKind::Let:
        out += indent + "let " + s.name + " = " + to_string(s.value, types) + "\n";
        break;
      case StmtKind::DefineAccumulator:
        out += indent + s.name + " = accumulator " + reduce_op_name(s.reduce_op) + " " +
               dtype_name(s.dtype) + "\n";
        break;
      case StmtKind::Accumulate:
        out += indent + s.name + " += " + to_string(s.value, types);
        if (s.index != Expr(0)) out += " at " + to_string(s.index);
        out += "\n";
        break;
      case StmtKind::Store:
        out += indent + s.buffer + "[" + to_string(s.index) + "] = " + to_string(s.value, types) +
               "\n";
        break;
    }
  }
}

// ---- Parsing ------------------------------------------------------------------------------

struct Line {
  int number;
  std::string text;
};

/// `for <var> in 0..<extent> [parallel[(chunk=N)]] [vector(W)] [gpu(threads=T)] {`. The extent is
/// an index expression with spaces in it, so the attributes are taken off the end first.
Stmt parse_loop_header(Cursor& c) {
  Stmt s;
  s.kind = StmtKind::For;
  s.var = c.name("a loop variable");
  c.expect("in");
  c.expect("0..");
  std::string rest = c.rest();
  static const std::regex kOpen(R"(\s*\{\s*$)");
  static const std::regex kGpu(R"(\s+gpu\(threads=(\d+)\)$)");
  static const std::regex kVector(R"(\s+vector\((\d+)\)$)");
  static const std::regex kParallel(R"(\s+parallel(\(chunk=(\d+)\))?$)");
  std::smatch m;
  if (!std::regex_search(rest, m, kOpen)) c.fail("a for line ends with '{'");
  rest = rest.substr(0, m.position(0));
  if (std::regex_search(rest, m, kGpu)) {
    s.gpu_threads = std::stoi(m[1].str());
    rest = rest.substr(0, m.position(0));
  }
  if (std::regex_search(rest, m, kVector)) {
    s.vector_width = std::stoi(m[1].str());
    rest = rest.substr(0, m.position(0));
  }
  if (std::regex_search(rest, m, kParallel)) {
    s.parallel = true;
    if (m[2].matched) s.chunk = std::stoll(m[2].str());
    rest = rest.substr(0, m.position(0));
  }
  Cursor extent(rest, 0);
  try {
    s.extent = extent.rest_as_expr();
  } catch (const std::invalid_argument& e) {
    c.fail(std::string("bad loop extent: ") + e.what());
  }
  return s;
}

class KernelParser {
 public:
  explicit KernelParser(std::vector<Line> lines, BufferTypes types)
      : lines_(std::move(lines)), types_(std::move(types)) {}

  /// Statements up to the '}' closing the block opened on line `opened` (consumed).
  std::vector<Stmt> block(int opened) {
    std::vector<Stmt> body;
    while (next_ < lines_.size()) {
      const Line& line = lines_[next_++];
      Cursor c(line.text, line.number);
      if (c.consume("}")) {
        c.expect_end();
        return body;
      }
      body.push_back(statement(c, line.number));
    }
    throw std::invalid_argument("line " + std::to_string(opened) +
                                ": block has no closing '}' before the end of the text");
  }

  bool done() const { return next_ >= lines_.size(); }
  const Line& current() const { return lines_[next_]; }

 private:
  Stmt statement(Cursor& c, int line_number) {
    if (c.consume("for ")) {
      Stmt s = parse_loop_header(c);
      s.body = block(line_number);
      return s;
    }
    if (c.consume("let ")) {
      const std::string name = c.name("a local name");
      c.expect("=");
      Stmt s = Stmt::let(name, value(c));
      c.expect_end();
      return s;
    }
    const std::string target = c.name("a statement");
    if (c.consume("[")) {
      const Expr index = c.expr();
      c.expect("]");
      c.expect("=");
      Stmt s = Stmt::store(target, index, value(c));
      c.expect_end();
      return s;
    }
    if (c.consume("+=")) {
      const Value v = value(c);
      const Expr index = c.consume("at ") ? c.rest_as_expr() : Expr(0);
      c.expect_end();
      return Stmt::accumulate(target, v, index);
    }
    c.expect("=");
    c.expect("accumulator");
    const std::string op = c.name("a reduce op");
    auto parsed = reduce_op_from_name(op);
    if (!parsed) c.fail("unknown reduce op '" + op + "'");
    const DType t = c.dtype();
    c.expect_end();
    return Stmt::define_accumulator(target, *parsed, t);
  }

  Value value(Cursor& c) { return text::parse_value_at(c, types_); }

  std::vector<Line> lines_;
  BufferTypes types_;
  size_t next_ = 0;
};

/// `kernel <name>(<buffer>: <dtype> in|out, ...) [symbols(s0, ...)] {`
Kernel parse_kernel_header(Cursor& c) {
  Kernel k;
  c.expect("kernel");
  k.name = c.name("a kernel name");
  c.expect("(");
  if (!c.consume(")")) {
    do {
      KernelParam p;
      p.buffer = c.name("a buffer name");
      c.expect(":");
      p.dtype = c.dtype();
      const std::string mode = c.name("in or out");
      if (mode != "in" && mode != "out") c.fail("expected in or out, got '" + mode + "'");
      p.written = mode == "out";
      k.params.push_back(std::move(p));
    } while (c.consume(","));
    c.expect(")");
  }
  if (c.consume("symbols")) {
    c.expect("(");
    if (!c.consume(")")) {
      do {
        k.symbols.push_back(c.name("a symbol"));
      } while (c.consume(","));
      c.expect(")");
    }
  }
  c.expect("{");
  c.expect_end();
  return k;
}

}  // namespace

BufferTypes buffer_types(const Kernel& kernel) {
  BufferTypes types;
  for (const KernelParam& p : kernel.params) types.emplace(p.buffer, p.dtype);
  return types;
}

std::string kernel_to_text(const Kernel& k) {
  std::string out = "kernel " + k.name + "(";
  for (size_t i = 0; i < k.params.size(); ++i) {
    if (i > 0) out += ", ";
    const KernelParam& p = k.params[i];
    out += p.buffer + ": " + dtype_name(p.dtype) + (p.written ? " out" : " in");
  }
  out += ")";
  if (!k.symbols.empty()) {
    out += " symbols(";
    for (size_t i = 0; i < k.symbols.size(); ++i) out += (i > 0 ? ", " : "") + k.symbols[i];
    out += ")";
  }
  out += " {\n";
  print_stmts(out, k.body, buffer_types(k), 1);
  return out + "}\n";
}

Kernel parse_kernel(const std::string& text) {
  std::vector<Line> lines;
  std::istringstream in(text);
  std::string raw;
  for (int number = 1; std::getline(in, raw); ++number) {
    Cursor c(raw, number);
    if (c.at_end() || c.peek() == '#') continue;
    lines.push_back({number, raw});
  }
  if (lines.empty()) throw std::invalid_argument("expected 'kernel <name>(...) {' (empty text)");
  Cursor header(lines.front().text, lines.front().number);
  Kernel k = parse_kernel_header(header);
  const int opened = lines.front().number;
  lines.erase(lines.begin());
  KernelParser parser(std::move(lines), buffer_types(k));
  k.body = parser.block(opened);
  if (!parser.done()) {
    Cursor(parser.current().text, parser.current().number).fail("text after the end of the kernel");
  }
  return k;
}

}  // namespace inductor_cpp::ir
