/// \file
/// Matching flash-attention extern steps to "attention" MatmulLaunch steps (plan_attention.h).
#include "inductor/plan_attention.h"

#include <cmath>

#include "inductor/lower/lower_graph.h"
#include "inductor/plan_epilogue.h"
#include "runtime/matrix/attention.h"

namespace inductor_cpp::inductor {

using ir::Arg;

using namespace matrix_plan;

namespace {
constexpr int64_t kMaxKeys = 512;  ///< longer key sequences stay ATen (see match_attention)

/// The op's scale (argument `pos` or "scale"; default 1 / sqrt(head_dim)), or nothing with the
/// reason in `why` (not a literal, not positive).
std::optional<double> scale_of(const ir::Node& node, size_t pos, int64_t head_dim,
                               std::string& why) {
  double scale = 1.0 / std::sqrt(double(head_dim));
  const Arg* given = find_arg(node, pos, "scale");
  if (given && given->kind != Arg::Kind::None) {
    const auto literal = number(*given);
    if (!literal) return why = "the scale is not a literal", std::nullopt;
    scale = *literal;
  }
  if (!(scale > 0)) return why = "a scale that is not positive", std::nullopt;
  return scale;
}

/// Whether `mask` is a float32 or bool CPU tensor of static shape broadcastable to [batch, heads,
/// q_len, kv_len] (the query's sizes qs, kv_len keys), and not combined with is_causal; else
/// false with the reason in `why`.
bool mask_fits(const ir::Graph& g, const Arg& mask, const Arg* causal,
               const std::vector<int64_t>& qs, int64_t kv_len, std::string& why) {
  if (causal && causal->bool_value) return why = "a mask with is_causal", false;
  const auto mask_meta = is_tensor_ref(mask) ? meta_of(g, mask) : std::nullopt;
  if (!mask_meta || mask_meta->device != "cpu" ||
      (mask_meta->dtype != "float32" && mask_meta->dtype != "bool") || mask_meta->sizes.size() > 4)
    return why = "an attention mask that is not a float32 or bool CPU tensor of static shape",
           false;
  const std::vector<int64_t> full{qs[0], qs[1], qs[2], kv_len};
  const std::vector<int64_t>& ms = mask_meta->sizes;
  for (size_t d = 0; d < ms.size(); ++d) {
    const int64_t want = full[4 - ms.size() + d];
    if (ms[d] != want && ms[d] != 1)
      return why = "an attention mask that does not broadcast to the scores", false;
  }
  return true;
}
}  // namespace

std::optional<MatmulMatch> match_attention(
    const ir::Graph& g, const ir::ScheduledProgram& program, size_t step_index,
    const std::function<int32_t(const std::string&)>& slot_of_buffer,
    const std::set<std::string>& used, std::string& why_not) {
  const ir::ScheduledStep& s = program.steps.at(step_index);
  if (s.kind != ir::ScheduledStep::Kind::Extern || s.call.view || s.call.graph_node < 0)
    return std::nullopt;
  const int64_t n = s.call.graph_node;
  const ir::Node& node = g.nodes.at(static_cast<size_t>(n));
  if (op_name(node.op) != "aten::_scaled_dot_product_flash_attention_for_cpu") return std::nullopt;
  const auto no = [&why_not](const std::string& why) -> std::optional<MatmulMatch> {
    why_not = "matrix kernels: " + why;
    return std::nullopt;
  };
  std::string why;
  if (node.args.size() < 3 || node.outputs.size() != 2) return no("unexpected arguments");
  const Arg &q = node.args[0], &k = node.args[1], &v = node.args[2];
  if (!is_tensor_ref(q) || !is_tensor_ref(k) || !is_tensor_ref(v))
    return no("query, key or value is not a tensor");
  const auto q_meta = meta_of(g, q), k_meta = meta_of(g, k), v_meta = meta_of(g, v);
  const auto out_meta = meta_of(g, Arg::value(n, 0));
  if (!is_f32_cpu(q_meta, 4) || !is_f32_cpu(k_meta, 4) || !is_f32_cpu(v_meta, 4) ||
      !is_f32_cpu(out_meta, 4))
    return no("not float32 4-D CPU tensors with static shapes");
  const auto dropout = number_or(node, 3, "dropout_p", 0);
  if (!dropout || *dropout != 0) return no("dropout");
  const Arg* causal = find_arg(node, 4, "is_causal");
  if (causal && causal->kind != Arg::Kind::Bool) return no("is_causal is not a literal");
  const Arg* mask = find_arg(node, 5, "attn_mask");
  const bool masked = mask && mask->kind != Arg::Kind::None;
  const std::vector<int64_t>& qs = q_meta->sizes;
  const std::optional<double> scale = scale_of(node, 6, qs[3], why);
  if (!scale) return no(why);
  // The logsumexp, when read (a training forward saves it for ATen's backward): ours writes
  // it too, m + log l per row, what the backward recomputes the probabilities from.
  const bool lse_used = used.count(buffer_name_of(Arg::value(n, 1))) > 0;
  const auto lse_meta = lse_used ? meta_of(g, Arg::value(n, 1)) : std::nullopt;
  if (lse_used && (!is_f32_cpu(lse_meta, 3) || lse_meta->sizes != std::vector<int64_t>{qs[0], qs[1], qs[2]}))
    return no("its logsumexp is not a static float32 [batch, heads, queries] tensor");
  const std::vector<int64_t>&ks = k_meta->sizes, &vs = v_meta->sizes;
  if (ks[0] != qs[0] || vs[0] != qs[0] || ks[1] != qs[1] || vs[1] != qs[1] || ks[3] != qs[3] ||
      vs[2] != ks[2] || out_meta->sizes != std::vector<int64_t>{qs[0], qs[1], qs[2], vs[3]})
    return no("shapes do not match");
  if (out_meta->strides[3] != 1 && out_meta->sizes[3] != 1)
    return no("the output's last dimension is not contiguous");
  if (masked && !mask_fits(g, *mask, causal, qs, ks[2], why)) return no(why);
  matrix::AttentionParams p;
  p.batch = qs[0], p.heads = qs[1], p.q_len = qs[2], p.kv_len = ks[2], p.head_dim = qs[3],
  p.value_dim = vs[3];
  p.scale = float(*scale);
  // One key block (kv_len <= 512): 1.1-1.8x ATen's flash attention (dev Xeon, 2 threads, 128-512
  // keys); with more, ATen's is as fast or faster (768 keys 0.96x, 1024 keys 0.88-1.0x), so
  // longer sequences stay with it.
  if (p.kv_len > kMaxKeys)
    return no("more than " + std::to_string(kMaxKeys) + " keys (ATen's kernel is as fast there)");
  if (!matrix::attention_supported(p))
    return no(
        "not supported by our attention (it needs AVX-512, sizes > 0 and head dimensions up to " +
        std::to_string(matrix::kMaxHeadDim) + ")");

  MatmulMatch match;
  runtime::MatmulLaunch& launch = match.step.matmul;
  match.step.node = static_cast<int32_t>(n);
  launch.op = "attention";
  launch.a = slot_of_buffer(buffer_name_of(q));
  launch.b = slot_of_buffer(buffer_name_of(k));
  launch.value = slot_of_buffer(buffer_name_of(v));
  if (masked) launch.mask = slot_of_buffer(buffer_name_of(*mask));
  launch.alpha = float(*scale);
  launch.causal = causal && causal->bool_value;
  launch.nodes = {static_cast<int32_t>(n)};
  if (lse_used)
    launch.logsumexp = runtime::BufferAlloc{slot_of_buffer(buffer_name_of(Arg::value(n, 1))), lse_meta->sizes,
                                            lse_meta->strides, "float32", "cpu", -1};
  launch.out = runtime::BufferAlloc{slot_of_buffer(buffer_name_of(Arg::value(n, 0))),
                                    out_meta->sizes,
                                    out_meta->strides,
                                    "float32",
                                    "cpu",
                                    -1};
  return match;
}

std::optional<MatmulMatch> match_attention_backward(
    const ir::Graph& g, const ir::ScheduledProgram& program, size_t step_index,
    const std::function<int32_t(const std::string&)>& slot_of_buffer, std::string& why_not) {
  const ir::ScheduledStep& s = program.steps.at(step_index);
  if (s.kind != ir::ScheduledStep::Kind::Extern || s.call.view || s.call.graph_node < 0)
    return std::nullopt;
  const int64_t n = s.call.graph_node;
  const ir::Node& node = g.nodes.at(static_cast<size_t>(n));
  if (op_name(node.op) != "aten::_scaled_dot_product_flash_attention_for_cpu_backward")
    return std::nullopt;
  const auto no = [&why_not](const std::string& why) -> std::optional<MatmulMatch> {
    why_not = "matrix kernels: " + why;
    return std::nullopt;
  };
  std::string why;
  if (node.args.size() < 6 || node.outputs.size() != 3) return no("unexpected arguments");
  // (grad_out, query, key, value, out, logsumexp, dropout_p, is_causal, *, attn_mask, scale)
  const Arg &grad_out = node.args[0], &q = node.args[1], &k = node.args[2], &v = node.args[3],
            &out = node.args[4], &lse = node.args[5];
  for (const Arg* t : {&grad_out, &q, &k, &v, &out, &lse})
    if (!is_tensor_ref(*t)) return no("an operand is not a tensor");
  const auto q_meta = meta_of(g, q), k_meta = meta_of(g, k), v_meta = meta_of(g, v);
  const auto out_meta = meta_of(g, out), grad_out_meta = meta_of(g, grad_out);
  const auto lse_meta = meta_of(g, lse);
  std::array<std::optional<StaticMeta>, 3> grad_meta;
  for (size_t i = 0; i < 3; ++i) grad_meta[i] = meta_of(g, Arg::value(n, static_cast<int32_t>(i)));
  if (!is_f32_cpu(q_meta, 4) || !is_f32_cpu(k_meta, 4) || !is_f32_cpu(v_meta, 4) ||
      !is_f32_cpu(out_meta, 4) || !is_f32_cpu(grad_out_meta, 4) || !is_f32_cpu(lse_meta, 3) ||
      !is_f32_cpu(grad_meta[0], 4) || !is_f32_cpu(grad_meta[1], 4) || !is_f32_cpu(grad_meta[2], 4))
    return no("not float32 CPU tensors with static shapes");
  const auto dropout = number_or(node, 6, "dropout_p", 0);
  if (!dropout || *dropout != 0) return no("dropout");
  const Arg* causal = find_arg(node, 7, "is_causal");
  if (causal && causal->kind != Arg::Kind::Bool) return no("is_causal is not a literal");
  const Arg* mask = find_arg(node, 8, "attn_mask");
  const bool masked = mask && mask->kind != Arg::Kind::None;
  const std::vector<int64_t>&qs = q_meta->sizes, &ks = k_meta->sizes, &vs = v_meta->sizes;
  const std::optional<double> scale = scale_of(node, 9, qs[3], why);
  if (!scale) return no(why);
  const std::vector<int64_t> out_sizes{qs[0], qs[1], qs[2], vs[3]};
  if (ks[0] != qs[0] || vs[0] != qs[0] || ks[1] != qs[1] || vs[1] != qs[1] || ks[3] != qs[3] ||
      vs[2] != ks[2] || out_meta->sizes != out_sizes || grad_out_meta->sizes != out_sizes ||
      lse_meta->sizes != std::vector<int64_t>{qs[0], qs[1], qs[2]} || grad_meta[0]->sizes != qs ||
      grad_meta[1]->sizes != ks || grad_meta[2]->sizes != vs)
    return no("shapes do not match");
  for (const auto& m : grad_meta)
    if (m->strides[3] != 1 && m->sizes[3] != 1)
      return no("a gradient's last dimension is not contiguous");
  if (masked && !mask_fits(g, *mask, causal, qs, ks[2], why)) return no(why);
  matrix::AttentionParams p;
  p.batch = qs[0], p.heads = qs[1], p.q_len = qs[2], p.kv_len = ks[2], p.head_dim = qs[3],
  p.value_dim = vs[3];
  // As the forward: 1.5x ATen's backward at 128 keys, 1.05-1.15x at 512 (dev Xeon).
  if (p.kv_len > kMaxKeys)
    return no("more than " + std::to_string(kMaxKeys) + " keys (ATen's kernel is as fast there)");
  if (!matrix::attention_supported(p))
    return no(
        "not supported by our attention (it needs AVX-512, sizes > 0 and head dimensions up to " +
        std::to_string(matrix::kMaxHeadDim) + ")");

  MatmulMatch match;
  runtime::MatmulLaunch& launch = match.step.matmul;
  match.step.node = static_cast<int32_t>(n);
  launch.op = "attention_backward";
  const auto slot = [&](const Arg& a) { return slot_of_buffer(buffer_name_of(a)); };
  launch.grad_output = slot(grad_out);
  launch.a = slot(q), launch.b = slot(k), launch.value = slot(v);
  launch.forward_output = slot(out), launch.forward_logsumexp = slot(lse);
  if (masked) launch.mask = slot(*mask);
  launch.alpha = float(*scale);
  launch.causal = causal && causal->bool_value;
  launch.nodes = {static_cast<int32_t>(n)};
  const auto alloc = [&](int32_t i) {
    return runtime::BufferAlloc{slot(Arg::value(n, i)),
                                grad_meta[size_t(i)]->sizes,
                                grad_meta[size_t(i)]->strides,
                                "float32",
                                "cpu",
                                -1};
  };
  launch.out = alloc(0), launch.grad_key = alloc(1), launch.grad_value = alloc(2);
  return match;
}

}  // namespace inductor_cpp::inductor
