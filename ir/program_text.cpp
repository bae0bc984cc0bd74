/// \file
/// Text form of LoopPrograms: program_to_text and parse_program (syntax in ir/ir_text.h).
/// Line-oriented: each buffer, compute, step, output list and symbol range is one line.
#include <set>
#include <sstream>
#include <stdexcept>

#include "ir/ir_text.h"
#include "ir/ir_text_internal.h"

namespace inductor_cpp::ir {

namespace text {

// "" (an unused output, a None graph output, an absent operand) prints as `_`.
std::string names_text(const std::vector<std::string>& names) {
  std::string out;
  for (size_t k = 0; k < names.size(); ++k) {
    if (k > 0) out += ", ";
    out += names[k].empty() ? "_" : names[k];
  }
  return out;
}

std::vector<std::string> parse_names(Cursor& c, char close) {
  std::vector<std::string> names;
  if (c.peek() == close) return names;
  do {
    const std::string n = c.name("a buffer name");
    names.push_back(n == "_" ? "" : n);
  } while (c.consume(","));
  return names;
}

}  // namespace text

namespace {

using text::Cursor;
using text::names_text;
using text::parse_names;

std::string offset_text(const Expr& offset) {
  const bool bare = offset.is_var() || (offset.is_const() && offset.value() >= 0);
  return bare ? to_string(offset) : "(" + to_string(offset) + ")";
}

std::string buffer_line(const Buffer& b) {
  std::string line = "buffer " + b.name + ": " + dtype_name(b.dtype) +
                     text::expr_list_text(b.sizes) + text::expr_list_text(b.strides, '{', '}');
  if (b.offset != Expr(0)) line += "+" + offset_text(b.offset);
  line += std::string(" ") + buffer_origin_name(b.origin);
  if (b.index != -1) line += " " + std::to_string(b.index);
  return line + " " + b.device;
}

std::string compute_line(const Compute& c, const BufferTypes& types) {
  std::string line = "compute " + c.name;
  if (c.graph_node != -1) line += " (node " + std::to_string(c.graph_node) + ")";
  if (c.view) line += " view";
  if (c.is_scan()) {
    line += std::string(" scan ") + reduce_op_name(c.reduce_op) + text::expr_list_text(c.ranges) +
            " along " + std::to_string(c.scan_dim);
  } else if (c.is_reduction()) {
    line += std::string(" reduce ") + reduce_op_name(c.reduce_op) + text::expr_list_text(c.ranges) +
            " over " + text::expr_list_text(c.reduce_ranges);
  } else {
    line += " pointwise" + text::expr_list_text(c.ranges);
  }
  return line + " = " + to_string(c.body, types);
}

std::string step_line(const Step& s, const BufferTypes& types) {
  if (s.kind == Step::Kind::Kernel) {
    return s.kernel.computes.empty() ? "kernel" : "kernel " + names_text(s.kernel.computes);
  }
  const ExternCall& call = s.call;
  std::string line = std::string("extern ") + (call.view ? "view " : "") + (call.alias ? "alias " : "") + "node " +
                     std::to_string(call.graph_node) + " (" + names_text(call.inputs) + ") -> (" +
                     names_text(call.outputs) + ")";
  if (call.library) line += " " + library_text(*call.library, types);
  return line;
}

// ---- Parsing ------------------------------------------------------------------------------

BufferOrigin parse_origin(Cursor& c) {
  const std::string word = c.name("a buffer origin");
  for (BufferOrigin o : {BufferOrigin::Input, BufferOrigin::Constant, BufferOrigin::Extern,
                         BufferOrigin::Computed}) {
    if (word == buffer_origin_name(o)) return o;
  }
  c.fail("unknown buffer origin '" + word + "' (input, constant, extern, computed)");
}

Buffer parse_buffer(Cursor& c) {
  Buffer b;
  b.name = c.name("a buffer name");
  c.expect(":");
  b.dtype = c.dtype();
  b.sizes = c.expr_list('[', ']');
  b.strides = c.expr_list('{', '}');
  if (c.consume("+")) {
    if (c.peek() == '(') {
      c.expect("(");
      b.offset = c.expr();
      c.expect(")");
    } else {
      Cursor single(c.token("an offset"));
      b.offset = single.rest_as_expr();
    }
  }
  b.origin = parse_origin(c);
  if (std::isdigit(static_cast<unsigned char>(c.peek())) || c.peek() == '-') {
    b.index = c.integer();
  }
  b.device = c.token("a device");
  c.expect_end();
  return b;
}

Compute parse_compute(Cursor& c, const BufferTypes& types) {
  Compute comp;
  comp.name = c.name("a compute name");
  if (c.consume("(")) {
    c.expect("node");
    comp.graph_node = static_cast<int32_t>(c.integer());
    c.expect(")");
  }
  const std::string kind = c.name("view, pointwise, reduce or scan");
  std::string shape = kind;
  if (kind == "view") {
    comp.view = true;
    shape = c.name("pointwise or reduce");
  }
  if (shape == "scan" || shape == "reduce") {  // <op>[ranges], then "along k" or "over [..]"
    const std::string op = c.name("a reduce op");
    auto parsed = reduce_op_from_name(op);
    if (!parsed) c.fail("unknown reduce op '" + op + "'");
    comp.reduce_op = *parsed;
    comp.ranges = c.expr_list('[', ']');
  }
  if (shape == "scan") {
    c.expect("along");
    comp.scan_dim = static_cast<int32_t>(c.integer());
    if (comp.scan_dim < 0 || comp.scan_dim >= static_cast<int32_t>(comp.ranges.size()))
      c.fail("scan along " + std::to_string(comp.scan_dim) + ": not a dim of its ranges");
    comp.reduce_ranges = {comp.ranges[comp.scan_dim]};
  } else if (shape == "reduce") {
    c.expect("over");
    comp.reduce_ranges = c.expr_list('[', ']');
  } else if (shape == "pointwise") {
    comp.ranges = c.expr_list('[', ']');
  } else {
    c.fail("expected pointwise, reduce or scan, got '" + shape + "'");
  }
  c.expect("=");
  comp.body = text::parse_value_at(c, types);
  c.expect_end();
  return comp;
}

Step parse_extern(Cursor& c, const BufferTypes& types) {
  Step s;
  s.kind = Step::Kind::Extern;
  s.call.view = c.consume("view ");
  s.call.alias = s.call.view && c.consume("alias ");
  c.expect("node");
  s.call.graph_node = static_cast<int32_t>(c.integer());
  c.expect("(");
  s.call.inputs = parse_names(c, ')');
  c.expect(")");
  c.expect("->");
  c.expect("(");
  s.call.outputs = parse_names(c, ')');
  c.expect(")");
  if (c.consume("library ")) s.call.library = text::parse_library_at(c, types);
  c.expect_end();
  return s;
}

struct Line {
  int number;
  std::string text;
};

/// The program's item lines (between `program {` and `}`), blank and comment lines dropped.
std::vector<Line> item_lines(const std::string& text) {
  std::vector<Line> lines;
  std::istringstream in(text);
  std::string raw;
  int number = 0;
  int opened = 0;
  bool closed = false;
  while (std::getline(in, raw)) {
    Cursor c(raw, ++number);
    if (c.at_end() || c.peek() == '#') continue;
    if (closed) c.fail("text after the end of the program");
    if (!opened) {
      c.expect("program");
      c.expect("{");
      c.expect_end();
      opened = number;
      continue;
    }
    if (c.consume("}")) {
      c.expect_end();
      closed = true;
      continue;
    }
    lines.push_back({number, raw});
  }
  if (!opened) throw std::invalid_argument("expected 'program {' (empty text)");
  if (!closed) {
    throw std::invalid_argument("line " + std::to_string(number) + ": program opened at line " +
                                std::to_string(opened) + " has no closing '}'");
  }
  return lines;
}

}  // namespace

BufferTypes buffer_types(const LoopProgram& program) {
  BufferTypes types;
  for (const Buffer& b : program.buffers) types.emplace(b.name, b.dtype);
  return types;
}

std::string program_to_text(const LoopProgram& program) {
  const BufferTypes types = buffer_types(program);
  std::string out = "program {\n";
  for (const Buffer& b : program.buffers) out += "  " + buffer_line(b) + "\n";
  std::set<std::string> printed;
  for (const Buffer& b : program.buffers) {
    auto it = program.computes.find(b.name);
    if (it == program.computes.end() || !printed.insert(b.name).second) continue;
    out += "  " + compute_line(it->second, types) + "\n";
  }
  for (const auto& [name, c] : program.computes) {
    if (!printed.count(name)) out += "  " + compute_line(c, types) + "\n";
  }
  for (const Step& s : program.steps) out += "  " + step_line(s, types) + "\n";
  if (!program.outputs.empty()) out += "  output " + names_text(program.outputs) + "\n";
  for (const auto& [name, range] : program.symbol_ranges) {
    out += "  symbol " + name + " in [" + std::to_string(range.lo) + ", " +
           std::to_string(range.hi) + "]\n";
  }
  return out + "}\n";
}

LoopProgram parse_program(const std::string& text) {
  const std::vector<Line> lines = item_lines(text);
  LoopProgram program;
  // Buffers first: compute bodies take load types from them, wherever the lines are.
  for (const Line& line : lines) {
    Cursor c(line.text, line.number);
    if (!c.consume("buffer ")) continue;
    Buffer b = parse_buffer(c);
    if (program.find_buffer(b.name)) c.fail("buffer " + b.name + " is declared twice");
    program.buffers.push_back(std::move(b));
  }
  const BufferTypes types = buffer_types(program);
  for (const Line& line : lines) {
    Cursor c(line.text, line.number);
    const std::string keyword = c.name("buffer, compute, kernel, extern, output or symbol");
    if (keyword == "buffer") continue;
    if (keyword == "compute") {
      Compute comp = parse_compute(c, types);
      const std::string name = comp.name;
      if (!program.computes.emplace(name, std::move(comp)).second) {
        c.fail("compute " + name + " is defined twice");
      }
    } else if (keyword == "kernel") {
      Step s;
      s.kernel.computes = parse_names(c, '\0');
      c.expect_end();
      program.steps.push_back(std::move(s));
    } else if (keyword == "extern") {
      program.steps.push_back(parse_extern(c, types));
    } else if (keyword == "output") {
      if (!program.outputs.empty()) c.fail("a second output line");
      program.outputs = parse_names(c, '\0');
      c.expect_end();
    } else if (keyword == "symbol") {
      const std::string name = c.name("a symbol");
      c.expect("in");
      c.expect("[");
      const int64_t lo = c.integer();
      c.expect(",");
      const int64_t hi = c.integer();
      c.expect("]");
      c.expect_end();
      if (!program.symbol_ranges.emplace(name, Interval{lo, hi}).second) {
        c.fail("symbol " + name + " has two ranges");
      }
    } else {
      c.fail("unknown item '" + keyword + "'");
    }
  }
  return program;
}

}  // namespace inductor_cpp::ir
