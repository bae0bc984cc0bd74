/// \file epilogue.cpp
/// \brief The C++ epilogue pass: transcendental activations (erf-GELU, tanh-GELU, SiLU, sigmoid,
/// tanh) and any op after them, vectorized with AVX-512 or AVX2 intrinsics. Accuracy: exp is
/// Cephes' minimax polynomial (≈1 ulp; vector_math.h), erf Eigen's rational approximation (|error|
/// ≤ 3.9e-7, as the generated kernels' erf), so GELU matches torch to ~2e-7 absolute per unit of
/// |x|; tanh is Cephes' tanhf (an odd polynomial below |x| = 0.625, 1 − 2 / (exp(2|x|) + 1) above:
/// a few ulp).
#include "matrix/epilogue.h"

#include <immintrin.h>

// GCC 12 warns inside its own avx512fintrin.h (_mm512_undefined_ps) under target attributes.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <cmath>
#include <limits>

#include "codegen/cpu/ic_runtime_erf.h"
#include "matrix/gemm_config.h"
#include "matrix/jit/cpu_features.h"
#include "matrix/vector_math.h"

namespace inductor_cpp::matrix {
namespace {

using xbyak::KernelEpilogueKind;

bool is_transcendental(EpilogueKind k) {
  return k == EpilogueKind::Gelu || k == EpilogueKind::GeluTanh || k == EpilogueKind::Silu ||
         k == EpilogueKind::Sigmoid || k == EpilogueKind::Tanh;
}

/// ops[o] is a ScaleCol directly followed by a BiasCol: one FMA (see gemm.h).
bool fuses_with_next(const std::vector<EpilogueOp>& ops, size_t o) {
  return ops[o].kind == EpilogueKind::ScaleCol && o + 1 < ops.size() &&
         ops[o + 1].kind == EpilogueKind::BiasCol;
}

#define AVX512_FN __attribute__((target("avx512f,avx512dq")))

using simd::exp_ps;  // vector_math.h

/// 1 / d by vrcp14ps and one Newton step (relative error ~2^-28): a zmm division occupies the
/// divider for ~10 cycles, this three pipelined instructions.
AVX512_FN __m512 reciprocal_ps(__m512 d) {
  const __m512 t = _mm512_rcp14_ps(d);
  return _mm512_mul_ps(t, _mm512_fnmadd_ps(d, t, _mm512_set1_ps(2.0f)));
}

/// p / q by q's refined reciprocal.
AVX512_FN __m512 divide_ps(__m512 p, __m512 q) {
  return _mm512_mul_ps(p, reciprocal_ps(q));
}

/// The generated kernels' erf (codegen/cpu/ic_runtime_erf.h: Eigen's rational approximation).

AVX512_FN __m512 erf_ps(__m512 x){IC_ERF_RATIONAL(__m512, _mm512_set1_ps, _mm512_mul_ps,
                                                  _mm512_fmadd_ps, divide_ps, _mm512_min_ps,
                                                  _mm512_max_ps)}

AVX512_FN __m512 tanh_ps(__m512 x) {
  const __m512 one = _mm512_set1_ps(1.0f), ax = _mm512_abs_ps(x);
  // |x| ≥ 0.625: 1 - 2 / (exp(2|x|) + 1), with x's sign.
  const __m512 e = exp_ps(_mm512_add_ps(ax, ax));
  const __m512 big = _mm512_sub_ps(one, _mm512_div_ps(_mm512_set1_ps(2.0f), _mm512_add_ps(e, one)));
  const __m512i sign =
      _mm512_and_epi32(_mm512_castps_si512(x), _mm512_set1_epi32(int(0x80000000u)));
  const __m512 signed_big = _mm512_castsi512_ps(_mm512_or_epi32(_mm512_castps_si512(big), sign));
  // |x| < 0.625: x + x³·P(x²).
  const __m512 z = _mm512_mul_ps(x, x);
  __m512 p = _mm512_set1_ps(-5.70498872745e-3f);
  p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(2.06390887954e-2f));
  p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(-5.37397155531e-2f));
  p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(1.33314422036e-1f));
  p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(-3.33332819422e-1f));
  const __m512 small = _mm512_fmadd_ps(_mm512_mul_ps(p, z), x, x);
  const __mmask16 is_small = _mm512_cmp_ps_mask(ax, _mm512_set1_ps(0.625f), _CMP_LT_OQ);
  return _mm512_mask_blend_ps(is_small, signed_big, small);
}

AVX512_FN inline __attribute__((always_inline)) __m512 apply_vec(const EpilogueOp& op, __m512 x,
                                                                 __mmask16 mask, int64_t row,
                                                                 int64_t col) {
  const __m512 one = _mm512_set1_ps(1.0f), half = _mm512_set1_ps(0.5f);
  switch (op.kind) {
    case EpilogueKind::BiasRow:
      return _mm512_add_ps(x, _mm512_set1_ps(op.data[row]));
    case EpilogueKind::BiasCol:
      return _mm512_add_ps(x, _mm512_maskz_loadu_ps(mask, op.data + col));
    case EpilogueKind::ScaleCol:
      return _mm512_mul_ps(x, _mm512_maskz_loadu_ps(mask, op.data + col));
    case EpilogueKind::Scale:
      return _mm512_mul_ps(x, _mm512_set1_ps(op.a));
    case EpilogueKind::Relu:
      return _mm512_max_ps(_mm512_setzero_ps(), x);  // NaN: the second operand
    case EpilogueKind::Clamp:
      return _mm512_min_ps(_mm512_set1_ps(op.b), _mm512_max_ps(_mm512_set1_ps(op.a), x));
    case EpilogueKind::AddResidual:
      return _mm512_add_ps(x, _mm512_maskz_loadu_ps(mask, op.data + row * op.ld + col));
    case EpilogueKind::MulResidual:
      return _mm512_mul_ps(x, _mm512_maskz_loadu_ps(mask, op.data + row * op.ld + col));
    case EpilogueKind::Sigmoid:
      return _mm512_div_ps(one, _mm512_add_ps(one, exp_ps(_mm512_sub_ps(_mm512_setzero_ps(), x))));
    case EpilogueKind::Tanh:
      return tanh_ps(x);
    case EpilogueKind::Gelu:
      return _mm512_mul_ps(
          _mm512_mul_ps(half, x),
          _mm512_add_ps(one, erf_ps(_mm512_mul_ps(x, _mm512_set1_ps(0.70710678118654752f)))));
    case EpilogueKind::GeluTanh: {
      const __m512 x3 = _mm512_mul_ps(_mm512_mul_ps(x, x), x);
      const __m512 u = _mm512_mul_ps(_mm512_set1_ps(0.7978845608028654f),
                                     _mm512_fmadd_ps(x3, _mm512_set1_ps(0.044715f), x));
      // tanh(u) = 1 - 2 / (exp(2u) + 1)
      const __m512 e = exp_ps(_mm512_add_ps(u, u));
      const __m512 th =
          _mm512_sub_ps(one, _mm512_div_ps(_mm512_set1_ps(2.0f), _mm512_add_ps(e, one)));
      return _mm512_mul_ps(_mm512_mul_ps(half, x), _mm512_add_ps(one, th));
    }
    case EpilogueKind::Silu:
      return _mm512_div_ps(x, _mm512_add_ps(one, exp_ps(_mm512_sub_ps(_mm512_setzero_ps(), x))));
    case EpilogueKind::Tile:  // not a per-element op (apply_epilogue_tile)
      break;
  }
  return x;
}

/// Op by op over the tile (in L1): the op's kind is fixed through each loop, so its switch
/// branch predicts perfectly and the loads and stores between ops hit L1. Element by element
/// with every op inside the loop cost ~10 ns per 16 lanes on the Xeon dev machine (bias + ReLU
/// 12.9 ns, bias + GELU 21.5); op by op: see docs/matrix/gemm.md "Epilogues".
AVX512_FN void apply_tile_avx512(float* c, int64_t ldc, int64_t rows, int64_t cols, int64_t row0,
                                 int64_t col0, const std::vector<EpilogueOp>& ops, size_t first,
                                 size_t end) {
  for (size_t o = first; o < end; ++o) {
    const EpilogueOp& op = ops[o];
    const EpilogueOp* fused_bias = fuses_with_next(ops, o) ? &ops[++o] : nullptr;
    for (int64_t i = 0; i < rows; ++i) {
      float* row = c + i * ldc;
      for (int64_t j = 0; j < cols; j += 16) {
        const int64_t len = cols - j < 16 ? cols - j : 16;
        const __mmask16 mask = __mmask16((1u << len) - 1);
        const __m512 x = _mm512_maskz_loadu_ps(mask, row + j);
        const __m512 y =
            fused_bias ? _mm512_fmadd_ps(x, _mm512_maskz_loadu_ps(mask, op.data + col0 + j),
                                         _mm512_maskz_loadu_ps(mask, fused_bias->data + col0 + j))
                       : apply_vec(op, x, mask, row0 + i, col0 + j);
        _mm512_mask_storeu_ps(row + j, mask, y);
      }
    }
  }
}

#define AVX2_FN __attribute__((target("avx2,fma")))

// AVX2 forms of the functions above, for hosts without AVX-512 (8 lanes, masks as vectors).

/// exp as exp_ps, with x clamped to [-87, 88] so that 2^n is built from its exponent bits
/// (no scalef): below -87 it returns ≈ 1.6e-38 rather than a denormal or 0, and between 88 and
/// ln(FLT_MAX) e^88, which no activation here can tell apart (1 + e, x·e); above ln(FLT_MAX)
/// +inf, and NaN stays NaN.
AVX2_FN __m256 exp_ps_avx2(__m256 x) {
  const __m256 overflows = _mm256_cmp_ps(x, _mm256_set1_ps(88.72283935546875f), _CMP_GT_OQ);
  // x86 max/min return their second operand when either is NaN: NaN passes through.
  x = _mm256_min_ps(_mm256_set1_ps(88.0f), _mm256_max_ps(_mm256_set1_ps(-87.0f), x));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  INDUCTOR_CPP_EXP_POLYNOMIAL(__m256, p, x, n, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_fnmadd_ps,
                              _mm256_mul_ps, _mm256_add_ps)
  const __m256i bits =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  // Above ln(FLT_MAX), +inf as exp gives (sigmoid and SiLU of -inf depend on it).
  return _mm256_blendv_ps(_mm256_mul_ps(p, _mm256_castsi256_ps(bits)),
                          _mm256_set1_ps(std::numeric_limits<float>::infinity()), overflows);
}

AVX2_FN __m256 abs_ps_avx2(__m256 x) {
  return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
}

/// y with the sign of x (y ≥ 0).
AVX2_FN __m256 with_sign_of_avx2(__m256 y, __m256 x) {
  return _mm256_or_ps(y, _mm256_and_ps(x, _mm256_set1_ps(-0.0f)));
}

AVX2_FN __m256 erf_ps_avx2(__m256 x){IC_ERF_RATIONAL(__m256, _mm256_set1_ps, _mm256_mul_ps,
                                                     _mm256_fmadd_ps, _mm256_div_ps, _mm256_min_ps,
                                                     _mm256_max_ps)}

AVX2_FN __m256 tanh_ps_avx2(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.0f), ax = abs_ps_avx2(x);
  const __m256 e = exp_ps_avx2(_mm256_add_ps(ax, ax));
  const __m256 big = _mm256_sub_ps(one, _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, one)));
  const __m256 z = _mm256_mul_ps(x, x);
  __m256 p = _mm256_set1_ps(-5.70498872745e-3f);
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(2.06390887954e-2f));
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-5.37397155531e-2f));
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(1.33314422036e-1f));
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-3.33332819422e-1f));
  const __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(p, z), x, x);
  const __m256 is_small = _mm256_cmp_ps(ax, _mm256_set1_ps(0.625f), _CMP_LT_OQ);
  return _mm256_blendv_ps(with_sign_of_avx2(big, x), small, is_small);
}

AVX2_FN __m256 apply_vec_avx2(const EpilogueOp& op, __m256 x, __m256i mask, int64_t row,
                              int64_t col) {
  const __m256 one = _mm256_set1_ps(1.0f), half = _mm256_set1_ps(0.5f);
  switch (op.kind) {
    case EpilogueKind::BiasRow:
      return _mm256_add_ps(x, _mm256_set1_ps(op.data[row]));
    case EpilogueKind::BiasCol:
      return _mm256_add_ps(x, _mm256_maskload_ps(op.data + col, mask));
    case EpilogueKind::ScaleCol:
      return _mm256_mul_ps(x, _mm256_maskload_ps(op.data + col, mask));
    case EpilogueKind::Scale:
      return _mm256_mul_ps(x, _mm256_set1_ps(op.a));
    case EpilogueKind::Relu:
      return _mm256_max_ps(_mm256_setzero_ps(), x);  // NaN: the second operand
    case EpilogueKind::Clamp:
      return _mm256_min_ps(_mm256_set1_ps(op.b), _mm256_max_ps(_mm256_set1_ps(op.a), x));
    case EpilogueKind::AddResidual:
      return _mm256_add_ps(x, _mm256_maskload_ps(op.data + row * op.ld + col, mask));
    case EpilogueKind::MulResidual:
      return _mm256_mul_ps(x, _mm256_maskload_ps(op.data + row * op.ld + col, mask));
    case EpilogueKind::Sigmoid:
      return _mm256_div_ps(one,
                           _mm256_add_ps(one, exp_ps_avx2(_mm256_sub_ps(_mm256_setzero_ps(), x))));
    case EpilogueKind::Tanh:
      return tanh_ps_avx2(x);
    case EpilogueKind::Gelu:
      return _mm256_mul_ps(
          _mm256_mul_ps(half, x),
          _mm256_add_ps(one, erf_ps_avx2(_mm256_mul_ps(x, _mm256_set1_ps(0.70710678118654752f)))));
    case EpilogueKind::GeluTanh: {
      const __m256 x3 = _mm256_mul_ps(_mm256_mul_ps(x, x), x);
      const __m256 u = _mm256_mul_ps(_mm256_set1_ps(0.7978845608028654f),
                                     _mm256_fmadd_ps(x3, _mm256_set1_ps(0.044715f), x));
      const __m256 e = exp_ps_avx2(_mm256_add_ps(u, u));
      const __m256 th =
          _mm256_sub_ps(one, _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, one)));
      return _mm256_mul_ps(_mm256_mul_ps(half, x), _mm256_add_ps(one, th));
    }
    case EpilogueKind::Silu:
      return _mm256_div_ps(x,
                           _mm256_add_ps(one, exp_ps_avx2(_mm256_sub_ps(_mm256_setzero_ps(), x))));
    case EpilogueKind::Tile:  // not a per-element op (apply_epilogue_tile)
      break;
  }
  return x;
}

AVX2_FN void apply_tile_avx2(float* c, int64_t ldc, int64_t rows, int64_t cols, int64_t row0,
                             int64_t col0, const std::vector<EpilogueOp>& ops, size_t first,
                             size_t end) {
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (int64_t i = 0; i < rows; ++i) {
    float* row = c + i * ldc;
    for (int64_t j = 0; j < cols; j += 8) {
      const int len = cols - j < 8 ? int(cols - j) : 8;
      const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(len), lanes);
      // Whole vectors load and store C unmasked (vmaskmovps stores are microcoded on AMD Zen);
      // the operands' masked loads are cheap.
      __m256 x = len == 8 ? _mm256_loadu_ps(row + j) : _mm256_maskload_ps(row + j, mask);
      for (size_t o = first; o < end; ++o) {
        if (fuses_with_next(ops, o)) {
          x = _mm256_fmadd_ps(x, _mm256_maskload_ps(ops[o].data + col0 + j, mask),
                              _mm256_maskload_ps(ops[o + 1].data + col0 + j, mask));
          ++o;
          continue;
        }
        x = apply_vec_avx2(ops[o], x, mask, row0 + i, col0 + j);
      }
      if (len == 8)
        _mm256_storeu_ps(row + j, x);
      else
        _mm256_maskstore_ps(row + j, mask, x);
    }
  }
}

}  // namespace

size_t jit_epilogue_prefix(const std::vector<EpilogueOp>& ops) {
  size_t n = 0;
  while (n < ops.size() && !is_transcendental(ops[n].kind) && ops[n].kind != EpilogueKind::Tile)
    ++n;
  return n;
}

std::vector<xbyak::KernelEpilogueOp> kernel_epilogue(const std::vector<EpilogueOp>& ops,
                                                     size_t count) {
  std::vector<xbyak::KernelEpilogueOp> out;
  for (size_t i = 0; i < count; ++i) {
    const EpilogueOp& op = ops[i];
    xbyak::KernelEpilogueOp k{KernelEpilogueKind::Relu, op.a, op.b, op.ld};
    switch (op.kind) {
      case EpilogueKind::BiasRow:
        k.kind = KernelEpilogueKind::BiasRow;
        break;
      case EpilogueKind::BiasCol:
        k.kind = KernelEpilogueKind::BiasCol;
        break;
      case EpilogueKind::ScaleCol:
        k.kind = KernelEpilogueKind::ScaleCol;
        break;
      case EpilogueKind::Scale:
        k.kind = KernelEpilogueKind::Scale;
        break;
      case EpilogueKind::Relu:
        k.kind = KernelEpilogueKind::Relu;
        break;
      case EpilogueKind::Clamp:
        k.kind = KernelEpilogueKind::Clamp;
        break;
      case EpilogueKind::AddResidual:
        k.kind = KernelEpilogueKind::AddResidual;
        break;
      case EpilogueKind::MulResidual:
        k.kind = KernelEpilogueKind::MulResidual;
        break;
      default:
        continue;  // Not reachable for a prefix from jit_epilogue_prefix.
    }
    out.push_back(k);
  }
  return out;
}

float apply_epilogue_scalar(const EpilogueOp& op, float x, int64_t row, int64_t col) {
  switch (op.kind) {
    case EpilogueKind::BiasRow:
      return x + op.data[row];
    case EpilogueKind::BiasCol:
      return x + op.data[col];
    case EpilogueKind::ScaleCol:
      return x * op.data[col];
    case EpilogueKind::Scale:
      return x * op.a;
    case EpilogueKind::Relu:
      return x < 0 ? 0.0f : x;  // NaN stays NaN, as in eager
    case EpilogueKind::Clamp:
      return x < op.a ? op.a : x > op.b ? op.b : x;
    case EpilogueKind::AddResidual:
      return x + op.data[row * op.ld + col];
    case EpilogueKind::MulResidual:
      return x * op.data[row * op.ld + col];
    case EpilogueKind::Sigmoid:
      return 1.0f / (1.0f + std::exp(-x));
    case EpilogueKind::Tanh:
      return std::tanh(x);
    case EpilogueKind::Gelu:
      return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f));
    case EpilogueKind::GeluTanh:
      return 0.5f * x * (1.0f + std::tanh(0.7978845608028654f * (x + 0.044715f * x * x * x)));
    case EpilogueKind::Silu:
      return x / (1.0f + std::exp(-x));
    case EpilogueKind::Tile:  // whole tiles only: apply_epilogue_tile
      break;
  }
  return x;
}

float apply_epilogue_scalar_list(const std::vector<EpilogueOp>& ops, size_t first, float x,
                                 int64_t row, int64_t col) {
  for (size_t o = first; o < ops.size(); ++o) {
    if (fuses_with_next(ops, o)) {
      x = std::fma(x, ops[o].data[col], ops[o + 1].data[col]);
      ++o;
      continue;
    }
    x = apply_epilogue_scalar(ops[o], x, row, col);
  }
  return x;
}

bool epilogue_needs_data(EpilogueKind kind) {
  return kind == EpilogueKind::BiasRow || kind == EpilogueKind::BiasCol ||
         kind == EpilogueKind::ScaleCol || is_residual_op(kind);
}

const float* epilogue_tile_data(const EpilogueOp& op, int64_t row, int64_t col) {
  switch (op.kind) {
    case EpilogueKind::BiasRow:
      return op.data + row;
    case EpilogueKind::BiasCol:
    case EpilogueKind::ScaleCol:
      return op.data + col;
    case EpilogueKind::AddResidual:
    case EpilogueKind::MulResidual:
      return op.data + row * op.ld + col;
    default:
      return nullptr;
  }
}

void apply_tile_kernel(const std::vector<EpilogueOp>& ops, int64_t row0, int64_t rows, int64_t col0,
                       int64_t cols) {
  if (ops.empty() || ops.back().kind != EpilogueKind::Tile || rows <= 0 || cols <= 0) return;
  const TileKernel& tile = *ops.back().tile;
  const int64_t symbols[4] = {row0, rows, col0, cols};
  if (const int32_t status = tile.fn(tile.bufs, symbols, 1); status != 0) {
    int32_t none = 0;
    tile.status.compare_exchange_strong(none, status);
  }
}

void apply_epilogue_tile(float* c, int64_t ldc, int64_t rows, int64_t cols, int64_t row0,
                         int64_t col0, const std::vector<EpilogueOp>& ops, size_t first,
                         bool tile_kernel) {
  if (first >= ops.size()) return;
  const bool has_tile = ops.back().kind == EpilogueKind::Tile;
  const size_t end = ops.size() - (has_tile ? 1 : 0);
  // The kernels' ISA (gemm_config.h): INDUCTOR_CPP_MATRIX_ISA=avx2 tests the AVX2 pass too.
  if (first >= end) {
  } else if (gemm_blocking().isa == xbyak::Isa::Avx512) {
    apply_tile_avx512(c, ldc, rows, cols, row0, col0, ops, first, end);
  } else if (xbyak::cpu_features().avx2) {
    apply_tile_avx2(c, ldc, rows, cols, row0, col0, ops, first, end);
  } else {
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        c[i * ldc + j] = apply_epilogue_scalar_list(ops, first, c[i * ldc + j], row0 + i, col0 + j);
  }
  if (tile_kernel) apply_tile_kernel(ops, row0, rows, col0, cols);
}

}  // namespace inductor_cpp::matrix
