/// \file amx_kernel.h
/// \brief JIT AMX micro-kernel: bfloat16 A·B accumulated into a 32×32 float32 C block.
///
/// Tiles: tmm0–3 hold C as 2×2 blocks of 16×16 fp32, tmm4–5 two 16-row slices of A (32 k each),
/// tmm6–7 two 16-column VNNI groups of B. Per 32-k step: 4 tile loads, 4 TDPBF16PS.
///   A: row-major bf16, 32 rows, k contiguous, row stride lda (baked); K a multiple of 32.
///   B: one 32-column "panel" in VNNI form: two groups of 16 columns, each (K/2) rows of
///      16 × (k even, k odd) bf16 pairs = 64 bytes, the second group b_group_stride bytes after.
///   C: 32×32 fp32 at stride ldc (baked); overwritten, or added to when accumulate.
/// Callers must first make sure cpu_features().amx_usable, call amx_configure_tiles() on the
/// calling thread before the first kernel (LDTILECFG costs too much to repeat per call), and
/// amx_release_tiles() when the thread is done.
/// Kernels are cached (mutex-protected, never freed) like get_microkernel's.
#pragma once

#include <cstdint>

namespace inductor_cpp::xbyak {

struct AmxKernelArgs {
  const uint16_t* a = nullptr;
  const uint16_t* b = nullptr;
  int64_t b_group_stride = 0;  ///< Bytes from the first 16-column group of B to the second.
  float* c = nullptr;
  int64_t k = 0;  ///< Multiple of 32.
};

using AmxKernelFn = void (*)(const AmxKernelArgs*);

/// lda in bf16 elements, ldc in floats. Throws std::invalid_argument without usable AMX.
AmxKernelFn get_amx_bf16_kernel(int64_t lda, int64_t ldc, bool accumulate);

/// LDTILECFG of the kernels' tile configuration on the calling thread.
void amx_configure_tiles();

/// TILERELEASE on the calling thread (no-op without AMX).
void amx_release_tiles();

}  // namespace inductor_cpp::xbyak
