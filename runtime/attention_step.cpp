/// \file
/// AttentionStep: operand checks and strides around the library's attention (see the header).
#include "runtime/attention_step.h"

#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#include <ATen/ops/zeros.h>

#include <cmath>
#include <stdexcept>

#include "runtime/cpu_pool.h"
#include "runtime/matrix/attention.h"

namespace inductor_cpp::runtime {

namespace {

/// The float32 CPU 4-D tensor in `slot`, its last dimension made contiguous when it is not.
at::Tensor operand(const c10::IValue& v, const std::string& label, const char* what) {
  TORCH_CHECK(v.isTensor(), "inductor_cpp: ", label, ": ", what, " is not a tensor");
  at::Tensor t = v.toTensor();
  TORCH_CHECK(t.scalar_type() == at::kFloat && t.device().is_cpu() && t.dim() == 4,
              "inductor_cpp: ", label, ": ", what, " must be a 4-D float32 CPU tensor, got ",
              t.scalar_type(), " ", t.sizes(), " on ", t.device());
  if (t.stride(3) != 1 && t.size(3) != 1) t = t.contiguous();
  return t;
}

std::array<int64_t, 3> leading_strides(const at::Tensor& t) {
  return {t.stride(0), t.stride(1), t.stride(2)};
}

}  // namespace

AttentionStep::AttentionStep(MatmulLaunch launch, std::string label)
    : launch_(std::move(launch)), label_(std::move(label)) {
  const MatmulLaunch& m = launch_;
  if (!m.is_attention()) throw std::runtime_error("not an attention step: " + m.op);
  if (!m.epilogue.empty()) throw std::runtime_error("attention: no epilogue");
  if (m.a < 0 || m.b < 0 || m.value < 0 || m.out.slot < 0)
    throw std::runtime_error("attention: slots missing");
  if (m.out.dtype != "float32" || m.out.device != "cpu" || m.out.sizes.size() != 4 ||
      m.out.strides.size() != 4 || m.out.strides[3] != 1)
    throw std::runtime_error(
        "attention: the output must be a 4-D float32 CPU tensor with a contiguous last dim");
  if (!(m.alpha > 0)) throw std::runtime_error("attention: the scale must be positive");
  if (m.logsumexp.slot >= 0 && (m.logsumexp.dtype != "float32" || m.logsumexp.device != "cpu" ||
                                m.logsumexp.sizes.size() != 3 || m.logsumexp.strides.size() != 3))
    throw std::runtime_error("attention: the logsumexp must be a 3-D float32 CPU tensor");
}

void AttentionStep::run(std::vector<c10::IValue>& slots) const {
  const MatmulLaunch& m = launch_;
  const at::Tensor q = operand(slots[m.a], label_, "query"), k = operand(slots[m.b], label_, "key"),
                   v = operand(slots[m.value], label_, "value");
  TORCH_CHECK(k.size(0) == q.size(0) && v.size(0) == q.size(0) && k.size(1) == q.size(1) &&
                  v.size(1) == q.size(1) && k.size(3) == q.size(3) && v.size(2) == k.size(2),
              "inductor_cpp: ", label_, ": query ", q.sizes(), ", key ", k.sizes(), " and value ",
              v.sizes(), " do not match");
  const std::vector<int64_t> out_sizes{q.size(0), q.size(1), q.size(2), v.size(3)};
  TORCH_CHECK(out_sizes == m.out.sizes, "inductor_cpp: ", label_, ": output ",
              at::IntArrayRef(out_sizes), " differs from the plan's ",
              at::IntArrayRef(m.out.sizes));
  at::Tensor out = empty_strided_pooled(m.out.sizes, m.out.strides, q.options());
  matrix::AttentionParams p;
  p.batch = q.size(0), p.heads = q.size(1), p.q_len = q.size(2), p.kv_len = k.size(2);
  p.head_dim = q.size(3), p.value_dim = v.size(3);
  p.q_stride = leading_strides(q), p.k_stride = leading_strides(k), p.v_stride = leading_strides(v);
  p.out_stride = leading_strides(out);
  p.scale = m.alpha;
  p.causal = m.causal;
  at::Tensor mask;  // additive float32, broadcast to [batch, heads, q_len, kv_len] by strides
  if (m.mask >= 0) {
    TORCH_CHECK(slots[m.mask].isTensor(), "inductor_cpp: ", label_, ": the mask is not a tensor");
    mask = slots[m.mask].toTensor();
    TORCH_CHECK((mask.scalar_type() == at::kFloat || mask.scalar_type() == at::kBool) &&
                    mask.device().is_cpu() && mask.dim() <= 4,
                "inductor_cpp: ", label_,
                ": the mask must be a float32 or bool CPU tensor of at most 4 dims, got ",
                mask.scalar_type(), " ", mask.sizes());
    if (mask.scalar_type() == at::kBool)  // true: visible (0), false: hidden (-inf)
      mask = at::zeros(mask.sizes(), q.options()).masked_fill_(mask.logical_not(), -INFINITY);
    mask = mask.expand({p.batch, p.heads, p.q_len, p.kv_len});
    if (mask.stride(3) != 1 && p.kv_len != 1) mask = mask.contiguous();
    p.mask = mask.data_ptr<float>();
    p.mask_stride = {mask.stride(0), mask.stride(1), mask.stride(2), mask.stride(3)};
  }
  TORCH_CHECK(matrix::attention_supported(p), "inductor_cpp: ", label_,
              ": attention not supported here");
  at::Tensor lse;  // [batch, heads, q_len], when the backward reads it
  if (m.logsumexp.slot >= 0) {
    TORCH_CHECK(m.logsumexp.sizes == std::vector<int64_t>({p.batch, p.heads, p.q_len}), "inductor_cpp: ", label_,
                ": logsumexp ", at::IntArrayRef(m.logsumexp.sizes), " does not match the query");
    lse = empty_strided_pooled(m.logsumexp.sizes, m.logsumexp.strides, q.options());
  }
  matrix::attention_f32(q.data_ptr<float>(), k.data_ptr<float>(), v.data_ptr<float>(), out.data_ptr<float>(), p,
                        static_cast<int>(at::get_num_threads()), lse.defined() ? lse.data_ptr<float>() : nullptr,
                        lse.defined() ? std::array<int64_t, 3>{lse.stride(0), lse.stride(1), lse.stride(2)}
                                      : std::array<int64_t, 3>{});
  slots[m.out.slot] = std::move(out);
  if (lse.defined()) slots[m.logsumexp.slot] = std::move(lse);
}

}  // namespace inductor_cpp::runtime
