/// \file
/// AttentionStep: operand checks and strides around the library's attention (see the header).
#include "runtime/attention_step.h"

#include <ATen/ExpandUtils.h>

#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#include <ATen/ops/_scaled_dot_product_flash_attention_for_cpu.h>
#include <ATen/ops/_scaled_dot_product_flash_attention_for_cpu_backward.h>
#include <ATen/ops/zeros.h>

#include <cmath>
#include <optional>
#include <stdexcept>

#include "runtime/cpu_pool.h"
#include "matrix/matrix.h"

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

/// Throws unless `a` is a float32 CPU output of `rank` dims, with a contiguous last dimension
/// (rank 4) or, for symbolic shapes, no sizes (allocated in ATen's layout, `allocate`).
void check_output(const BufferAlloc& a, size_t rank, const char* what) {
  const bool sized = a.sizes.size() == rank && a.strides.size() == rank &&
                     (rank != 4 || a.strides[3] == 1);
  if (a.slot < 0 || a.dtype != "float32" || a.device != "cpu" ||
      !(sized || (a.sizes.empty() && a.strides.empty())))
    throw std::runtime_error(std::string("attention: ") + what + " must be a " +
                             std::to_string(rank) +
                             "-D float32 CPU tensor with a contiguous last dim");
}

/// The forward's parameters from q, k and v (checked to match) and the call.
matrix::AttentionParams attention_params(const at::Tensor& q, const at::Tensor& k,
                                         const at::Tensor& v, const AttentionOperands& m,
                                         const std::string& label) {
  TORCH_CHECK(k.size(0) == q.size(0) && v.size(0) == q.size(0) && k.size(1) == q.size(1) &&
                  v.size(1) == q.size(1) && k.size(3) == q.size(3) && v.size(2) == k.size(2),
              "inductor_cpp: ", label, ": query ", q.sizes(), ", key ", k.sizes(), " and value ",
              v.sizes(), " do not match");
  matrix::AttentionParams p;
  p.batch = q.size(0), p.heads = q.size(1), p.q_len = q.size(2), p.kv_len = k.size(2);
  p.head_dim = q.size(3), p.value_dim = v.size(3);
  p.q_stride = leading_strides(q), p.k_stride = leading_strides(k), p.v_stride = leading_strides(v);
  p.scale = m.scale;
  p.causal = m.causal;
  return p;
}

/// The call's mask as an additive float32 tensor broadcast to [batch, heads, q_len, kv_len]
/// by strides, pointed to from p (undefined when the call has none). A boolean mask (true:
/// visible) becomes 0 / -inf.
at::Tensor attach_mask(const std::vector<c10::IValue>& slots, const AttentionOperands& m,
                       matrix::AttentionParams& p, const std::string& label) {
  if (m.mask < 0) return {};
  TORCH_CHECK(slots[m.mask].isTensor(), "inductor_cpp: ", label, ": the mask is not a tensor");
  at::Tensor mask = slots[m.mask].toTensor();
  TORCH_CHECK((mask.scalar_type() == at::kFloat || mask.scalar_type() == at::kBool) &&
                  mask.device().is_cpu() && mask.dim() <= 4,
              "inductor_cpp: ", label,
              ": the mask must be a float32 or bool CPU tensor of at most 4 dims, got ",
              mask.scalar_type(), " ", mask.sizes());
  if (mask.scalar_type() == at::kBool)  // true: visible (0), false: hidden (-inf)
    mask = at::zeros(mask.sizes(), mask.options().dtype(at::kFloat))
               .masked_fill_(mask.logical_not(), -INFINITY);
  mask = mask.expand({p.batch, p.heads, p.q_len, p.kv_len});
  if (mask.stride(3) != 1 && p.kv_len != 1) mask = mask.contiguous();
  p.mask = mask.data_ptr<float>();
  p.mask_stride = {mask.stride(0), mask.stride(1), mask.stride(2), mask.stride(3)};
  return mask;
}

/// A pooled tensor of `sizes` ([batch, heads, length(, dim)]) with alloc's strides, after
/// checking the sizes against the plan's. A plan of symbolic shapes gives none; the tensor then
/// gets ATen's layout for this output (what its meta function promises the graph's later
/// views): dense in the dim order of `like`'s strides when given (the forward's output is
/// `empty_like(query)`: a query read out of a [length, batch·heads, dim] projection gives an
/// output in that order, a contiguous query a contiguous one), else [batch, length, heads(,
/// dim)] in memory (the logsumexp, and the backward's gradients whatever the inputs' layout).
at::Tensor allocate(const BufferAlloc& alloc, const std::vector<int64_t>& sizes,
                    const at::TensorOptions& options, const std::string& label, const char* what,
                    const at::Tensor* like = nullptr) {
  if (alloc.sizes.empty()) {
    if (like)
      return empty_strided_pooled(sizes, at::infer_dense_strides(sizes, like->strides()), options);
    const int64_t dim = sizes.size() == 4 ? sizes[3] : 1;
    std::vector<int64_t> strides{sizes[2] * sizes[1] * dim, dim, sizes[1] * dim};
    if (sizes.size() == 4) strides.push_back(1);
    return empty_strided_pooled(sizes, strides, options);
  }
  TORCH_CHECK(sizes == alloc.sizes, "inductor_cpp: ", label, ": ", what, " ",
              at::IntArrayRef(sizes), " differs from the plan's ", at::IntArrayRef(alloc.sizes));
  return empty_strided_pooled(alloc.sizes, alloc.strides, options);
}

/// Whether this call is better left to ATen's kernel: more keys than ours is faster for (only
/// possible when the plan's lengths are symbolic: a static plan has checked them), or sizes our
/// kernel does not take.
bool leave_to_aten(const matrix::AttentionParams& p) {
  return p.kv_len > matrix::kMaxFasterKeys || !matrix::attention_supported(p);
}

/// The call's mask as given (bool or float), for ATen's kernel.
std::optional<at::Tensor> given_mask(const std::vector<c10::IValue>& slots, const AttentionOperands& m) {
  if (m.mask < 0) return std::nullopt;
  return slots[m.mask].toTensor();
}

/// Throws unless the operands' slots are set and the scale is positive.
void check_operands(const AttentionOperands& in) {
  if (in.query < 0 || in.key < 0 || in.value < 0) throw std::runtime_error("attention: slots missing");
  if (!(in.scale > 0)) throw std::runtime_error("attention: the scale must be positive");
}

}  // namespace

AttentionStep::AttentionStep(AttentionCall call, std::string labeltext) : call_(std::move(call)) {
  label = std::move(labeltext);
  check_operands(call_.in);
  check_output(call_.out, 4, "the output");
  if (call_.logsumexp.slot >= 0) check_output(call_.logsumexp, 3, "the logsumexp");
}

AttentionBackwardStep::AttentionBackwardStep(AttentionBackwardCall call, std::string labeltext)
    : call_(std::move(call)) {
  label = std::move(labeltext);
  const AttentionBackwardCall& m = call_;
  check_operands(m.in);
  if (m.grad_output < 0 || m.forward_output < 0 || m.forward_logsumexp < 0)
    throw std::runtime_error("attention_backward: slots missing");
  check_output(m.grad_query, 4, "the query's gradient");
  check_output(m.grad_key, 4, "the key's gradient");
  check_output(m.grad_value, 4, "the value's gradient");
}

void AttentionStep::run(RunContext& ctx) const {
  std::vector<c10::IValue>& slots = ctx.slots;
  const AttentionCall& c = call_;
  const AttentionOperands& m = c.in;
  const at::Tensor q = operand(slots[m.query], label, "query"), k = operand(slots[m.key], label, "key"),
                   v = operand(slots[m.value], label, "value");
  matrix::AttentionParams p = attention_params(q, k, v, m, label);
  // A symbolic plan's output takes the query's layout (allocate), which our kernel can write
  // only with the head dimension innermost; a query read with another layout goes to ATen.
  const at::Tensor& given_q = slots[m.query].toTensor();
  const bool layout_ours = !c.out.sizes.empty() || given_q.stride(3) == 1 || given_q.size(3) == 1;
  if (leave_to_aten(p) || !layout_ours) {
    auto [out, lse] = at::_scaled_dot_product_flash_attention_for_cpu(
        q, k, v, 0.0, m.causal, given_mask(slots, m), double(m.scale));
    slots[c.out.slot] = std::move(out);
    if (c.logsumexp.slot >= 0) slots[c.logsumexp.slot] = std::move(lse);
    return;
  }
  at::Tensor out =
      allocate(c.out, {p.batch, p.heads, p.q_len, p.value_dim}, q.options(), label, "output", &q);
  p.out_stride = leading_strides(out);
  const at::Tensor mask = attach_mask(slots, m, p, label);
  at::Tensor lse;  // [batch, heads, q_len], when the backward reads it
  if (c.logsumexp.slot >= 0)
    lse = allocate(c.logsumexp, {p.batch, p.heads, p.q_len}, q.options(), label, "logsumexp");
  matrix::attention_f32(q.data_ptr<float>(), k.data_ptr<float>(), v.data_ptr<float>(),
                        out.data_ptr<float>(), p, static_cast<int>(at::get_num_threads()),
                        lse.defined() ? lse.data_ptr<float>() : nullptr,
                        lse.defined() ? leading_strides(lse) : std::array<int64_t, 3>{});
  slots[c.out.slot] = std::move(out);
  if (lse.defined()) slots[c.logsumexp.slot] = std::move(lse);
}

void AttentionBackwardStep::run(RunContext& ctx) const {
  std::vector<c10::IValue>& slots = ctx.slots;
  const AttentionBackwardCall& c = call_;
  const AttentionOperands& m = c.in;
  const at::Tensor q = operand(slots[m.query], label, "query"), k = operand(slots[m.key], label, "key"),
                   v = operand(slots[m.value], label, "value"),
                   out = operand(slots[c.forward_output], label, "the forward's output"),
                   grad_out = operand(slots[c.grad_output], label, "the output's gradient");
  matrix::AttentionParams p = attention_params(q, k, v, m, label);
  const std::vector<int64_t> out_sizes{p.batch, p.heads, p.q_len, p.value_dim};
  TORCH_CHECK(out.sizes() == out_sizes && grad_out.sizes() == out_sizes, "inductor_cpp: ", label,
              ": output ", out.sizes(), " and its gradient ", grad_out.sizes(), " do not match ",
              at::IntArrayRef(out_sizes));
  TORCH_CHECK(slots[c.forward_logsumexp].isTensor(), "inductor_cpp: ", label,
              ": the logsumexp is not a tensor");
  const at::Tensor lse = slots[c.forward_logsumexp].toTensor();
  TORCH_CHECK(lse.scalar_type() == at::kFloat && lse.device().is_cpu() &&
                  lse.sizes() == at::IntArrayRef({p.batch, p.heads, p.q_len}),
              "inductor_cpp: ", label, ": the logsumexp must be a float32 CPU [", p.batch, ", ",
              p.heads, ", ", p.q_len, "] tensor, got ", lse.scalar_type(), " ", lse.sizes());
  if (leave_to_aten(p)) {
    auto [grad_q, grad_k, grad_v] = at::_scaled_dot_product_flash_attention_for_cpu_backward(
        grad_out, q, k, v, out, lse, 0.0, m.causal, given_mask(slots, m), double(m.scale));
    slots[c.grad_query.slot] = std::move(grad_q);
    slots[c.grad_key.slot] = std::move(grad_k);
    slots[c.grad_value.slot] = std::move(grad_v);
    return;
  }
  p.out_stride = leading_strides(out);
  const at::Tensor mask = attach_mask(slots, m, p, label);
  at::Tensor grad_q = allocate(c.grad_query, q.sizes().vec(), q.options(), label, "the query's gradient");
  at::Tensor grad_k =
      allocate(c.grad_key, k.sizes().vec(), q.options(), label, "the key's gradient");
  at::Tensor grad_v =
      allocate(c.grad_value, v.sizes().vec(), q.options(), label, "the value's gradient");
  matrix::AttentionBackwardArgs a;
  a.q = q.data_ptr<float>(), a.k = k.data_ptr<float>(), a.v = v.data_ptr<float>();
  a.out = out.data_ptr<float>(), a.grad_out = grad_out.data_ptr<float>();
  a.grad_out_stride = leading_strides(grad_out);
  a.logsumexp = lse.data_ptr<float>(), a.lse_stride = leading_strides(lse);
  a.grad_q = grad_q.data_ptr<float>(), a.grad_q_stride = leading_strides(grad_q);
  a.grad_k = grad_k.data_ptr<float>(), a.grad_k_stride = leading_strides(grad_k);
  a.grad_v = grad_v.data_ptr<float>(), a.grad_v_stride = leading_strides(grad_v);
  matrix::attention_backward_f32(p, a, static_cast<int>(at::get_num_threads()));
  slots[c.grad_query.slot] = std::move(grad_q);
  slots[c.grad_key.slot] = std::move(grad_k);
  slots[c.grad_value.slot] = std::move(grad_v);
}

}  // namespace inductor_cpp::runtime
