/// \file
/// Library calls for CPU flash attention and its backward (library_calls.h). Float32
/// [batch, heads, length, dim] tensors, no dropout, a positive literal scale, an optional
/// float32 or bool mask broadcastable to the scores (not with is_causal), and at most
/// matrix::kMaxFasterKeys keys; symbolic sizes are taken too (the runtime checks per call).
#include <cmath>

#include "inductor/lower/graph_meta.h"
#include "inductor/lower/library_calls.h"
#include "matrix/matrix.h"

namespace inductor_cpp::inductor::library_calls {

using ir::Arg;
using namespace graph_meta;

namespace {

/// A float32 CPU tensor of `rank` dims whose sizes may be symbolic; its static meta when they
/// are not.
struct Operand {
  const ir::TensorMeta* meta = nullptr;
  std::optional<StaticMeta> fixed;
};

std::optional<Operand> operand_of(const ir::Graph& g, const Arg& a, size_t rank) {
  if (!is_tensor_ref(a)) return std::nullopt;
  const ir::TensorMeta* m = tensor_meta_of(g, a);
  if (!m || m->dtype != "float32" || m->device != "cpu" || m->sizes.size() != rank)
    return std::nullopt;
  Operand o{m, meta_of(g, a)};
  if (o.fixed && !is_f32_cpu(o.fixed, rank)) return std::nullopt;  // a zero size
  return o;
}

/// The operands' sizes when every one is static; else nothing (symbolic shapes).
std::optional<std::vector<std::vector<int64_t>>> static_sizes(const std::vector<Operand>& ops) {
  std::vector<std::vector<int64_t>> sizes;
  for (const Operand& o : ops) {
    if (!o.fixed) return std::nullopt;
    sizes.push_back(o.fixed->sizes);
  }
  return sizes;
}

/// The op's scale (argument `pos` or "scale"; default 1 / sqrt(head_dim), which must then be
/// static), or nothing with the reason in `why` (not a literal, not positive).
std::optional<double> scale_of(const ir::Node& node, size_t pos, const ir::Dim& head_dim,
                               std::string& why) {
  const Arg* given = find_arg(node, pos, "scale");
  if (given && given->kind != Arg::Kind::None) {
    const auto literal = number(*given);
    if (!literal) return why = "the scale is not a literal", std::nullopt;
    if (!(*literal > 0)) return why = "a scale that is not positive", std::nullopt;
    return *literal;
  }
  if (!std::holds_alternative<int64_t>(head_dim))
    return why = "a symbolic head dimension", std::nullopt;
  return 1.0 / std::sqrt(double(std::get<int64_t>(head_dim)));
}

/// Whether `mask` is a float32 or bool CPU tensor of at most 4 dims, broadcastable to [batch,
/// heads, q_len, kv_len] (checked here when the shapes are static, by the runtime when not),
/// and not combined with is_causal; else false with the reason in `why`.
bool mask_fits(const ir::Graph& g, const Arg& mask, bool causal,
               const std::optional<std::vector<int64_t>>& scores, std::string& why) {
  if (causal) return why = "a mask with is_causal", false;
  const ir::TensorMeta* m = is_tensor_ref(mask) ? tensor_meta_of(g, mask) : nullptr;
  if (!m || m->device != "cpu" || (m->dtype != "float32" && m->dtype != "bool") ||
      m->sizes.size() > 4)
    return why = "an attention mask that is not a float32 or bool CPU tensor of at most 4 dims",
           false;
  if (!scores) return true;
  const auto fixed = meta_of(g, mask);
  if (!fixed) return why = "an attention mask of symbolic shape with static scores", false;
  const std::vector<int64_t>& ms = fixed->sizes;
  for (size_t d = 0; d < ms.size(); ++d) {
    const int64_t want = (*scores)[4 - ms.size() + d];
    if (ms[d] != want && ms[d] != 1)
      return why = "an attention mask that does not broadcast to the scores", false;
  }
  return true;
}

/// Size checks of static q, k, v shapes; the reason in `why` when they fail.
bool shapes_fit(const std::vector<int64_t>& qs, const std::vector<int64_t>& ks,
                const std::vector<int64_t>& vs, std::string& why) {
  if (ks[0] != qs[0] || vs[0] != qs[0] || ks[1] != qs[1] || vs[1] != qs[1] || ks[3] != qs[3] ||
      vs[2] != ks[2])
    return why = "shapes do not match", false;
  matrix::AttentionParams p;
  p.batch = qs[0], p.heads = qs[1], p.q_len = qs[2], p.kv_len = ks[2], p.head_dim = qs[3],
  p.value_dim = vs[3];
  // One key block: 1.1-1.8x ATen's flash attention forward and 1.1-1.9x its backward (dev Xeon,
  // 2 threads, 128-512 keys); with more, ATen's is as fast or faster (768 keys 0.93-0.96x, 1024
  // keys 0.88-1.06x), so longer sequences stay with it.
  if (p.kv_len > matrix::kMaxFasterKeys)
    return why = "more than " + std::to_string(matrix::kMaxFasterKeys) +
                 " keys (ATen's kernel is as fast there)",
           false;
  if (!matrix::attention_supported(p))
    return why =
               "not supported by our attention (it needs AVX-512, sizes > 0 and head "
               "dimensions up to " +
               std::to_string(matrix::kMaxHeadDim) + ")",
           false;
  return true;
}

/// The op's flags: dropout_p, is_causal, attn_mask and scale at positions first .. first + 3.
struct Flags {
  const Arg* mask = nullptr;  ///< null: none
  bool causal = false;
  double scale = 1;
};

/// The flags of `node` (positions as above; the default scale from q's head dimension), or
/// nothing with the reason in `why`: dropout, a causal flag or scale that is not a literal, a
/// scale that is not positive.
std::optional<Flags> flags_of(const ir::Node& node, size_t first, const ir::Dim& head_dim,
                              std::string& why) {
  const auto dropout = number_or(node, first, "dropout_p", 0);
  if (!dropout || *dropout != 0) return why = "dropout", std::nullopt;
  Flags f;
  const Arg* causal = find_arg(node, first + 1, "is_causal");
  if (causal && causal->kind != Arg::Kind::Bool)
    return why = "is_causal is not a literal", std::nullopt;
  f.causal = causal && causal->bool_value;
  const Arg* mask = find_arg(node, first + 2, "attn_mask");
  if (mask && mask->kind != Arg::Kind::None) f.mask = mask;
  const auto scale = scale_of(node, first + 3, head_dim, why);
  if (!scale) return std::nullopt;
  f.scale = *scale;
  return f;
}

/// The call `op` on `operands` (the mask, or "", appended) with the flags as attributes.
ir::LibraryCall call_of(ir::LibraryOp op, std::vector<std::string> operands, const Flags& flags) {
  ir::LibraryCall call;
  call.op = op;
  call.operands = std::move(operands);
  call.operands.push_back(flags.mask ? operand_name(*flags.mask) : "");
  call.attrs["scale"] = flags.scale;
  call.attrs["causal"] = flags.causal ? 1 : 0;
  return call;
}

}  // namespace

std::optional<LibraryCallMatch> attention_call(const ir::Graph& g, int32_t n, std::string& why_not) {
  const ir::Node& node = g.nodes.at(static_cast<size_t>(n));
  if (op_name(node.op) != "aten::_scaled_dot_product_flash_attention_for_cpu") return std::nullopt;
  const auto no = [&why_not](const std::string& why) { return no_library_call(why_not, why); };
  std::string why;
  if (node.args.size() < 3 || node.outputs.size() != 2) return no("unexpected arguments");
  const Arg &q = node.args[0], &k = node.args[1], &v = node.args[2];
  const auto qo = operand_of(g, q, 4), ko = operand_of(g, k, 4), vo = operand_of(g, v, 4);
  const auto out = operand_of(g, Arg::value(n, 0), 4);
  // The logsumexp, when read (a training forward saves it for the backward): ours writes it
  // too, m + log l per row, what the backward recomputes the probabilities from.
  const bool lse_used = is_output_read(g, n, 1);
  const auto lse = lse_used ? operand_of(g, Arg::value(n, 1), 3) : std::nullopt;
  if (!qo || !ko || !vo || !out || (lse_used && !lse))
    return no("not float32 CPU [batch, heads, length, dim] tensors");
  const auto flags = flags_of(node, 3, qo->meta->sizes[3], why);
  if (!flags) return no(why);
  std::vector<Operand> all{*qo, *ko, *vo, *out};
  if (lse_used) all.push_back(*lse);
  const auto sizes = static_sizes(all);
  std::optional<std::vector<int64_t>> scores;
  if (sizes) {
    const std::vector<int64_t>&qs = (*sizes)[0], &ks = (*sizes)[1], &vs = (*sizes)[2];
    if (!shapes_fit(qs, ks, vs, why)) return no(why);
    if ((*sizes)[3] != std::vector<int64_t>{qs[0], qs[1], qs[2], vs[3]} ||
        (lse_used && (*sizes)[4] != std::vector<int64_t>{qs[0], qs[1], qs[2]}))
      return no("shapes do not match");
    if (out->fixed->strides[3] != 1 && qs[3] != 1)
      return no("the output's last dimension is not contiguous");
    scores = std::vector<int64_t>{qs[0], qs[1], qs[2], ks[2]};
  }
  if (flags->mask && !mask_fits(g, *flags->mask, flags->causal, scores, why)) return no(why);

  LibraryCallMatch match;
  match.call = call_of(ir::LibraryOp::attention, {operand_name(q), operand_name(k), operand_name(v)},
                       *flags);
  match.computed = {true, lse_used};
  return match;
}

std::optional<LibraryCallMatch> attention_backward_call(const ir::Graph& g, int32_t n,
                                                        std::string& why_not) {
  const ir::Node& node = g.nodes.at(static_cast<size_t>(n));
  if (op_name(node.op) != "aten::_scaled_dot_product_flash_attention_for_cpu_backward")
    return std::nullopt;
  const auto no = [&why_not](const std::string& why) { return no_library_call(why_not, why); };
  std::string why;
  if (node.args.size() < 6 || node.outputs.size() != 3) return no("unexpected arguments");
  // (grad_out, query, key, value, out, logsumexp, dropout_p, is_causal, *, attn_mask, scale)
  const Arg &grad_out = node.args[0], &q = node.args[1], &k = node.args[2], &v = node.args[3],
            &out = node.args[4], &lse = node.args[5];
  std::vector<Operand> all;  // q, k, v, out, grad_out, lse, then the three gradients
  for (const Arg* a : {&q, &k, &v, &out, &grad_out, &lse})
    if (auto o = operand_of(g, *a, a == &lse ? 3 : 4)) all.push_back(*o);
  for (int32_t i = 0; i < 3; ++i)
    if (auto o = operand_of(g, Arg::value(n, i), 4)) all.push_back(*o);
  if (all.size() != 9) return no("not float32 CPU [batch, heads, length, dim] tensors");
  const auto flags = flags_of(node, 6, all[0].meta->sizes[3], why);
  if (!flags) return no(why);
  const auto sizes = static_sizes(all);
  std::optional<std::vector<int64_t>> scores;
  if (sizes) {
    const std::vector<int64_t>&qs = (*sizes)[0], &ks = (*sizes)[1], &vs = (*sizes)[2];
    if (!shapes_fit(qs, ks, vs, why)) return no(why);
    const std::vector<int64_t> out_sizes{qs[0], qs[1], qs[2], vs[3]};
    if ((*sizes)[3] != out_sizes || (*sizes)[4] != out_sizes ||
        (*sizes)[5] != std::vector<int64_t>{qs[0], qs[1], qs[2]} || (*sizes)[6] != qs ||
        (*sizes)[7] != ks || (*sizes)[8] != vs)
      return no("shapes do not match");
    for (size_t i = 6; i < 9; ++i)
      if (all[i].fixed->strides[3] != 1 && all[i].fixed->sizes[3] != 1)
        return no("a gradient's last dimension is not contiguous");
    scores = std::vector<int64_t>{qs[0], qs[1], qs[2], ks[2]};
  }
  if (flags->mask && !mask_fits(g, *flags->mask, flags->causal, scores, why)) return no(why);

  LibraryCallMatch match;
  match.call = call_of(ir::LibraryOp::attention_backward,
                       {operand_name(grad_out), operand_name(q), operand_name(k), operand_name(v),
                        operand_name(out), operand_name(lse)},
                       *flags);
  match.computed = {true, true, true};
  return match;
}

}  // namespace inductor_cpp::inductor::library_calls
