/// \file
/// Matching `aten::mm` / `addmm` / `bmm` extern steps to MatmulLaunch steps, and the
/// activation / residual kernels their epilogue absorbs (plan_matmul.h).
#include "inductor/plan_matmul.h"

#include <algorithm>
#include <cfloat>

#include "inductor/lower/lower_graph.h"

namespace inductor_cpp::inductor {

using ir::Arg;

namespace {

/// Static sizes and strides of a tensor value, or nothing for a symbolic or missing one.
struct StaticMeta {
  std::vector<int64_t> sizes, strides;
  std::string dtype, device;
};

std::optional<std::vector<int64_t>> static_dims(const std::vector<ir::Dim>& dims) {
  std::vector<int64_t> out;
  for (const ir::Dim& d : dims) {
    if (!std::holds_alternative<int64_t>(d)) return std::nullopt;
    out.push_back(std::get<int64_t>(d));
  }
  return out;
}

std::optional<StaticMeta> meta_of(const ir::Graph& g, const Arg& a) {
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
  if (!m) return std::nullopt;
  auto sizes = static_dims(m->sizes);
  auto strides = static_dims(m->strides);
  if (!sizes || !strides || !std::holds_alternative<int64_t>(m->storage_offset))
    return std::nullopt;
  return StaticMeta{*sizes, *strides, m->dtype, m->device};
}

bool is_f32_cpu(const std::optional<StaticMeta>& m, size_t rank) {
  return m && m->dtype == "float32" && m->device == "cpu" && m->sizes.size() == rank &&
         std::all_of(m->sizes.begin(), m->sizes.end(), [](int64_t s) { return s > 0; });
}

bool is_row_major(const StaticMeta& m) {
  int64_t expected = 1;
  for (size_t d = m.sizes.size(); d-- > 0;) {
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

/// Positional argument `pos` or keyword `name` of `node`; nullptr when absent (the default).
const Arg* find_arg(const ir::Node& node, size_t pos, const std::string& name) {
  if (pos < node.args.size()) return &node.args[pos];
  for (const auto& [k, v] : node.kwargs) {
    if (k == name) return &v;
  }
  return nullptr;
}

/// A number argument, `fallback` when absent; nothing when present but not a literal number.
std::optional<double> number_or(const ir::Node& node, size_t pos, const std::string& name,
                                double fallback) {
  const Arg* a = find_arg(node, pos, name);
  if (!a) return fallback;
  return number(*a);
}

bool is_tensor_ref(const Arg& a) {
  return a.kind == Arg::Kind::Input || a.kind == Arg::Kind::Constant || a.kind == Arg::Kind::Value;
}

bool is_value(const Arg& a, int64_t node, int64_t output) {
  return a.kind == Arg::Kind::Value && a.index == node && a.output == output;
}

std::string op_name(const std::string& op) {
  const std::string suffix = ".default";
  if (op.size() > suffix.size() &&
      op.compare(op.size() - suffix.size(), suffix.size(), suffix) == 0)
    return op.substr(0, op.size() - suffix.size());
  return op;
}

/// The epilogue op of activation node `act` applied to node `mm`'s output, or nothing.
/// A residual add sets `residual` to its other operand.
std::optional<runtime::MatmulEpilogue> activation_of(const ir::Node& act, int64_t mm,
                                                     const Arg** residual) {
  const std::string op = op_name(act.op);
  if (act.args.empty()) return std::nullopt;
  if (op == "aten::add.Tensor" && act.args.size() >= 2) {
    if (auto alpha = number_or(act, 2, "alpha", 1); !alpha || *alpha != 1) return std::nullopt;
    const bool first = is_value(act.args[0], mm, 0), second = is_value(act.args[1], mm, 0);
    if (first == second) return std::nullopt;  // neither, or mm + mm
    const Arg& other = first ? act.args[1] : act.args[0];
    if (!is_tensor_ref(other)) return std::nullopt;
    *residual = &other;
    return runtime::MatmulEpilogue{"residual", -1, 0, 0};
  }
  if (!is_value(act.args[0], mm, 0)) return std::nullopt;
  for (size_t i = 1; i < act.args.size(); ++i) {
    if (is_value(act.args[i], mm, 0)) return std::nullopt;
  }
  if (op == "aten::relu" && act.args.size() == 1) return runtime::MatmulEpilogue{"relu", -1, 0, 0};
  if (op == "aten::silu" && act.args.size() == 1) return runtime::MatmulEpilogue{"silu", -1, 0, 0};
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

/// The kernel step absorbed into the epilogue of matmul node `mm` (scheduled step `index`,
/// output buffer `out`, layout `out_meta`): its epilogue op and output, or nothing.
struct Absorbed {
  size_t step;
  runtime::MatmulEpilogue op;
  std::string written;
  std::vector<int64_t> strides;  ///< of the written buffer
  std::vector<int32_t> nodes;
};

std::optional<Absorbed> absorbable(
    const ir::Graph& g, const ir::ScheduledProgram& program, size_t index, int64_t mm,
    const StaticMeta& out_meta, const std::set<std::string>& into_inputs,
    const std::function<int32_t(const std::string&)>& slot_of_buffer) {
  const std::string out = buffer_name_of(Arg::value(mm, 0));
  if (std::count(program.outputs.begin(), program.outputs.end(), out)) return std::nullopt;
  for (const Arg& o : g.outputs) {
    if (is_value(o, mm, 0)) return std::nullopt;
  }
  std::optional<size_t> reader;
  for (size_t s = 0; s < program.steps.size(); ++s) {
    if (s == index || !buffers_read(program.steps[s]).count(out)) continue;
    if (reader) return std::nullopt;  // a second reader
    reader = s;
  }
  if (!reader || *reader < index) return std::nullopt;
  const ir::ScheduledStep& k = program.steps[*reader];
  if (k.kind != ir::ScheduledStep::Kind::Kernel || k.writes.size() != 1 ||
      k.graph_nodes.size() != 1)
    return std::nullopt;
  if (into_inputs.count(k.writes[0])) return std::nullopt;
  const int32_t act_index = k.graph_nodes[0];
  if (act_index < 0 || act_index >= static_cast<int32_t>(g.nodes.size())) return std::nullopt;
  const ir::Node& act = g.nodes[act_index];
  if (k.writes[0] != buffer_name_of(Arg::value(act_index, 0))) return std::nullopt;
  const Arg* residual = nullptr;
  auto op = activation_of(act, mm, &residual);
  if (!op) return std::nullopt;
  const auto act_meta = meta_of(g, Arg::value(act_index, 0));
  if (!is_f32_cpu(act_meta, out_meta.sizes.size()) || act_meta->sizes != out_meta.sizes ||
      !is_row_major(*act_meta))
    return std::nullopt;
  const ir::Buffer& written = program.buffer(k.writes[0]);
  if (written.sizes.size() != out_meta.sizes.size()) return std::nullopt;
  for (size_t d = 0; d < written.sizes.size(); ++d) {
    if (!written.sizes[d].is_const() || written.sizes[d].value() != out_meta.sizes[d])
      return std::nullopt;
    if (!written.strides[d].is_const() || written.strides[d].value() != act_meta->strides[d])
      return std::nullopt;
  }
  std::set<std::string> expected_reads{out};
  if (residual) {
    const auto r = meta_of(g, *residual);
    if (!is_f32_cpu(r, out_meta.sizes.size()) || r->sizes != out_meta.sizes) return std::nullopt;
    const std::string name = buffer_name_of(*residual);
    expected_reads.insert(name);
    op->slot = slot_of_buffer(name);
  }
  if (buffers_read(k) != expected_reads) return std::nullopt;
  return Absorbed{*reader, *op, k.writes[0], act_meta->strides, {act_index}};
}

}  // namespace

std::optional<MatmulMatch> match_matmul(
    const ir::Graph& g, const ir::ScheduledProgram& program, size_t step_index,
    const std::set<std::string>& into_inputs,
    const std::function<int32_t(const std::string&)>& slot_of_buffer) {
  const ir::ScheduledStep& s = program.steps.at(step_index);
  if (s.kind != ir::ScheduledStep::Kind::Extern || s.call.view || s.call.graph_node < 0)
    return std::nullopt;
  const int64_t n = s.call.graph_node;
  const ir::Node& node = g.nodes.at(static_cast<size_t>(n));
  const std::string op = op_name(node.op);
  const bool addmm = op == "aten::addmm", bmm = op == "aten::bmm";
  if (op != "aten::mm" && !addmm && !bmm) return std::nullopt;
  const size_t first = addmm ? 1 : 0;
  if (node.args.size() < first + 2 || node.outputs.size() != 1) return std::nullopt;
  const Arg& a = node.args[first];
  const Arg& b = node.args[first + 1];
  if (!is_tensor_ref(a) || !is_tensor_ref(b)) return std::nullopt;
  const size_t rank = bmm ? 3 : 2;
  const auto out_meta = meta_of(g, Arg::value(n, 0));
  const auto a_meta = meta_of(g, a), b_meta = meta_of(g, b);
  if (!is_f32_cpu(out_meta, rank) || !is_f32_cpu(a_meta, rank) || !is_f32_cpu(b_meta, rank))
    return std::nullopt;
  if (!is_row_major(*out_meta)) return std::nullopt;
  const int64_t m = out_meta->sizes[rank - 2], cols = out_meta->sizes[rank - 1];
  if (a_meta->sizes[rank - 2] != m || b_meta->sizes[rank - 1] != cols ||
      a_meta->sizes[rank - 1] != b_meta->sizes[rank - 2])
    return std::nullopt;
  if (bmm && (a_meta->sizes[0] != out_meta->sizes[0] || b_meta->sizes[0] != out_meta->sizes[0]))
    return std::nullopt;

  MatmulMatch match;
  runtime::Step& step = match.step;
  step.node = static_cast<int32_t>(n);
  runtime::MatmulLaunch& launch = step.matmul;
  launch.op = op.substr(6);  // after "aten::"
  launch.a = slot_of_buffer(buffer_name_of(a));
  launch.b = slot_of_buffer(buffer_name_of(b));
  launch.nodes = {static_cast<int32_t>(n)};
  if (addmm) {
    const auto beta = number_or(node, 3, "beta", 1), alpha = number_or(node, 4, "alpha", 1);
    if (!beta || *beta != 1 || !alpha) return std::nullopt;
    launch.alpha = static_cast<float>(*alpha);
    const Arg& bias = node.args[0];
    const auto bias_meta = meta_of(g, bias);
    if (!is_tensor_ref(bias) || !bias_meta || bias_meta->dtype != "float32" ||
        bias_meta->device != "cpu")
      return std::nullopt;
    const std::vector<int64_t>& bs = bias_meta->sizes;
    std::string kind;
    if (bs == std::vector<int64_t>{cols} || bs == std::vector<int64_t>{1, cols}) {
      kind = "bias_col";
    } else if (bs == std::vector<int64_t>{m, 1}) {
      kind = "bias_row";
    } else if (bs == std::vector<int64_t>{m, cols}) {
      kind = "residual";
    } else {
      return std::nullopt;
    }
    launch.epilogue.push_back({kind, slot_of_buffer(buffer_name_of(bias)), 0, 0});
  }
  const std::string out = buffer_name_of(Arg::value(n, 0));
  auto absorbed = absorbable(g, program, step_index, n, *out_meta, into_inputs, slot_of_buffer);
  const std::string written = absorbed ? absorbed->written : out;
  if (absorbed) {
    launch.epilogue.push_back(absorbed->op);
    launch.nodes.insert(launch.nodes.end(), absorbed->nodes.begin(), absorbed->nodes.end());
    match.absorbed_step = absorbed->step;
  }
  launch.out = runtime::BufferAlloc{slot_of_buffer(written),
                                    out_meta->sizes,
                                    absorbed ? absorbed->strides : out_meta->strides,
                                    "float32",
                                    "cpu",
                                    -1};
  return match;
}

}  // namespace inductor_cpp::inductor
