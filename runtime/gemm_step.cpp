/// \file
/// GemmStep: operand strides, epilogue data and the packed-B cache around the library's GEMM
/// (see the header).
#include "runtime/gemm_step.h"

#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#include "runtime/conv_step.h"  // checked_f32
#include "runtime/cpu_pool.h"
#include "runtime/tile_kernel_call.h"

namespace inductor_cpp::runtime {

namespace {

const at::TensorOptions kOptions = at::TensorOptions().dtype(at::kFloat).device(c10::kCPU);

/// True when the allocation's strides are those of a contiguous tensor (size-1 dims: any).
bool is_dense_row_major(const BufferAlloc& a) {
  if (a.sizes.size() != a.strides.size()) return false;
  int64_t expected = 1;
  for (size_t d = a.sizes.size(); d-- > 0;) {
    if (a.sizes[d] != 1 && a.strides[d] != expected) return false;
    expected *= a.sizes[d];
  }
  return true;
}

/// One matrix operand as the GEMM reads it: row-major (plain) or its transpose, with its
/// leading dimension; `keep` holds a contiguous copy when the strides were neither.
struct MatrixOperand {
  const float* data = nullptr;
  int64_t ld = 0;
  bool trans = false;
  at::Tensor keep;
};

/// `t`: a float32 tensor whose last two dims are the matrix (leading dims: the batch).
MatrixOperand matrix_operand(at::Tensor t) {
  const int64_t d = t.dim();
  const int64_t rows = t.size(d - 2), cols = t.size(d - 1);
  const int64_t rs = t.stride(d - 2), cs = t.stride(d - 1);
  MatrixOperand o;
  if (const auto layout = matrix::operand_layout(rows, cols, rs, cs)) {
    o.ld = layout->ld;
    o.trans = layout->trans;
  } else {
    t = t.contiguous();
    o.ld = cols;
  }
  for (int64_t i = 0; i + 2 < d; ++i) {
    if (t.stride(i) < 0) t = t.contiguous();
  }
  o.keep = t;
  o.data = t.data_ptr<float>();
  return o;
}

}  // namespace

GemmStep::GemmStep(std::string op, GemmCall call, std::vector<matrix::EpilogueKind> kinds, std::string label_text,
                   KernelFn tile_fn, bool frozen_weights)
    : batched_(op == "bmm"),
      call_(std::move(call)),
      kinds_(std::move(kinds)),
      tile_fn_(tile_fn),
      packed_b_(std::make_shared<PackedBCache>(!frozen_weights, /*shared=*/true)) {
  label = std::move(label_text);
  const BufferAlloc& out = call_.out;
  if (out.dtype != "float32" || out.device != "cpu")
    throw std::runtime_error("matmul output must be float32 (or bfloat16 for mm / addmm) on the CPU");
  const size_t rank = batched_ ? 3 : 2;
  // mm/addmm whose absorbed chain ends in a reshape (addmm → view → gelu) write the chain's
  // dense row-major tensor, of any rank: run hands the GEMM its 2-D view.
  const bool reshaped = !batched_ && out.sizes.size() != rank && is_dense_row_major(out);
  if (!reshaped && (out.sizes.size() != rank || out.strides.size() != rank ||
                    (out.strides[rank - 1] != 1 && out.sizes[rank - 1] != 1)))
    throw std::runtime_error("matmul output must be a row-major " + std::to_string(rank) + "-D tensor");
}

void GemmStep::run(RunContext& ctx) const {
  std::vector<c10::IValue>& slots = ctx.slots;
  const GemmCall& m = call_;
  const bool batched = batched_;
  at::Tensor a = checked_f32(slots[m.a], label, "input");
  at::Tensor b = checked_f32(slots[m.b], label, "mat2");
  const int64_t rank = batched ? 3 : 2;
  TORCH_CHECK(a.dim() == rank && b.dim() == rank, "inductor_cpp: ", label, ": operands of rank ", a.dim(), " and ",
              b.dim(), ", expected ", rank);
  // `stored` goes to the slot; the GEMM writes its 2-D view when the absorbed chain reshaped it.
  // Dynamic shapes: rows kRowsOfA are A's rows in this call.
  std::vector<int64_t> out_sizes = m.out.sizes;
  if (!batched && !out_sizes.empty() && out_sizes[0] == kRowsOfA) out_sizes[0] = a.size(0);
  const at::Tensor stored = empty_strided_pooled(out_sizes, m.out.strides, kOptions);
  const at::Tensor c = stored.dim() == rank ? stored : stored.view({a.size(0), b.size(1)});
  const int64_t batch = batched ? c.size(0) : 1;
  const int64_t rows = c.size(rank - 2), cols = c.size(rank - 1), inner = a.size(rank - 1);
  TORCH_CHECK(a.size(rank - 2) == rows && b.size(rank - 1) == cols && b.size(rank - 2) == inner &&
                  (!batched || (a.size(0) == batch && b.size(0) == batch)),
              "inductor_cpp: ", label, ": operand sizes ", a.sizes(), " and ", b.sizes(), " do not give ", c.sizes());
  const MatrixOperand ao = matrix_operand(a), bo = matrix_operand(b);
  matrix::GemmProblem p;
  p.m = rows;
  p.n = cols;
  p.k = inner;
  p.a = ao.data;
  p.lda = ao.ld;
  p.trans_a = ao.trans;
  p.b = bo.data;
  p.ldb = bo.ld;
  p.trans_b = bo.trans;
  p.c = c.data_ptr<float>();
  p.ldc = rows == 1 ? cols : c.stride(rank - 2);
  p.alpha = m.alpha;
  p.flush_denormals = matrix::caller_flushes_denormals();
  std::vector<at::Tensor> data;  // epilogue operands (kept alive through the call)
  TileKernelCall tile;  // a "kernel" op's binding
  for (size_t i = 0; i < m.epilogue.size(); ++i) {
    const MatmulEpilogue& e = m.epilogue[i];
    matrix::EpilogueOp op;
    op.kind = kinds_[i];
    op.a = e.a;
    op.b = e.b;
    if (op.kind == matrix::EpilogueKind::Tile) {
      p.epilogue.push_back(tile.bind(tile_fn_, e, m.out.slot, stored, slots, label));
      continue;
    }
    if (e.slot >= 0) {
      at::Tensor t = checked_f32(slots[e.slot], label, "epilogue operand");
      if (matrix::is_residual_op(op.kind)) {  // a tensor of the output's shape
        TORCH_CHECK(t.sizes() == stored.sizes(), "inductor_cpp: ", label, ": ", e.kind, " operand of sizes ", t.sizes(),
                    ", expected ", stored.sizes());
        if (stored.dim() != rank) t = t.reshape(c.sizes());
        // bmm: the library steps residual data by the output's batch stride.
        const bool plain = t.stride(rank - 1) == 1 && (rows == 1 || t.stride(rank - 2) >= cols) &&
                           (!batched || t.stride(0) == c.stride(0) || batch == 1);
        if (!plain) t = t.contiguous();
        if (batched && batch > 1 && t.stride(0) != c.stride(0)) {
          at::Tensor laid = empty_strided_pooled(c.sizes(), c.strides(), kOptions);
          laid.copy_(t);
          t = laid;
        }
        op.ld = rows == 1 ? cols : t.stride(rank - 2);
      } else {
        const int64_t length = e.kind == "bias_row" ? rows : cols;
        TORCH_CHECK(t.numel() == length, "inductor_cpp: ", label, ": bias of ", t.numel(), " elements, expected ",
                    length);
        t = t.reshape({length}).contiguous();
      }
      op.data = t.data_ptr<float>();
      data.push_back(t);
    }
    p.epilogue.push_back(op);
  }
  const int threads = static_cast<int>(at::get_num_threads());
  if (batched) {
    const int64_t stride_a = batch == 1 ? 0 : ao.keep.stride(0), stride_b = batch == 1 ? 0 : bo.keep.stride(0);
    matrix::bmm_f32(p, batch, stride_a, stride_b, c.stride(0), threads);
  } else if (matrix::in_place_beats_packed_copy(p, threads, !packed_b_->checks_contents())) {
    // One or few rows times Wᵀ, or a plain B under few row tiles, where reading B once in place
    // beats the packed copy and its fingerprint (gemm.h): no copy to keep or check. With
    // freezing a plain B is still cached: the packed copy is faster than reading it in place
    // (16 threads: mm 8 × 4096² 0.67 against 0.92 ms).
    matrix::gemm_f32(p, threads);
  } else if (auto packed = packed_b_->lookup(
                 b, threads, [&] { return matrix::pack_b_f32(bo.data, inner, cols, bo.ld, bo.trans); })) {
    matrix::gemm_f32_packed(p, *packed, threads);
  } else {
    matrix::gemm_f32(p, threads);
  }
  tile.check(label);
  slots[m.out.slot] = stored;
}

}  // namespace inductor_cpp::runtime
