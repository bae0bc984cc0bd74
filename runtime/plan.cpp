/// \file
/// Plan <-> JSON. The JSON is the cached artifact `plan.json`.
#include "runtime/plan.h"

#include <charconv>
#include <sstream>
#include <stdexcept>

namespace inductor_cpp::runtime {

using nlohmann::json;

PlanArg PlanArg::of_slot(int32_t s) {
  PlanArg a;
  a.kind = Kind::Slot;
  a.slot = s;
  return a;
}

PlanArg PlanArg::of_literal(json j) {
  PlanArg a;
  a.kind = Kind::Literal;
  a.literal = std::move(j);
  return a;
}

PlanArg PlanArg::of_list(std::vector<PlanArg> items) {
  PlanArg a;
  a.kind = Kind::List;
  a.items = std::move(items);
  return a;
}

namespace {

json arg_to_json(const PlanArg& a) {
  switch (a.kind) {
    case PlanArg::Kind::Slot:
      return json{{"slot", a.slot}};
    case PlanArg::Kind::List: {
      json items = json::array();
      for (const PlanArg& i : a.items) items.push_back(arg_to_json(i));
      return json{{"items", items}};
    }
    case PlanArg::Kind::Literal:
      break;
  }
  return json{{"lit", a.literal}};
}

PlanArg arg_from_json(const json& j, const std::string& path) {
  if (!j.is_object() || j.size() != 1)
    throw std::runtime_error("plan: " + path + ": malformed operand");
  if (auto it = j.find("slot"); it != j.end()) return PlanArg::of_slot(it->get<int32_t>());
  if (auto it = j.find("lit"); it != j.end()) return PlanArg::of_literal(*it);
  if (auto it = j.find("items"); it != j.end()) {
    std::vector<PlanArg> items;
    for (size_t i = 0; i < it->size(); ++i)
      items.push_back(arg_from_json((*it)[i], path + "[" + std::to_string(i) + "]"));
    return PlanArg::of_list(std::move(items));
  }
  throw std::runtime_error("plan: " + path + ": unknown operand kind");
}

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
  if (tag == "dtype" || tag == "layout" || tag == "memory_format")
    return "torch." + v.get<std::string>();
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

json alloc_to_json(const BufferAlloc& a) {
  return json{{"slot", a.slot},   {"sizes", a.sizes},   {"strides", a.strides},
              {"dtype", a.dtype}, {"device", a.device}, {"reuse", a.reuse_slot}};
}

BufferAlloc alloc_from_json(const json& a) {
  return BufferAlloc{a.at("slot").get<int32_t>(),          a.at("sizes").get<std::vector<int64_t>>(),
                     a.at("strides").get<std::vector<int64_t>>(), a.at("dtype").get<std::string>(),
                     a.at("device").get<std::string>(),    a.at("reuse").get<int32_t>()};
}

json matmul_to_json(const MatmulLaunch& m) {
  json epilogue = json::array();
  for (const MatmulEpilogue& e : m.epilogue) {
    epilogue.push_back(json{{"kind", e.kind}, {"slot", e.slot}, {"a", e.a}, {"b", e.b}});
    if (!e.params.empty()) epilogue.back()["params"] = e.params;
    if (!e.kernel.empty()) {
      json layouts = json::array();
      for (const ExpectedLayout& l : e.layouts) layouts.push_back(json{{"sizes", l.sizes}, {"strides", l.strides}});
      epilogue.back()["kernel"] = e.kernel;
      epilogue.back()["layouts"] = layouts;
    }
  }
  json j{{"op", m.op},       {"a", m.a},           {"b", m.b},        {"out", alloc_to_json(m.out)},
         {"alpha", m.alpha}, {"epilogue", epilogue}, {"nodes", m.nodes}};
  if (m.is_conv() || m.is_conv_backward())
    j["conv"] = json{{"stride", m.conv.stride}, {"padding", m.conv.padding}, {"dilation", m.conv.dilation}};
  if (m.is_attention() || m.is_attention_backward()) {
    j["value"] = m.value;
    j["mask"] = m.mask;
    j["causal"] = m.causal;
  }
  if (m.is_attention()) j["logsumexp"] = alloc_to_json(m.logsumexp);
  if (m.is_attention_backward()) {
    j["grad_output"] = m.grad_output;
    j["forward_output"] = m.forward_output;
    j["forward_logsumexp"] = m.forward_logsumexp;
    j["grad_key"] = alloc_to_json(m.grad_key);
    j["grad_value"] = alloc_to_json(m.grad_value);
  }
  if (m.is_conv_backward()) {
    j["input"] = m.input;
    j["grad_weight"] = alloc_to_json(m.grad_weight);
    j["grad_bias"] = alloc_to_json(m.grad_bias);
  }
  return j;
}

MatmulLaunch matmul_from_json(const json& j) {
  MatmulLaunch m;
  m.op = j.at("op").get<std::string>();
  if (m.op != "mm" && m.op != "addmm" && m.op != "bmm" && m.op != "conv2d" &&
      m.op != "conv2d_backward" && m.op != "attention" && m.op != "attention_backward")
    throw std::runtime_error("plan: unknown matmul op " + m.op);
  m.a = j.at("a").get<int32_t>();
  m.b = j.at("b").get<int32_t>();
  m.out = alloc_from_json(j.at("out"));
  m.alpha = j.at("alpha").get<float>();
  for (const json& e : j.at("epilogue")) {
    m.epilogue.push_back({e.at("kind").get<std::string>(), e.at("slot").get<int32_t>(), e.at("a").get<float>(),
                          e.at("b").get<float>()});
    if (e.contains("params")) m.epilogue.back().params = e.at("params").get<std::vector<int32_t>>();
    if (e.contains("kernel")) {
      m.epilogue.back().kernel = e.at("kernel").get<std::string>();
      for (const json& l : e.at("layouts")) {
        m.epilogue.back().layouts.push_back(
            {l.at("sizes").get<std::vector<int64_t>>(), l.at("strides").get<std::vector<int64_t>>()});
      }
    }
  }
  m.nodes = j.at("nodes").get<std::vector<int32_t>>();
  if (m.is_conv() || m.is_conv_backward()) {
    const json& c = j.at("conv");
    m.conv.stride = c.at("stride").get<std::array<int64_t, 2>>();
    m.conv.padding = c.at("padding").get<std::array<int64_t, 2>>();
    m.conv.dilation = c.at("dilation").get<std::array<int64_t, 2>>();
  }
  if (m.is_attention() || m.is_attention_backward()) {
    m.value = j.at("value").get<int32_t>();
    m.mask = j.at("mask").get<int32_t>();
    m.causal = j.at("causal").get<bool>();
  }
  if (m.is_attention()) m.logsumexp = alloc_from_json(j.at("logsumexp"));
  if (m.is_attention_backward()) {
    m.grad_output = j.at("grad_output").get<int32_t>();
    m.forward_output = j.at("forward_output").get<int32_t>();
    m.forward_logsumexp = j.at("forward_logsumexp").get<int32_t>();
    m.grad_key = alloc_from_json(j.at("grad_key"));
    m.grad_value = alloc_from_json(j.at("grad_value"));
  }
  if (m.is_conv_backward()) {
    m.input = j.at("input").get<int32_t>();
    m.grad_weight = alloc_from_json(j.at("grad_weight"));
    m.grad_bias = alloc_from_json(j.at("grad_bias"));
  }
  return m;
}

/// "  outputs = matrix::op(first operands" of a matrix step's text line, by op:
///   conv2d_backward:    "%s5, %s6, _ = matrix::conv2d_backward(%s1, %s0, %s2", the gradients
///                       of input, weight and bias from (grad output, input, weight), as ATen
///                       orders them;
///   attention_backward: "%s8, %s9, %s10 = matrix::attention_backward(%s7, %s1, %s2, %s3, %s5,
///                       %s6", the gradients of q, k and v from (grad out, q, k, v, out,
///                       logsumexp), as ATen orders them;
///   attention with its logsumexp: "%s6, %s7 = matrix::attention(%s1, %s2";
///   the rest:           "%s3 = matrix::mm(%s1, %s2".
std::string matmul_call_head(const MatmulLaunch& m) {
  const std::string call = " = matrix::" + m.op + "(";
  if (m.is_conv_backward())
    return "  " + slots_text({m.out.slot, m.grad_weight.slot, m.grad_bias.slot}) + call +
           slots_text({m.a, m.input, m.b});
  if (m.is_attention_backward())
    return "  " + slots_text({m.out.slot, m.grad_key.slot, m.grad_value.slot}) + call +
           slots_text({m.grad_output, m.a, m.b, m.value, m.forward_output, m.forward_logsumexp});
  std::vector<int32_t> outs{m.out.slot};
  if (m.logsumexp.slot >= 0) outs.push_back(m.logsumexp.slot);
  return "  " + slots_text(outs) + call + slots_text({m.a, m.b});
}

}  // namespace

std::string plan_to_text(const Plan& p) {
  std::ostringstream os;
  os << "plan(inputs %s0..%s" << p.num_inputs - 1 << ", constants " << p.num_constants << ", "
     << p.steps.size() << " steps: " << p.ops_generated << " generated, " << p.ops_fallback
     << " ATen) {\n";
  if (!p.free_at_start.empty()) os << "  free " << slots_text(p.free_at_start) << "\n";
  for (const Step& s : p.steps) {
    if (s.is_matmul()) {
      const MatmulLaunch& m = s.matmul;
      std::string line = matmul_call_head(m);
      if (m.is_attention() || m.is_attention_backward())  // ..., scale=0.125, causal)
        line += (m.is_attention() ? ", %s" + std::to_string(m.value) : "") +
                (m.mask >= 0 ? ", mask=%s" + std::to_string(m.mask) : "") +
                ", scale=" + shortest_float(m.alpha) + (m.causal ? ", causal" : "");
      else if (!m.is_conv_backward() && m.alpha != 1)
        line += ", alpha=" + std::to_string(m.alpha);
      if (m.is_conv() || m.is_conv_backward()) {
        const auto pair = [](const std::array<int64_t, 2>& v) {
          return "[" + std::to_string(v[0]) + "," + std::to_string(v[1]) + "]";
        };
        line += ", stride=" + pair(m.conv.stride) + ", padding=" + pair(m.conv.padding) +
                ", dilation=" + pair(m.conv.dilation);
      }
      line += ")";
      for (const MatmulEpilogue& e : m.epilogue) {
        line += " -> " + e.kind + (e.slot >= 0 ? "(%s" + std::to_string(e.slot) + ")" : "");
        // The literals: scale(0.125), clamp(-0.5, 0.25).
        if (e.kind == "scale") line += "(" + shortest_float(e.a) + ")";
        if (e.kind == "clamp") line += "(" + shortest_float(e.a) + ", " + shortest_float(e.b) + ")";
        if (!e.kernel.empty()) {  // kernel -> tile3(%s4, %s2, %s4)
          line += " " + e.kernel + "(" + slots_text(e.params) + ")";
        } else if (!e.params.empty()) {  // batch_norm(%s2, %s3, None, %s5)
          std::string params;
          for (int32_t p : e.params) params += (params.empty() ? "" : ", ") + (p >= 0 ? "%s" + std::to_string(p) : "None");
          line += "(" + params + ")";
        }
      }
      if (!s.free_after.empty())
        line += std::string(line.size() < 48 ? 48 - line.size() : 1, ' ') + "free " + slots_text(s.free_after);
      os << line << "\n";
      continue;
    }
    if (s.is_kernel()) {
      std::string line = "  ";
      std::vector<int32_t> outs;
      for (const BufferAlloc& a : s.kernel.allocs) outs.push_back(a.slot);
      line += slots_text(outs) + " = " + s.kernel.name + "(" + slots_text(s.kernel.args) + ")";
      for (int32_t u : s.kernel.updates) line += " updates %s" + std::to_string(s.kernel.args[static_cast<size_t>(u)]);
      if (p.is_gpu()) {
        const GpuLaunchDims& g = s.kernel.gpu;
        line += " <<<(" + std::to_string(g.grid[0]) + "," + std::to_string(g.grid[1]) + "," +
                std::to_string(g.grid[2]) + "), (" + std::to_string(g.block[0]) + "," +
                std::to_string(g.block[1]) + "," + std::to_string(g.block[2]) + "), " +
                std::to_string(g.shared_bytes) + ">>>" + (g.programmatic ? " programmatic" : "");
      }
      for (const BufferAlloc& a : s.kernel.allocs) {
        if (a.reuse_slot >= 0) line += " %s" + std::to_string(a.slot) + " reuses %s" + std::to_string(a.reuse_slot);
      }
      if (!s.free_after.empty())
        line += std::string(line.size() < 48 ? 48 - line.size() : 1, ' ') + "free " + slots_text(s.free_after);
      os << line << "\n";
      continue;
    }
    std::string line = "  " + slots_text(s.call.outs) + " = " + s.call.op + "(";
    bool first = true;
    for (const PlanArg& a : s.call.args) {
      line += (first ? "" : ", ") + arg_text(a);
      first = false;
    }
    for (const auto& [name, a] : s.call.kwargs) {
      line += (first ? "" : ", ") + name + "=" + arg_text(a);
      first = false;
    }
    line += ")";
    if (!s.free_after.empty())
      line += std::string(line.size() < 48 ? 48 - line.size() : 1, ' ') + "free " +
              slots_text(s.free_after);
    os << line << "\n";
  }
  os << "  return (";
  for (size_t i = 0; i < p.outputs.size(); ++i) os << (i ? ", " : "") << arg_text(p.outputs[i]);
  os << ")\n}\n";
  return os.str();
}

json plan_to_json(const Plan& p) {
  json steps = json::array();
  for (const Step& s : p.steps) {
    if (s.is_matmul()) {
      steps.push_back(json{{"node", s.node}, {"matmul", matmul_to_json(s.matmul)}, {"free", s.free_after}});
      continue;
    }
    if (s.is_kernel()) {
      json allocs = json::array();
      for (const BufferAlloc& a : s.kernel.allocs) {
        allocs.push_back(json{{"slot", a.slot},
                              {"sizes", a.sizes},
                              {"strides", a.strides},
                              {"dtype", a.dtype},
                              {"device", a.device},
                              {"reuse", a.reuse_slot}});
      }
      json layouts = json::array();
      for (const ExpectedLayout& l : s.kernel.layouts) layouts.push_back(json{{"sizes", l.sizes}, {"strides", l.strides}});
      json step{{"node", s.node},        {"kernel", s.kernel.name}, {"args", s.kernel.args},
                {"layouts", layouts},    {"allocs", allocs},        {"nodes", s.kernel.nodes},
                {"free", s.free_after}};
      if (!s.kernel.updates.empty()) step["updates"] = s.kernel.updates;
      if (p.is_gpu()) {
        const GpuLaunchDims& g = s.kernel.gpu;
        step["gpu"] = json{{"grid", g.grid},
                           {"block", g.block},
                           {"shared_bytes", g.shared_bytes},
                           {"checks_bounds", g.checks_bounds}};
        if (g.programmatic) step["gpu"]["programmatic"] = true;
      }
      steps.push_back(std::move(step));
      continue;
    }
    json args = json::array();
    for (const PlanArg& a : s.call.args) args.push_back(arg_to_json(a));
    json kwargs = json::object();
    for (const auto& [name, a] : s.call.kwargs) kwargs[name] = arg_to_json(a);
    steps.push_back(json{{"node", s.node},
                         {"op", s.call.op},
                         {"args", args},
                         {"kwargs", kwargs},
                         {"outs", s.call.outs},
                         {"free", s.free_after}});
  }
  json outputs = json::array();
  for (const PlanArg& a : p.outputs) outputs.push_back(arg_to_json(a));
  json out{{"format", Plan::kFormat},
              {"num_inputs", p.num_inputs},
              {"num_constants", p.num_constants},
              {"num_slots", p.num_slots},
              {"free_at_start", p.free_at_start},
              {"steps", steps},
              {"outputs", outputs},
              {"ops_generated", p.ops_generated},
              {"ops_fallback", p.ops_fallback},
              {"kernel_library", p.kernel_library}};
  if (p.library_kind != "so") out["library_kind"] = p.library_kind;  // absent: CPU ("so")
  return out;
}

Plan plan_from_json(const json& j) {
  try {
    if (j.at("format").get<int>() != Plan::kFormat)
      throw std::runtime_error("plan: unsupported format");
    Plan p;
    p.num_inputs = j.at("num_inputs").get<int32_t>();
    p.num_constants = j.at("num_constants").get<int32_t>();
    p.num_slots = j.at("num_slots").get<int32_t>();
    p.free_at_start = j.at("free_at_start").get<std::vector<int32_t>>();
    const json& steps = j.at("steps");
    for (size_t i = 0; i < steps.size(); ++i) {
      const json& js = steps[i];
      const std::string path = "steps[" + std::to_string(i) + "]";
      Step s;
      s.node = js.at("node").get<int32_t>();
      if (js.contains("matmul")) {
        s.matmul = matmul_from_json(js.at("matmul"));
        s.free_after = js.at("free").get<std::vector<int32_t>>();
        p.steps.push_back(std::move(s));
        continue;
      }
      if (js.contains("kernel")) {
        s.kernel.name = js.at("kernel").get<std::string>();
        s.kernel.args = js.at("args").get<std::vector<int32_t>>();
        for (const json& l : js.at("layouts")) {
          s.kernel.layouts.push_back(
              {l.at("sizes").get<std::vector<int64_t>>(), l.at("strides").get<std::vector<int64_t>>()});
        }
        for (const json& a : js.at("allocs")) {
          s.kernel.allocs.push_back(BufferAlloc{a.at("slot").get<int32_t>(),
                                                a.at("sizes").get<std::vector<int64_t>>(),
                                                a.at("strides").get<std::vector<int64_t>>(),
                                                a.at("dtype").get<std::string>(), a.at("device").get<std::string>(),
                                                a.at("reuse").get<int32_t>()});
        }
        s.kernel.nodes = js.at("nodes").get<std::vector<int32_t>>();
        if (js.contains("updates")) s.kernel.updates = js.at("updates").get<std::vector<int32_t>>();
        if (js.contains("gpu")) {
          const json& g = js.at("gpu");
          s.kernel.gpu.grid = g.at("grid").get<std::array<int64_t, 3>>();
          s.kernel.gpu.block = g.at("block").get<std::array<int32_t, 3>>();
          s.kernel.gpu.shared_bytes = g.at("shared_bytes").get<int32_t>();
          s.kernel.gpu.checks_bounds = g.at("checks_bounds").get<bool>();
          s.kernel.gpu.programmatic = g.value("programmatic", false);
        }
        s.free_after = js.at("free").get<std::vector<int32_t>>();
        p.steps.push_back(std::move(s));
        continue;
      }
      s.call.op = js.at("op").get<std::string>();
      const json& args = js.at("args");
      for (size_t a = 0; a < args.size(); ++a)
        s.call.args.push_back(arg_from_json(args[a], path + ".args"));
      for (auto it = js.at("kwargs").begin(); it != js.at("kwargs").end(); ++it)
        s.call.kwargs.emplace_back(it.key(), arg_from_json(it.value(), path + ".kwargs"));
      s.call.outs = js.at("outs").get<std::vector<int32_t>>();
      s.free_after = js.at("free").get<std::vector<int32_t>>();
      p.steps.push_back(std::move(s));
    }
    for (const json& o : j.at("outputs")) p.outputs.push_back(arg_from_json(o, "outputs"));
    p.ops_generated = j.at("ops_generated").get<int64_t>();
    p.ops_fallback = j.at("ops_fallback").get<int64_t>();
    p.kernel_library = j.at("kernel_library").get<std::string>();
    p.library_kind = j.value("library_kind", std::string("so"));
    return p;
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("plan: malformed: ") + e.what());
  }
}

}  // namespace inductor_cpp::runtime
