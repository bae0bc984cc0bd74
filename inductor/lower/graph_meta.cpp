/// \file
/// Static metadata of graph values and literal arguments (graph_meta.h).
#include "inductor/lower/graph_meta.h"

#include <algorithm>

namespace inductor_cpp::inductor::graph_meta {

using ir::Arg;

namespace {

std::optional<std::vector<int64_t>> static_dims(const std::vector<ir::Dim>& dims) {
  std::vector<int64_t> out;
  for (const ir::Dim& d : dims) {
    if (!std::holds_alternative<int64_t>(d)) return std::nullopt;
    out.push_back(std::get<int64_t>(d));
  }
  return out;
}

}  // namespace

const ir::TensorMeta* tensor_meta_of(const ir::Graph& g, const Arg& a) {
  const ir::TensorMeta* m = nullptr;
  if (a.kind == Arg::Kind::Input && a.index >= 0 &&
      a.index < static_cast<int64_t>(g.inputs.size())) {
    if (g.inputs[a.index].tensor) m = &*g.inputs[a.index].tensor;
  } else if (a.kind == Arg::Kind::Constant && a.index >= 0 &&
             a.index < static_cast<int64_t>(g.constants.size())) {
    m = &g.constants[a.index];
  } else if (a.kind == Arg::Kind::Value && a.index >= 0 &&
             a.index < static_cast<int64_t>(g.nodes.size())) {
    const auto& outs = g.nodes[a.index].outputs;
    if (a.output >= 0 && a.output < static_cast<int64_t>(outs.size()) && outs[a.output])
      m = &*outs[a.output];
  }
  return m;
}

std::optional<StaticMeta> meta_of(const ir::Graph& g, const Arg& a) {
  const ir::TensorMeta* m = tensor_meta_of(g, a);
  if (!m) return std::nullopt;
  auto sizes = static_dims(m->sizes);
  auto strides = static_dims(m->strides);
  if (!sizes || !strides || !std::holds_alternative<int64_t>(m->storage_offset))
    return std::nullopt;
  return StaticMeta{*sizes, *strides, m->dtype, m->device};
}

bool is_cpu_tensor(const std::optional<StaticMeta>& m, size_t rank, const std::string& dtype) {
  return m && m->dtype == dtype && m->device == "cpu" && m->sizes.size() == rank &&
         std::all_of(m->sizes.begin(), m->sizes.end(), [](int64_t s) { return s > 0; });
}

bool is_f32_cpu(const std::optional<StaticMeta>& m, size_t rank) {
  return is_cpu_tensor(m, rank, "float32");
}

bool is_row_major(const StaticMeta& m) {
  int64_t expected = 1;
  for (size_t d = m.sizes.size(); d-- > 0;) {
    if (m.sizes[d] != 1 && m.strides[d] != expected) return false;
    expected *= m.sizes[d];
  }
  return true;
}

bool is_channels_last(const StaticMeta& m) {
  if (m.sizes.size() != 4 || m.strides.size() != 4) return false;
  int64_t expected = 1;
  for (const size_t d : {1, 3, 2, 0}) {  // C innermost, then W, H, N
    if (m.sizes[d] != 1 && m.strides[d] != expected) return false;
    expected *= m.sizes[d];
  }
  return true;
}

int64_t mentions_output(const Arg& a, int64_t node, int64_t output) {
  int64_t n = a.kind == Arg::Kind::Value && a.index == node && a.output == output ? 1 : 0;
  for (const Arg& item : a.items) n += mentions_output(item, node, output);
  return n;
}

bool is_output_read(const ir::Graph& g, int64_t node, int64_t output) {
  for (const ir::Node& user : g.nodes) {
    for (const Arg& a : user.args)
      if (mentions_output(a, node, output)) return true;
    for (const auto& kw : user.kwargs)
      if (mentions_output(kw.second, node, output)) return true;
  }
  for (const Arg& a : g.outputs)
    if (mentions_output(a, node, output)) return true;
  return false;
}

std::optional<double> number(const Arg& a) {
  if (a.kind == Arg::Kind::Int) return static_cast<double>(a.int_value);
  if (a.kind == Arg::Kind::Float) return a.float_value;
  return std::nullopt;
}

const Arg* find_arg(const ir::Node& node, size_t pos, const std::string& name) {
  if (pos < node.args.size()) return &node.args[pos];
  for (const auto& [k, v] : node.kwargs) {
    if (k == name) return &v;
  }
  return nullptr;
}

std::optional<double> number_or(const ir::Node& node, size_t pos, const std::string& name,
                                double fallback) {
  const Arg* a = find_arg(node, pos, name);
  if (!a) return fallback;
  return number(*a);
}

std::optional<std::array<int64_t, 2>> int_pair(const Arg& a) {
  if (a.kind == Arg::Kind::Int) return std::array<int64_t, 2>{a.int_value, a.int_value};
  if (a.kind != Arg::Kind::List || a.items.size() != 2) return std::nullopt;
  for (const Arg& item : a.items) {
    if (item.kind != Arg::Kind::Int) return std::nullopt;
  }
  return std::array<int64_t, 2>{a.items[0].int_value, a.items[1].int_value};
}

bool is_tensor_ref(const Arg& a) {
  return a.kind == Arg::Kind::Input || a.kind == Arg::Kind::Constant || a.kind == Arg::Kind::Value;
}

std::string op_name(const std::string& op) {
  const std::string suffix = ".default";
  if (op.size() > suffix.size() &&
      op.compare(op.size() - suffix.size(), suffix.size(), suffix) == 0)
    return op.substr(0, op.size() - suffix.size());
  return op;
}

}  // namespace inductor_cpp::inductor::graph_meta
