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
  X(exp, exp, u10)                                                                           \
  X(exp2, exp2, u10)                                                                         \
  X(expm1, expm1, u10)                                                                       \
  X(log, log, u10)                                                                           \
  X(log2, log2, u10)                                                                         \
  X(log10, log10, u10)                                                                       \
  X(log1p, log1p, u10) X(sin, sin, u10) X(cos, cos, u10) X(tan, tan, u10) X(asin, asin, u10) \
      X(acos, acos, u10) X(atan, atan, u10) X(sinh, sinh, u10) X(cosh, cosh, u10)            \
          X(tanh, tanh, u10) X(asinh, asinh, u10) X(acosh, acosh, u10) X(atanh, atanh, u10)  \
              X(erf, erf, u10) X(erfc, erfc, u15) X(lgamma, lgamma, u10)
IC_SLEEF_UNARY_OPS(IC_VEC_SLEEF_UNARY)
#undef IC_VEC_SLEEF_UNARY

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
  } else {
    return Vec<To, N>{__builtin_convertvector(x.v, typename Vec<To, N>::raw)};
  }
}

}  // namespace ic
