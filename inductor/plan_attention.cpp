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
  const Arg* scale_arg = find_arg(node, 6, "scale");
  const std::vector<int64_t>& qs = q_meta->sizes;
  double scale = 1.0 / std::sqrt(double(qs[3]));
  if (scale_arg && scale_arg->kind != Arg::Kind::None) {
    const auto given = number(*scale_arg);
    if (!given) return no("the scale is not a literal");
    scale = *given;
  }
  if (!(scale > 0)) return no("a scale that is not positive");
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
  if (masked) {  // float32 or bool, broadcastable to [batch, heads, q_len, kv_len]
    if (causal && causal->bool_value) return no("a mask with is_causal");
    const auto mask_meta = is_tensor_ref(*mask) ? meta_of(g, *mask) : std::nullopt;
    if (!mask_meta || mask_meta->device != "cpu" ||
        (mask_meta->dtype != "float32" && mask_meta->dtype != "bool") ||
        mask_meta->sizes.size() > 4)
      return no("an attention mask that is not a float32 or bool CPU tensor of static shape");
    const std::vector<int64_t> full{qs[0], qs[1], qs[2], ks[2]};
    const std::vector<int64_t>& ms = mask_meta->sizes;
    for (size_t d = 0; d < ms.size(); ++d) {
      const int64_t want = full[4 - ms.size() + d];
      if (ms[d] != want && ms[d] != 1)
        return no("an attention mask that does not broadcast to the scores");
    }
  }
  matrix::AttentionParams p;
  p.batch = qs[0], p.heads = qs[1], p.q_len = qs[2], p.kv_len = ks[2], p.head_dim = qs[3],
  p.value_dim = vs[3];
  p.scale = float(scale);
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
  launch.alpha = float(scale);
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

}  // namespace inductor_cpp::inductor
