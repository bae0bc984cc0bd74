/// \file vector_math.h
/// \brief Vector math shared by the matrix library's passes over finished tiles (epilogue.cpp,
/// attention.cpp): exp as Cephes' expf, a degree-5 polynomial on the reduced argument (one
/// definition for the AVX-512 and AVX2 forms), scaled by 2^n; the AVX-512 form (vscalefps) is
/// within 2 ulp of exp over its range, +inf above 89, 0 far below, NaN passes through.
#pragma once

#include <immintrin.h>

#define INDUCTOR_CPP_AVX512_FN __attribute__((target("avx512f,avx512dq")))

namespace inductor_cpp::matrix::simd {

/// Cephes' expf on the reduced argument: given x and n = round(x / ln 2), declares `p` of vector
/// type V with exp(x) = p · 2^n, through the intrinsics passed in (the AVX-512 and AVX2 forms
/// share it; a statement, not a lambda, so that it compiles under the caller's target).
#define INDUCTOR_CPP_EXP_POLYNOMIAL(V, p, x, n, set1, fmadd, fnmadd, mul, add) \
  V p;                                                                       \
  {                                                                          \
    V r_ = fnmadd(n, set1(0.693359375f), x);                                 \
    r_ = fnmadd(n, set1(-2.12194440e-4f), r_);                               \
    V q_ = set1(1.9875691500E-4f);                                           \
    q_ = fmadd(q_, r_, set1(1.3981999507E-3f));                              \
    q_ = fmadd(q_, r_, set1(8.3334519073E-3f));                              \
    q_ = fmadd(q_, r_, set1(4.1665795894E-2f));                              \
    q_ = fmadd(q_, r_, set1(1.6666665459E-1f));                              \
    q_ = fmadd(q_, r_, set1(5.0000001201E-1f));                              \
    p = fmadd(q_, mul(r_, r_), add(r_, set1(1.0f)));                         \
  }

INDUCTOR_CPP_AVX512_FN inline __m512 exp_ps(__m512 x) {
  // x86 max/min return their second operand when either is NaN: NaN passes through. Above
  // 89, scalef overflows to +inf as exp does.
  x = _mm512_min_ps(_mm512_set1_ps(89.0f), _mm512_max_ps(_mm512_set1_ps(-88.3762626647949f), x));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  INDUCTOR_CPP_EXP_POLYNOMIAL(__m512, p, x, n, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_fnmadd_ps,
                              _mm512_mul_ps, _mm512_add_ps)
  return _mm512_scalef_ps(p, n);
}

}  // namespace inductor_cpp::matrix::simd
