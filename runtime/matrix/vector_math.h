/// \file vector_math.h
/// \brief AVX-512 math shared by the matrix library's passes over finished tiles (epilogue.cpp,
/// attention.cpp): exp as Cephes' expf (a degree-5 polynomial on the reduced argument, scaled by
/// 2^n with vscalefps; within 2 ulp of exp over its range, +inf above 89, 0 far below, NaN
/// passes through).
#pragma once

#include <immintrin.h>

#define INDUCTOR_CPP_AVX512_FN __attribute__((target("avx512f,avx512dq")))

namespace inductor_cpp::matrix::simd {

INDUCTOR_CPP_AVX512_FN inline __m512 exp_ps(__m512 x) {
  // x86 max/min return their second operand when either is NaN: NaN passes through. Above
  // 89, scalef overflows to +inf as exp does.
  x = _mm512_min_ps(_mm512_set1_ps(89.0f), _mm512_max_ps(_mm512_set1_ps(-88.3762626647949f), x));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500E-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507E-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073E-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894E-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459E-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201E-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_scalef_ps(p, n);
}

}  // namespace inductor_cpp::matrix::simd
