/// \file
/// Constructors, equality and the text form of the ATen-level graph.
#include "ir/aten_graph.h"

#include <cmath>
#include <sstream>

namespace inductor_cpp::ir {

bool TensorMeta::operator==(const TensorMeta& o) const {
  return sizes == o.sizes && strides == o.strides && storage_offset == o.storage_offset &&
         dtype == o.dtype && device == o.device && requires_grad == o.requires_grad;
}

GraphInput GraphInput::number(std::string scalar_type, std::string expr) {
  GraphInput in;
  in.scalar_type = std::move(scalar_type);
  in.expr = std::move(expr);
  return in;
}

bool GraphInput::operator==(const GraphInput& o) const {
  return tensor == o.tensor && scalar_type == o.scalar_type && expr == o.expr;
}

bool is_scalar_op(const std::string& op) {
  return op.rfind("sym::", 0) == 0;
}

Arg Arg::input(int64_t i) {
  Arg a;
  a.kind = Kind::Input;
  a.index = i;
  return a;
}

Arg Arg::constant(int64_t i) {
  Arg a;
  a.kind = Kind::Constant;
  a.index = i;
  return a;
}

Arg Arg::value(int64_t node, int64_t output) {
  Arg a;
  a.kind = Kind::Value;
  a.index = node;
  a.output = output;
  return a;
}

Arg Arg::of_int(int64_t v) {
  Arg a;
  a.kind = Kind::Int;
  a.int_value = v;
  return a;
}

Arg Arg::of_float(double v) {
  Arg a;
  a.kind = Kind::Float;
  a.float_value = v;
  return a;
}

Arg Arg::of_bool(bool v) {
  Arg a;
  a.kind = Kind::Bool;
  a.bool_value = v;
  return a;
}

Arg Arg::named(Kind kind, std::string text) {
  Arg a;
  a.kind = kind;
  a.text = std::move(text);
  return a;
}

Arg Arg::list(std::vector<Arg> items) {
  Arg a;
  a.kind = Kind::List;
  a.items = std::move(items);
  return a;
}

bool Arg::operator==(const Arg& o) const {
  if (kind != o.kind) return false;
  switch (kind) {
    case Kind::None:
      return true;
    case Kind::Input:
    case Kind::Constant:
      return index == o.index;
    case Kind::Value:
      return index == o.index && output == o.output;
    case Kind::Int:
      return int_value == o.int_value;
    case Kind::Float:  // NaN equals NaN here: this is structural, not numeric, equality
      return float_value == o.float_value || (std::isnan(float_value) && std::isnan(o.float_value));
    case Kind::Bool:
      return bool_value == o.bool_value;
    case Kind::List:
      return items == o.items;
    default:
      return text == o.text;
  }
}

std::pair<std::string, std::string> split_op_name(const std::string& op) {
  const auto ns_end = op.find("::");
  const auto dot = op.find('.', ns_end == std::string::npos ? 0 : ns_end + 2);
  if (dot == std::string::npos) return {op, ""};
  return {op.substr(0, dot), op.substr(dot + 1)};
}

namespace {

void join(std::ostringstream& os, const std::vector<Dim>& xs) {
  for (size_t i = 0; i < xs.size(); ++i) os << (i ? ", " : "") << to_string(xs[i]);
}

}  // namespace

std::string to_string(const Dim& dim) {
  if (const auto* n = std::get_if<int64_t>(&dim)) return std::to_string(*n);
  return std::get<std::string>(dim);
}

std::string to_string(const GraphInput& input) {
  if (input.tensor) return to_string(*input.tensor);
  if (input.scalar_type.empty()) return "scalar";
  return input.expr.empty() ? input.scalar_type : input.scalar_type + " " + input.expr;
}

std::string to_string(const TensorMeta& meta) {
  std::ostringstream os;
  os << meta.dtype << "[";
  join(os, meta.sizes);
  os << "]{";
  join(os, meta.strides);
  os << "}";
  if (meta.storage_offset != Dim{int64_t{0}}) os << "+" << to_string(meta.storage_offset);
  os << " " << meta.device;
  if (meta.requires_grad) os << " grad";
  return os.str();
}

std::string to_string(const Arg& arg) {
  std::ostringstream os;
  switch (arg.kind) {
    case Arg::Kind::None:
      return "None";
    case Arg::Kind::Input:
      return "%in" + std::to_string(arg.index);
    case Arg::Kind::Constant:
      return "%c" + std::to_string(arg.index);
    case Arg::Kind::Value:
      os << "%" << arg.index;
      if (arg.output != 0) os << "#" << arg.output;
      return os.str();
    case Arg::Kind::Int:
      return std::to_string(arg.int_value);
    case Arg::Kind::Float:
      os.precision(17);
      os << arg.float_value;
      if (os.str().find_first_of(".enia") == std::string::npos) os << ".0";
      return os.str();
    case Arg::Kind::Bool:
      return arg.bool_value ? "True" : "False";
    case Arg::Kind::Str:
      return "\"" + arg.text + "\"";
    case Arg::Kind::Dtype:
      return "torch." + arg.text;
    case Arg::Kind::Device:
      return "device(" + arg.text + ")";
    case Arg::Kind::Layout:
    case Arg::Kind::MemoryFormat:
      return "torch." + arg.text;
    case Arg::Kind::List: {
      os << "[";
      for (size_t i = 0; i < arg.items.size(); ++i)
        os << (i ? ", " : "") << to_string(arg.items[i]);
      os << "]";
      return os.str();
    }
  }
  return "?";
}

std::string to_text(const Graph& graph) {
  std::ostringstream os;
  os << "graph " << graph.kind << "(";
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    os << (i ? ", " : "") << "%in" << i << ": " << to_string(graph.inputs[i]);
  }
  os << ") {\n";
  for (size_t i = 0; i < graph.constants.size(); ++i) {
    os << "  %c" << i << ": " << to_string(graph.constants[i]) << "\n";
  }
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    os << "  %" << n << " = " << node.op << "(";
    bool first = true;
    for (const Arg& a : node.args) {
      os << (first ? "" : ", ") << to_string(a);
      first = false;
    }
    for (const auto& [name, a] : node.kwargs) {
      os << (first ? "" : ", ") << name << "=" << to_string(a);
      first = false;
    }
    os << ") -> (";
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      os << (k ? ", " : "") << (node.outputs[k] ? to_string(*node.outputs[k]) : "_");
    }
    os << ")\n";
  }
  os << "  return (";
  for (size_t i = 0; i < graph.outputs.size(); ++i) {
    os << (i ? ", " : "") << to_string(graph.outputs[i]);
  }
  os << ")\n}\n";
  return os.str();
}

}  // namespace inductor_cpp::ir
