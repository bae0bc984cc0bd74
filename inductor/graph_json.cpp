/// \file
/// JSON <-> ir::Graph with validation (see graph_json.h).
#include "inductor/graph_json.h"

#include <cmath>
#include <limits>

namespace inductor_cpp::inductor {

using ir::Arg;
using nlohmann::json;

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw GraphSchemaError("graph description: " + path + ": " + what);
}

const json& field(const json& obj, const char* name, const std::string& path) {
  if (!obj.is_object()) fail(path, "expected an object");
  auto it = obj.find(name);
  if (it == obj.end()) fail(path, std::string("missing field '") + name + "'");
  return *it;
}

int64_t as_int(const json& j, const std::string& path) {
  if (!j.is_number_integer()) fail(path, "expected an integer, got " + j.dump());
  if (j.is_number_unsigned() &&
      j.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    fail(path, "integer " + j.dump() + " does not fit in int64");
  return j.get<int64_t>();
}

std::string as_string(const json& j, const std::string& path) {
  if (!j.is_string()) fail(path, "expected a string, got " + j.dump());
  return j.get<std::string>();
}

ir::Dim as_dim(const json& j, const std::string& path) {
  if (j.is_number_integer()) return as_int(j, path);
  if (j.is_string() && !j.get<std::string>().empty()) return j.get<std::string>();
  fail(path, "expected an integer or a symbolic expression, got " + j.dump());
}

std::vector<ir::Dim> as_dim_list(const json& j, const std::string& path) {
  if (!j.is_array()) fail(path, "expected a list of sizes");
  std::vector<ir::Dim> out;
  for (size_t i = 0; i < j.size(); ++i)
    out.push_back(as_dim(j[i], path + "[" + std::to_string(i) + "]"));
  return out;
}

json dim_to_json(const ir::Dim& d) {
  if (const auto* n = std::get_if<int64_t>(&d)) return *n;
  return std::get<std::string>(d);
}

json dims_to_json(const std::vector<ir::Dim>& dims) {
  json out = json::array();
  for (const ir::Dim& d : dims) out.push_back(dim_to_json(d));
  return out;
}

json float_to_json(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

double float_from_json(const json& j, const std::string& path) {
  if (j.is_number()) return j.get<double>();
  if (j == "inf") return std::numeric_limits<double>::infinity();
  if (j == "-inf") return -std::numeric_limits<double>::infinity();
  if (j == "nan") return std::numeric_limits<double>::quiet_NaN();
  fail(path, "expected a float, got " + j.dump());
}

/// Tags whose payload is a string, with the Arg kind each one makes.
const std::pair<const char*, Arg::Kind> kNamedTags[] = {
    {"str", Arg::Kind::Str},
    {"dtype", Arg::Kind::Dtype},
    {"device", Arg::Kind::Device},
    {"layout", Arg::Kind::Layout},
    {"memory_format", Arg::Kind::MemoryFormat},
};

}  // namespace

json meta_to_json(const ir::TensorMeta& m) {
  return json{{"sizes", dims_to_json(m.sizes)},
              {"strides", dims_to_json(m.strides)},
              {"offset", dim_to_json(m.storage_offset)},
              {"dtype", m.dtype},
              {"device", m.device},
              {"requires_grad", m.requires_grad}};
}

ir::TensorMeta meta_from_json(const json& j, const std::string& path) {
  ir::TensorMeta m;
  m.sizes = as_dim_list(field(j, "sizes", path), path + ".sizes");
  m.strides = as_dim_list(field(j, "strides", path), path + ".strides");
  if (m.sizes.size() != m.strides.size()) fail(path, "sizes and strides differ in length");
  m.storage_offset = as_dim(field(j, "offset", path), path + ".offset");
  m.dtype = as_string(field(j, "dtype", path), path + ".dtype");
  m.device = as_string(field(j, "device", path), path + ".device");
  auto rg = j.find("requires_grad");
  m.requires_grad = rg != j.end() && rg->is_boolean() && rg->get<bool>();
  return m;
}

json arg_to_json(const Arg& a) {
  switch (a.kind) {
    case Arg::Kind::None:
      return nullptr;
    case Arg::Kind::Input:
      return json{{"in", a.index}};
    case Arg::Kind::Constant:
      return json{{"const", a.index}};
    case Arg::Kind::Value:
      return json{{"val", {a.index, a.output}}};
    case Arg::Kind::Int:
      return json{{"int", a.int_value}};
    case Arg::Kind::Float:
      return json{{"float", float_to_json(a.float_value)}};
    case Arg::Kind::Bool:
      return json{{"bool", a.bool_value}};
    case Arg::Kind::List: {
      json items = json::array();
      for (const Arg& item : a.items) items.push_back(arg_to_json(item));
      return json{{"list", items}};
    }
    default:
      for (const auto& [tag, kind] : kNamedTags) {
        if (kind == a.kind) return json{{tag, a.text}};
      }
  }
  throw std::logic_error("arg_to_json: unhandled kind");
}

Arg arg_from_json(const json& j, const std::string& path) {
  if (j.is_null()) return Arg::none();
  if (!j.is_object() || j.size() != 1)
    fail(path, "expected null or a one-key tagged object, got " + j.dump());
  const auto only = j.begin();
  const std::string tag = only.key();
  const json& v = only.value();
  if (tag == "in") return Arg::input(as_int(v, path + ".in"));
  if (tag == "const") return Arg::constant(as_int(v, path + ".const"));
  if (tag == "val") {
    if (!v.is_array() || v.size() != 2) fail(path, "'val' needs [node, output]");
    return Arg::value(as_int(v[0], path + ".val[0]"), as_int(v[1], path + ".val[1]"));
  }
  if (tag == "int") return Arg::of_int(as_int(v, path + ".int"));
  if (tag == "float") return Arg::of_float(float_from_json(v, path + ".float"));
  if (tag == "bool") {
    if (!v.is_boolean()) fail(path, "'bool' needs true or false");
    return Arg::of_bool(v.get<bool>());
  }
  if (tag == "list") {
    if (!v.is_array()) fail(path, "'list' needs an array");
    std::vector<Arg> items;
    for (size_t i = 0; i < v.size(); ++i)
      items.push_back(arg_from_json(v[i], path + ".list[" + std::to_string(i) + "]"));
    return Arg::list(std::move(items));
  }
  for (const auto& [name, kind] : kNamedTags) {
    if (tag == name) return Arg::named(kind, as_string(v, path + "." + tag));
  }
  fail(path, "unknown argument tag '" + tag + "'");
}

namespace {

/// References must point at inputs/constants that exist and at earlier nodes' outputs.
void check_refs(const Arg& a, const ir::Graph& g, size_t node_limit, const std::string& path) {
  switch (a.kind) {
    case Arg::Kind::Input:
      if (a.index < 0 || a.index >= static_cast<int64_t>(g.inputs.size()))
        fail(path, "input " + std::to_string(a.index) + " does not exist");
      return;
    case Arg::Kind::Constant:
      if (a.index < 0 || a.index >= static_cast<int64_t>(g.constants.size()))
        fail(path, "constant " + std::to_string(a.index) + " does not exist");
      return;
    case Arg::Kind::Value: {
      if (a.index < 0 || static_cast<size_t>(a.index) >= node_limit)
        fail(path,
             "reference to node " + std::to_string(a.index) + ", which is not an earlier node");
      const auto& outs = g.nodes[a.index].outputs;
      if (a.output < 0 || static_cast<size_t>(a.output) >= outs.size())
        fail(path,
             "node " + std::to_string(a.index) + " has no output " + std::to_string(a.output));
      return;
    }
    case Arg::Kind::List:
      for (size_t i = 0; i < a.items.size(); ++i)
        check_refs(a.items[i], g, node_limit, path + "[" + std::to_string(i) + "]");
      return;
    default:
      return;
  }
}

}  // namespace

ir::Graph graph_from_json(const json& desc) {
  static const std::string kRoot = "$";  // named: field() returns into `desc`, not into a temporary
  if (!desc.is_object()) fail("$", "expected an object");
  if (field(desc, "schema", "$") != "inductor_cpp.graph")
    fail("$.schema", "expected \"inductor_cpp.graph\"");
  const int64_t version = as_int(field(desc, "version", "$"), "$.version");
  if (version != ir::Graph::kSchemaVersion)
    fail("$.version", "version " + std::to_string(version) +
                          " is not supported (this build reads " +
                          std::to_string(ir::Graph::kSchemaVersion) + ")");
  ir::Graph g;
  g.kind = as_string(field(desc, "kind", "$"), "$.kind");
  if (g.kind != "forward" && g.kind != "backward" && g.kind != "inference")
    fail("$.kind", "expected forward, backward or inference");

  const json& inputs = field(desc, "inputs", kRoot);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string path = "inputs[" + std::to_string(i) + "]";
    if (inputs[i].is_null()) {
      g.inputs.emplace_back();
      continue;
    }
    if (auto scalar = inputs[i].find("scalar"); scalar != inputs[i].end()) {
      const std::string type = as_string(*scalar, path + ".scalar");
      if (type != "int" && type != "float" && type != "bool")
        fail(path + ".scalar", "expected int, float or bool");
      auto expr = inputs[i].find("expr");
      g.inputs.push_back(ir::GraphInput::number(
          type, expr == inputs[i].end() ? "" : as_string(*expr, path + ".expr")));
      continue;
    }
    g.inputs.emplace_back(meta_from_json(inputs[i], path));
  }
  const json& constants = field(desc, "constants", kRoot);
  for (size_t i = 0; i < constants.size(); ++i)
    g.constants.push_back(meta_from_json(constants[i], "constants[" + std::to_string(i) + "]"));

  const json& nodes = field(desc, "nodes", kRoot);
  if (!nodes.is_array()) fail("nodes", "expected a list");
  for (size_t n = 0; n < nodes.size(); ++n) {
    const std::string path = "nodes[" + std::to_string(n) + "]";
    const json& jn = nodes[n];
    ir::Node node;
    node.op = as_string(field(jn, "op", path), path + ".op");
    if (node.op.find("::") == std::string::npos)
      fail(path + ".op", "expected 'namespace::name[.overload]'");
    const json& args = field(jn, "args", path);
    for (size_t i = 0; i < args.size(); ++i) {
      node.args.push_back(arg_from_json(args[i], path + ".args[" + std::to_string(i) + "]"));
      check_refs(node.args.back(), g, n, path + ".args[" + std::to_string(i) + "]");
    }
    if (auto kw = jn.find("kwargs"); kw != jn.end()) {
      for (auto it = kw->begin(); it != kw->end(); ++it) {
        const std::string kpath = path + ".kwargs." + it.key();
        node.kwargs.emplace_back(it.key(), arg_from_json(it.value(), kpath));
        check_refs(node.kwargs.back().second, g, n, kpath);
      }
    }
    const json& outs = field(jn, "outputs", path);
    for (size_t k = 0; k < outs.size(); ++k) {
      if (outs[k].is_null()) {
        node.outputs.emplace_back(std::nullopt);
        continue;
      }
      node.outputs.emplace_back(
          meta_from_json(outs[k], path + ".outputs[" + std::to_string(k) + "]"));
    }
    if (auto src = jn.find("source"); src != jn.end() && src->is_string()) node.source = *src;
    g.nodes.push_back(std::move(node));
  }
  const json& outputs = field(desc, "outputs", kRoot);
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string path = "outputs[" + std::to_string(i) + "]";
    g.outputs.push_back(arg_from_json(outputs[i], path));
    check_refs(g.outputs.back(), g, g.nodes.size(), path);
  }
  return g;
}

json graph_to_json(const ir::Graph& g, bool with_sources) {
  json inputs = json::array();
  for (const ir::GraphInput& in : g.inputs) {
    if (in.tensor) {
      inputs.push_back(meta_to_json(*in.tensor));
    } else if (in.scalar_type.empty()) {
      inputs.push_back(nullptr);
    } else {
      json number{{"scalar", in.scalar_type}};
      if (!in.expr.empty()) number["expr"] = in.expr;
      inputs.push_back(number);
    }
  }
  json constants = json::array();
  for (const auto& c : g.constants) constants.push_back(meta_to_json(c));
  json nodes = json::array();
  for (const ir::Node& node : g.nodes) {
    json args = json::array();
    for (const Arg& a : node.args) args.push_back(arg_to_json(a));
    json kwargs = json::object();
    for (const auto& [name, a] : node.kwargs) kwargs[name] = arg_to_json(a);
    json outs = json::array();
    for (const auto& o : node.outputs) outs.push_back(o ? meta_to_json(*o) : json(nullptr));
    json jn{{"op", node.op}, {"args", args}, {"kwargs", kwargs}, {"outputs", outs}};
    if (with_sources && !node.source.empty()) jn["source"] = node.source;
    nodes.push_back(std::move(jn));
  }
  json outputs = json::array();
  for (const Arg& a : g.outputs) outputs.push_back(arg_to_json(a));
  return json{{"schema", "inductor_cpp.graph"},
              {"version", ir::Graph::kSchemaVersion},
              {"kind", g.kind},
              {"inputs", inputs},
              {"constants", constants},
              {"nodes", nodes},
              {"outputs", outputs}};
}

}  // namespace inductor_cpp::inductor
