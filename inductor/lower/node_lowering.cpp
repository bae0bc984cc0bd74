/// \file
/// NodeLowering (argument access by schema name, outputs, collected computes) and the op
/// table. Every accessor declines rather than guessing: an argument of an unexpected kind is a
/// node we do not understand, and it then runs as ATen.
#include <sstream>

#include "inductor/lower/lower_graph.h"
#include "inductor/lower/lowering_internal.h"

namespace inductor_cpp::inductor::lowering {

void decline(const std::string& reason) {
  throw Decline(reason);
}

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

NodeLowering::NodeLowering(const ir::Graph& graph, const ir::LoopProgram& program,
                           int32_t node_index, const std::vector<std::string>& params)
    : graph_(graph), program_(program), node_index_(node_index) {
  const ir::Node& n = node();
  if (n.args.size() > params.size())
    decline("more arguments (" + std::to_string(n.args.size()) + ") than the schema has");
  for (size_t i = 0; i < n.args.size(); ++i) args_[params[i]] = &n.args[i];
  for (const auto& [name, value] : n.kwargs) {
    bool known = false;
    for (const std::string& p : params) known = known || p == name;
    if (!known) decline("unknown keyword argument '" + name + "'");
    if (args_.count(name)) decline("argument '" + name + "' given twice");
    args_[name] = &value;
  }
}

const ir::Arg* NodeLowering::arg(const std::string& param) const {
  auto it = args_.find(param);
  if (it == args_.end() || it->second->kind == ir::Arg::Kind::None) return nullptr;
  return it->second;
}

bool NodeLowering::is_tensor(const std::string& param) const {
  const ir::Arg* a = arg(param);
  if (a == nullptr || !a->is_tensor_ref()) return false;
  if (a->kind == ir::Arg::Kind::Input) return graph_.inputs.at(a->index).tensor.has_value();
  if (a->kind == ir::Arg::Kind::Value) {
    const auto& outs = graph_.nodes.at(a->index).outputs;
    return a->output < static_cast<int64_t>(outs.size()) && outs[a->output].has_value();
  }
  return true;
}

TensorInfo NodeLowering::tensor(const std::string& param) const {
  const ir::Arg* a = arg(param);
  if (a == nullptr) decline("missing tensor argument '" + param + "'");
  return tensor_of(*a);
}

namespace {

std::optional<int64_t> const_value(const ir::Expr& e) {
  if (!e.is_const()) return std::nullopt;
  return e.value();
}

}  // namespace

bool NodeLowering::outputs_are_empty() const {
  for (const auto& meta : node().outputs) {
    if (!meta) return false;
    bool empty = false;
    for (const ir::Dim& d : meta->sizes)
      empty = empty || (std::holds_alternative<int64_t>(d) && std::get<int64_t>(d) == 0);
    if (!empty) return false;
  }
  return !node().outputs.empty();
}

TensorInfo NodeLowering::tensor_of(const ir::Arg& ref) const {
  if (!ref.is_tensor_ref()) decline("expected a tensor, got " + ir::to_string(ref));
  if (ref.kind == ir::Arg::Kind::Input && !graph_.inputs.at(ref.index).tensor)
    decline("graph-input numbers used as operands are not generated");
  const std::string name = buffer_name_of(ref);
  const ir::Buffer* b = program_.find_buffer(name);
  if (b == nullptr) decline("operand " + name + " has no loop-level buffer (not a tensor we type)");
  TensorInfo t;
  t.buffer = name;
  t.dtype = b->dtype;
  t.origin = b->origin;
  t.device = b->device;
  for (const ir::Expr& s : b->sizes) {
    auto v = const_value(s);
    if (!v) decline("symbolic sizes not generated yet");
    // A zero-size operand of a node whose outputs are all zero-size too: nothing to compute
    // (loops of no iterations). Otherwise (a reduction over an empty dim: eager's identity,
    // nan or an error) it stays an ATen call.
    if (*v == 0 && !outputs_are_empty()) decline("zero-size operand of a non-empty result");
    t.sizes.push_back(*v);
  }
  for (const ir::Expr& s : b->strides) {
    auto v = const_value(s);
    if (!v) decline("symbolic strides not generated yet");
    t.strides.push_back(*v);
  }
  auto off = const_value(b->offset);
  if (!off) decline("symbolic storage offset not generated yet");
  t.offset = *off;
  return t;
}

int64_t NodeLowering::int_arg(const std::string& param, std::optional<int64_t> fallback) const {
  const ir::Arg* a = arg(param);
  if (a == nullptr) {
    if (!fallback) decline("missing int argument '" + param + "'");
    return *fallback;
  }
  if (a->kind != ir::Arg::Kind::Int)
    decline("argument '" + param + "' is not an int literal: " + ir::to_string(*a));
  return a->int_value;
}

std::optional<int64_t> NodeLowering::optional_int(const std::string& param) const {
  if (!has(param)) return std::nullopt;
  return int_arg(param);
}

bool NodeLowering::bool_arg(const std::string& param, bool fallback) const {
  const ir::Arg* a = arg(param);
  if (a == nullptr) return fallback;
  if (a->kind != ir::Arg::Kind::Bool)
    decline("argument '" + param + "' is not a bool literal: " + ir::to_string(*a));
  return a->bool_value;
}

std::vector<int64_t> NodeLowering::int_list(const std::string& param) const {
  auto v = optional_int_list(param);
  if (!v) decline("missing int list argument '" + param + "'");
  return *v;
}

std::optional<std::vector<int64_t>> NodeLowering::optional_int_list(
    const std::string& param) const {
  const ir::Arg* a = arg(param);
  if (a == nullptr) return std::nullopt;
  if (a->kind == ir::Arg::Kind::Int) return std::vector<int64_t>{a->int_value};
  if (a->kind != ir::Arg::Kind::List)
    decline("argument '" + param + "' is not an int list: " + ir::to_string(*a));
  std::vector<int64_t> out;
  for (const ir::Arg& item : a->items) {
    if (item.kind != ir::Arg::Kind::Int)
      decline("argument '" + param + "' holds a non-literal int: " + ir::to_string(item));
    out.push_back(item.int_value);
  }
  return out;
}

ir::Arg NodeLowering::scalar(const std::string& param, std::optional<ir::Arg> fallback) const {
  const ir::Arg* a = arg(param);
  if (a == nullptr) {
    if (!fallback) decline("missing number argument '" + param + "'");
    return *fallback;
  }
  switch (a->kind) {
    case ir::Arg::Kind::Int:
    case ir::Arg::Kind::Float:
    case ir::Arg::Kind::Bool:
      return *a;
    case ir::Arg::Kind::Input:
    case ir::Arg::Kind::Value:
      decline("numbers computed at run time are not generated yet ('" + param + "')");
    default:
      decline("argument '" + param + "' is not a number: " + ir::to_string(*a));
  }
}

double NodeLowering::number(const std::string& param, std::optional<double> fallback) const {
  if (!has(param) && fallback) return *fallback;
  const ir::Arg s = scalar(param);
  if (s.kind == ir::Arg::Kind::Float) return s.float_value;
  if (s.kind == ir::Arg::Kind::Int) return static_cast<double>(s.int_value);
  return s.bool_value ? 1.0 : 0.0;
}

std::optional<std::string> NodeLowering::str_arg(const std::string& param) const {
  const ir::Arg* a = arg(param);
  if (a == nullptr) return std::nullopt;
  if (a->kind != ir::Arg::Kind::Str)
    decline("argument '" + param + "' is not a string: " + ir::to_string(*a));
  return a->text;
}

std::optional<ir::DType> NodeLowering::dtype_arg(const std::string& param) const {
  const ir::Arg* a = arg(param);
  if (a == nullptr) return std::nullopt;
  if (a->kind != ir::Arg::Kind::Dtype)
    decline("argument '" + param + "' is not a dtype: " + ir::to_string(*a));
  auto t = ir::dtype_from_name(a->text);
  if (!t) decline("dtype " + a->text + " not supported");
  return t;
}

OutputInfo NodeLowering::output(size_t k) const {
  const ir::Node& n = node();
  if (k >= n.outputs.size() || !n.outputs[k])
    decline("output " + std::to_string(k) + " is not a tensor");
  const ir::TensorMeta& meta = *n.outputs[k];
  OutputInfo out;
  out.buffer = buffer_name_of(ir::Arg::value(node_index_, static_cast<int64_t>(k)));
  auto t = ir::dtype_from_name(meta.dtype);
  if (!t) decline("dtype " + meta.dtype + " not supported");
  out.dtype = *t;
  out.device = meta.device;
  for (const ir::Dim& d : meta.sizes) {
    if (!std::holds_alternative<int64_t>(d)) decline("symbolic sizes not generated yet");
    out.sizes.push_back(std::get<int64_t>(d));
  }
  return out;
}

void NodeLowering::make_views_copies() {
  for (ir::Compute& c : computes_) c.view = false;
}

void NodeLowering::define(ir::Compute compute) {
  for (const ir::Compute& c : computes_)
    if (c.name == compute.name)
      throw std::logic_error("lowering defines " + compute.name + " twice");
  compute.graph_node = node_index_;
  computes_.push_back(std::move(compute));
}

std::string NodeLowering::internal_buffer(const std::string& suffix, ir::DType dtype,
                                          const std::vector<int64_t>& sizes) {
  const OutputInfo first = output(0);
  ir::Buffer b;
  b.name = first.buffer + "." + suffix;
  b.dtype = dtype;
  b.sizes = to_exprs(sizes);
  b.strides = ir::contiguous_strides(b.sizes);
  b.offset = ir::Expr(0);
  b.origin = ir::BufferOrigin::Computed;
  b.device = first.device;
  for (const ir::Buffer& existing : internal_buffers_)
    if (existing.name == b.name) throw std::logic_error("internal buffer " + b.name + " twice");
  internal_buffers_.push_back(b);
  return b.name;
}

void OpTable::add(const std::string& op, const std::string& params, LowerFn lower) {
  OpLowering row;
  std::istringstream in(params);
  for (std::string p; in >> p;) row.params.push_back(p);
  row.lower = std::move(lower);
  if (!rows_.emplace(op, std::move(row)).second)
    throw std::logic_error("op table: " + op + " registered twice");
}

void OpTable::add_fallback(const std::string& op, const std::string& reason) {
  OpLowering row;
  row.fallback_reason = reason;
  if (!rows_.emplace(op, std::move(row)).second)
    throw std::logic_error("op table: " + op + " registered twice");
}

const OpLowering* OpTable::find(const std::string& op) const {
  auto it = rows_.find(op);
  return it == rows_.end() ? nullptr : &it->second;
}

}  // namespace inductor_cpp::inductor::lowering
