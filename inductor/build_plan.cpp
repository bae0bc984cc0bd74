/// \file
/// Plan building: lowering + pipeline + emitter, then slots, steps and lifetimes.
#include "inductor/build_plan.h"

#include <chrono>
#include <limits>
#include <map>
#include <set>

#include "codegen/cpu/emit_cpp.h"
#include "inductor/build_plan_gpu.h"
#include "inductor/graph_json.h"
#include "inductor/lower/lower_graph.h"
#include "inductor/plan_library.h"
#include "ir/ir_text.h"
#include "ir/passes/input_writeback.h"
#include "matrix/matrix.h"

namespace inductor_cpp::inductor {

using ir::Arg;
using runtime::PlanArg;

namespace {

constexpr int32_t kLivesForever = std::numeric_limits<int32_t>::max();

/// Value slots by buffer name: inputs first, then constants, then everything else in order
/// of first mention.
class SlotTable {
 public:
  explicit SlotTable(const ir::Graph& g) : graph_(g) {
    next_ = static_cast<int32_t>(g.inputs.size() + g.constants.size());
  }

  int32_t slot_of_buffer(const std::string& name) {
    // Inputs and constants have fixed slots: "%in<k>" and "%c<k>" (lower_graph.h).
    if (name.rfind("%in", 0) == 0) return static_cast<int32_t>(std::stoll(name.substr(3)));
    if (name.rfind("%c", 0) == 0)
      return static_cast<int32_t>(graph_.inputs.size() + std::stoll(name.substr(2)));
    auto [it, inserted] = slots_.try_emplace(name, next_);
    if (inserted) ++next_;
    return it->second;
  }

  int32_t slot_of(const Arg& a) {
    switch (a.kind) {
      case Arg::Kind::Input:
        return static_cast<int32_t>(a.index);
      case Arg::Kind::Constant:
        return static_cast<int32_t>(graph_.inputs.size() + a.index);
      case Arg::Kind::Value:
        return slot_of_buffer(buffer_name_of(a));
      default:
        return -1;
    }
  }

  int32_t num_slots() const { return next_; }

  /// `name` lives in `slot` (a buffer a kernel writes straight into an input's storage).
  void alias(const std::string& name, int32_t slot) { slots_[name] = slot; }

 private:
  const ir::Graph& graph_;
  std::map<std::string, int32_t> slots_;
  int32_t next_ = 0;
};

PlanArg to_plan_arg(const Arg& a, SlotTable& slots) {
  if (a.is_tensor_ref()) return PlanArg::of_slot(slots.slot_of(a));
  if (a.kind == Arg::Kind::List) {
    std::vector<PlanArg> items;
    for (const Arg& item : a.items) items.push_back(to_plan_arg(item, slots));
    return PlanArg::of_list(std::move(items));
  }
  return PlanArg::of_literal(arg_to_json(a));
}

/// The ATen step that runs graph node `n`. Outputs nobody reads get slot -1.
runtime::Step aten_step(const ir::Graph& g, size_t n, SlotTable& slots, const std::set<std::string>& used) {
  const ir::Node& node = g.nodes[n];
  runtime::AtenCall call;
  call.op = node.op;
  for (const Arg& a : node.args) call.args.push_back(to_plan_arg(a, slots));
  for (const auto& [name, a] : node.kwargs) call.kwargs.emplace_back(name, to_plan_arg(a, slots));
  for (size_t k = 0; k < node.outputs.size(); ++k) {
    const Arg out = Arg::value(static_cast<int64_t>(n), static_cast<int64_t>(k));
    call.outs.push_back(used.count(buffer_name_of(out)) ? slots.slot_of(out) : -1);
  }
  runtime::Step step;
  step.node = static_cast<int32_t>(n);
  step.action = std::move(call);
  return step;
}

/// Every graph value some node argument or graph output mentions, by buffer name.
std::set<std::string> mentioned_values(const ir::Graph& g) {
  std::set<std::string> used;
  std::function<void(const Arg&)> note = [&](const Arg& a) {
    if (a.kind == Arg::Kind::Value) used.insert(buffer_name_of(a));
    for (const Arg& item : a.items) note(item);
  };
  for (const ir::Node& node : g.nodes) {
    for (const Arg& a : node.args) note(a);
    for (const auto& kw : node.kwargs) note(kw.second);
  }
  for (const Arg& a : g.outputs) note(a);
  return used;
}

void note_uses(const PlanArg& a, int32_t step, std::vector<int32_t>& last_use) {
  if (a.kind == PlanArg::Kind::Slot) {
    if (a.slot >= 0 && last_use[a.slot] != kLivesForever) last_use[a.slot] = std::max(last_use[a.slot], step);
    return;
  }
  for (const PlanArg& item : a.items) note_uses(item, step, last_use);
}

void mark_forever(const PlanArg& a, std::vector<int32_t>& last_use) {
  if (a.kind == PlanArg::Kind::Slot && a.slot >= 0) last_use[a.slot] = kLivesForever;
  for (const PlanArg& item : a.items) mark_forever(item, last_use);
}

/// Outputs, slot count and free lists, once the steps are in place.
void finish_plan(const ir::Graph& g, SlotTable& slots, runtime::Plan& plan) {
  for (const Arg& a : g.outputs) plan.outputs.push_back(to_plan_arg(a, slots));
  plan.num_inputs = static_cast<int32_t>(g.inputs.size());
  plan.num_constants = static_cast<int32_t>(g.constants.size());
  plan.num_slots = slots.num_slots();
  std::vector<int32_t> last_use(plan.num_slots, -1);
  for (const PlanArg& a : plan.outputs) mark_forever(a, last_use);
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const auto step = static_cast<int32_t>(s);
    const runtime::Step& st = plan.steps[s];
    if (const runtime::LibraryCall* call = st.library()) {
      for (int32_t slot : call->reads()) note_uses(PlanArg::of_slot(slot), step, last_use);
      for (const runtime::BufferAlloc* a : call->writes()) note_uses(PlanArg::of_slot(a->slot), step, last_use);
      continue;
    }
    if (const runtime::KernelLaunch* kernel = st.kernel()) {
      for (int32_t slot : kernel->args) note_uses(PlanArg::of_slot(slot), step, last_use);
      for (const runtime::BufferAlloc& a : kernel->allocs) {
        note_uses(PlanArg::of_slot(a.slot), step, last_use);
        // A reused buffer lives until the step that takes its storage.
        if (a.reuse_slot >= 0) note_uses(PlanArg::of_slot(a.reuse_slot), step, last_use);
      }
      continue;
    }
    const runtime::AtenCall& call = *st.aten();
    for (const PlanArg& a : call.args) note_uses(a, step, last_use);
    for (const auto& kw : call.kwargs) note_uses(kw.second, step, last_use);
    for (int32_t out : call.outs) note_uses(PlanArg::of_slot(out), step, last_use);
  }
  for (int32_t slot = 0; slot < plan.num_slots; ++slot) {
    const int32_t last = last_use[slot];
    if (last == kLivesForever) continue;
    if (last >= 0) {
      plan.steps[last].free_after.push_back(slot);
    } else if (slot < plan.num_inputs + plan.num_constants) {
      plan.free_at_start.push_back(slot);
    }
  }
}

std::vector<int64_t> static_ints(const std::vector<ir::Expr>& exprs) {
  std::vector<int64_t> out;
  for (const ir::Expr& e : exprs) {
    if (!e.is_const()) throw std::runtime_error("symbolic layout in a generated kernel");
    out.push_back(e.value());
  }
  return out;
}

/// Graph mutations `copy_(input, value)` (lowering's LoweredGraph::input_copies) the pipeline
/// may turn into the kernel computing `value` storing straight into the input
/// (ir/passes/input_writeback.h).
std::vector<ir::InputWriteback> writeback_candidates(const LoweredGraph& lowered, const ir::ScheduledProgram& program) {
  std::vector<ir::InputWriteback> out;
  for (size_t s = 0; s < program.steps.size(); ++s) {
    const ir::ScheduledStep& step = program.steps[s];
    if (step.kind != ir::ScheduledStep::Kind::Extern) continue;
    auto copy = lowered.input_copies.find(step.call.graph_node);
    if (copy != lowered.input_copies.end()) out.push_back({s, copy->second.value, copy->second.input});
  }
  return out;
}

runtime::Step kernel_step(const ir::ScheduledStep& s, const ir::ScheduledProgram& program,
                          const ir::MemoryPlan& memory, const std::set<std::string>& into_inputs,
                          SlotTable& slots) {
  runtime::Step step;
  runtime::KernelLaunch& k = step.action.emplace<runtime::KernelLaunch>();
  k.name = s.kernel.name;
  k.nodes = s.graph_nodes;
  step.node = k.nodes.empty() ? -1 : k.nodes.front();
  for (const ir::KernelParam& p : s.kernel.params) {
    const ir::Buffer& b = program.buffer(p.buffer);
    k.args.push_back(slots.slot_of_buffer(p.buffer));
    k.layouts.push_back({static_ints(b.sizes), static_ints(b.strides)});
    if (!p.written) continue;
    if (into_inputs.count(p.buffer)) {
      k.updates.push_back(static_cast<int32_t>(k.args.size() - 1));
      continue;
    }
    runtime::BufferAlloc alloc{k.args.back(), static_ints(b.sizes), static_ints(b.strides), ir::dtype_name(b.dtype),
                               b.device, -1};
    auto reuse = memory.reuse.find(p.buffer);
    if (reuse != memory.reuse.end()) alloc.reuse_slot = slots.slot_of_buffer(reuse->second);
    k.allocs.push_back(std::move(alloc));
  }
  return step;
}

/// Parameters, graph nodes, FLOP estimate and IR text of a scheduled kernel (kernel_info.h).
KernelInfo kernel_info(const ir::ScheduledStep& s, const ir::ScheduledProgram& program) {
  KernelInfo info;
  info.name = s.kernel.name;
  info.graph_nodes = s.graph_nodes;
  for (const ir::KernelParam& p : s.kernel.params) {
    const ir::Buffer& b = program.buffer(p.buffer);
    info.params.push_back({p.buffer, ir::dtype_name(b.dtype), static_ints(b.sizes),
                           static_ints(b.strides), p.written});
  }
  info.flops = estimate_flops(s.kernel);
  info.text = ir::kernel_to_text(s.kernel);
  return info;
}

double milliseconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

/// The graph's devices other than the CPU, if any (no code generation for those yet).
std::string non_cpu_device(const ir::Graph& g) {
  auto check = [](const std::optional<ir::TensorMeta>& m) { return m && m->device != "cpu" ? m->device : ""; };
  for (const ir::GraphInput& in : g.inputs) {
    if (auto d = check(in.tensor); !d.empty()) return d;
  }
  for (const ir::TensorMeta& c : g.constants) {
    if (c.device != "cpu") return c.device;
  }
  for (const ir::Node& n : g.nodes) {
    for (const auto& o : n.outputs) {
      if (auto d = check(o); !d.empty()) return d;
    }
  }
  return "";
}

}  // namespace

PlanBuild build_aten_plan(const ir::Graph& g, const std::string& reason) {
  SlotTable slots(g);
  const std::set<std::string> used = mentioned_values(g);
  PlanBuild out;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    out.plan.steps.push_back(aten_step(g, n, slots, used));
    out.decisions.push_back({static_cast<int32_t>(n), false, reason});
    ++out.plan.ops_fallback;
  }
  finish_plan(g, slots, out.plan);
  return out;
}

PlanBuild build_plan(const ir::Graph& g, const CodegenSettings& settings) {
  if (!settings.enabled) return build_aten_plan(g, settings.disabled_reason);
  const std::string device = non_cpu_device(g);
  const bool gpu = !device.empty() && is_gpu_device(device);  // GPU: build_plan_gpu.h
  if (!device.empty() && !gpu) {
    return build_aten_plan(g, "no code generation for device " + device + " yet");
  }
  PlanBuild out;
  LoweredGraph lowered;
  ir::PipelineResult result;
  try {
    const auto lowering_start = std::chrono::steady_clock::now();
    LoweringOptions lowering;
    lowering.library_calls = settings.matrix_kernels;
    lowering.gpu = gpu;
    lowering.bf16_on_amx = lowering.library_calls && settings.frozen_weights && matrix::gemm_bf16_uses_amx();
    lowered = lower_graph(g, lowering);
    out.lowering_ms = milliseconds_since(lowering_start);
    ir::PipelineOptions pipeline = settings.pipeline;
    pipeline.absorb.tile_epilogues = settings.tile_epilogues;
    result = ir::run_pipeline(lowered.program,
                              gpu ? gpu_pipeline_options(apply_gpu_tuning(settings.gpu_tuning, pipeline)) : pipeline);
  } catch (const std::exception& e) {
    PlanBuild fallback = build_aten_plan(g, std::string("code generation failed: ") + e.what());
    fallback.codegen_error = e.what();
    fallback.lowering_ms = out.lowering_ms;
    return fallback;
  }
  if (settings.pipeline.keep_ir_text) out.lowered_text = ir::program_to_text(lowered.program);
  out.scheduled_text = ir::scheduled_to_text(result.scheduled);
  out.passes = result.passes;

  SlotTable slots(g);
  std::set<std::string> used = mentioned_values(g);
  std::set<std::string> into_inputs;  // buffers stored straight into an input's storage
  std::set<size_t> copies_done;       // their copy steps, now done by the kernel
  std::set<int32_t> nodes_done;
  for (const ir::InputWriteback& w :
       ir::plan_input_writebacks(result.scheduled, result.memory, writeback_candidates(lowered, result.scheduled))) {
    const int32_t input_slot = slots.slot_of_buffer(w.input);
    const int32_t node = result.scheduled.steps[w.copy_step].call.graph_node;
    slots.alias(w.value, input_slot);
    slots.alias(buffer_name_of(Arg::value(node, 0)), input_slot);  // copy_ returns its input
    into_inputs.insert(w.value);
    copies_done.insert(w.copy_step);
    nodes_done.insert(node);
  }
  std::vector<ir::Kernel> kernels;
  const auto slot_of_buffer = [&slots](const std::string& name) { return slots.slot_of_buffer(name); };
  for (size_t i = 0; i < result.scheduled.steps.size(); ++i) {
    const ir::ScheduledStep& s = result.scheduled.steps[i];
    if (copies_done.count(i)) continue;
    if (s.kind == ir::ScheduledStep::Kind::Extern && s.call.alias) {  // no op: the value is its input
      slots.alias(s.call.outputs.at(0), slots.slot_of_buffer(s.call.inputs.at(0)));
      continue;
    }
    if (s.kind == ir::ScheduledStep::Kind::Extern && s.call.library) {
      LibraryStep library = library_step(s, result.scheduled, result.fused, slot_of_buffer,
                                         "tile" + std::to_string(kernels.size()));
      if (library.tile_kernel) kernels.push_back(std::move(*library.tile_kernel));
      const std::vector<int32_t>& computed = library.step.library()->nodes;
      nodes_done.insert(computed.begin(), computed.end());
      out.plan.steps.push_back(std::move(library.step));
      continue;
    }
    if (s.kind == ir::ScheduledStep::Kind::Extern) {
      out.plan.steps.push_back(aten_step(g, static_cast<size_t>(s.call.graph_node), slots, used));
      continue;
    }
    out.plan.steps.push_back(kernel_step(s, result.scheduled, result.memory, into_inputs, slots));
    out.kernels.push_back(kernel_info(s, result.scheduled));
    kernels.push_back(s.kernel);
  }
  for (LoweringDecision d : lowered.decisions) {
    if (nodes_done.count(d.node)) d = {d.node, true, ""};  // generated: no reason
    out.decisions.push_back({d.node, d.generated, d.reason});
    ++(d.generated ? out.plan.ops_generated : out.plan.ops_fallback);
  }
  if (!kernels.empty() && gpu) {
    const auto emit_start = std::chrono::steady_clock::now();
    try {
      attach_gpu_module(kernels, device, settings.gpu_tuning, out);
    } catch (const std::exception& e) {
      PlanBuild fallback = build_aten_plan(g, std::string("GPU code generation failed: ") + e.what());
      fallback.codegen_error = e.what();
      fallback.lowering_ms = out.lowering_ms;
      return fallback;
    }
    out.emit_ms = milliseconds_since(emit_start);
  } else if (!kernels.empty()) {
    const auto emit_start = std::chrono::steady_clock::now();
    codegen::CppTarget target;
    target.isa = codegen::detect_host_isa();
    out.cpp_source = codegen::emit_cpp(kernels, target);
    out.emit_ms = milliseconds_since(emit_start);
    out.plan.kernel_library = "kernels.so";
  }
  finish_plan(g, slots, out.plan);
  return out;
}

}  // namespace inductor_cpp::inductor
