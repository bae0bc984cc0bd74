/// \file gemm_bf16.h
/// \brief bfloat16-input GEMM with float32 accumulation and float32 output.
///
///     C (fp32) = epilogue(op(A) · op(B) [+ C])        A, B bfloat16 (uint16_t storage)
///
/// With usable AMX (CPUID AMX-BF16 and the XTILEDATA permission granted) the products run on
/// TDPBF16PS tiles: each bf16×bf16 product is exact in fp32 and sums are fp32 (the hardware's
/// internal accumulation order differs from a sequential sum; errors are those of an fp32
/// dot-product). Without AMX the inputs are up-converted to fp32 (exact) and run through
/// gemm_f32, giving the same numerics up to summation order. Same threading, epilogue and
/// denormal rules as gemm.h.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "matrix/gemm.h"

namespace inductor_cpp::matrix {

struct GemmBf16Problem {
  int64_t m = 0, n = 0, k = 0;
  const uint16_t* a = nullptr;  ///< m×k (k×m when trans_a), bf16.
  int64_t lda = 0;
  bool trans_a = false;
  const uint16_t* b = nullptr;  ///< k×n (n×k when trans_b), bf16.
  int64_t ldb = 0;
  bool trans_b = false;
  float* c = nullptr;  ///< m×n, fp32; may be null when c_bf16 is set (and not accumulate).
  int64_t ldc = 0;
  bool accumulate = false;
  std::vector<EpilogueOp> epilogue;
  bool flush_denormals = false;
  bool allow_amx = true;  ///< false forces the fp32 fallback (tests, numerics comparisons).
  /// Optional cast stage: also write the final C (after the epilogue) rounded to bf16 here
  /// (m×n, leading dimension ldc_bf16; round to nearest even). C itself is still written when
  /// given; without it only the bf16 result is (each tile finished and cast while in cache).
  uint16_t* c_bf16 = nullptr;
  int64_t ldc_bf16 = 0;
};

/// True when gemm_bf16 runs on AMX tiles on this machine.
bool gemm_bf16_uses_amx();

/// Compiled bf16 matmuls with a packed weight run on gemm_bf16 up to this many rows of C, and
/// on ATen's (oneDNN's) bf16 GEMM above (runtime/matmul_bf16_step.h). Dev Xeon, 2 threads,
/// B pre-packed, against at::mm, per-round pairs: 128 rows 1.5-1.7x, 256 rows 1.04-1.14x,
/// 512-1024 rows 0.94-1.08x while the host was busy; while it was quiet (oneDNN twice as
/// fast) 32 rows 2.0-2.6x, 128 rows 1.1-1.3x, 256 rows 0.88-1.05x, 1024 rows 0.8-1.1x. The 16-
/// thread H200 host: a frozen 256 × 768 × 3072 Linear 1.34x eager
/// (docs/decisions/019-bf16-on-amx-only-frozen-and-up-to-256-rows.md).
inline constexpr int64_t kBf16AmxMaxRows = 256;

void gemm_bf16(const GemmBf16Problem& p, int num_threads);

/// op(B) packed once (constant weights): VNNI panels for AMX, or fp32 panels for the fallback,
/// whichever gemm_bf16 would use (allow_amx as in GemmBf16Problem). Build with pack_b_bf16; the
/// fields are the driver's. Read-only once packed: one object may serve concurrent calls.
struct PackedBBf16 {
  int64_t k = 0, n = 0;
  bool amx = false;
  std::vector<uint16_t> vnni;          ///< AMX: 32-column panels, two VNNI groups each.
  std::shared_ptr<const PackedB> f32;  ///< Fallback: the up-converted B, packed for gemm_f32.
};

PackedBBf16 pack_b_bf16(const uint16_t* b, int64_t k, int64_t n, int64_t ldb, bool trans_b,
                        bool allow_amx = true);

/// gemm_bf16 with a pre-packed B (p.b, p.ldb, p.trans_b and p.allow_amx are ignored).
void gemm_bf16_packed(const GemmBf16Problem& p, const PackedBBf16& packed, int num_threads);

/// Conversions (round to nearest even; NaN stays NaN).
inline float bf16_to_f32(uint16_t v) {
  const uint32_t bits = uint32_t(v) << 16;
  float f;
  __builtin_memcpy(&f, &bits, 4);
  return f;
}
uint16_t f32_to_bf16(float f);
void convert_f32_to_bf16(const float* src, uint16_t* dst, int64_t count);

}  // namespace inductor_cpp::matrix
