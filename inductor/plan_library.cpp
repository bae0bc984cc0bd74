/// \file
/// Library calls from the IR to the plan (plan_library.h).
#include "inductor/plan_library.h"

#include <stdexcept>

#include "ir/epilogue_ops.h"
#include "ir/passes/tile_epilogue.h"

namespace inductor_cpp::inductor {
namespace {

using Slots = std::function<int32_t(const std::string&)>;

std::optional<std::vector<int64_t>> constants(const std::vector<ir::Expr>& exprs) {
  std::vector<int64_t> out;
  for (const ir::Expr& e : exprs) {
    if (!e.is_const()) return std::nullopt;
    out.push_back(e.value());
  }
  return out;
}

/// The allocation of output `name`: its layout when static; for an mm / addmm of symbolic rows
/// [rows of A, N]; otherwise no sizes (the step allocates ATen's layout at the call's sizes).
runtime::BufferAlloc alloc_of(const ir::ScheduledProgram& program, const std::string& name, const Slots& slot,
                              bool gemm) {
  if (name.empty()) return runtime::BufferAlloc{-1, {}, {}, "float32", "cpu", -1};
  const ir::Buffer& b = program.buffer(name);
  runtime::BufferAlloc alloc{slot(name), {}, {}, ir::dtype_name(b.dtype), b.device, -1};
  const auto sizes = constants(b.sizes), strides = constants(b.strides);
  if (sizes && strides) {
    alloc.sizes = *sizes;
    alloc.strides = *strides;
  } else if (gemm && b.sizes.size() == 2 && b.sizes[1].is_const()) {
    alloc.sizes = {runtime::kRowsOfA, b.sizes[1].value()};
    alloc.strides = {b.sizes[1].value(), 1};
  }
  return alloc;
}

runtime::ConvGeometry geometry_of(const ir::LibraryCall& call) {
  const auto get = [&call](const char* name, double fallback) {
    return static_cast<int64_t>(call.attr(name, fallback));
  };
  return runtime::ConvGeometry{{get("stride_h", 1), get("stride_w", 1)},
                               {get("padding_h", 0), get("padding_w", 0)},
                               {get("dilation_h", 1), get("dilation_w", 1)},
                               get("groups", 1)};
}

runtime::AttentionOperands attention_operands(const ir::LibraryCall& call, size_t first, const Slots& slot) {
  const auto at = [&](size_t k) { return call.operands.at(k).empty() ? -1 : slot(call.operands[k]); };
  runtime::AttentionOperands in;
  in.query = at(first), in.key = at(first + 1), in.value = at(first + 2);
  in.mask = at(call.operands.size() - 1);
  in.scale = static_cast<float>(call.attr("scale", 1));
  in.causal = call.attr("causal", 0) != 0;
  return in;
}

/// The epilogue as runtime operations, the tile kernel last when there is one.
std::vector<runtime::MatmulEpilogue> epilogue_of(const ir::ScheduledStep& s, const ir::ScheduledProgram& program,
                                                  const ir::LoopProgram& fused, const Slots& slot,
                                                  const std::string& tile_name, LibraryStep& out) {
  const ir::LibraryCall& call = *s.call.library;
  const std::string& written = s.call.outputs.at(0);
  const ir::Buffer& domain = program.buffer(call.tile_compute.empty() ? written : call.tile_input);
  const auto buffer_of = [&](const std::string& name) -> const ir::Buffer* {
    for (const ir::Buffer& b : program.buffers)
      if (b.name == name) return &b;
    return nullptr;
  };
  std::string why_not;
  const auto ops = ir::select_epilogue_ops(call.epilogue, ir::epilogue_shape(call, domain), buffer_of, &why_not);
  const bool gpu = domain.device != "cpu";
  if (!ops || (gpu && !ir::gpu_epilogue_fits(call.op, *ops, &why_not)))
    throw std::runtime_error("library call of node " + std::to_string(s.call.graph_node) + ": " + why_not);
  std::vector<runtime::MatmulEpilogue> epilogue;
  for (const ir::EpilogueOp& op : *ops) {
    epilogue.push_back({ir::epilogue_op_kind_name(op.kind), op.buffer.empty() ? -1 : slot(op.buffer),
                        static_cast<float>(op.a), static_cast<float>(op.b)});
  }
  if (call.tile_compute.empty()) return epilogue;

  // The tile compute, rescheduled over an output window of the [rows, cols] matrix.
  const auto sizes = constants(domain.sizes);
  if (!sizes) throw std::runtime_error("a tile epilogue on a symbolic output");
  const bool conv = call.op == ir::LibraryOp::conv2d;
  const int64_t rows = conv ? (*sizes)[0] * (*sizes)[2] * (*sizes)[3] : (*sizes)[0];
  const int64_t cols = (*sizes)[1];  // columns: the last dim of a GEMM, a conv's channels
  ir::LoopProgram window = fused;
  ir::Step consumer;
  consumer.kernel.computes = {call.tile_compute};
  window.steps = {consumer};
  auto tile = ir::tile_epilogue_kernel(window, {0, call.tile_input, rows, cols, tile_name}, &why_not);
  if (!tile) throw std::runtime_error("tile epilogue " + call.tile_compute + ": " + why_not);
  runtime::MatmulEpilogue op;
  op.kind = "kernel";
  op.kernel = tile->kernel.name;
  for (const ir::KernelParam& p : tile->kernel.params) {
    const bool output = p.buffer == call.tile_input || p.buffer == tile->written;
    const ir::Buffer& b = program.buffer(output ? written : p.buffer);
    const auto b_sizes = constants(b.sizes), b_strides = constants(b.strides);
    if (!b_sizes || !b_strides) throw std::runtime_error("a tile epilogue reading a symbolic buffer");
    op.params.push_back(slot(output ? written : p.buffer));
    op.layouts.push_back({*b_sizes, *b_strides});
  }
  epilogue.push_back(std::move(op));
  out.tile_kernel = std::move(tile->kernel);
  return epilogue;
}

}  // namespace

LibraryStep library_step(const ir::ScheduledStep& s, const ir::ScheduledProgram& program,
                         const ir::LoopProgram& fused, const Slots& slot, const std::string& tile_name) {
  const ir::LibraryCall& ir_call = *s.call.library;
  LibraryStep out;
  out.step.node = s.call.graph_node;
  out.step.action = runtime::LibraryCall::of(ir::library_op_name(ir_call.op));
  runtime::LibraryCall& call = *out.step.library();
  call.nodes = {s.call.graph_node};
  call.nodes.insert(call.nodes.end(), ir_call.absorbed_nodes.begin(), ir_call.absorbed_nodes.end());
  const std::vector<std::string>& operands = ir_call.operands;
  const std::vector<std::string>& outputs = s.call.outputs;
  switch (ir_call.op) {
    case ir::LibraryOp::mm:
    case ir::LibraryOp::addmm:
    case ir::LibraryOp::bmm: {
      runtime::GemmCall& gemm = call.as<runtime::GemmCall>();
      gemm.a = slot(operands.at(0));
      gemm.b = slot(operands.at(1));
      gemm.alpha = static_cast<float>(ir_call.attr("alpha", 1));
      gemm.epilogue = epilogue_of(s, program, fused, slot, tile_name, out);
      gemm.out = alloc_of(program, outputs.at(0), slot, true);
      break;
    }
    case ir::LibraryOp::conv2d: {
      runtime::Conv2dCall& conv = call.as<runtime::Conv2dCall>();
      conv.input = slot(operands.at(0));
      conv.weight = slot(operands.at(1));
      conv.geometry = geometry_of(ir_call);
      conv.epilogue = epilogue_of(s, program, fused, slot, tile_name, out);
      conv.out = alloc_of(program, outputs.at(0), slot, false);
      break;
    }
    case ir::LibraryOp::conv2d_backward: {
      runtime::Conv2dBackwardCall& back = call.as<runtime::Conv2dBackwardCall>();
      back.grad_output = slot(operands.at(0));
      back.input = slot(operands.at(1));
      back.weight = slot(operands.at(2));
      back.geometry = geometry_of(ir_call);
      back.grad_input = alloc_of(program, outputs.at(0), slot, false);
      back.grad_weight = alloc_of(program, outputs.at(1), slot, false);
      back.grad_bias = alloc_of(program, outputs.at(2), slot, false);
      break;
    }
    case ir::LibraryOp::attention: {
      runtime::AttentionCall& attention = call.as<runtime::AttentionCall>();
      attention.in = attention_operands(ir_call, 0, slot);
      attention.out = alloc_of(program, outputs.at(0), slot, false);
      attention.logsumexp = alloc_of(program, outputs.size() > 1 ? outputs[1] : "", slot, false);
      break;
    }
    case ir::LibraryOp::attention_backward: {
      runtime::AttentionBackwardCall& back = call.as<runtime::AttentionBackwardCall>();
      back.in = attention_operands(ir_call, 1, slot);
      back.grad_output = slot(operands.at(0));
      back.forward_output = slot(operands.at(4));
      back.forward_logsumexp = slot(operands.at(5));
      back.grad_query = alloc_of(program, outputs.at(0), slot, false);
      back.grad_key = alloc_of(program, outputs.at(1), slot, false);
      back.grad_value = alloc_of(program, outputs.at(2), slot, false);
      break;
    }
  }
  return out;
}

}  // namespace inductor_cpp::inductor
