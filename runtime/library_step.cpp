/// \file
/// Library calls: argument checks common to the ops, labels, and the launcher per argument
/// type (see the header).
#include "runtime/library_step.h"

#include <stdexcept>

#include "runtime/attention_step.h"
#include "runtime/conv_backward_step.h"
#include "runtime/conv_step.h"
#include "runtime/gemm_step.h"
#include "runtime/gpu_library_step.h"
#include "runtime/matmul_bf16_step.h"

namespace inductor_cpp::runtime {

namespace {

matrix::EpilogueKind epilogue_kind(const std::string& kind) {
  static const std::pair<const char*, matrix::EpilogueKind> kinds[] = {
      {"bias_col", matrix::EpilogueKind::BiasCol},   {"bias_row", matrix::EpilogueKind::BiasRow},
      {"residual", matrix::EpilogueKind::AddResidual}, {"scale", matrix::EpilogueKind::Scale},
      {"relu", matrix::EpilogueKind::Relu},           {"gelu", matrix::EpilogueKind::Gelu},
      {"gelu_tanh", matrix::EpilogueKind::GeluTanh},  {"silu", matrix::EpilogueKind::Silu},
      {"clamp", matrix::EpilogueKind::Clamp},         {"mul", matrix::EpilogueKind::MulResidual},
      {"sigmoid", matrix::EpilogueKind::Sigmoid},     {"tanh", matrix::EpilogueKind::Tanh},
      {"scale_col", matrix::EpilogueKind::ScaleCol},
      // mm / addmm / conv2d, last: a generated tile kernel (ir/passes/tile_epilogue.h)
      {"kernel", matrix::EpilogueKind::Tile}};
  for (const auto& [name, k] : kinds) {
    if (kind == name) return k;
  }
  throw std::runtime_error("unknown matmul epilogue '" + kind + "'");
}

/// An epilogue's kinds, checked, and the function of its "kernel" op (null when none).
struct CheckedEpilogue {
  std::vector<matrix::EpilogueKind> kinds;
  KernelFn tile_fn = nullptr;
};

CheckedEpilogue check_epilogue(const std::vector<MatmulEpilogue>& epilogue, const std::string& op,
                               const KernelLibrary* library) {
  CheckedEpilogue out;
  for (const MatmulEpilogue& e : epilogue) {
    out.kinds.push_back(epilogue_kind(e.kind));
    if (e.kind == "kernel") {
      if (&e != &epilogue.back() || op == "bmm" || e.kernel.empty() || e.layouts.size() != e.params.size())
        throw std::runtime_error("matmul epilogue 'kernel': the last op of an mm / addmm / conv2d, with its layouts");
      if (!library) throw std::runtime_error("matmul epilogue 'kernel': no kernel library");
      out.tile_fn = library->kernel(e.kernel);
      continue;
    }
    const bool needs_data = e.kind == "bias_col" || e.kind == "bias_row" || e.kind == "residual" ||
                            e.kind == "mul" || e.kind == "scale_col";
    if (needs_data != (e.slot >= 0)) throw std::runtime_error("matmul epilogue '" + e.kind + "': bad data slot");
    if (!e.params.empty()) throw std::runtime_error("matmul epilogue '" + e.kind + "': unexpected params");
  }
  return out;
}

std::string sizes_text(const BufferAlloc& b) {
  std::string text = "[";
  for (size_t i = 0; i < b.sizes.size(); ++i)
    text += (i ? ", " : "") + (b.sizes[i] < 0 ? std::string("?") : std::to_string(b.sizes[i]));
  return text + "]";
}

std::string geometry_text(const ConvGeometry& g) {
  const auto pair = [](const std::array<int64_t, 2>& v) {
    return v[0] == v[1] ? std::to_string(v[0]) : std::to_string(v[0]) + "x" + std::to_string(v[1]);
  };
  std::string text = " stride " + pair(g.stride) + " pad " + pair(g.padding);
  if (g.dilation[0] != 1 || g.dilation[1] != 1) text += " dilation " + pair(g.dilation);
  if (g.groups != 1) text += " groups " + std::to_string(g.groups);
  return text;
}

/// What tells a library step's profiler range apart from another of the same op: the output's
/// sizes ("?" for a symbolic size) and, for convolutions, stride and padding; a convolution
/// backward names the gradients it computes. E.g. " [16, 128, 14, 14] stride 2 pad 1".
struct ShapeText {
  std::string operator()(const GemmCall& c) const { return " " + sizes_text(c.out); }
  std::string operator()(const Conv2dCall& c) const { return " " + sizes_text(c.out) + geometry_text(c.geometry); }
  std::string operator()(const Conv2dBackwardCall& c) const {
    std::string text;
    if (c.grad_input.slot >= 0) text += " dx " + sizes_text(c.grad_input);
    if (c.grad_weight.slot >= 0) text += " dw " + sizes_text(c.grad_weight);
    return text + geometry_text(c.geometry);
  }
  std::string operator()(const AttentionCall& c) const { return " " + sizes_text(c.out); }
  std::string operator()(const AttentionBackwardCall& c) const { return " " + sizes_text(c.grad_query); }
};

bool on_gpu(const BufferAlloc& a) { return a.slot >= 0 && a.device != "cpu"; }

/// The launcher of each argument type (GPU calls: gpu_library_step.h).
struct Binder {
  const LibraryCall& call;
  const LibraryBindContext& ctx;
  std::string label;

  std::unique_ptr<BoundStep> operator()(const GemmCall& args) const {
    if (args.out.device != "cpu") return bind_gpu_gemm(call.op, args, label);
    const CheckedEpilogue epilogue = check_epilogue(args.epilogue, call.op, ctx.library);
    if (args.out.dtype == "bfloat16" && args.out.device == "cpu")
      return std::make_unique<MatmulBf16Step>(call.op, args, label, ctx.frozen_weights);
    return std::make_unique<GemmStep>(call.op, args, epilogue.kinds, label, epilogue.tile_fn, ctx.frozen_weights);
  }
  std::unique_ptr<BoundStep> operator()(const Conv2dCall& args) const {
    if (args.out.device != "cpu") return bind_gpu_conv(args, label);
    const CheckedEpilogue epilogue = check_epilogue(args.epilogue, call.op, ctx.library);
    return std::make_unique<ConvStep>(args, epilogue.kinds, label, epilogue.tile_fn, ctx.frozen_weights);
  }
  std::unique_ptr<BoundStep> operator()(const Conv2dBackwardCall& args) const {
    if (on_gpu(args.grad_input) || on_gpu(args.grad_weight) || on_gpu(args.grad_bias))
      return bind_gpu_conv_backward(args, label);
    return std::make_unique<ConvBackwardStep>(args, label);
  }
  std::unique_ptr<BoundStep> operator()(const AttentionCall& args) const {
    return std::make_unique<AttentionStep>(args, label);
  }
  std::unique_ptr<BoundStep> operator()(const AttentionBackwardCall& args) const {
    return std::make_unique<AttentionBackwardStep>(args, label);
  }
};

}  // namespace

std::unique_ptr<BoundStep> bind_library_call(const LibraryCall& call, const LibraryBindContext& ctx) {
  const std::string what = "matrix::" + call.op;
  std::unique_ptr<BoundStep> step = std::visit(Binder{call, ctx, computing_label(what, call.nodes, ctx.labels)}, call.args);
  step->profile_name = profile_name_of(what, call.nodes, ctx.labels) + std::visit(ShapeText{}, call.args);
  return step;
}

}  // namespace inductor_cpp::runtime
