/// \file fma_kernel_generator.cpp
/// \brief The float32 FMA micro-kernel generator (AVX-512 zmm + opmasks, or AVX2 ymm + vmaskmov).
///
/// Register plan: accumulators acc[i][v] for i < mr, v < nv (nv = ceil(nr / vector width)),
/// then nv B vectors, then one broadcast register for A. Only caller-saved general registers are
/// used, so nothing needs saving. The k loop is unrolled by kUnroll with baked displacements.
/// A tile over two B panels (desc.b_panel_cols) reads its right-hand vectors through a second
/// B pointer (r_b2 = b + args.b_panel_stride), advanced with the first.
#include "matrix/jit/fma_kernel_generator.h"

#include <xbyak/xbyak.h>

#include <cstddef>
#include <cstring>

namespace inductor_cpp::xbyak {
namespace {

using namespace Xbyak;
constexpr int kUnroll = 4;

class FmaKernel : public CodeGenerator {
 public:
  explicit FmaKernel(const MicroKernelDesc& d)
      : CodeGenerator(64 * 1024, DontSetProtectRWE),
        d_(d),
        avx512_(d.isa == Isa::Avx512),
        vw_(vector_floats(d.isa)),
        nv_((d.nr + vw_ - 1) / vw_),
        tail_(d.nr % vw_) {
    generate();
    ready();
    setProtectModeRE();  // write-xor-execute: no longer writable from here on
  }

 private:
  const MicroKernelDesc d_;
  const bool avx512_;
  const int vw_, nv_, tail_;

  const Reg64 r_args = rdi, r_a = rax, r_b = rdx, r_k = rcx, r_batch = r8, r_aptrs = r9,
              r_bptrs = r10, r_c = r11, r_tmp = rsi;
  // The second B panel's pointer: r_tmp is free from the batch loop's start to the epilogue.
  const Reg64 r_b2 = rsi;
  Label mask_table_;

  Xmm vreg(int i) const { return avx512_ ? Xmm(Zmm(i)) : Xmm(Ymm(i)); }
  Xmm acc(int i, int v) const { return vreg(i * nv_ + v); }
  Xmm bvec(int v) const { return vreg(d_.mr * nv_ + v); }
  Xmm bcast() const { return vreg(d_.mr * nv_ + nv_); }
  // After the k loop the B and broadcast registers are free: temporaries for the epilogue.
  Xmm tmp(int t) const { return vreg(d_.mr * nv_ + t); }
  Xmm avx2_mask() const { return Xmm(Ymm(15)); }
  bool masked(int v) const { return tail_ != 0 && v == nv_ - 1; }

  void load(const Xmm& dst, const Address& src, bool mask) {
    if (!mask) return vmovups(dst, src);
    if (avx512_) return vmovups(dst | k1 | T_z, src);
    vmaskmovps(dst, avx2_mask(), src);
  }
  void store(const Address& dst, const Xmm& src, bool mask) {
    if (!mask) return vmovups(dst, src);
    if (avx512_) return vmovups(dst | k1, src);
    vmaskmovps(dst, avx2_mask(), src);
  }
  void broadcast_constant(const Xmm& dst, float value) {
    uint32_t bits;
    std::memcpy(&bits, &value, 4);
    mov(eax, bits);
    vmovd(Xmm(dst.getIdx()), eax);
    vbroadcastss(dst, Xmm(dst.getIdx()));
  }
  template <class Op>
  void for_each_acc(Op op) {
    for (int i = 0; i < d_.mr; ++i)
      for (int v = 0; v < nv_; ++v) op(i, v);
  }

  void set_tail_mask() {
    if (tail_ == 0) return;
    if (avx512_) {
      mov(eax, (1u << tail_) - 1);
      kmovw(k1, eax);
      return;
    }
    lea(r_tmp, ptr[rip + mask_table_]);
    vmovups(avx2_mask(), ptr[r_tmp + (8 - tail_) * 4]);
  }

  /// Where vector v of B row u (of the unrolled group) is: its panel's pointer and offset.
  Address b_vector(int u, int v) const {
    const int64_t row = int64_t(u) * d_.ldb * 4, col = int64_t(v) * vw_;
    if (d_.b_panel_cols && col >= d_.b_panel_cols)
      return ptr[r_b2 + row + (col - d_.b_panel_cols) * 4];
    return ptr[r_b + row + col * 4];
  }

  void advance_b(int64_t bytes) {
    add(r_b, bytes);
    if (d_.b_panel_cols) add(r_b2, bytes);
  }

  void k_step(int u) {
    const bool plain = d_.b_layout == BLayout::Plain;
    for (int v = 0; v < nv_; ++v) load(bvec(v), b_vector(u, v), plain && masked(v));
    if (plain && d_.b_prefetch)  // one per 64-byte line of the row segment
      for (int64_t byte = 0; byte < int64_t(d_.nr) * 4; byte += 64)
        prefetcht0(ptr[r_b + int64_t(u) * d_.ldb * 4 + byte + d_.b_prefetch]);
    for (int i = 0; i < d_.mr; ++i) {
      vbroadcastss(bcast(), ptr[r_a + (i * d_.a_row_stride + u * d_.a_k_stride) * 4]);
      for (int v = 0; v < nv_; ++v) vfmadd231ps(acc(i, v), bvec(v), bcast());
    }
  }

  void k_loop() {
    Label main_loop, rem_loop, done;
    if (d_.k > 0)
      mov(r_k, d_.k);
    else
      mov(r_k, ptr[r_args + offsetof(MicroKernelArgs, k)]);
    L(main_loop);
    cmp(r_k, kUnroll);
    jl(rem_loop, T_NEAR);
    for (int u = 0; u < kUnroll; ++u) k_step(u);
    add(r_a, kUnroll * d_.a_k_stride * 4);
    advance_b(kUnroll * d_.ldb * 4);
    sub(r_k, kUnroll);
    jmp(main_loop, T_NEAR);
    L(rem_loop);
    test(r_k, r_k);
    jz(done, T_NEAR);
    k_step(0);
    add(r_a, d_.a_k_stride * 4);
    advance_b(d_.ldb * 4);
    dec(r_k);
    jmp(rem_loop, T_NEAR);
    L(done);
  }

  void load_epilogue_pointer(size_t index) {
    mov(r_tmp, ptr[r_args + offsetof(MicroKernelArgs, epilogue_data)]);
    mov(r_tmp, ptr[r_tmp + index * 8]);
  }

  void epilogue_op(const KernelEpilogueOp& op, size_t index) {
    const Xmm t0 = tmp(0), t1 = tmp(1);
    switch (op.kind) {
      case KernelEpilogueKind::BiasRow:
        load_epilogue_pointer(index);
        for (int i = 0; i < d_.mr; ++i) {
          vbroadcastss(t0, ptr[r_tmp + i * 4]);
          for (int v = 0; v < nv_; ++v) vaddps(acc(i, v), acc(i, v), t0);
        }
        return;
      case KernelEpilogueKind::BiasCol:
        load_epilogue_pointer(index);
        for (int v = 0; v < nv_; ++v) {
          load(t0, ptr[r_tmp + v * vw_ * 4], masked(v));
          for (int i = 0; i < d_.mr; ++i) vaddps(acc(i, v), acc(i, v), t0);
        }
        return;
      case KernelEpilogueKind::ScaleCol:
        load_epilogue_pointer(index);
        for (int v = 0; v < nv_; ++v) {
          load(t0, ptr[r_tmp + v * vw_ * 4], masked(v));
          for (int i = 0; i < d_.mr; ++i) vmulps(acc(i, v), acc(i, v), t0);
        }
        return;
      case KernelEpilogueKind::Scale:
        broadcast_constant(t0, op.a);
        for_each_acc([&](int i, int v) { vmulps(acc(i, v), acc(i, v), t0); });
        return;
      // vmaxps / vminps return their second source when either is NaN: the accumulator goes
      // second so that NaN stays NaN, as in eager.
      case KernelEpilogueKind::Relu:
        vxorps(t0, t0, t0);
        for_each_acc([&](int i, int v) { vmaxps(acc(i, v), t0, acc(i, v)); });
        return;
      case KernelEpilogueKind::Clamp:
        broadcast_constant(t0, op.a);
        broadcast_constant(t1, op.b);
        for_each_acc([&](int i, int v) {
          vmaxps(acc(i, v), t0, acc(i, v));
          vminps(acc(i, v), t1, acc(i, v));
        });
        return;
      case KernelEpilogueKind::AddResidual:
      case KernelEpilogueKind::MulResidual:
        load_epilogue_pointer(index);
        for_each_acc([&](int i, int v) {
          load(t0, ptr[r_tmp + (i * op.ld + v * vw_) * 4], masked(v));
          if (op.kind == KernelEpilogueKind::AddResidual)
            vaddps(acc(i, v), acc(i, v), t0);
          else
            vmulps(acc(i, v), acc(i, v), t0);
        });
        return;
    }
  }

  /// ScaleCol (op `index`) directly followed by BiasCol (op `index + 1`): acc = acc·s + t with
  /// one rounding (vfmadd213ps), as eager's batch norm computes x·alpha + beta.
  void scale_bias_col(size_t index) {
    const Xmm s = tmp(0), t = tmp(1);
    const Reg64 r_shift = r_a;  // the A pointer is dead after the k loop
    load_epilogue_pointer(index + 1);
    mov(r_shift, r_tmp);
    load_epilogue_pointer(index);
    for (int v = 0; v < nv_; ++v) {
      load(s, ptr[r_tmp + v * vw_ * 4], masked(v));
      load(t, ptr[r_shift + v * vw_ * 4], masked(v));
      for (int i = 0; i < d_.mr; ++i) vfmadd213ps(acc(i, v), s, t);
    }
  }

  void finish() {
    if (d_.alpha != 1.0f) {
      broadcast_constant(tmp(0), d_.alpha);
      for_each_acc([&](int i, int v) { vmulps(acc(i, v), acc(i, v), tmp(0)); });
    }
    if (d_.accumulate) {
      for_each_acc([&](int i, int v) {
        load(tmp(0), ptr[r_c + (i * d_.ldc + v * vw_) * 4], masked(v));
        vaddps(acc(i, v), acc(i, v), tmp(0));
      });
    }
    for (size_t e = 0; e < d_.epilogue.size(); ++e) {
      if (d_.epilogue[e].kind == KernelEpilogueKind::ScaleCol && e + 1 < d_.epilogue.size() &&
          d_.epilogue[e + 1].kind == KernelEpilogueKind::BiasCol) {
        scale_bias_col(e++);
        continue;
      }
      epilogue_op(d_.epilogue[e], e);
    }
    for_each_acc(
        [&](int i, int v) { store(ptr[r_c + (i * d_.ldc + v * vw_) * 4], acc(i, v), masked(v)); });
  }

  // The C tile is touched only after the whole k loop; start bringing its lines in now (it is
  // usually in L2/L3 between K blocks), so the final loads and stores do not stall.
  void prefetch_c() {
    for (int i = 0; i < d_.mr; ++i)
      for (int64_t byte = 0; byte < int64_t(d_.nr) * 4; byte += 64) {
        if (d_.accumulate)
          prefetcht0(ptr[r_c + i * d_.ldc * 4 + byte]);
        else
          prefetchw(ptr[r_c + i * d_.ldc * 4 + byte]);
      }
  }

  // Residual tiles are read only in the epilogue, after the k loop: their lines (usually not
  // in cache: another step wrote them) are requested now, so the epilogue does not stall.
  void prefetch_residuals() {
    for (size_t e = 0; e < d_.epilogue.size(); ++e) {
      if (d_.epilogue[e].kind != KernelEpilogueKind::AddResidual &&
          d_.epilogue[e].kind != KernelEpilogueKind::MulResidual)
        continue;
      load_epilogue_pointer(e);
      for (int i = 0; i < d_.mr; ++i)
        for (int64_t byte = 0; byte < int64_t(d_.nr) * 4; byte += 64)
          prefetcht0(ptr[r_tmp + i * d_.epilogue[e].ld * 4 + byte]);
    }
  }

  void generate() {
    Label batch_loop, batch_done;
    mov(r_aptrs, ptr[r_args + offsetof(MicroKernelArgs, a)]);
    mov(r_bptrs, ptr[r_args + offsetof(MicroKernelArgs, b)]);
    mov(r_batch, ptr[r_args + offsetof(MicroKernelArgs, batch)]);
    mov(r_c, ptr[r_args + offsetof(MicroKernelArgs, c)]);
    for_each_acc([&](int i, int v) { vxorps(acc(i, v), acc(i, v), acc(i, v)); });
    prefetch_c();
    prefetch_residuals();
    set_tail_mask();
    test(r_batch, r_batch);
    jle(batch_done, T_NEAR);
    L(batch_loop);
    mov(r_a, ptr[r_aptrs]);
    mov(r_b, ptr[r_bptrs]);
    if (d_.b_panel_cols) {
      mov(r_b2, ptr[r_args + offsetof(MicroKernelArgs, b_panel_stride)]);
      add(r_b2, r_b);
    }
    add(r_aptrs, 8);
    add(r_bptrs, 8);
    k_loop();
    dec(r_batch);
    jnz(batch_loop, T_NEAR);
    L(batch_done);
    finish();
    vzeroupper();
    ret();
    if (!avx512_) {
      align(32);
      L(mask_table_);
      for (int i = 0; i < 8; ++i) dd(0xffffffffu);
      for (int i = 0; i < 8; ++i) dd(0);
    }
  }
};

}  // namespace

std::unique_ptr<CodeGenerator> generate_fma_kernel(const MicroKernelDesc& desc) {
  return std::make_unique<FmaKernel>(desc);
}

}  // namespace inductor_cpp::xbyak
