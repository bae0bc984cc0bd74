/// \file
/// Plan <-> JSON, the cached artifact `plan.json`. Each step type and each library call's
/// argument struct has one writer and one reader here, so the JSON form round-trips through
/// exactly the types of runtime/plan.h. A step is {"node", "free", and one of "aten",
/// "kernel" or "library"}; a library call is {"op", "nodes", and its argument struct's fields}.
#include <algorithm>
#include <iterator>
#include <stdexcept>

#include "runtime/plan.h"

namespace inductor_cpp::runtime {

using nlohmann::json;

namespace {

// ---- operands, buffers, layouts ---------------------------------------------------------------

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
  if (!j.is_object() || j.size() != 1) throw std::runtime_error("plan: " + path + ": malformed operand");
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

json to_json(const BufferAlloc& a) {
  return json{{"slot", a.slot},   {"sizes", a.sizes},   {"strides", a.strides},
              {"dtype", a.dtype}, {"device", a.device}, {"reuse", a.reuse_slot}};
}

BufferAlloc alloc_from_json(const json& a) {
  return BufferAlloc{a.at("slot").get<int32_t>(),          a.at("sizes").get<std::vector<int64_t>>(),
                     a.at("strides").get<std::vector<int64_t>>(), a.at("dtype").get<std::string>(),
                     a.at("device").get<std::string>(),    a.at("reuse").get<int32_t>()};
}

json to_json(const std::vector<ExpectedLayout>& layouts) {
  json out = json::array();
  for (const ExpectedLayout& l : layouts) out.push_back(json{{"sizes", l.sizes}, {"strides", l.strides}});
  return out;
}

std::vector<ExpectedLayout> layouts_from_json(const json& j) {
  std::vector<ExpectedLayout> out;
  for (const json& l : j)
    out.push_back({l.at("sizes").get<std::vector<int64_t>>(), l.at("strides").get<std::vector<int64_t>>()});
  return out;
}

// ---- library calls ------------------------------------------------------------------------------

json to_json(const std::vector<MatmulEpilogue>& epilogue) {
  json out = json::array();
  for (const MatmulEpilogue& e : epilogue) {
    json op{{"kind", e.kind}, {"slot", e.slot}, {"a", e.a}, {"b", e.b}};
    if (!e.params.empty()) op["params"] = e.params;
    if (!e.kernel.empty()) {
      op["kernel"] = e.kernel;
      op["layouts"] = to_json(e.layouts);
    }
    out.push_back(std::move(op));
  }
  return out;
}

std::vector<MatmulEpilogue> epilogue_from_json(const json& j) {
  std::vector<MatmulEpilogue> out;
  for (const json& e : j) {
    MatmulEpilogue op{e.at("kind").get<std::string>(), e.at("slot").get<int32_t>(), e.at("a").get<float>(),
                      e.at("b").get<float>()};
    if (e.contains("params")) op.params = e.at("params").get<std::vector<int32_t>>();
    if (e.contains("kernel")) {
      op.kernel = e.at("kernel").get<std::string>();
      op.layouts = layouts_from_json(e.at("layouts"));
    }
    out.push_back(std::move(op));
  }
  return out;
}

json to_json(const ConvGeometry& g) {
  json j{{"stride", g.stride}, {"padding", g.padding}, {"dilation", g.dilation}};
  if (g.groups != 1) j["groups"] = g.groups;
  return j;
}

ConvGeometry geometry_from_json(const json& j) {
  return ConvGeometry{j.at("stride").get<std::array<int64_t, 2>>(), j.at("padding").get<std::array<int64_t, 2>>(),
                      j.at("dilation").get<std::array<int64_t, 2>>(), j.value("groups", int64_t{1})};
}

json to_json(const AttentionOperands& in) {
  return json{{"query", in.query}, {"key", in.key},     {"value", in.value},
              {"mask", in.mask},   {"scale", in.scale}, {"causal", in.causal}};
}

AttentionOperands attention_operands_from_json(const json& j) {
  return AttentionOperands{j.at("query").get<int32_t>(), j.at("key").get<int32_t>(),
                           j.at("value").get<int32_t>(), j.at("mask").get<int32_t>(),
                           j.at("scale").get<float>(),   j.at("causal").get<bool>()};
}

/// Writes one argument struct's fields into the library call's object.
struct ArgsWriter {
  json& j;
  void operator()(const GemmCall& c) const {
    j.update(json{{"a", c.a}, {"b", c.b}, {"out", to_json(c.out)}, {"alpha", c.alpha},
                  {"epilogue", to_json(c.epilogue)}});
  }
  void operator()(const Conv2dCall& c) const {
    j.update(json{{"input", c.input}, {"weight", c.weight}, {"geometry", to_json(c.geometry)},
                  {"out", to_json(c.out)}, {"epilogue", to_json(c.epilogue)}});
  }
  void operator()(const Conv2dBackwardCall& c) const {
    j.update(json{{"grad_output", c.grad_output}, {"input", c.input}, {"weight", c.weight},
                  {"geometry", to_json(c.geometry)}, {"grad_input", to_json(c.grad_input)},
                  {"grad_weight", to_json(c.grad_weight)}, {"grad_bias", to_json(c.grad_bias)}});
  }
  void operator()(const AttentionCall& c) const {
    j.update(json{{"in", to_json(c.in)}, {"out", to_json(c.out)}, {"logsumexp", to_json(c.logsumexp)}});
  }
  void operator()(const AttentionBackwardCall& c) const {
    j.update(json{{"in", to_json(c.in)},
                  {"grad_output", c.grad_output},
                  {"forward_output", c.forward_output},
                  {"forward_logsumexp", c.forward_logsumexp},
                  {"grad_query", to_json(c.grad_query)},
                  {"grad_key", to_json(c.grad_key)},
                  {"grad_value", to_json(c.grad_value)}});
  }
};

/// Reads one argument struct's fields from the library call's object.
struct ArgsReader {
  const json& j;
  void operator()(GemmCall& c) const {
    c.a = j.at("a").get<int32_t>();
    c.b = j.at("b").get<int32_t>();
    c.out = alloc_from_json(j.at("out"));
    c.alpha = j.at("alpha").get<float>();
    c.epilogue = epilogue_from_json(j.at("epilogue"));
  }
  void operator()(Conv2dCall& c) const {
    c.input = j.at("input").get<int32_t>();
    c.weight = j.at("weight").get<int32_t>();
    c.geometry = geometry_from_json(j.at("geometry"));
    c.out = alloc_from_json(j.at("out"));
    c.epilogue = epilogue_from_json(j.at("epilogue"));
  }
  void operator()(Conv2dBackwardCall& c) const {
    c.grad_output = j.at("grad_output").get<int32_t>();
    c.input = j.at("input").get<int32_t>();
    c.weight = j.at("weight").get<int32_t>();
    c.geometry = geometry_from_json(j.at("geometry"));
    c.grad_input = alloc_from_json(j.at("grad_input"));
    c.grad_weight = alloc_from_json(j.at("grad_weight"));
    c.grad_bias = alloc_from_json(j.at("grad_bias"));
  }
  void operator()(AttentionCall& c) const {
    c.in = attention_operands_from_json(j.at("in"));
    c.out = alloc_from_json(j.at("out"));
    c.logsumexp = alloc_from_json(j.at("logsumexp"));
  }
  void operator()(AttentionBackwardCall& c) const {
    c.in = attention_operands_from_json(j.at("in"));
    c.grad_output = j.at("grad_output").get<int32_t>();
    c.forward_output = j.at("forward_output").get<int32_t>();
    c.forward_logsumexp = j.at("forward_logsumexp").get<int32_t>();
    c.grad_query = alloc_from_json(j.at("grad_query"));
    c.grad_key = alloc_from_json(j.at("grad_key"));
    c.grad_value = alloc_from_json(j.at("grad_value"));
  }
};

// ---- the three step types -----------------------------------------------------------------------

json to_json(const AtenCall& c) {
  json args = json::array();
  for (const PlanArg& a : c.args) args.push_back(arg_to_json(a));
  json kwargs = json::object();
  for (const auto& [name, a] : c.kwargs) kwargs[name] = arg_to_json(a);
  return json{{"op", c.op}, {"args", args}, {"kwargs", kwargs}, {"outs", c.outs}};
}

AtenCall aten_from_json(const json& j, const std::string& path) {
  AtenCall c;
  c.op = j.at("op").get<std::string>();
  for (const json& a : j.at("args")) c.args.push_back(arg_from_json(a, path + ".args"));
  for (auto it = j.at("kwargs").begin(); it != j.at("kwargs").end(); ++it)
    c.kwargs.emplace_back(it.key(), arg_from_json(it.value(), path + ".kwargs"));
  c.outs = j.at("outs").get<std::vector<int32_t>>();
  return c;
}

json to_json(const KernelLaunch& k, bool gpu) {
  json allocs = json::array();
  for (const BufferAlloc& a : k.allocs) allocs.push_back(to_json(a));
  json out{{"name", k.name},     {"args", k.args},   {"layouts", to_json(k.layouts)},
           {"allocs", allocs},   {"nodes", k.nodes}};
  if (!k.updates.empty()) out["updates"] = k.updates;
  if (gpu) {
    const GpuLaunchDims& g = k.gpu;
    out["gpu"] = json{{"grid", g.grid}, {"block", g.block}, {"shared_bytes", g.shared_bytes},
                      {"checks_bounds", g.checks_bounds}};
    if (g.programmatic) out["gpu"]["programmatic"] = true;
    if (g.part != 0) out["gpu"]["part"] = g.part;
    if (!g.function.empty()) out["gpu"]["function"] = g.function;
  }
  return out;
}

KernelLaunch kernel_from_json(const json& j) {
  KernelLaunch k;
  k.name = j.at("name").get<std::string>();
  k.args = j.at("args").get<std::vector<int32_t>>();
  k.layouts = layouts_from_json(j.at("layouts"));
  for (const json& a : j.at("allocs")) k.allocs.push_back(alloc_from_json(a));
  k.nodes = j.at("nodes").get<std::vector<int32_t>>();
  if (j.contains("updates")) k.updates = j.at("updates").get<std::vector<int32_t>>();
  if (j.contains("gpu")) {
    const json& g = j.at("gpu");
    k.gpu.grid = g.at("grid").get<std::array<int64_t, 3>>();
    k.gpu.block = g.at("block").get<std::array<int32_t, 3>>();
    k.gpu.shared_bytes = g.at("shared_bytes").get<int32_t>();
    k.gpu.checks_bounds = g.at("checks_bounds").get<bool>();
    k.gpu.programmatic = g.value("programmatic", false);
    k.gpu.part = g.value("part", int32_t{0});
    k.gpu.function = g.value("function", std::string());
  }
  return k;
}

json to_json(const LibraryCall& c) {
  json out{{"op", c.op}, {"nodes", c.nodes}};
  std::visit(ArgsWriter{out}, c.args);
  return out;
}

LibraryCall library_from_json(const json& j) {
  LibraryCall c = LibraryCall::of(j.at("op").get<std::string>());
  c.nodes = j.at("nodes").get<std::vector<int32_t>>();
  std::visit(ArgsReader{j}, c.args);
  return c;
}

json step_to_json(const Step& s, bool gpu) {
  json out{{"node", s.node}, {"free", s.free_after}};
  if (const AtenCall* c = s.aten()) out["aten"] = to_json(*c);
  if (const KernelLaunch* k = s.kernel()) out["kernel"] = to_json(*k, gpu);
  if (const LibraryCall* l = s.library()) out["library"] = to_json(*l);
  return out;
}

Step step_from_json(const json& j, const std::string& path) {
  Step s;
  s.node = j.at("node").get<int32_t>();
  s.free_after = j.at("free").get<std::vector<int32_t>>();
  if (j.contains("aten")) {
    s.action = aten_from_json(j.at("aten"), path);
  } else if (j.contains("kernel")) {
    s.action = kernel_from_json(j.at("kernel"));
  } else if (j.contains("library")) {
    s.action = library_from_json(j.at("library"));
  } else {
    throw std::runtime_error("plan: " + path + ": a step is one of aten, kernel or library");
  }
  return s;
}

}  // namespace

json plan_to_json(const Plan& p) {
  json steps = json::array();
  for (const Step& s : p.steps) steps.push_back(step_to_json(s, p.is_gpu()));
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
  if (p.kernel_parts != 1) out["kernel_parts"] = p.kernel_parts;
  return out;
}

Plan plan_from_json(const json& j) {
  try {
    if (j.at("format").get<int>() != Plan::kFormat) throw std::runtime_error("plan: unsupported format");
    Plan p;
    p.num_inputs = j.at("num_inputs").get<int32_t>();
    p.num_constants = j.at("num_constants").get<int32_t>();
    p.num_slots = j.at("num_slots").get<int32_t>();
    p.free_at_start = j.at("free_at_start").get<std::vector<int32_t>>();
    const json& steps = j.at("steps");
    for (size_t i = 0; i < steps.size(); ++i)
      p.steps.push_back(step_from_json(steps[i], "steps[" + std::to_string(i) + "]"));
    for (const json& o : j.at("outputs")) p.outputs.push_back(arg_from_json(o, "outputs"));
    p.ops_generated = j.at("ops_generated").get<int64_t>();
    p.ops_fallback = j.at("ops_fallback").get<int64_t>();
    p.kernel_library = j.at("kernel_library").get<std::string>();
    p.library_kind = j.value("library_kind", std::string("so"));
    p.kernel_parts = j.value("kernel_parts", int32_t{1});
    if (p.kernel_parts < 1 || p.kernel_parts > 4096)
      throw std::runtime_error("plan: kernel_parts out of range");
    // The library is loaded from the cache entry by this name (a shared library is dlopen'ed:
    // its constructors run), so it is one of the names a build writes, never a path.
    static const char* const kLibraryNames[] = {"", "kernels.so", "kernels.ptx", "kernels.cubin"};
    if (std::find(std::begin(kLibraryNames), std::end(kLibraryNames), p.kernel_library) ==
        std::end(kLibraryNames))
      throw std::runtime_error("plan: kernel_library is not a kernel file name: " + p.kernel_library);
    validate_plan(p);
    return p;
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("plan: malformed: ") + e.what());
  }
}

}  // namespace inductor_cpp::runtime
