/// \file
/// Part of ic_runtime.h (included from there, after its macros): vector math (Sleef on
/// register-sized chunks, single instructions, lane loops) and casts.
#pragma once

namespace ic {

// Register-sized chunks: IC_CHUNKS_512 / _256 apply a float and a double intrinsic lambda
// to each 512- / 256-bit chunk when the ISA has them and the lanes divide evenly.
#if defined(IC_AVX512)
#define IC_CHUNKS_512(T, x, call_f, call_d)                   \
  if constexpr (std::is_same<T, float>::value && N % 16 == 0) \
    return map_chunks<16, __m512>(x, call_f);                 \
  if constexpr (std::is_same<T, double>::value && N % 8 == 0) \
    return map_chunks<8, __m512d>(x, call_d);
#else
#define IC_CHUNKS_512(T, x, call_f, call_d)
#endif
#if defined(IC_AVX512) || defined(IC_AVX2)
#define IC_CHUNKS_256(T, x, call_f, call_d)                   \
  if constexpr (std::is_same<T, float>::value && N % 8 == 0)  \
    return map_chunks<8, __m256>(x, call_f);                  \
  if constexpr (std::is_same<T, double>::value && N % 4 == 0) \
    return map_chunks<4, __m256d>(x, call_d);
#else
#define IC_CHUNKS_256(T, x, call_f, call_d)
#endif
#if defined(IC_SLEEF)
#define IC_SLEEF_512 IC_CHUNKS_512
#define IC_SLEEF_256 IC_CHUNKS_256
#else
#define IC_SLEEF_512(T, x, call_f, call_d)
#define IC_SLEEF_256(T, x, call_f, call_d)
#endif

// sqrt and rounding: one instruction per chunk.
#define IC_VEC_NATIVE_UNARY(name, f512, d512, f256, d256)                      \
  template <class T, int N>                                                    \
  IC_INLINE Vec<T, N> name(const Vec<T, N>& x) {                               \
    if constexpr (!is_float_v<T>) {                                            \
      return map_lanes<T>(x, [](T a) { return name(a); });                     \
    } else {                                                                   \
      IC_CHUNKS_512(                                                           \
          T, x, [](__m512 c) { return f512; }, [](__m512d c) { return d512; }) \
      IC_CHUNKS_256(                                                           \
          T, x, [](__m256 c) { return f256; }, [](__m256d c) { return d256; }) \
      return map_lanes<T>(x, [](T a) { return name(a); });                     \
    }                                                                          \
  }
#define IC_RND(mode) (_MM_FROUND_##mode | _MM_FROUND_NO_EXC)
IC_VEC_NATIVE_UNARY(sqrt, _mm512_sqrt_ps(c), _mm512_sqrt_pd(c), _mm256_sqrt_ps(c),
                    _mm256_sqrt_pd(c))
IC_VEC_NATIVE_UNARY(floor, _mm512_roundscale_ps(c, IC_RND(TO_NEG_INF)),
                    _mm512_roundscale_pd(c, IC_RND(TO_NEG_INF)),
                    _mm256_round_ps(c, IC_RND(TO_NEG_INF)), _mm256_round_pd(c, IC_RND(TO_NEG_INF)))
IC_VEC_NATIVE_UNARY(ceil, _mm512_roundscale_ps(c, IC_RND(TO_POS_INF)),
                    _mm512_roundscale_pd(c, IC_RND(TO_POS_INF)),
                    _mm256_round_ps(c, IC_RND(TO_POS_INF)), _mm256_round_pd(c, IC_RND(TO_POS_INF)))
IC_VEC_NATIVE_UNARY(trunc, _mm512_roundscale_ps(c, IC_RND(TO_ZERO)),
                    _mm512_roundscale_pd(c, IC_RND(TO_ZERO)), _mm256_round_ps(c, IC_RND(TO_ZERO)),
                    _mm256_round_pd(c, IC_RND(TO_ZERO)))
IC_VEC_NATIVE_UNARY(round, _mm512_roundscale_ps(c, IC_RND(TO_NEAREST_INT)),
                    _mm512_roundscale_pd(c, IC_RND(TO_NEAREST_INT)),
                    _mm256_round_ps(c, IC_RND(TO_NEAREST_INT)),
                    _mm256_round_pd(c, IC_RND(TO_NEAREST_INT)))
#undef IC_RND
#undef IC_VEC_NATIVE_UNARY

// float e^x, inline (Sleef's expf8_u10 is a call costing ~3 cycles per lane on Zen 3; this
// is about half that): x clamped to [-104, 89] (NaN kept: x86 min/max return their second
// operand when either is NaN, and the value goes second), x = k ln2 + r with |r| <= ln2/2 (ln2
// in two parts, Cody-Waite), e^r by its Taylor polynomial to r^7 (truncation < 6e-9; Horner:
// Estrin's shorter dependency chain was no faster and rounded worse, 2 ulp), times 2^k.
// Against the correctly rounded e^x on every float in [-105, 90] (AVX2 form): at most 1 ulp,
// as Sleef's u10 (test: EmitCppTest.ExpIsWithinOneUlpEverywhere). Overflow gives inf, and
// underflow rounds into the subnormals once, as e^x does.
#define IC_EXP_POLY(V, set1, mul, fmadd, fnmadd, min, max, round) \
  x = min(set1(89.0f), max(set1(-104.0f), x));                    \
  const V k = round(mul(x, set1(1.44269504088896341f)));          \
  V r = fnmadd(k, set1(0.693145751953125f), x);                   \
  r = fnmadd(k, set1(1.428606765330187e-06f), r);                 \
  V p = fmadd(set1(1.0f / 5040), r, set1(1.0f / 720));            \
  p = fmadd(p, r, set1(1.0f / 120));                              \
  p = fmadd(p, r, set1(1.0f / 24));                               \
  p = fmadd(p, r, set1(1.0f / 6));                                \
  p = fmadd(p, r, set1(0.5f));                                    \
  p = fmadd(p, r, set1(1.0f));                                    \
  p = fmadd(p, r, set1(1.0f));
#if defined(IC_AVX512)
IC_INLINE __m512 exp_f32_512(__m512 x) {
  IC_EXP_POLY(__m512, _mm512_set1_ps, _mm512_mul_ps, _mm512_fmadd_ps, _mm512_fnmadd_ps,
              _mm512_min_ps, _mm512_max_ps, [](__m512 v) {
                return _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
              })
  return _mm512_scalef_ps(p, k);  // one rounding, into the subnormals or to inf
}
#endif
#if defined(IC_AVX512) || defined(IC_AVX2)
IC_INLINE __m256 exp_f32_256(__m256 x) {
  IC_EXP_POLY(__m256, _mm256_set1_ps, _mm256_mul_ps, _mm256_fmadd_ps, _mm256_fnmadd_ps,
              _mm256_min_ps, _mm256_max_ps, [](__m256 v) {
                return _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
              })
  // 2^k as two normal factors 2^(k >> 1) and 2^(k - (k >> 1)) (k is in [-150, 128]): the
  // second product overflows to inf or rounds into the subnormals once.
  const __m256i ki = _mm256_cvtps_epi32(k), k1 = _mm256_srai_epi32(ki, 1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k1, bias), 23));
  const __m256 s2 =
      _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(ki, k1), bias), 23));
  return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}
#endif
#undef IC_EXP_POLY
template <class T, int N>
IC_INLINE Vec<T, N> exp(const Vec<T, N>& x) {
  if constexpr (std::is_same<T, float>::value) {
#if defined(IC_AVX512)
    if constexpr (N % 16 == 0)
      return map_chunks<16, __m512>(x, [](__m512 c) { return exp_f32_512(c); });
#endif
#if defined(IC_AVX512) || defined(IC_AVX2)
    if constexpr (N % 8 == 0)
      return map_chunks<8, __m256>(x, [](__m256 c) { return exp_f32_256(c); });
#endif
  }
  IC_SLEEF_512(
      T, x, [](__m512 c) { return Sleef_expf16_u10avx512f(c); },
      [](__m512d c) { return Sleef_expd8_u10avx512f(c); })
  IC_SLEEF_256(
      T, x, [](__m256 c) { return Sleef_expf8_u10avx2(c); },
      [](__m256d c) { return Sleef_expd4_u10avx2(c); })
  return map_lanes<T>(x, [](T a) { return exp(a); });
}

#define IC_VEC_SLEEF_UNARY(name, s, u)                                 \
  template <class T, int N>                                            \
  IC_INLINE Vec<T, N> name(const Vec<T, N>& x) {                       \
    IC_SLEEF_512(                                                      \
        T, x, [](__m512 c) { return Sleef_##s##f16_##u##avx512f(c); }, \
        [](__m512d c) { return Sleef_##s##d8_##u##avx512f(c); })       \
    IC_SLEEF_256(                                                      \
        T, x, [](__m256 c) { return Sleef_##s##f8_##u##avx2(c); },     \
        [](__m256d c) { return Sleef_##s##d4_##u##avx2(c); })          \
    return map_lanes<T>(x, [](T a) { return name(a); });               \
  }
#define IC_SLEEF_UNARY_OPS(X)                                                                \
  X(exp2, exp2, u10)                                                                         \
  X(expm1, expm1, u10)                                                                       \
  X(log, log, u10)                                                                           \
  X(log2, log2, u10)                                                                         \
  X(log10, log10, u10)                                                                       \
  X(log1p, log1p, u10) X(sin, sin, u10) X(cos, cos, u10) X(tan, tan, u10) X(asin, asin, u10) \
      X(acos, acos, u10) X(atan, atan, u10) X(sinh, sinh, u10) X(cosh, cosh, u10)            \
          X(asinh, asinh, u10) X(acosh, acosh, u10) X(atanh, atanh, u10)  \
              X(erfc, erfc, u15) X(lgamma, lgamma, u10)
IC_SLEEF_UNARY_OPS(IC_VEC_SLEEF_UNARY)
#undef IC_VEC_SLEEF_UNARY

// float erf, inline: the rational approximation of ic_runtime_erf.h (6.5 ulp), one branch of 12
// FMAs and a division: about half the cost of the Taylor + Abramowitz-Stegun pair it replaced
// (393K elements, one thread: 264 → 138 µs) and a quarter of Sleef's. Double keeps Sleef's erf.
#if defined(IC_SLEEF)
#if defined(IC_AVX512)
IC_INLINE __m512 erf_fast_512(__m512 x) {
  IC_ERF_RATIONAL(__m512, _mm512_set1_ps, _mm512_mul_ps, _mm512_fmadd_ps, _mm512_div_ps,
                  _mm512_min_ps, _mm512_max_ps)
}
#endif
#if defined(IC_AVX512) || defined(IC_AVX2)
IC_INLINE __m256 erf_fast_256(__m256 x) {
  IC_ERF_RATIONAL(__m256, _mm256_set1_ps, _mm256_mul_ps, _mm256_fmadd_ps, _mm256_div_ps,
                  _mm256_min_ps, _mm256_max_ps)
}
#endif
#endif
// float tanh, inline: Cephes' tanhf (Sleef's tanhf16_u10 took ~29 ns a 16-lane vector on the
// Xeon dev machine, 5x eager's tanh). For |x| < 0.625 the odd polynomial |x| + |x|³·P(x²);
// above, 1 − 2 / (e^{2|x|} + 1) with the inline exp, |x| clamped to 10 (tanh rounds to 1 from
// 9.02 on); then x's sign or-ed on, so tanh(−0) = −0 and NaN stays NaN. Within 2 ulp of the
// correctly rounded tanh (test: EmitCppTest.TanhIsWithinTwoUlpEverywhere). Double keeps
// Sleef's tanh.
#if defined(IC_SLEEF)
#define IC_TANH_BODY(V, set1, mul, fmadd, add, sub, recip, abs_of, sign_of, or_, exp, less, blend, \
                     min)                                                                         \
  const V ax = min(set1(10.0f), abs_of(x)); /* keeps NaN */                                       \
  const V one = set1(1.0f);                                                                       \
  const V big = sub(one, mul(set1(2.0f), recip(add(exp(add(ax, ax)), one))));                     \
  const V z = mul(ax, ax);                                                                        \
  V p = fmadd(set1(-5.70498872745e-3f), z, set1(2.06390887954e-2f));                              \
  p = fmadd(p, z, set1(-5.37397155531e-2f));                                                      \
  p = fmadd(p, z, set1(1.33314422036e-1f));                                                       \
  p = fmadd(p, z, set1(-3.33332819422e-1f));                                                      \
  const V small = fmadd(mul(p, z), ax, ax);                                                       \
  return or_(blend(less(ax, set1(0.625f)), big, small), sign_of(x));
#if defined(IC_AVX512)
IC_INLINE __m512 tanh_fast_512(__m512 x) {
  const __m512 sign = _mm512_set1_ps(-0.0f);
  auto recip = [](__m512 d) {  // rcp14 and one Newton step: 2^-28
    const __m512 t = _mm512_rcp14_ps(d);
    return _mm512_mul_ps(t, _mm512_fnmadd_ps(d, t, _mm512_set1_ps(2.0f)));
  };
  IC_TANH_BODY(__m512, _mm512_set1_ps, _mm512_mul_ps, _mm512_fmadd_ps, _mm512_add_ps,
               _mm512_sub_ps, recip, [&](__m512 v) { return _mm512_andnot_ps(sign, v); },
               [&](__m512 v) { return _mm512_and_ps(sign, v); }, _mm512_or_ps, exp_f32_512,
               [](__m512 a, __m512 b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); },
               [](__mmask16 m, __m512 a, __m512 b) { return _mm512_mask_blend_ps(m, a, b); },
               _mm512_min_ps)
}
#endif
#if defined(IC_AVX512) || defined(IC_AVX2)
IC_INLINE __m256 tanh_fast_256(__m256 x) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  auto recip = [](__m256 d) { return _mm256_div_ps(_mm256_set1_ps(1.0f), d); };  // rcp: 12 bits
  IC_TANH_BODY(__m256, _mm256_set1_ps, _mm256_mul_ps, _mm256_fmadd_ps, _mm256_add_ps,
               _mm256_sub_ps, recip, [&](__m256 v) { return _mm256_andnot_ps(sign, v); },
               [&](__m256 v) { return _mm256_and_ps(sign, v); }, _mm256_or_ps, exp_f32_256,
               [](__m256 a, __m256 b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); },
               [](__m256 m, __m256 a, __m256 b) { return _mm256_blendv_ps(a, b, m); },
               _mm256_min_ps)
}
#endif
#undef IC_TANH_BODY
#endif
template <class T, int N>
IC_INLINE Vec<T, N> tanh(const Vec<T, N>& x) {
  IC_SLEEF_512(
      T, x, [](__m512 c) { return tanh_fast_512(c); }, [](__m512d c) { return Sleef_tanhd8_u10avx512f(c); })
  IC_SLEEF_256(
      T, x, [](__m256 c) { return tanh_fast_256(c); }, [](__m256d c) { return Sleef_tanhd4_u10avx2(c); })
  return map_lanes<T>(x, [](T a) { return tanh(a); });
}

template <class T, int N>
IC_INLINE Vec<T, N> erf(const Vec<T, N>& x) {
  IC_SLEEF_512(
      T, x, [](__m512 c) { return erf_fast_512(c); }, [](__m512d c) { return Sleef_erfd8_u10avx512f(c); })
  IC_SLEEF_256(
      T, x, [](__m256 c) { return erf_fast_256(c); }, [](__m256d c) { return Sleef_erfd4_u10avx2(c); })
  return map_lanes<T>(x, [](T a) { return erf(a); });
}

#if defined(IC_SLEEF) && defined(IC_AVX512)
#define IC_SLEEF_512_2(T, a, b, call_f, call_d)               \
  if constexpr (std::is_same<T, float>::value && N % 16 == 0) \
    return map_chunks2<16, __m512>(a, b, call_f);             \
  if constexpr (std::is_same<T, double>::value && N % 8 == 0) \
    return map_chunks2<8, __m512d>(a, b, call_d);
#else
#define IC_SLEEF_512_2(T, a, b, call_f, call_d)
#endif
#if defined(IC_SLEEF) && (defined(IC_AVX512) || defined(IC_AVX2))
#define IC_SLEEF_256_2(T, a, b, call_f, call_d)               \
  if constexpr (std::is_same<T, float>::value && N % 8 == 0)  \
    return map_chunks2<8, __m256>(a, b, call_f);              \
  if constexpr (std::is_same<T, double>::value && N % 4 == 0) \
    return map_chunks2<4, __m256d>(a, b, call_d);
#else
#define IC_SLEEF_256_2(T, a, b, call_f, call_d)
#endif
/// u: the accuracy suffix (u10, ...), empty for Sleef's exact functions (fmod, nextafter).
#define IC_VEC_SLEEF_BINARY(name, s, u)                                                \
  template <class T, int N>                                                            \
  IC_INLINE Vec<T, N> name(const Vec<T, N>& a, const Vec<T, N>& b) {                   \
    IC_SLEEF_512_2(                                                                    \
        T, a, b, [](__m512 x, __m512 y) { return Sleef_##s##f16_##u##avx512f(x, y); }, \
        [](__m512d x, __m512d y) { return Sleef_##s##d8_##u##avx512f(x, y); })         \
    IC_SLEEF_256_2(                                                                    \
        T, a, b, [](__m256 x, __m256 y) { return Sleef_##s##f8_##u##avx2(x, y); },     \
        [](__m256d x, __m256d y) { return Sleef_##s##d4_##u##avx2(x, y); })            \
    return map_lanes2<T>(a, b, [](T x, T y) { return name(x, y); });                   \
  }
IC_VEC_SLEEF_BINARY(pow, pow, u10)
IC_VEC_SLEEF_BINARY(atan2, atan2, u10)
IC_VEC_SLEEF_BINARY(hypot, hypot, u05)
IC_VEC_SLEEF_BINARY(fmod, fmod, )
IC_VEC_SLEEF_BINARY(nextafter, nextafter, )
#undef IC_VEC_SLEEF_BINARY

template <class T, int N>
IC_INLINE Vec<T, N> rsqrt(const Vec<T, N>& x) {
  return reciprocal(sqrt(x));
}
/// a / s for a float divisor s the same in every lane and loop iteration (softmax's sum, a
/// normalization's scale): a multiplication by r = 1/s and one correction step per lane
/// (Markstein: q0 = a * r, e = fma(-q0, s, a), q = fma(e, r, q0)), the correctly rounded
/// quotient, instead of a vector division (vdivps zmm: a 10-cycle throughput against 0.5 for
/// a multiply). Division itself is used where the correction does not hold: for the whole
/// vector when s is 0, infinite, NaN or outside [2^-100, 2^100] (r would lose range), and for
/// the lanes whose |a| is below 2^-100 (the residual e would underflow) or whose q0
/// overflows. Lanes with a = 0, infinite or NaN take q0, which is exact there (and keeps the
/// sign of a zero, which the correction would turn into +0).
template <class T, int N>
IC_INLINE Vec<T, N> div_by_invariant(const Vec<T, N>& a, T s) {
  if constexpr (!std::is_same<T, float>::value) {
    return div(a, broadcast<N>(s));
  } else {
    const float m = s < 0 ? -s : s;
    if (!(m >= 0x1p-100f && m <= 0x1p100f)) return div(a, broadcast<N>(s));
    const float r = 1.0f / s;
#if defined(IC_AVX512)
    if constexpr (N % 16 == 0)
      return map_chunks<16, __m512>(a, [&](__m512 x) {
        const __m512 rv = _mm512_set1_ps(r), sv = _mm512_set1_ps(s), q0 = _mm512_mul_ps(x, rv);
        const __m512 q = _mm512_fmadd_ps(_mm512_fnmadd_ps(q0, sv, x), rv, q0);
        const __m512 ax = _mm512_abs_ps(x), inf = _mm512_set1_ps(INFINITY);
        const __mmask16 corrected =
            _mm512_cmp_ps_mask(ax, _mm512_set1_ps(0x1p-100f), _CMP_GE_OQ) &
            _mm512_cmp_ps_mask(_mm512_abs_ps(q0), inf, _CMP_LT_OQ);
        const __mmask16 exact = _mm512_cmp_ps_mask(ax, _mm512_setzero_ps(), _CMP_EQ_OQ) |
                                _mm512_cmp_ps_mask(ax, inf, _CMP_EQ_UQ);  // 0, inf, NaN
        const __m512 out = _mm512_mask_blend_ps(corrected, q0, q);
        const __mmask16 rest = static_cast<__mmask16>(~(corrected | exact));
        return rest ? _mm512_mask_div_ps(out, rest, x, sv) : out;
      });
#endif
#if defined(IC_AVX512) || defined(IC_AVX2)
    if constexpr (N % 8 == 0)
      return map_chunks<8, __m256>(a, [&](__m256 x) {
        const __m256 rv = _mm256_set1_ps(r), sv = _mm256_set1_ps(s), q0 = _mm256_mul_ps(x, rv);
        const __m256 q = _mm256_fmadd_ps(_mm256_fnmadd_ps(q0, sv, x), rv, q0);
        const __m256 sign = _mm256_set1_ps(-0.0f), inf = _mm256_set1_ps(INFINITY);
        const __m256 ax = _mm256_andnot_ps(sign, x);
        const __m256 corrected =
            _mm256_and_ps(_mm256_cmp_ps(ax, _mm256_set1_ps(0x1p-100f), _CMP_GE_OQ),
                          _mm256_cmp_ps(_mm256_andnot_ps(sign, q0), inf, _CMP_LT_OQ));
        const __m256 exact = _mm256_or_ps(_mm256_cmp_ps(ax, _mm256_setzero_ps(), _CMP_EQ_OQ),
                                          _mm256_cmp_ps(ax, inf, _CMP_EQ_UQ));
        const __m256 out = _mm256_blendv_ps(q0, q, corrected);
        const __m256 rest = _mm256_andnot_ps(_mm256_or_ps(corrected, exact),
                                             _mm256_castsi256_ps(_mm256_set1_epi32(-1)));
        return _mm256_movemask_ps(rest) ? _mm256_blendv_ps(out, _mm256_div_ps(x, sv), rest) : out;
      });
#endif
    return map_lanes<T>(a, [&](float x) {
      const float q0 = x * r, ax = std::fabs(x);
      if (ax >= 0x1p-100f && std::fabs(q0) < INFINITY) return std::fma(std::fma(-q0, s, x), r, q0);
      if (ax == 0 || !(ax < INFINITY)) return q0;
      return x / s;
    });
  }
}

template <class T, int N>
IC_INLINE Vec<T, N> sigmoid(const Vec<T, N>& x) {
  if constexpr (is_float_v<T>) {
    const auto one = broadcast<N>(T(1));
    return div(one, add(one, exp(neg(x))));
  } else {
    return map_lanes<T>(x, [](T a) { return sigmoid(a); });
  }
}
template <class T, int N>
IC_INLINE Vec<T, N> erfinv(const Vec<T, N>& x) {
  return map_lanes<T>(x, [](T a) { return erfinv(a); });
}

// ---------------------------------------------------------------------------------------------
// Casts. Float to narrow integers goes through int32/int64 (wrapping like torch on x86).

template <int N>
IC_INLINE Vec<float, N> to_float(const Vec<half, N>& x) {
#if defined(IC_AVX512)
  if constexpr (N % 16 == 0) {
    return convert_chunks<float, 16, __m256i>(x, [](__m256i c) { return _mm512_cvtph_ps(c); });
  }
#endif
#if defined(IC_AVX512) || defined(IC_AVX2)
  if constexpr (N % 8 == 0) {
    return convert_chunks<float, 8, __m128i>(x, [](__m128i c) { return _mm256_cvtph_ps(c); });
  }
#endif
  return map_lanes<float>(x, [](half h) { return static_cast<float>(h); });
}
template <int N>
IC_INLINE Vec<half, N> to_half(const Vec<float, N>& x) {
#if defined(IC_AVX512)
  if constexpr (N % 16 == 0) {
    return convert_chunks<half, 16, __m512>(x, [](__m512 c) {
      return _mm512_cvtps_ph(c, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    });
  }
#endif
#if defined(IC_AVX512) || defined(IC_AVX2)
  if constexpr (N % 8 == 0) {
    return convert_chunks<half, 8, __m256>(x, [](__m256 c) {
      return _mm256_cvtps_ph(c, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    });
  }
#endif
  return map_lanes<half>(x, [](float f) { return half(f); });
}
template <int N>
IC_INLINE Vec<float, N> to_float(const Vec<bfloat16, N>& x) {
  const raw_t<uint32_t, N> bits = __builtin_convertvector(x.v, raw_t<uint32_t, N>) << 16;
  return Vec<float, N>{(raw_t<float, N>)bits};
}
template <int N>
IC_INLINE Vec<bfloat16, N> to_bfloat16(const Vec<float, N>& x) {
  const raw_t<uint32_t, N> u = (raw_t<uint32_t, N>)x.v;
  const raw_t<uint32_t, N> rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  const raw_t<uint32_t, N> canonical_nan = raw_t<uint32_t, N>{} + 0x7FC0u;
  const raw_t<uint32_t, N> bits = x.v != x.v ? canonical_nan : rounded;
  return Vec<bfloat16, N>{__builtin_convertvector(bits, raw_t<uint16_t, N>)};
}

template <class To, class From, int N>
IC_INLINE Vec<To, N> cast(const Vec<From, N>& x) {
  if constexpr (std::is_same<To, From>::value) {
    return x;
  } else if constexpr (is_reduced_float_v<From>) {
    return cast<To>(to_float(x));
  } else if constexpr (std::is_same<To, half>::value) {
    return to_half(cast<float>(x));
  } else if constexpr (std::is_same<To, bfloat16>::value) {
    return to_bfloat16(cast<float>(x));
  } else if constexpr (is_bool_v<To>) {
    return nonzero(x);
  } else if constexpr (is_float_v<From> && is_int_v<To> && sizeof(To) < 4) {
    return cast<To>(cast<int32_t>(x));
  } else if constexpr (is_float_v<From> && is_int_v<To>) {
    // As the scalar cast: NaN and out-of-range lanes give INT_MIN, as x86's conversions do.
    // Stated, not left to the instruction: the conversion is undefined there in C++, and
    // without AVX-512 (no vcvttps2qq) GCC 12 folded float -> int64 -> float into trunc(x),
    // which kept NaN and inf.
    using Raw = typename Vec<To, N>::raw;
    constexpr From kLow = static_cast<From>(std::numeric_limits<To>::min());
    const Raw in_range = __builtin_convertvector((x.v >= kLow) & (x.v < -kLow), Raw);
    const Raw converted = __builtin_convertvector(x.v, Raw);
    return Vec<To, N>{(converted & in_range) | (std::numeric_limits<To>::min() & ~in_range)};
  } else {
    return Vec<To, N>{__builtin_convertvector(x.v, typename Vec<To, N>::raw)};
  }
}

}  // namespace ic
