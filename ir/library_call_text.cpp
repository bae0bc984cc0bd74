/// \file
/// Text form of library calls (library_call.h): the clause an extern step's line ends with in
/// program and schedule texts (syntax in ir/ir_text.h). Printed by library_text, read back by
/// text::parse_library_at; each optional part appears only when it is not the default, so the
/// text of a plain call stays short.
#include <cmath>
#include <cstdint>
#include <cstdlib>

#include "ir/ir_text.h"
#include "ir/ir_text_internal.h"

namespace inductor_cpp::ir {

namespace {

/// Integral attributes (strides, paddings, flags: most of them) print as integers; the rest
/// as float_text, the shortest text that reads back to the same double. -0.0 is not
/// integral here: "0" would lose its sign.
std::string attr_value_text(double v) {
  constexpr double kLargestExactInteger = 9007199254740992.0;  // 2^53
  const bool integral = std::isfinite(v) && std::trunc(v) == v &&
                        std::fabs(v) <= kLargestExactInteger && !(v == 0 && std::signbit(v));
  return integral ? std::to_string(static_cast<int64_t>(v)) : text::float_text(v);
}

std::string attrs_text(const std::map<std::string, double>& attrs) {
  std::string out = "{";
  for (const auto& [name, value] : attrs) {
    if (out.size() > 1) out += ", ";
    out += name + "=" + attr_value_text(value);
  }
  return out + "}";
}

std::string nodes_text(const std::vector<int32_t>& nodes) {
  std::string out = "[";
  for (size_t k = 0; k < nodes.size(); ++k) {
    if (k > 0) out += ", ";
    out += std::to_string(nodes[k]);
  }
  return out + "]";
}

// ---- Parsing ------------------------------------------------------------------------------

/// An attribute's value: the characters up to ',', '}' or a space, as a double.
double parse_attr_value(text::Cursor& c) {
  c.skip_spaces();
  const std::string rest = c.rest();
  const std::string literal = rest.substr(0, rest.find_first_of(",} \t"));
  char* end = nullptr;
  const double v = std::strtod(literal.c_str(), &end);
  if (literal.empty() || end != literal.c_str() + literal.size()) {
    c.fail("expected a number as the attribute's value");
  }
  c.consume(literal);
  return v;
}

/// `name=value, ...}` after the opening brace.
std::map<std::string, double> parse_attrs(text::Cursor& c) {
  std::map<std::string, double> attrs;
  if (c.consume("}")) return attrs;
  do {
    c.skip_spaces();
    const size_t start = c.position();
    const std::string name = c.name("an attribute name");
    c.expect("=");
    if (!attrs.emplace(name, parse_attr_value(c)).second) {
      c.fail_at(start, "attribute " + name + " is given twice");
    }
  } while (c.consume(","));
  c.expect("}");
  return attrs;
}

std::vector<int32_t> parse_nodes(text::Cursor& c) {
  std::vector<int32_t> nodes;
  c.expect("[");
  if (c.consume("]")) return nodes;
  do {
    nodes.push_back(static_cast<int32_t>(c.integer()));
  } while (c.consume(","));
  c.expect("]");
  return nodes;
}

std::string blank_or_name(const std::string& n) {
  return n == "_" ? "" : n;
}

LibraryOp parse_library_op(text::Cursor& c) {
  c.skip_spaces();
  const size_t start = c.position();
  const std::string name = c.name("a library op");
  if (auto op = library_op_from_name(name)) return *op;
  c.fail_at(start, "unknown library op '" + name + "'");
}

}  // namespace

std::string library_text(const LibraryCall& call, const BufferTypes& known) {
  std::string out = std::string("library ") + library_op_name(call.op) + "(" +
                    text::names_text(call.operands) + ")";
  if (!call.attrs.empty()) out += " " + attrs_text(call.attrs);
  if (call.epilogue) out += " epilogue=" + to_string(call.epilogue, known);
  if (!call.tile_compute.empty() || !call.tile_input.empty()) {
    // `_` for a missing half, so even an invalid call (verify's business) reads back.
    out += " tile=" + text::names_text({call.tile_compute}) + " from " +
           text::names_text({call.tile_input});
  }
  if (!call.absorbed_nodes.empty()) out += " absorbs " + nodes_text(call.absorbed_nodes);
  return out;
}

namespace text {

LibraryCall parse_library_at(Cursor& c, const BufferTypes& known) {
  LibraryCall call;
  call.op = parse_library_op(c);
  c.expect("(");
  call.operands = parse_names(c, ')');
  c.expect(")");
  if (c.consume("{")) call.attrs = parse_attrs(c);
  if (c.consume("epilogue=")) call.epilogue = parse_value_at(c, known);
  if (c.consume("tile=")) {
    call.tile_compute = blank_or_name(c.name("the tile compute's name"));
    c.expect("from");
    call.tile_input = blank_or_name(c.name("the tile's input buffer"));
  }
  if (c.consume("absorbs")) call.absorbed_nodes = parse_nodes(c);
  return call;
}

}  // namespace text

}  // namespace inductor_cpp::ir
