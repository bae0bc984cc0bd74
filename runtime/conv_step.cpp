/// \file
/// ConvStep: operand layout checks, the packed-weight cache and the call of conv2d_nhwc_f32
/// (see the header).
#include "runtime/conv_step.h"

#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#include <cmath>
#include <optional>
#include <stdexcept>

#include "runtime/cpu_pool.h"
#include "runtime/tile_kernel_call.h"

namespace inductor_cpp::runtime {

namespace {

}  // namespace

/// Dense NHWC strides of an [N, C, H, W] tensor.
std::vector<int64_t> nhwc_strides(at::IntArrayRef sizes) {
  const int64_t c = sizes[1], h = sizes[2], w = sizes[3];
  return {h * w * c, 1, w * c, c};
}

at::Tensor as_dense_nhwc(const at::Tensor& t) {
  if (is_dense_nhwc(t.sizes(), t.strides())) return t;
  at::Tensor copy = empty_strided_pooled(t.sizes(), nhwc_strides(t.sizes()), t.options());
  copy.copy_(t);
  return copy;
}

at::Tensor checked_f32(const c10::IValue& v, const std::string& label, const char* what) {
  TORCH_CHECK(v.isTensor(), "inductor_cpp: ", label, ": ", what, " is not a tensor");
  at::Tensor t = v.toTensor();
  TORCH_CHECK(t.scalar_type() == at::kFloat && t.device().is_cpu(), "inductor_cpp: ", label, ": ",
              what, " must be a float32 CPU tensor, got ", t.scalar_type(), " on ", t.device());
  return t;
}

matrix::Conv2dParams conv_params(const at::Tensor& x, const at::Tensor& w,
                                 const ConvGeometry& geometry) {
  matrix::Conv2dParams q;
  q.flush_denormals = matrix::caller_flushes_denormals();
  q.n = x.size(0), q.c = x.size(1), q.h = x.size(2), q.w = x.size(3);
  q.oc = w.size(0), q.kh = w.size(2), q.kw = w.size(3);
  q.stride_h = geometry.stride[0], q.stride_w = geometry.stride[1];
  q.pad_h = geometry.padding[0], q.pad_w = geometry.padding[1];
  q.dilation_h = geometry.dilation[0], q.dilation_w = geometry.dilation[1];
  return q;
}

bool is_dense_nhwc(at::IntArrayRef sizes, at::IntArrayRef strides) {
  if (sizes.size() != 4 || strides.size() != 4) return false;
  int64_t expected = 1;
  for (const size_t d : {1, 3, 2, 0}) {  // C innermost, then W, H, N
    if (sizes[d] != 1 && strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

ConvStep::ConvStep(Conv2dCall call, std::vector<matrix::EpilogueKind> kinds, std::string label_text,
                   KernelFn tile_fn, bool frozen_weights)
    : call_(std::move(call)),
      kinds_(std::move(kinds)),
      tile_fn_(tile_fn),
      // Shared across graphs: the packed form depends on the weight's own sizes alone.
      packed_(std::make_shared<PackedWeightCache<matrix::PackedConvWeight>>(!frozen_weights,
                                                                              /*shared=*/true)) {
  label = std::move(label_text);
  const BufferAlloc& out = call_.out;
  if (out.dtype != "float32" || out.device != "cpu")
    throw std::runtime_error("conv2d output must be float32 on the CPU");
  if (!is_dense_nhwc(out.sizes, out.strides))
    throw std::runtime_error("conv2d output must be a channels-last (dense NHWC) 4-D tensor");
  for (size_t i = 0; i < call_.epilogue.size(); ++i) {
    const MatmulEpilogue& e = call_.epilogue[i];
    if (e.kind == "bias_row") throw std::runtime_error("conv2d epilogue: no per-pixel bias");
  }
}

void ConvStep::run(RunContext& ctx) const {
  std::vector<c10::IValue>& slots = ctx.slots;
  const Conv2dCall& m = call_;
  const at::Tensor x = as_dense_nhwc(checked_f32(slots[m.input], label, "input"));
  const at::Tensor w = checked_f32(slots[m.weight], label, "weight");
  TORCH_CHECK(x.dim() == 4 && w.dim() == 4, "inductor_cpp: ", label, ": input of rank ", x.dim(),
              " and weight of rank ", w.dim(), ", expected 4 and 4");
  matrix::Conv2dParams q = conv_params(x, w, m.geometry);
  const std::vector<int64_t>& out_sizes = m.out.sizes;
  TORCH_CHECK(w.size(1) == q.c && out_sizes[0] == q.n && out_sizes[1] == q.oc &&
                  out_sizes[2] == q.out_h() && out_sizes[3] == q.out_w(),
              "inductor_cpp: ", label, ": input ", x.sizes(), " and weight ", w.sizes(),
              " do not give ", c10::IntArrayRef(out_sizes));
  TORCH_CHECK(matrix::conv2d_supported(q), "inductor_cpp: ", label,
              ": convolution parameters not supported");

  at::Tensor y = empty_strided_pooled(out_sizes, m.out.strides, x.options());
  std::vector<at::Tensor> keep;  // epilogue operands, alive through the call
  TileKernelCall tile;  // a "kernel" op's binding
  for (size_t i = 0; i < m.epilogue.size(); ++i) {
    const MatmulEpilogue& e = m.epilogue[i];
    if (kinds_[i] == matrix::EpilogueKind::Tile) {
      q.epilogue.push_back(tile.bind(tile_fn_, e, m.out.slot, y, slots, label));
      continue;
    }
    matrix::EpilogueOp op;
    op.kind = kinds_[i];
    op.a = e.a;
    op.b = e.b;
    if (e.slot >= 0) {
      at::Tensor t = checked_f32(slots[e.slot], label, "epilogue operand");
      if (matrix::is_residual_op(op.kind)) {  // a tensor of the output's shape
        TORCH_CHECK(t.sizes() == y.sizes(), "inductor_cpp: ", label, ": ", e.kind,
                    " operand of sizes ", t.sizes(), ", expected ", y.sizes());
        t = as_dense_nhwc(t);
        op.ld = q.oc;  // one output pixel per row
      } else {
        TORCH_CHECK(t.numel() == q.oc, "inductor_cpp: ", label, ": bias of ", t.numel(),
                    " elements, expected ", q.oc);
        t = t.reshape({q.oc}).contiguous();
      }
      op.data = t.data_ptr<float>();
      keep.push_back(std::move(t));
    }
    q.epilogue.push_back(op);
  }

  const auto pack = [&] {  // from OHWI: a channels-last weight as it is, another layout copied
    const at::Tensor ohwi = w.contiguous(at::MemoryFormat::ChannelsLast);
    return matrix::pack_conv_weight_ohwi_f32(ohwi.data_ptr<float>(), q,
                                             static_cast<int>(at::get_num_threads()),
                                             pooled_packed_storage());
  };
  std::shared_ptr<const matrix::PackedConvWeight> packed = packed_->lookup(w, static_cast<int>(at::get_num_threads()), pack);
  std::optional<matrix::PackedConvWeight> per_call;
  if (!packed) per_call.emplace(pack());
  const matrix::PackedConvWeight& weights = packed ? *packed : *per_call;
  matrix::conv2d_nhwc_f32(x.data_ptr<float>(), weights, y.data_ptr<float>(), q,
                          static_cast<int>(at::get_num_threads()));
  tile.check(label);
  slots[m.out.slot] = std::move(y);
}

}  // namespace inductor_cpp::runtime
