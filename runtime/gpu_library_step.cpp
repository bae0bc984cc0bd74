/// \file
/// GPU library steps: epilogues mapped onto ATen's GEMM and convolution arguments (see the
/// header).
#include "runtime/gpu_library_step.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <optional>
#include <stdexcept>

#include "runtime/aten_literals.h"

namespace inductor_cpp::runtime {

namespace {

at::Tensor tensor_in(const std::vector<c10::IValue>& slots, int32_t slot, const std::string& label,
                     const char* what) {
  TORCH_CHECK(slots.at(static_cast<size_t>(slot)).isTensor(), "inductor_cpp: ", label, ": the ", what,
              " is not a tensor");
  return slots[static_cast<size_t>(slot)].toTensor();
}

/// `result` in the layout `alloc` recorded: itself when it has it, else a copy.
at::Tensor in_layout(const at::Tensor& result, const BufferAlloc& alloc) {
  if (alloc.sizes.empty() || (result.sizes() == at::IntArrayRef(alloc.sizes) &&
                              result.strides() == at::IntArrayRef(alloc.strides)))
    return result;
  at::Tensor laid = at::empty_strided(alloc.sizes, alloc.strides, result.options());
  laid.copy_(result);
  return laid;
}

/// An empty tensor of `alloc`'s layout and dtype on the device of `like`.
at::Tensor allocate(const BufferAlloc& alloc, const at::Tensor& like) {
  return at::empty_strided(alloc.sizes, alloc.strides, like.options().dtype(scalar_type_from_name(alloc.dtype)));
}

/// out = act(alpha · a · b + c) through ATen, with what the epilogue asks decided at binding.
class GpuGemmStep final : public BoundStep {
 public:
  GpuGemmStep(const std::string& op, GemmCall call, std::string label_text)
      : batched_(op == "bmm"), call_(std::move(call)) {
    label = std::move(label_text);
    alpha_ = call_.alpha;
    const std::vector<MatmulEpilogue>& ops = call_.epilogue;
    size_t k = 0;
    if (k < ops.size() && ops[k].kind == "scale") alpha_ *= ops[k++].a;
    if (k < ops.size() && (ops[k].kind == "bias_col" || ops[k].kind == "bias_row" || ops[k].kind == "residual")) {
      c_kind_ = ops[k].kind;
      c_slot_ = ops[k++].slot;
    }
    if (k < ops.size() && c_slot_ >= 0 && !batched_ && (ops[k].kind == "relu" || ops[k].kind == "gelu_tanh"))
      activation_ = ops[k++].kind;
    if (k != ops.size())
      throw std::runtime_error(label + ": the GPU's " + op + " does not apply epilogue op '" + ops[k].kind + "'");
    if (call_.out.sizes.empty() || call_.out.device == "cpu")
      throw std::runtime_error(label + ": a GPU " + op + " needs a static output on the GPU");
  }

  void run(RunContext& ctx) const override {
    const at::Tensor a = tensor_in(ctx.slots, call_.a, label, "input");
    const at::Tensor b = tensor_in(ctx.slots, call_.b, label, "mat2");
    const int64_t rank = batched_ ? 3 : 2;
    TORCH_CHECK(a.dim() == rank && b.dim() == rank, "inductor_cpp: ", label, ": operands of rank ", a.dim(), " and ",
                b.dim(), ", expected ", rank);
    at::Tensor stored = allocate(call_.out, a);
    // The GEMM writes a [M, N] (or [B, M, N]) view when the absorbed chain reshaped the output.
    std::vector<int64_t> shape{a.size(rank - 2), b.size(rank - 1)};
    if (batched_) shape.insert(shape.begin(), a.size(0));
    at::Tensor out = stored.view(shape);
    if (c_slot_ < 0) {
      // beta 0: C (the uninitialized output itself) is not read
      if (batched_ && alpha_ == 1) {
        at::bmm_out(out, a, b);
      } else if (batched_) {
        at::baddbmm_out(out, out, a, b, 0, alpha_);
      } else if (alpha_ == 1) {
        at::mm_out(out, a, b);
      } else {
        at::addmm_out(out, out, a, b, 0, alpha_);
      }
    } else {
      const at::Tensor c = c_operand(tensor_in(ctx.slots, c_slot_, label, "epilogue operand"), shape);
      if (batched_) {
        at::baddbmm_out(out, c, a, b, 1, alpha_);
      } else if (!activation_.empty()) {
        at::_addmm_activation_out(out, c, a, b, 1, alpha_, activation_ == "gelu_tanh");
      } else {
        at::addmm_out(out, c, a, b, 1, alpha_);
      }
    }
    ctx.slots[static_cast<size_t>(call_.out.slot)] = std::move(stored);
  }

 private:
  /// The epilogue's data as cuBLAS's C: a [N] bias, a [M, 1] column or a tensor of the output's
  /// shape (each is a dense buffer of that many elements, ir/epilogue_ops.h).
  at::Tensor c_operand(const at::Tensor& t, const std::vector<int64_t>& shape) const {
    const int64_t rows = shape[shape.size() - 2], cols = shape.back();
    if (c_kind_ == "bias_col") return t.reshape({cols});
    if (c_kind_ == "bias_row") return t.reshape({rows, 1});
    return t.reshape(shape);
  }

  bool batched_ = false;
  GemmCall call_;
  double alpha_ = 1;
  int32_t c_slot_ = -1;
  std::string c_kind_, activation_;
};

std::vector<int64_t> pair(const std::array<int64_t, 2>& v) { return {v[0], v[1]}; }

/// cuDNN's convolution through at::convolution, its bias the epilogue's.
class GpuConvStep final : public BoundStep {
 public:
  GpuConvStep(Conv2dCall call, std::string label_text) : call_(std::move(call)) {
    label = std::move(label_text);
    const std::vector<MatmulEpilogue>& ops = call_.epilogue;
    if (ops.size() > 1 || (ops.size() == 1 && ops[0].kind != "bias_col"))
      throw std::runtime_error(label + ": the GPU's conv2d applies a bias alone");
    if (!ops.empty()) bias_slot_ = ops[0].slot;
  }

  void run(RunContext& ctx) const override {
    const at::Tensor x = tensor_in(ctx.slots, call_.input, label, "input");
    const at::Tensor w = tensor_in(ctx.slots, call_.weight, label, "weight");
    std::optional<at::Tensor> bias;
    if (bias_slot_ >= 0) bias = tensor_in(ctx.slots, bias_slot_, label, "bias").reshape({w.size(0)});
    const ConvGeometry& g = call_.geometry;
    const at::Tensor y = at::convolution(x, w, bias, pair(g.stride), pair(g.padding), pair(g.dilation), false, {0, 0},
                                         g.groups);
    ctx.slots[static_cast<size_t>(call_.out.slot)] = in_layout(y, call_.out);
  }

 private:
  Conv2dCall call_;
  int32_t bias_slot_ = -1;
};

class GpuConvBackwardStep final : public BoundStep {
 public:
  GpuConvBackwardStep(Conv2dBackwardCall call, std::string label_text) : call_(std::move(call)) {
    label = std::move(label_text);
  }

  void run(RunContext& ctx) const override {
    const at::Tensor dy = tensor_in(ctx.slots, call_.grad_output, label, "output gradient");
    const at::Tensor x = tensor_in(ctx.slots, call_.input, label, "input");
    const at::Tensor w = tensor_in(ctx.slots, call_.weight, label, "weight");
    const ConvGeometry& g = call_.geometry;
    const std::array<bool, 3> mask{call_.grad_input.slot >= 0, call_.grad_weight.slot >= 0,
                                   call_.grad_bias.slot >= 0};
    const std::vector<int64_t> bias_sizes{w.size(0)};
    auto [dx, dw, db] = at::convolution_backward(dy, x, w, mask[2] ? at::OptionalIntArrayRef(bias_sizes) : std::nullopt,
                                                 pair(g.stride), pair(g.padding), pair(g.dilation), false, {0, 0},
                                                 g.groups, mask);
    if (mask[0]) ctx.slots[static_cast<size_t>(call_.grad_input.slot)] = in_layout(dx, call_.grad_input);
    if (mask[1]) ctx.slots[static_cast<size_t>(call_.grad_weight.slot)] = in_layout(dw, call_.grad_weight);
    if (mask[2]) ctx.slots[static_cast<size_t>(call_.grad_bias.slot)] = in_layout(db, call_.grad_bias);
  }

 private:
  Conv2dBackwardCall call_;
};

}  // namespace

std::unique_ptr<BoundStep> bind_gpu_gemm(const std::string& op, const GemmCall& call, std::string label) {
  return std::make_unique<GpuGemmStep>(op, call, std::move(label));
}

std::unique_ptr<BoundStep> bind_gpu_conv(const Conv2dCall& call, std::string label) {
  return std::make_unique<GpuConvStep>(call, std::move(label));
}

std::unique_ptr<BoundStep> bind_gpu_conv_backward(const Conv2dBackwardCall& call, std::string label) {
  if (call.grad_input.slot < 0 && call.grad_weight.slot < 0 && call.grad_bias.slot < 0)
    throw std::runtime_error(label + ": computes no gradient");
  return std::make_unique<GpuConvBackwardStep>(call, std::move(label));
}

}  // namespace inductor_cpp::runtime
