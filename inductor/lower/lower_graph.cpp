/// \file
/// The lowering driver: buffers for every tensor value, then each node in order either
/// made a library call (library_calls.h, when enabled), lowered through the op table (its
/// computes and kernel steps committed together) or turned into an extern step, with a
/// decision recorded for every node.
#include "inductor/lower/lower_graph.h"

#include <limits>
#include <map>
#include <optional>
#include <stdexcept>

#include "inductor/lower/library_calls.h"
#include "inductor/lower/lowering_internal.h"

namespace inductor_cpp::inductor {
namespace {

using lowering::Decline;
using lowering::NodeLowering;
using lowering::OpLowering;
using lowering::OpTable;

const OpTable& op_table() {
  static const OpTable table = [] {
    OpTable t;
    lowering::register_pointwise_ops(t);
    lowering::register_pointwise_special_ops(t);
    lowering::register_activation_ops(t);
    lowering::register_reduction_ops(t);
    lowering::register_view_ops(t);
    lowering::register_rearrange_ops(t);
    lowering::register_indexing_ops(t);
    lowering::register_creation_ops(t);
    lowering::register_scan_ops(t);
    lowering::register_pooling_ops(t);
    return t;
  }();
  return table;
}

ir::Expr dim_expr(const ir::Dim& d, const std::string& buffer) {
  if (std::holds_alternative<int64_t>(d)) return ir::Expr(std::get<int64_t>(d));
  const std::string& text = std::get<std::string>(d);
  try {
    return ir::parse_expr(text);
  } catch (const std::exception& e) {
    throw std::invalid_argument("lower_graph: " + buffer + ": size expression '" + text +
                                "' is not understood (" + e.what() + ")");
  }
}

/// The buffer of a tensor value. Graphs holding tensors of a type the IR has no element type
/// for (complex, float8, wide unsigned) are meant to run whole as eager: that throws.
ir::Buffer buffer_from_meta(const std::string& name, const ir::TensorMeta& meta,
                            ir::BufferOrigin origin, int64_t index) {
  ir::Buffer b;
  b.name = name;
  const auto dtype = ir::dtype_from_name(meta.dtype);
  if (!dtype)
    throw std::invalid_argument("lower_graph: " + name + ": dtype " + meta.dtype +
                                " has no loop-level element type");
  b.dtype = *dtype;
  for (const ir::Dim& d : meta.sizes) b.sizes.push_back(dim_expr(d, name));
  for (const ir::Dim& d : meta.strides) b.strides.push_back(dim_expr(d, name));
  b.offset = dim_expr(meta.storage_offset, name);
  b.origin = origin;
  b.device = meta.device;
  b.index = index;
  return b;
}

/// Every symbol in buffer layouts gets a range: sizes that are exactly a Dynamo size symbol
/// ("s0") are >= 2 (0 and 1 are specialized), anything else >= 0.
void add_symbol_ranges(ir::LoopProgram& program) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  for (const ir::Buffer& b : program.buffers) {
    std::vector<ir::Expr> exprs = b.sizes;
    exprs.insert(exprs.end(), b.strides.begin(), b.strides.end());
    exprs.push_back(b.offset);
    for (const ir::Expr& e : exprs)
      for (const std::string& s : ir::free_vars(e))
        program.symbol_ranges.emplace(s, ir::Interval{0, kMax});
    for (const ir::Expr& s : b.sizes)
      if (s.is_var() && !s.name().empty() && s.name()[0] == 's')
        program.symbol_ranges[s.name()] = ir::Interval{2, kMax};
  }
}

/// The buffers an extern step reads: its tensor arguments (also inside lists), once each.
void collect_inputs(const ir::Arg& a, const ir::LoopProgram& program,
                    std::vector<std::string>& out) {
  if (a.kind == ir::Arg::Kind::List) {
    for (const ir::Arg& item : a.items) collect_inputs(item, program, out);
    return;
  }
  if (!a.is_tensor_ref()) return;
  const std::string name = buffer_name_of(a);
  if (program.find_buffer(name) == nullptr) return;  // a number, not a tensor
  for (const std::string& seen : out)
    if (seen == name) return;
  out.push_back(name);
}

std::string output_name(int32_t node, size_t k) {
  return buffer_name_of(ir::Arg::value(node, static_cast<int64_t>(k)));
}

void add_extern(ir::LoopProgram& program, const ir::Node& node, int32_t index) {
  ir::ExternCall call;
  call.graph_node = index;
  for (const ir::Arg& a : node.args) collect_inputs(a, program, call.inputs);
  for (const auto& kw : node.kwargs) collect_inputs(kw.second, program, call.inputs);
  for (size_t k = 0; k < node.outputs.size(); ++k) {
    if (!node.outputs[k]) {
      call.outputs.emplace_back();
      continue;
    }
    call.outputs.push_back(output_name(index, k));
    program.buffers.push_back(
        buffer_from_meta(call.outputs.back(), *node.outputs[k], ir::BufferOrigin::Extern, -1));
  }
  ir::Step step;
  step.kind = ir::Step::Kind::Extern;
  step.call = std::move(call);
  program.steps.push_back(std::move(step));
}

/// Adds the extern step of node `index` as a library call when our kernels run it; false
/// otherwise, with `why_not` saying why for a matrix op they do not run.
bool try_library_call(const ir::Graph& graph, int32_t index, const LoweringOptions& options,
                      ir::LoopProgram& program, std::string& why_not,
                      std::map<int32_t, std::string>& taken) {
  std::optional<ir::ExternCall> call =
      library_calls::library_call_for(graph, index, options, why_not);
  if (!call) return false;
  if (auto node = library_calls::take_activation(graph, index, *call->library)) {
    taken[node->node] = node->value_of;
    call->inputs = call->library->reads();
  }
  const ir::Node& node = graph.nodes[index];
  for (size_t k = 0; k < call->outputs.size(); ++k)
    if (!call->outputs[k].empty())
      program.buffers.push_back(buffer_from_meta(call->outputs[k], *node.outputs[k],
                                                 ir::BufferOrigin::Extern, -1));
  ir::Step step;
  step.kind = ir::Step::Kind::Extern;
  step.call = std::move(*call);
  program.steps.push_back(std::move(step));
  return true;
}

/// Node `index`'s value as the buffer `value_of`: a view step that runs nothing (loop_ir.h
/// ExternCall::alias), for a node whose work a library call took over.
void add_alias(ir::LoopProgram& program, const ir::Node& node, int32_t index, const std::string& value_of) {
  ir::ExternCall call;
  call.graph_node = index;
  call.inputs = {value_of};
  call.outputs = {output_name(index, 0)};
  call.view = true;
  call.alias = true;
  program.buffers.push_back(buffer_from_meta(call.outputs[0], *node.outputs[0], ir::BufferOrigin::Extern, -1));
  ir::Step step;
  step.kind = ir::Step::Kind::Extern;
  step.call = std::move(call);
  program.steps.push_back(std::move(step));
}

/// `copy_(input, value)` of a node's value into a graph input, or nothing.
std::optional<InputCopy> input_copy(const ir::Node& node) {
  if (node.op != "aten::copy_" || node.args.size() < 2 || node.args[0].kind != ir::Arg::Kind::Input ||
      node.args[1].kind != ir::Arg::Kind::Value)
    return std::nullopt;
  return InputCopy{buffer_name_of(node.args[1]), buffer_name_of(node.args[0])};
}

/// Why a node's outputs cannot be generated at all, or "" when they can.
std::string output_problem(const ir::Node& node) {
  if (node.outputs.empty()) return "no tensor outputs";
  for (const auto& meta : node.outputs) {
    if (!meta) return "an output is not a tensor";
    // Zero-size outputs are generated too: CPU kernels run loops of no iterations, GPU kernels
    // launch one block that does nothing (NvptxEmit.ZeroSizeKernelsEmitAndLaunchNothing).
    for (const ir::Dim& d : meta->sizes) {
      if (!std::holds_alternative<int64_t>(d)) return "symbolic sizes not generated yet";
    }
  }
  return "";
}

/// Commits a successful lowering: its buffers, computes, and a kernel step per non-view
/// compute, in the order the lowering defined them.
void commit(ir::LoopProgram& program, const NodeLowering& lowered, const ir::Node& node,
            int32_t index) {
  for (const ir::Buffer& b : lowered.internal_buffers()) program.buffers.push_back(b);
  for (size_t k = 0; k < node.outputs.size(); ++k)
    program.buffers.push_back(
        buffer_from_meta(output_name(index, k), *node.outputs[k], ir::BufferOrigin::Computed, -1));
  for (const ir::Compute& c : lowered.computes()) {
    program.computes[c.name] = c;
    if (c.view) continue;
    ir::Step step;
    step.kind = ir::Step::Kind::Kernel;
    step.kernel.computes = {c.name};
    program.steps.push_back(std::move(step));
  }
}

/// Runs the node's lowering; returns "" on success, else the reason it falls back.
std::string try_lower(ir::LoopProgram& program, const ir::Graph& graph, int32_t index) {
  const ir::Node& node = graph.nodes[index];
  if (ir::is_scalar_op(node.op)) return "scalar arithmetic, run by the runtime";
  const OpLowering* row = op_table().find(node.op);
  if (row == nullptr) return "no lowering for " + node.op;
  if (!row->fallback_reason.empty()) return row->fallback_reason;
  if (std::string problem = output_problem(node); !problem.empty()) return problem;
  try {
    NodeLowering lowering(graph, program, index, row->params);
    row->lower(lowering);
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      bool defined = false;
      for (const ir::Compute& c : lowering.computes())
        defined = defined || c.name == output_name(index, k);
      if (!defined) return "lowering left output " + std::to_string(k) + " undefined";
    }
    commit(program, lowering, node, index);
    return "";
  } catch (const Decline& d) {
    return d.what();
  } catch (const std::invalid_argument& e) {
    // An IR builder rejected what the lowering built: a lowering bug, but the node can still
    // run correctly as ATen.
    return std::string("lowering error: ") + e.what();
  }
}

}  // namespace

std::string buffer_name_of(const ir::Arg& tensor_ref) {
  switch (tensor_ref.kind) {
    case ir::Arg::Kind::Input:
      return "%in" + std::to_string(tensor_ref.index);
    case ir::Arg::Kind::Constant:
      return "%c" + std::to_string(tensor_ref.index);
    case ir::Arg::Kind::Value:
      return "%" + std::to_string(tensor_ref.index) +
             (tensor_ref.output == 0 ? "" : "." + std::to_string(tensor_ref.output));
    default:
      throw std::invalid_argument("buffer_name_of: not a tensor reference: " +
                                  ir::to_string(tensor_ref));
  }
}

LoweredGraph lower_graph(const ir::Graph& graph, const LoweringOptions& options) {
  LoweredGraph result;
  ir::LoopProgram& program = result.program;
  for (size_t k = 0; k < graph.inputs.size(); ++k)
    if (graph.inputs[k].tensor)
      program.buffers.push_back(buffer_from_meta(buffer_name_of(ir::Arg::input(k)),
                                                 *graph.inputs[k].tensor, ir::BufferOrigin::Input,
                                                 static_cast<int64_t>(k)));
  for (size_t k = 0; k < graph.constants.size(); ++k)
    program.buffers.push_back(buffer_from_meta(buffer_name_of(ir::Arg::constant(k)),
                                               graph.constants[k], ir::BufferOrigin::Constant,
                                               static_cast<int64_t>(k)));
  std::map<int32_t, std::string> taken;  // nodes a library call took over, and their values
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const int32_t index = static_cast<int32_t>(n);
    LoweringDecision decision;
    decision.node = index;
    std::string why_not;  // a matrix op our kernels do not run, and why
    if (auto alias = taken.find(index); alias != taken.end()) {
      add_alias(program, graph.nodes[n], index, alias->second);
      decision.generated = true;
      result.decisions.push_back(std::move(decision));
      continue;
    }
    if (options.library_calls && try_library_call(graph, index, options, program, why_not, taken)) {
      decision.generated = true;
      result.decisions.push_back(std::move(decision));
      continue;
    }
    decision.reason = try_lower(program, graph, index);
    decision.generated = decision.reason.empty();
    if (!decision.generated) {
      add_extern(program, graph.nodes[n], index);
      if (auto copy = input_copy(graph.nodes[n])) result.input_copies[index] = *copy;
      if (!why_not.empty()) decision.reason += (decision.reason.empty() ? "" : "; ") + why_not;
    }
    result.decisions.push_back(std::move(decision));
  }
  for (const ir::Arg& out : graph.outputs) {
    const bool tensor = out.is_tensor_ref() && program.find_buffer(buffer_name_of(out)) != nullptr;
    program.outputs.push_back(tensor ? buffer_name_of(out) : "");
  }
  add_symbol_ranges(program);
  return result;
}

}  // namespace inductor_cpp::inductor
