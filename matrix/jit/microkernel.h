/// \file microkernel.h
/// \brief Descriptor → JIT-compiled matrix micro-kernel (xbyak), cached by descriptor.
///
/// A micro-kernel computes one register tile of C (mr rows × nr columns) over a batch-reduced
/// list of (A block, B block) pairs:
///
///     acc = sum_{t < batch} A_t[mr × K] · B_t[K × nr]
///     C   = epilogue(alpha · acc [+ C])
///
/// A is read in place with baked strides (row stride and k stride, so a transposed A is just other
/// strides); B is "plain" (row k at b + k·ldb, any ldb) or "packed" (the same, ldb = panel width,
/// zero-padded columns, so loads need no mask). Column tails (nr not a multiple of the vector
/// width) are masked with AVX-512 opmasks; row tails are separate kernels (mr is part of the
/// descriptor). The AMX variant (bf16 in, fp32 out) is in amx_kernel.h.
///
/// Code memory is write-xor-execute: written while generating, then flipped to read+execute.
/// The cache (get_microkernel) is the one process-wide mutable state of this library; it is
/// protected by a mutex and kernels are never freed (a descriptor's code lives as long as the
/// process), so returned function pointers stay valid.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace inductor_cpp::xbyak {

enum class Isa : uint8_t { Avx2, Avx512 };
enum class BLayout : uint8_t { Plain, Packed };

/// Epilogue ops that the JIT applies to the accumulators in registers, in list order.
/// (Transcendental ops — GELU, SiLU — are applied by the driver in a vectorized C++ pass over the
/// tile right after the kernel, while it is in L1; see matrix/epilogue.h.)
enum class KernelEpilogueKind : uint8_t {
  BiasRow,     ///< c[i][j] += data[i]            (one value per output row)
  BiasCol,     ///< c[i][j] += data[j]            (one value per output column)
  Scale,       ///< c *= a
  ScaleCol,    ///< c[i][j] *= data[j]            (one factor per output column); followed
               ///< directly by a BiasCol, the pair is one FMA: c·data[j] + bias[j]
  Relu,        ///< c = max(c, 0)
  Clamp,       ///< c = min(max(c, a), b)
  AddResidual,  ///< c[i][j] += data[i·ld + j]
  MulResidual   ///< c[i][j] *= data[i·ld + j]
};

struct KernelEpilogueOp {
  KernelEpilogueKind kind;
  float a = 0, b = 0;  ///< Scale factor / clamp bounds (baked into the code).
  int64_t ld = 0;      ///< Residual leading dimension in elements (baked).
  bool operator==(const KernelEpilogueOp& o) const;
};

/// Everything that shapes the generated code. Strides are in elements (float32).
struct MicroKernelDesc {
  Isa isa = Isa::Avx512;
  int mr = 6;                ///< Rows of the C tile (1..max_rows(isa, nr)).
  int nr = 64;               ///< Columns of the C tile; a tail is masked.
  int64_t k = 0;             ///< Reduction length per batch element; 0 = runtime (args.k).
  int64_t a_row_stride = 0;  ///< Distance between A rows (lda, or 1 when A is transposed).
  int64_t a_k_stride = 1;    ///< Distance between consecutive k of one A row.
  int64_t ldb = 64;          ///< Distance between consecutive k rows of B.
  int64_t ldc = 0;           ///< Distance between C rows.
  BLayout b_layout = BLayout::Packed;
  /// Packed B only: 0 when the tile's nr columns lie in one panel (row k at b + k·ldb); else the
  /// tile spans two panels of this many columns (a multiple of the vector width, ≥ nr / 2):
  /// columns [0, b_panel_cols) from b, the rest from b + args.b_panel_stride bytes, both with
  /// row stride ldb. A 6×64 tile then runs on the 32-column panels that 14×32 tiles use.
  int b_panel_cols = 0;
  /// Plain B only: each k step also prefetches (into L1) its B row segment this many bytes
  /// further along the row, where the driver's next kernels will read (0: no prefetch). B read
  /// in place lies in rows ldb apart, one or two lines per row per kernel, which the hardware
  /// prefetchers follow poorly (matrix/gemm_config.h "Streamed plain B").
  int64_t b_prefetch = 0;
  bool accumulate = false;  ///< C = alpha·acc + C instead of C = alpha·acc.
  float alpha = 1.0f;
  std::vector<KernelEpilogueOp> epilogue;

  bool operator==(const MicroKernelDesc& o) const;
  uint64_t hash() const;
  std::string to_string() const;
};

/// Runtime arguments, passed by pointer (the kernel's only argument, SysV ABI).
struct MicroKernelArgs {
  const float* const* a = nullptr;              ///< batch pointers to the A blocks (row 0, k 0).
  const float* const* b = nullptr;              ///< batch pointers to the B blocks (k 0, column 0).
  int64_t batch = 1;                            ///< Number of (A, B) pairs reduced into the tile.
  float* c = nullptr;                           ///< C tile (row 0, column 0).
  int64_t k = 0;                                ///< Used when desc.k == 0.
  const float* const* epilogue_data = nullptr;  ///< One pointer per epilogue op, tile-offset.
  int64_t b_panel_stride = 0;  ///< Bytes from B's first panel to its second (desc.b_panel_cols).
};

using MicroKernelFn = void (*)(const MicroKernelArgs*);

/// Largest mr supported for a tile of nr columns (accumulators + B vectors + 1 broadcast ≤ 32
/// registers for AVX-512, 16 for AVX2).
int max_rows(Isa isa, int nr);
/// Vector width in floats.
inline int vector_floats(Isa isa) {
  return isa == Isa::Avx512 ? 16 : 8;
}

/// Returns the cached kernel for desc, generating it on first use. Thread-safe.
/// Throws std::invalid_argument for an unsupported descriptor (bad tile, ISA not available).
MicroKernelFn get_microkernel(const MicroKernelDesc& desc);

/// Number of kernels generated so far (for tests and diagnostics).
size_t microkernel_cache_size();

}  // namespace inductor_cpp::xbyak
