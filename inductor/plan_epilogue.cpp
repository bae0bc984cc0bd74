/// \file
/// Static metadata helpers and epilogue absorption for the matrix plan steps (plan_epilogue.h).
#include "inductor/plan_epilogue.h"

#include <algorithm>
#include <cfloat>

#include "inductor/lower/lower_graph.h"
#include "inductor/plan_batch_norm.h"

namespace inductor_cpp::inductor::matrix_plan {

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

bool is_value(const Arg& a, int64_t node, int64_t output) {
  return a.kind == Arg::Kind::Value && a.index == node && a.output == output;
}

/// The epilogue op of node `act` applied to node `prev`'s output, or nothing. A residual add
/// sets `residual` to its other operand.
std::optional<runtime::MatmulEpilogue> epilogue_op_of(const ir::Node& act, int64_t prev,
                                                      const Arg** residual) {
  const std::string op = op_name(act.op);
  if (act.args.empty()) return std::nullopt;
  if (op == "aten::add.Tensor" && act.args.size() >= 2) {
    if (auto alpha = number_or(act, 2, "alpha", 1); !alpha || *alpha != 1) return std::nullopt;
    const bool first = is_value(act.args[0], prev, 0), second = is_value(act.args[1], prev, 0);
    if (first == second) return std::nullopt;  // neither, or x + x
    const Arg& other = first ? act.args[1] : act.args[0];
    if (!is_tensor_ref(other)) return std::nullopt;
    *residual = &other;
    return runtime::MatmulEpilogue{"residual", -1, 0, 0};
  }
  if ((op == "aten::mul.Tensor" || op == "aten::mul.Scalar") && act.args.size() == 2) {
    const bool first = is_value(act.args[0], prev, 0), second = is_value(act.args[1], prev, 0);
    if (first == second) return std::nullopt;  // neither, or x · x
    const Arg& other = first ? act.args[1] : act.args[0];
    if (const auto factor = number(other))
      return runtime::MatmulEpilogue{"scale", -1, static_cast<float>(*factor), 0};
    if (op != "aten::mul.Tensor" || !is_tensor_ref(other)) return std::nullopt;
    *residual = &other;  // a same-shape tensor (absorbable checks): a gate
    return runtime::MatmulEpilogue{"mul", -1, 0, 0};
  }
  if (!is_value(act.args[0], prev, 0)) return std::nullopt;
  for (size_t i = 1; i < act.args.size(); ++i) {
    if (is_value(act.args[i], prev, 0)) return std::nullopt;
  }
  if (op == "aten::relu" && act.args.size() == 1) return runtime::MatmulEpilogue{"relu", -1, 0, 0};
  if (op == "aten::silu" && act.args.size() == 1) return runtime::MatmulEpilogue{"silu", -1, 0, 0};
  if (op == "aten::sigmoid" && act.args.size() == 1)
    return runtime::MatmulEpilogue{"sigmoid", -1, 0, 0};
  if (op == "aten::tanh" && act.args.size() == 1) return runtime::MatmulEpilogue{"tanh", -1, 0, 0};
  if (op == "aten::gelu") {
    const Arg* approx = find_arg(act, 1, "approximate");
    if (!approx || (approx->kind == Arg::Kind::Str && approx->text == "none"))
      return runtime::MatmulEpilogue{"gelu", -1, 0, 0};
    if (approx->kind == Arg::Kind::Str && approx->text == "tanh")
      return runtime::MatmulEpilogue{"gelu_tanh", -1, 0, 0};
    return std::nullopt;
  }
  if (op == "aten::hardtanh") {
    auto lo = number_or(act, 1, "min_val", -1), hi = number_or(act, 2, "max_val", 1);
    if (!lo || !hi || *lo > *hi) return std::nullopt;
    return runtime::MatmulEpilogue{"clamp", -1, static_cast<float>(*lo), static_cast<float>(*hi)};
  }
  if (op == "aten::clamp") {
    const Arg* lo = find_arg(act, 1, "min");
    const Arg* hi = find_arg(act, 2, "max");
    const bool no_lo = !lo || lo->kind == Arg::Kind::None,
               no_hi = !hi || hi->kind == Arg::Kind::None;
    if (no_lo && no_hi) return std::nullopt;
    std::optional<double> l = no_lo ? std::optional<double>(-FLT_MAX) : number(*lo);
    std::optional<double> h = no_hi ? std::optional<double>(FLT_MAX) : number(*hi);
    if (!l || !h || *l > *h) return std::nullopt;
    return runtime::MatmulEpilogue{"clamp", -1, static_cast<float>(*l), static_cast<float>(*h)};
  }
  return std::nullopt;
}

}  // namespace

int64_t numel(const std::vector<int64_t>& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

/// True when node `act` only reshapes node `prev`'s dense row-major output into another dense
/// row-major tensor (the same elements in the same memory order), e.g. the view Dynamo puts
/// between a Linear's addmm on [B·S, N] and a GELU on [B, S, N]: for the epilogue, nothing.
bool is_row_major_reshape(const ir::Graph& g, int32_t act, int64_t prev) {
  const ir::Node& node = g.nodes[act];
  const std::string op = op_name(node.op);
  if (op != "aten::view" && op != "aten::_unsafe_view" && op != "aten::reshape") return false;
  if (node.args.empty() || !is_value(node.args[0], prev, 0)) return false;
  const auto in = meta_of(g, node.args[0]);
  const auto out = meta_of(g, Arg::value(act, 0));
  return in && out && is_row_major(*in) && is_row_major(*out) &&
         numel(in->sizes) == numel(out->sizes) && in->dtype == out->dtype;
}

std::set<std::string> buffers_read(const ir::ScheduledStep& s) {
  std::set<std::string> out;
  if (s.kind == ir::ScheduledStep::Kind::Extern) {
    out.insert(s.call.inputs.begin(), s.call.inputs.end());
    return out;
  }
  out.insert(s.reads.begin(), s.reads.end());
  for (const std::string& w : s.writes) out.erase(w);
  return out;
}

namespace {

bool writes(const ir::ScheduledStep& s, const std::string& buffer) {
  const std::vector<std::string>& out =
      s.kind == ir::ScheduledStep::Kind::Extern ? s.call.outputs : s.writes;
  return std::count(out.begin(), out.end(), buffer) > 0;
}

}  // namespace

bool ready_before(const ir::ScheduledProgram& program, const std::string& buffer, size_t index) {
  if (buffer.rfind("%in", 0) == 0 || buffer.rfind("%c", 0) == 0) return true;
  for (size_t s = 0; s < index; ++s) {
    if (writes(program.steps[s], buffer)) return true;
  }
  return false;
}

bool only_read_by(const ir::Graph& g, const ir::ScheduledProgram& program, int32_t node,
                  int32_t next) {
  if (std::count(program.outputs.begin(), program.outputs.end(),
                 buffer_name_of(Arg::value(node, 0))))
    return false;
  for (const Arg& o : g.outputs) {
    if (mentions(o, node)) return false;
  }
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const int64_t uses = mentions(g.nodes[n], node);
    if (static_cast<int32_t>(n) == next ? uses != 1 : uses != 0) return false;
  }
  return true;
}

int64_t mentions(const Arg& a, int64_t node) {
  int64_t n = a.kind == Arg::Kind::Value && a.index == node ? 1 : 0;
  for (const Arg& item : a.items) n += mentions(item, node);
  return n;
}

int64_t mentions(const ir::Node& user, int64_t node) {
  int64_t n = 0;
  for (const Arg& a : user.args) n += mentions(a, node);
  for (const auto& kw : user.kwargs) n += mentions(kw.second, node);
  return n;
}

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

std::optional<std::array<int64_t, 2>> int_pair(const ir::Arg& a) {
  if (a.kind == ir::Arg::Kind::Int) return std::array<int64_t, 2>{a.int_value, a.int_value};
  if (a.kind != ir::Arg::Kind::List || a.items.size() != 2) return std::nullopt;
  for (const ir::Arg& item : a.items) {
    if (item.kind != ir::Arg::Kind::Int) return std::nullopt;
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

std::optional<runtime::MatmulEpilogue> activation_of(const ir::Node& act, int64_t prev) {
  const Arg* data = nullptr;
  std::optional<runtime::MatmulEpilogue> op = epilogue_op_of(act, prev, &data);
  if (!op || data) return std::nullopt;
  return op;
}

std::optional<int32_t> sole_reader_node(const ir::Graph& g, const ir::ScheduledProgram& program,
                                        int32_t node) {
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    if (mentions(g.nodes[n], node) == 0) continue;
    const int32_t reader = static_cast<int32_t>(n);
    if (only_read_by(g, program, node, reader)) return reader;
    return std::nullopt;
  }
  return std::nullopt;
}

std::optional<size_t> sole_reader_kernel(const ir::Graph& g, const ir::ScheduledProgram& program,
                                         size_t index, int64_t producer) {
  const std::string out = buffer_name_of(Arg::value(producer, 0));
  if (std::count(program.outputs.begin(), program.outputs.end(), out)) return std::nullopt;
  for (const Arg& o : g.outputs) {
    if (is_value(o, producer, 0)) return std::nullopt;
  }
  std::optional<size_t> reader;
  for (size_t s = 0; s < program.steps.size(); ++s) {
    if (s == index || !buffers_read(program.steps[s]).count(out)) continue;
    if (reader) return std::nullopt;  // a second reader
    reader = s;
  }
  if (!reader || *reader < index) return std::nullopt;
  const ir::ScheduledStep& k = program.steps[*reader];
  if (k.kind != ir::ScheduledStep::Kind::Kernel || k.writes.size() != 1 || k.graph_nodes.empty())
    return std::nullopt;
  return reader;
}

std::optional<Absorbed> absorbable(const ir::Graph& g, const ir::ScheduledProgram& program,
                                   size_t index, int64_t producer, const StaticMeta& out_meta,
                                   const std::function<bool(const StaticMeta&)>& layout_ok,
                                   const std::set<std::string>& into_inputs,
                                   const std::function<int32_t(const std::string&)>& slot_of_buffer,
                                   bool batch_norm, const Materialized* materialized,
                                   bool allow_reshapes) {
  constexpr size_t kMaxOps = 8;
  const std::string out = buffer_name_of(Arg::value(producer, 0));
  const auto reader = sole_reader_kernel(g, program, index, producer);
  if (!reader) return std::nullopt;
  const ir::ScheduledStep& k = program.steps[*reader];
  if (k.kind != ir::ScheduledStep::Kind::Kernel || k.writes.size() != 1 || k.graph_nodes.empty() ||
      into_inputs.count(k.writes[0]))
    return std::nullopt;
  // graph_nodes is sorted: a chain's topological order.
  Absorbed result;
  std::set<std::string> expected_reads{out};
  int64_t prev = producer;
  std::vector<int32_t> chain;  // the nodes left for epilogue_op_of
  for (int32_t n : k.graph_nodes) {
    if (!materialized || !materialized->nodes.count(n)) chain.push_back(n);
  }
  if (materialized) expected_reads.insert(materialized->reads.begin(), materialized->reads.end());
  if (batch_norm) {
    // The batch norm's first node is the kernel's first node reading the output.
    const auto first = std::find_if(k.graph_nodes.begin(), k.graph_nodes.end(), [&](int32_t n) {
      return n >= 0 && n < static_cast<int32_t>(g.nodes.size()) && mentions(g.nodes[n], producer);
    });
    std::optional<BatchNormMatch> bn;
    if (first != k.graph_nodes.end())
      bn = match_batch_norm(g, producer, *first, out_meta.sizes, slot_of_buffer);
    if (bn) {
      const std::set<int32_t> computed(k.graph_nodes.begin(), k.graph_nodes.end());
      for (size_t i = 0; i < bn->chain.size(); ++i) {
        const int32_t n = bn->chain[i];
        if (!computed.count(n)) return std::nullopt;
        // Read by the next chain node only (the last by the next epilogue op, checked below).
        if (i + 1 < bn->chain.size() && !only_read_by(g, program, n, bn->chain[i + 1]))
          return std::nullopt;
      }
      std::vector<int32_t> rest;
      for (int32_t n : chain) {
        if (!bn->helpers.count(n) &&
            std::find(bn->chain.begin(), bn->chain.end(), n) == bn->chain.end())
          rest.push_back(n);
      }
      chain = std::move(rest);
      if (!chain.empty() && !only_read_by(g, program, bn->chain.back(), chain.front()))
        return std::nullopt;
      result.ops.push_back(bn->op);
      expected_reads.insert(bn->reads.begin(), bn->reads.end());
      prev = bn->chain.back();
    }
  }
  if (chain.size() > kMaxOps) return std::nullopt;
  std::vector<int64_t> chain_sizes = out_meta.sizes;  // a reshape in the chain changes them
  for (size_t i = 0; i < chain.size(); ++i) {
    const int32_t n = chain[i];
    if (n < 0 || n >= static_cast<int32_t>(g.nodes.size()) || n <= prev) return std::nullopt;
    const bool reshape = allow_reshapes && is_row_major_reshape(g, n, prev);
    const Arg* residual = nullptr;
    auto op = reshape ? std::nullopt : epilogue_op_of(g.nodes[n], prev, &residual);
    if (!op && !reshape) return std::nullopt;
    const auto meta = meta_of(g, Arg::value(n, 0));
    if (!meta || !is_f32_cpu(meta, meta->sizes.size()) ||
        numel(meta->sizes) != numel(out_meta.sizes) || (!reshape && meta->sizes != chain_sizes))
      return std::nullopt;
    chain_sizes = meta->sizes;
    if (residual) {
      const auto r = meta_of(g, *residual);
      if (!is_f32_cpu(r, chain_sizes.size()) || r->sizes != chain_sizes) return std::nullopt;
      // Not a value of the chain itself (it is never materialized), and ready when the matrix
      // step runs (it moves the kernel's work up to step `index`); or the value an earlier
      // matrix step writes in the kernel's stead.
      const bool from_earlier_step = materialized && residual->kind == Arg::Kind::Value &&
                                     residual->index == materialized->node &&
                                     residual->output == 0 &&
                                     only_read_by(g, program, materialized->node, n);
      if (!from_earlier_step && residual->kind == Arg::Kind::Value &&
          (residual->index == producer ||
           std::count(k.graph_nodes.begin(), k.graph_nodes.end(), residual->index)))
        return std::nullopt;
      const std::string name = buffer_name_of(*residual);
      if (!from_earlier_step && !ready_before(program, name, index)) return std::nullopt;
      if (!from_earlier_step) expected_reads.insert(name);
      op->slot = slot_of_buffer(name);
    }
    if (i + 1 < chain.size() && !only_read_by(g, program, n, chain[i + 1])) return std::nullopt;
    if (op) result.ops.push_back(*op);
    prev = n;
  }
  if (result.ops.empty()) return std::nullopt;  // nothing but reshapes: nothing to gain
  const auto last = static_cast<int32_t>(prev);
  if (k.writes[0] != buffer_name_of(Arg::value(last, 0))) return std::nullopt;
  const auto last_meta = meta_of(g, Arg::value(last, 0));
  if (!layout_ok(*last_meta)) return std::nullopt;
  const ir::Buffer& written = program.buffer(k.writes[0]);
  if (written.sizes.size() != chain_sizes.size()) return std::nullopt;
  for (size_t d = 0; d < written.sizes.size(); ++d) {
    if (!written.sizes[d].is_const() || written.sizes[d].value() != chain_sizes[d])
      return std::nullopt;
    if (!written.strides[d].is_const() || written.strides[d].value() != last_meta->strides[d])
      return std::nullopt;
  }
  if (buffers_read(k) != expected_reads) return std::nullopt;
  result.step = *reader;
  result.written = k.writes[0];
  result.sizes = chain_sizes;
  result.strides = last_meta->strides;
  result.nodes = {};
  for (int32_t n : k.graph_nodes) {
    if (!materialized || !materialized->nodes.count(n)) result.nodes.push_back(n);
  }
  return result;
}

}  // namespace inductor_cpp::inductor::matrix_plan
