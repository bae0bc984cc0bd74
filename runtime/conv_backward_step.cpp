/// \file
/// ConvBackwardStep: operand checks and layouts around the library's convolution backward
/// (see the header).
#include "runtime/conv_backward_step.h"

#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <c10/util/Exception.h>

#include <stdexcept>

#include "runtime/conv_step.h"
#include "runtime/cpu_pool.h"
#include "matrix/matrix.h"

namespace inductor_cpp::runtime {

namespace {

bool is_f32_cpu(const BufferAlloc& a) { return a.dtype == "float32" && a.device == "cpu"; }

/// True when the strides are those of some permutation of the dims laid out densely.
bool is_dense(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  return at::empty_strided(sizes, strides, at::TensorOptions().device(c10::kMeta)).is_non_overlapping_and_dense();
}

}  // namespace

ConvBackwardStep::ConvBackwardStep(Conv2dBackwardCall call, std::string labeltext) : call_(std::move(call)) {
  label = std::move(labeltext);
  const Conv2dBackwardCall& m = call_;
  if (m.grad_output < 0 || m.weight < 0 || m.input < 0)
    throw std::runtime_error("conv2d_backward: operand slots missing");
  if (m.grad_input.slot < 0 && m.grad_weight.slot < 0 && m.grad_bias.slot < 0)
    throw std::runtime_error("conv2d_backward: computes no gradient");
  if (m.grad_input.slot >= 0 && (!is_f32_cpu(m.grad_input) || m.grad_input.sizes.size() != 4 ||
                                 !is_dense_nhwc(m.grad_input.sizes, m.grad_input.strides)))
    throw std::runtime_error("conv2d_backward: the input gradient must be a channels-last float32 CPU tensor");
  if (m.grad_weight.slot >= 0 && (!is_f32_cpu(m.grad_weight) || m.grad_weight.sizes.size() != 4 ||
                                  !is_dense(m.grad_weight.sizes, m.grad_weight.strides)))
    throw std::runtime_error("conv2d_backward: the weight gradient must be a dense 4-D float32 CPU tensor");
  if (m.grad_bias.slot >= 0 && (!is_f32_cpu(m.grad_bias) || m.grad_bias.sizes.size() != 1))
    throw std::runtime_error("conv2d_backward: the bias gradient must be a float32 CPU vector");
}

void ConvBackwardStep::run(RunContext& ctx) const {
  std::vector<c10::IValue>& slots = ctx.slots;
  const Conv2dBackwardCall& m = call_;
  const at::Tensor dy = as_dense_nhwc(checked_f32(slots[m.grad_output], label, "output gradient"));
  const at::Tensor x = as_dense_nhwc(checked_f32(slots[m.input], label, "input"));
  const at::Tensor w = checked_f32(slots[m.weight], label, "weight");
  TORCH_CHECK(dy.dim() == 4 && x.dim() == 4 && w.dim() == 4, "inductor_cpp: ", label,
              ": output gradient, input and weight must be 4-D, got ", dy.sizes(), ", ", x.sizes(),
              " and ", w.sizes());
  const matrix::Conv2dParams q = conv_params(x, w, m.geometry);
  TORCH_CHECK(w.size(1) == q.c && dy.size(0) == q.n && dy.size(1) == q.oc && dy.size(2) == q.out_h() &&
                  dy.size(3) == q.out_w(),
              "inductor_cpp: ", label, ": output gradient ", dy.sizes(), " does not match input ", x.sizes(),
              " and weight ", w.sizes());
  const int threads = static_cast<int>(at::get_num_threads());
  if (m.grad_input.slot >= 0) {
    TORCH_CHECK(matrix::conv2d_backward_input_supported(q) && x.sizes() == at::IntArrayRef(m.grad_input.sizes),
                "inductor_cpp: ", label, ": input gradient not supported for these parameters");
    const at::Tensor w_ohwi = w.contiguous(at::MemoryFormat::ChannelsLast);
    at::Tensor dx = empty_strided_pooled(m.grad_input.sizes, m.grad_input.strides, x.options());
    matrix::conv2d_backward_input_nhwc_f32(dy.data_ptr<float>(), w_ohwi.data_ptr<float>(),
                                           dx.data_ptr<float>(), q, threads,
                                           pooled_packed_storage());
    slots[m.grad_input.slot] = std::move(dx);
  }
  if (m.grad_weight.slot < 0 && m.grad_bias.slot < 0) return;
  TORCH_CHECK(matrix::conv2d_backward_weight_supported(q), "inductor_cpp: ", label,
              ": weight gradient not supported for these parameters");
  TORCH_CHECK(m.grad_weight.slot < 0 || w.sizes() == at::IntArrayRef(m.grad_weight.sizes),
              "inductor_cpp: ", label, ": weight ", w.sizes(), " does not match its gradient's sizes");
  TORCH_CHECK(m.grad_bias.slot < 0 || m.grad_bias.sizes == std::vector<int64_t>{q.oc}, "inductor_cpp: ", label,
              ": bias gradient of ", c10::IntArrayRef(m.grad_bias.sizes), ", expected [", q.oc, "]");
  // The library writes OHWI (channels-last); another layout of the plan gets a copy.
  const bool direct = m.grad_weight.slot >= 0 && is_dense_nhwc(m.grad_weight.sizes, m.grad_weight.strides);
  at::Tensor dw = direct ? empty_strided_pooled(m.grad_weight.sizes, m.grad_weight.strides, x.options())
                         : empty_strided_pooled(w.sizes(), nhwc_strides(w.sizes()), x.options());
  at::Tensor db = m.grad_bias.slot >= 0 ? at::empty({q.oc}, x.options()) : at::Tensor();
  matrix::conv2d_backward_weight_nhwc_f32(dy.data_ptr<float>(), x.data_ptr<float>(), dw.data_ptr<float>(),
                                          db.defined() ? db.data_ptr<float>() : nullptr, q, threads);
  if (m.grad_weight.slot >= 0) {
    if (!direct) {
      at::Tensor laid = empty_strided_pooled(m.grad_weight.sizes, m.grad_weight.strides, x.options());
      laid.copy_(dw);
      dw = std::move(laid);
    }
    slots[m.grad_weight.slot] = std::move(dw);
  }
  if (db.defined()) slots[m.grad_bias.slot] = std::move(db);
}

}  // namespace inductor_cpp::runtime
