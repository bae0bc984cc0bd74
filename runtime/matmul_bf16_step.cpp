/// \file
/// MatmulBf16Step: a bf16 mm / addmm on the AMX GEMM, B kept packed (see the header).
#include "runtime/matmul_bf16_step.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <stdexcept>
#include <utility>

#include "runtime/cpu_pool.h"

namespace inductor_cpp::runtime {
namespace {

at::Tensor checked_bf16(const c10::IValue& v, const std::string& label, const char* what) {
  TORCH_CHECK(v.isTensor(), "inductor_cpp: ", label, ": ", what, " is not a tensor");
  at::Tensor t = v.toTensor();
  TORCH_CHECK(t.scalar_type() == at::kBFloat16 && t.device().is_cpu() && t.dim() == 2,
              "inductor_cpp: ", label, ": ", what, " must be a 2-D bfloat16 CPU tensor, got ",
              t.scalar_type(), " ", t.sizes(), " on ", t.device());
  return t;
}

/// A bf16 matrix operand as gemm_bf16 reads it: row-major or its transpose, else a copy.
struct Bf16Operand {
  const uint16_t* data = nullptr;
  int64_t ld = 0;
  bool trans = false;
  at::Tensor keep;
};

Bf16Operand bf16_operand(at::Tensor t) {
  Bf16Operand o;
  if (const auto layout = matrix::operand_layout(t.size(0), t.size(1), t.stride(0), t.stride(1))) {
    o.ld = layout->ld;
    o.trans = layout->trans;
  } else {
    t = t.contiguous();
    o.ld = t.size(1);
  }
  o.keep = t;
  o.data = reinterpret_cast<const uint16_t*>(t.data_ptr());
  return o;
}

matrix::EpilogueKind bias_kind(const std::string& kind) {
  if (kind == "bias_col") return matrix::EpilogueKind::BiasCol;
  if (kind == "bias_row") return matrix::EpilogueKind::BiasRow;
  if (kind == "residual") return matrix::EpilogueKind::AddResidual;
  throw std::runtime_error("bf16 matmul epilogue '" + kind + "': only addmm's bias is supported");
}

}  // namespace

MatmulBf16Step::MatmulBf16Step(const std::string& op, GemmCall call, std::string labeltext, bool frozen_weights)
    : call_(std::move(call)),
      packed_b_(std::make_shared<PackedWeightCache<matrix::PackedBBf16>>(!frozen_weights,
                                                                         /*shared=*/true)) {
  label = std::move(labeltext);
  if (op != "mm" && op != "addmm") throw std::runtime_error("bf16 matmul: mm or addmm, got " + op);
  if (call_.epilogue.size() > 1 || (op == "addmm") != (call_.epilogue.size() == 1))
    throw std::runtime_error("bf16 matmul: addmm's bias is the only epilogue op");
  for (const MatmulEpilogue& e : call_.epilogue) {
    bias_kind(e.kind);
    if (e.slot < 0) throw std::runtime_error("bf16 matmul: the bias has no data slot");
  }
  if (call_.alpha != 1.0f) throw std::runtime_error("bf16 matmul: alpha must be 1");
}

void MatmulBf16Step::run(RunContext& ctx) const {
  std::vector<c10::IValue>& slots = ctx.slots;
  const at::Tensor a = checked_bf16(slots[call_.a], label, "input");
  const at::Tensor b = checked_bf16(slots[call_.b], label, "mat2");
  std::vector<int64_t> out_sizes = call_.out.sizes;
  if (!out_sizes.empty() && out_sizes[0] == kRowsOfA) out_sizes[0] = a.size(0);
  at::Tensor c = empty_strided_pooled(out_sizes, call_.out.strides,
                                      at::TensorOptions().dtype(at::kBFloat16).device(c10::kCPU));
  TORCH_CHECK(
      c.dim() == 2 && a.size(0) == c.size(0) && b.size(1) == c.size(1) && a.size(1) == b.size(0),
      "inductor_cpp: ", label, ": operand sizes ", a.sizes(), " and ", b.sizes(), " do not give ",
      c.sizes());
  slots[call_.out.slot] = c;
  if (c.numel() == 0) return;
  const c10::IValue* bias = call_.epilogue.empty() ? nullptr : &slots[call_.epilogue[0].slot];
  const int threads = static_cast<int>(at::get_num_threads());
  // ATen's GEMM: more rows than ours is the faster on (dynamic rows; kBf16AmxMaxRows), or B
  // not (yet) cached (one use of a packed copy does not pay for the packing).
  std::shared_ptr<const matrix::PackedBBf16> packed;
  if (c.size(0) <= matrix::kBf16AmxMaxRows) {
    const Bf16Operand bo = bf16_operand(b);
    packed = packed_b_->lookup(b, threads, [&] {
      return matrix::pack_b_bf16(bo.data, b.size(0), b.size(1), bo.ld, bo.trans);
    });
  }
  if (!packed) {
    if (bias)
      at::addmm_out(c, bias->toTensor(), a, b);
    else
      at::mm_out(c, a, b);
    return;
  }
  const Bf16Operand ao = bf16_operand(a);
  matrix::GemmBf16Problem p;
  p.m = c.size(0), p.n = c.size(1), p.k = a.size(1);
  p.a = ao.data, p.lda = ao.ld, p.trans_a = ao.trans;
  p.c_bf16 = reinterpret_cast<uint16_t*>(c.data_ptr());
  p.ldc_bf16 = p.m == 1 ? p.n : c.stride(0);
  p.flush_denormals = matrix::caller_flushes_denormals();
  at::Tensor bias_f32;  // the bias in fp32, as the epilogue reads it
  if (bias) {
    const MatmulEpilogue& e = call_.epilogue[0];
    const matrix::EpilogueKind kind = bias_kind(e.kind);
    TORCH_CHECK(bias->isTensor(), "inductor_cpp: ", label, ": the bias is not a tensor");
    const at::Tensor t = bias->toTensor();
    bias_f32 = kind == matrix::EpilogueKind::AddResidual
                   ? t.to(at::kFloat).expand(c.sizes()).contiguous()
                   : t.to(at::kFloat).reshape({-1}).contiguous();
    TORCH_CHECK(bias_f32.numel() == (kind == matrix::EpilogueKind::BiasCol   ? p.n
                                     : kind == matrix::EpilogueKind::BiasRow ? p.m
                                                                             : p.m * p.n),
                "inductor_cpp: ", label, ": bias of sizes ", t.sizes(), " for an output of sizes ",
                c.sizes());
    matrix::EpilogueOp op;
    op.kind = kind;
    op.data = bias_f32.data_ptr<float>();
    op.ld = p.n;
    p.epilogue.push_back(op);
  }
  matrix::gemm_bf16_packed(p, *packed, threads);
}

}  // namespace inductor_cpp::runtime
