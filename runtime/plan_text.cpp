/// \file
/// The readable form of a plan that INDUCTOR_CPP_LOGS=output_code prints, one step a line:
///   %s2 = aten::add.Tensor(%s1, 1)                free %s1
///   %s4 = kernel0(%s0, %s4)
///   %s6 = matrix::addmm(%s0, %s5) -> bias_col(%s3) -> relu
#include <charconv>
#include <sstream>

#include "runtime/plan.h"

namespace inductor_cpp::runtime {

namespace {

using nlohmann::json;

std::string literal_text(const json& lit) {
  if (lit.is_null()) return "None";
  const auto only = lit.begin();  // a named iterator: the element outlives it, but say so
  const std::string& tag = only.key();
  const json& v = only.value();
  if (tag == "list") {
    std::string out = "[";
    for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + literal_text(v[i]);
    return out + "]";
  }
  if (tag == "bool") return v.get<bool>() ? "True" : "False";
  if (tag == "str") return v.dump();
  if (tag == "dtype" || tag == "layout" || tag == "memory_format") return "torch." + v.get<std::string>();
  if (tag == "device") return "device(" + v.get<std::string>() + ")";
  return v.is_string() ? v.get<std::string>() : v.dump();
}

std::string arg_text(const PlanArg& a) {
  switch (a.kind) {
    case PlanArg::Kind::Slot:
      return "%s" + std::to_string(a.slot);
    case PlanArg::Kind::List: {
      std::string out = "[";
      for (size_t i = 0; i < a.items.size(); ++i) out += (i ? ", " : "") + arg_text(a.items[i]);
      return out + "]";
    }
    case PlanArg::Kind::Literal:
      break;
  }
  return literal_text(a.literal);
}

/// The shortest text that reads back as `x` (0.125, -0.5, 0.1).
std::string shortest_float(float x) {
  char buf[32];
  const auto end = std::to_chars(buf, buf + sizeof(buf), x).ptr;
  return std::string(buf, end);
}

std::string slots_text(const std::vector<int32_t>& slots) {
  std::string out;
  for (size_t i = 0; i < slots.size(); ++i)
    out += (i ? ", " : "") + (slots[i] < 0 ? std::string("_") : "%s" + std::to_string(slots[i]));
  return out;
}

std::string pair_text(const std::array<int64_t, 2>& v) {
  return "[" + std::to_string(v[0]) + "," + std::to_string(v[1]) + "]";
}

std::string geometry_text(const ConvGeometry& g) {
  return ", stride=" + pair_text(g.stride) + ", padding=" + pair_text(g.padding) +
         ", dilation=" + pair_text(g.dilation) + (g.groups != 1 ? ", groups=" + std::to_string(g.groups) : "");
}

std::string attention_text(const AttentionOperands& in) {
  return (in.mask >= 0 ? ", mask=%s" + std::to_string(in.mask) : "") + ", scale=" + shortest_float(in.scale) +
         (in.causal ? ", causal" : "");
}

/// " -> bias_col(%s3) -> scale(0.125) -> clamp(-0.5, 0.25) -> kernel tile3(%s4, %s2)".
std::string epilogue_text(const std::vector<MatmulEpilogue>& epilogue) {
  std::string line;
  for (const MatmulEpilogue& e : epilogue) {
    line += " -> " + e.kind + (e.slot >= 0 ? "(%s" + std::to_string(e.slot) + ")" : "");
    if (e.kind == "scale") line += "(" + shortest_float(e.a) + ")";
    if (e.kind == "clamp") line += "(" + shortest_float(e.a) + ", " + shortest_float(e.b) + ")";
    if (!e.kernel.empty()) {
      line += " " + e.kernel + "(" + slots_text(e.params) + ")";
    } else if (!e.params.empty()) {
      line += "(" + slots_text(e.params) + ")";
    }
  }
  return line;
}

/// "outputs = matrix::op(operands, attributes) -> epilogue": gradients are listed as ATen
/// orders them (conv2d_backward: input, weight, bias; attention_backward: q, k, v).
struct LibraryCallText {
  std::string call;  ///< " = matrix::<op>("
  std::string operator()(const GemmCall& c) const {
    return slots_text({c.out.slot}) + call + slots_text({c.a, c.b}) +
           (c.alpha != 1 ? ", alpha=" + std::to_string(c.alpha) : "") + ")" + epilogue_text(c.epilogue);
  }
  std::string operator()(const Conv2dCall& c) const {
    return slots_text({c.out.slot}) + call + slots_text({c.input, c.weight}) + geometry_text(c.geometry) + ")" +
           epilogue_text(c.epilogue);
  }
  std::string operator()(const Conv2dBackwardCall& c) const {
    return slots_text({c.grad_input.slot, c.grad_weight.slot, c.grad_bias.slot}) + call +
           slots_text({c.grad_output, c.input, c.weight}) + geometry_text(c.geometry) + ")";
  }
  std::string operator()(const AttentionCall& c) const {
    std::vector<int32_t> outs{c.out.slot};
    if (c.logsumexp.slot >= 0) outs.push_back(c.logsumexp.slot);
    return slots_text(outs) + call + slots_text({c.in.query, c.in.key, c.in.value}) + attention_text(c.in) + ")";
  }
  std::string operator()(const AttentionBackwardCall& c) const {
    return slots_text({c.grad_query.slot, c.grad_key.slot, c.grad_value.slot}) + call +
           slots_text({c.grad_output, c.in.query, c.in.key, c.in.value, c.forward_output, c.forward_logsumexp}) +
           attention_text(c.in) + ")";
  }
};

std::string kernel_text(const KernelLaunch& k, bool gpu) {
  std::vector<int32_t> outs;
  for (const BufferAlloc& a : k.allocs) outs.push_back(a.slot);
  std::string line = slots_text(outs) + " = " + k.name + "(" + slots_text(k.args) + ")";
  for (int32_t u : k.updates) line += " updates %s" + std::to_string(k.args[static_cast<size_t>(u)]);
  if (gpu) {
    const GpuLaunchDims& g = k.gpu;
    line += " <<<(" + std::to_string(g.grid[0]) + "," + std::to_string(g.grid[1]) + "," + std::to_string(g.grid[2]) +
            "), (" + std::to_string(g.block[0]) + "," + std::to_string(g.block[1]) + "," +
            std::to_string(g.block[2]) + "), " + std::to_string(g.shared_bytes) + ">>>" +
            (g.programmatic ? " programmatic" : "");
  }
  for (const BufferAlloc& a : k.allocs) {
    if (a.reuse_slot >= 0) line += " %s" + std::to_string(a.slot) + " reuses %s" + std::to_string(a.reuse_slot);
  }
  return line;
}

std::string aten_text(const AtenCall& c) {
  std::string line = slots_text(c.outs) + " = " + c.op + "(";
  bool first = true;
  for (const PlanArg& a : c.args) {
    line += (first ? "" : ", ") + arg_text(a);
    first = false;
  }
  for (const auto& [name, a] : c.kwargs) {
    line += (first ? "" : ", ") + name + "=" + arg_text(a);
    first = false;
  }
  return line + ")";
}

std::string step_text(const Step& s, bool gpu) {
  std::string line = "  ";
  if (const AtenCall* c = s.aten()) line += aten_text(*c);
  if (const KernelLaunch* k = s.kernel()) line += kernel_text(*k, gpu);
  if (const LibraryCall* l = s.library()) line += std::visit(LibraryCallText{" = matrix::" + l->op + "("}, l->args);
  if (!s.free_after.empty())
    line += std::string(line.size() < 48 ? 48 - line.size() : 1, ' ') + "free " + slots_text(s.free_after);
  return line;
}

}  // namespace

std::string plan_to_text(const Plan& p) {
  std::ostringstream os;
  os << "plan(inputs %s0..%s" << p.num_inputs - 1 << ", constants " << p.num_constants << ", " << p.steps.size()
     << " steps: " << p.ops_generated << " generated, " << p.ops_fallback << " ATen) {\n";
  if (!p.free_at_start.empty()) os << "  free " << slots_text(p.free_at_start) << "\n";
  for (const Step& s : p.steps) os << step_text(s, p.is_gpu()) << "\n";
  os << "  return (";
  for (size_t i = 0; i < p.outputs.size(); ++i) os << (i ? ", " : "") << arg_text(p.outputs[i]);
  os << ")\n}\n";
  return os.str();
}

}  // namespace inductor_cpp::runtime
