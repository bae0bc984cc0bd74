/// \file
/// The activation a library call of symbolic row count takes over at lowering (library_calls.h
/// take_activation). In a plan of symbolic sizes every other node is an ATen call, so
/// absorb_epilogues (which takes generated computes) cannot absorb the GELU after a Linear on a
/// dynamic batch; ATen's GELU is one more pass over the output and a fresh allocation (3.6 ms of
/// a 1024 × 3072 encoder layer inside the symbolic plan, 1.1 ms on its own). An elementwise op
/// applied to every element of a view of the call's output is the view of the op applied to the
/// output, so the activation goes into the call's epilogue and its node becomes an alias of
/// the buffer it read.
#include "inductor/lower/graph_meta.h"
#include "inductor/lower/library_calls.h"
#include "ir/activation_formulas.h"

namespace inductor_cpp::inductor::library_calls {
namespace {

using ir::Arg;
using namespace graph_meta;

bool is_value_of(const Arg& a, int64_t node) {
  return a.kind == Arg::Kind::Value && a.index == node && a.output == 0;
}

/// The node reading node `node`'s value, when exactly one does, once, and it is no graph output.
std::optional<int32_t> sole_reader(const ir::Graph& g, int64_t node) {
  for (const Arg& o : g.outputs)
    if (mentions_output(o, node, 0)) return std::nullopt;
  std::optional<int32_t> reader;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    int64_t uses = 0;
    for (const Arg& a : g.nodes[n].args) uses += mentions_output(a, node, 0);
    for (const auto& kw : g.nodes[n].kwargs) uses += mentions_output(kw.second, node, 0);
    if (uses == 0) continue;
    if (uses > 1 || reader) return std::nullopt;
    reader = static_cast<int32_t>(n);
  }
  return reader;
}

ir::Value constant(double v) {
  return ir::constant_float(v, ir::DType::Float32);
}

/// Node `act` as a data-free function of its first argument `x` (node `prev`'s value), in the
/// forms epilogue selection reads (ir/epilogue_ops.h), or a null value.
ir::Value activation_of(const ir::Node& act, int64_t prev, const ir::Value& x) {
  if (act.args.empty() || !is_value_of(act.args[0], prev)) return {};
  for (size_t i = 1; i < act.args.size(); ++i)
    if (is_value_of(act.args[i], prev)) return {};
  const std::string op = op_name(act.op);
  const size_t n = act.args.size();
  if (op == "aten::relu" && n == 1) return ir::binary(ir::BinaryOp::maximum, x, constant(0));
  if (op == "aten::silu" && n == 1) return ir::silu_formula(x);
  if (op == "aten::sigmoid" && n == 1) return ir::unary(ir::UnaryOp::sigmoid, x);
  if (op == "aten::tanh" && n == 1) return ir::unary(ir::UnaryOp::tanh, x);
  if (op == "aten::gelu") {
    const Arg* approx = find_arg(act, 1, "approximate");
    if (!approx || (approx->kind == Arg::Kind::Str && approx->text == "none")) return ir::gelu_formula(x, false);
    if (approx->kind == Arg::Kind::Str && approx->text == "tanh") return ir::gelu_formula(x, true);
    return {};
  }
  if (op == "aten::hardtanh") {
    const auto lo = number_or(act, 1, "min_val", -1), hi = number_or(act, 2, "max_val", 1);
    if (!lo || !hi || *lo > *hi) return {};
    return ir::binary(ir::BinaryOp::minimum, ir::binary(ir::BinaryOp::maximum, x, constant(*lo)), constant(*hi));
  }
  if ((op == "aten::mul.Tensor" || op == "aten::mul.Scalar") && n == 2) {
    const auto factor = number(act.args[1]);
    return factor ? ir::binary(ir::BinaryOp::mul, x, constant(*factor)) : ir::Value();
  }
  return {};
}

}  // namespace

std::optional<TakenNode> take_activation(const ir::Graph& g, int32_t n, ir::LibraryCall& call) {
  if (call.op != ir::LibraryOp::mm && call.op != ir::LibraryOp::addmm) return std::nullopt;
  const ir::TensorMeta* out = tensor_meta_of(g, Arg::value(n, 0));
  if (!out || out->dtype != "float32" || meta_of(g, Arg::value(n, 0))) return std::nullopt;  // static: the pass's
  int64_t applied_to = n;
  auto reader = sole_reader(g, applied_to);
  if (!reader) return std::nullopt;
  const std::string reader_op = op_name(g.nodes[*reader].op);
  if ((reader_op == "aten::view" || reader_op == "aten::_unsafe_view" || reader_op == "aten::reshape") &&
      !g.nodes[*reader].args.empty() && is_value_of(g.nodes[*reader].args[0], applied_to)) {
    applied_to = *reader;
    if (!(reader = sole_reader(g, applied_to))) return std::nullopt;
  }
  const ir::Value acc = call.epilogue ? call.epilogue : ir::epilogue_accumulator(ir::DType::Float32);
  const ir::Value applied = activation_of(g.nodes[*reader], applied_to, acc);
  if (!applied) return std::nullopt;
  call.epilogue = applied;
  call.absorbed_nodes.push_back(*reader);
  return TakenNode{*reader, buffer_name_of(Arg::value(applied_to, 0))};
}

}  // namespace inductor_cpp::inductor::library_calls
