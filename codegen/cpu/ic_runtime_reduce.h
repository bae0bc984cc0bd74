/// \file
/// Part of ic_runtime.h (included from there, after its macros): reduction identities,
/// argmax/argmin and Welford updates, horizontal combines in a fixed order.
#pragma once

namespace ic {

// ---------------------------------------------------------------------------------------------
// 5. Reductions. Identities, NaN-propagating argmax/argmin (NaN counts as the extreme for
//    both, first index on ties), Welford, and horizontal combines in a fixed tree order:
//    lanes [0, N/2) with [N/2, N), then halves again, so results never depend on timing.

template <class T>
IC_INLINE T lowest() {
  if constexpr (is_float_v<T>)
    return -std::numeric_limits<T>::infinity();
  else
    return std::numeric_limits<T>::lowest();
}
template <class T>
IC_INLINE T highest() {
  if constexpr (is_float_v<T>)
    return std::numeric_limits<T>::infinity();
  else
    return std::numeric_limits<T>::max();
}
/// The index of an argmax/argmin accumulator that has seen nothing (loses every tie).
constexpr int64_t kNoIndex = std::numeric_limits<int64_t>::max();

/// Whether (v, i) replaces (best, best_i): NaN beats numbers, then the larger (argmax) or
/// smaller (argmin) value, then the smaller index.
template <bool kMax, class T>
IC_INLINE bool arg_takes(T v, int64_t i, T best, int64_t best_i) {
  if (isnan(best)) return isnan(v) && i < best_i;
  if (isnan(v)) return true;
  const bool better = kMax ? v > best : v < best;
  return better || (v == best && i < best_i);
}
/// The same decision for all lanes, as a select mask of T's width (no bool round trips:
/// this runs once per element).
template <bool kMax, class T, int N>
IC_INLINE raw_t<sint_t<T>, N> arg_takes(const Vec<T, N>& v, const Vec<int64_t, N>& i,
                                        const Vec<T, N>& best, const Vec<int64_t, N>& best_i) {
  using M = raw_t<sint_t<T>, N>;
  const M earlier = __builtin_convertvector(i.v < best_i.v, M);
  const M better = kMax ? M(v.v > best.v) : M(v.v < best.v);
  const M number_case = better | (M(v.v == best.v) & earlier);
  if constexpr (is_float_v<T>) {
    const M v_nan = v.v != v.v;
    const M best_nan = best.v != best.v;
    return (best_nan & v_nan & earlier) | (~best_nan & (v_nan | number_case));
  } else {
    return number_case;
  }
}
template <bool kMax, class T>
IC_INLINE void arg_update(T& best, int64_t& best_i, T v, int64_t i) {
  if (arg_takes<kMax>(v, i, best, best_i)) {
    best = v;
    best_i = i;
  }
}
#if defined(IC_AVX512)
/// Bool lanes (N <= 16) as an AVX-512 lane mask.
template <int N>
IC_INLINE uint32_t to_kmask(const Vec<bool, N>& c) {
  if constexpr (N == 16) {
    return _mm_test_epi8_mask((__m128i)c.v, (__m128i)c.v);
  } else if constexpr (N == 8) {
    const __m128i bytes = _mm_cvtsi64_si128((long long)c.v);
    return _mm_test_epi8_mask(bytes, bytes);
  } else {
    uint32_t bits = 0;
    for (int l = 0; l < N; ++l) bits |= uint32_t(c.v[l] != 0) << l;
    return bits;
  }
}
/// The 8-lane float/double update on AVX-512 lane masks: no mask-width conversions on the
/// loop-carried path.
template <bool kMax, class T>
IC_INLINE void arg_update_avx512(Vec<T, 8>& best, Vec<int64_t, 8>& best_i, const Vec<T, 8>& v,
                                 const Vec<int64_t, 8>& i, __mmask8 active) {
  const __m512i bi = (__m512i)best_i.v, xi = (__m512i)i.v;
  const __mmask8 earlier = _mm512_cmplt_epi64_mask(xi, bi);
  __mmask8 better, equal, x_nan, b_nan;
  if constexpr (std::is_same<T, float>::value) {
    const __m256 b = (__m256)best.v, x = (__m256)v.v;
    better = _mm256_cmp_ps_mask(x, b, kMax ? _CMP_GT_OQ : _CMP_LT_OQ);
    equal = _mm256_cmp_ps_mask(x, b, _CMP_EQ_OQ);
    x_nan = _mm256_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    b_nan = _mm256_cmp_ps_mask(b, b, _CMP_UNORD_Q);
  } else {
    const __m512d b = (__m512d)best.v, x = (__m512d)v.v;
    better = _mm512_cmp_pd_mask(x, b, kMax ? _CMP_GT_OQ : _CMP_LT_OQ);
    equal = _mm512_cmp_pd_mask(x, b, _CMP_EQ_OQ);
    x_nan = _mm512_cmp_pd_mask(x, x, _CMP_UNORD_Q);
    b_nan = _mm512_cmp_pd_mask(b, b, _CMP_UNORD_Q);
  }
  const __mmask8 take = static_cast<__mmask8>(
      ((b_nan & x_nan & earlier) | (~b_nan & (x_nan | better | (equal & earlier)))) & active);
  if constexpr (std::is_same<T, float>::value) {
    best.v = (raw_t<float, 8>)_mm256_mask_blend_ps(take, (__m256)best.v, (__m256)v.v);
  } else {
    best.v = (raw_t<double, 8>)_mm512_mask_blend_pd(take, (__m512d)best.v, (__m512d)v.v);
  }
  best_i.v = (raw_t<int64_t, 8>)_mm512_mask_blend_epi64(take, bi, xi);
}
#endif

template <bool kMax, class T, int N>
IC_INLINE void arg_update(Vec<T, N>& best, Vec<int64_t, N>& best_i, const Vec<T, N>& v,
                          const Vec<int64_t, N>& i) {
#if defined(IC_AVX512)
  if constexpr (N == 8 && is_float_v<T>) return arg_update_avx512<kMax>(best, best_i, v, i, 0xFF);
#endif
  const auto take = arg_takes<kMax>(v, i, best, best_i);
  best.v = take ? v.v : best.v;
  best_i.v = __builtin_convertvector(take, raw_t<int64_t, N>) ? i.v : best_i.v;
}
template <bool kMax, class T, int N>
IC_INLINE void arg_update(Vec<T, N>& best, Vec<int64_t, N>& best_i, const Vec<T, N>& v,
                          const Vec<int64_t, N>& i, const Vec<bool, N>& active) {
#if defined(IC_AVX512)
  if constexpr (N == 8 && is_float_v<T>) {
    return arg_update_avx512<kMax>(best, best_i, v, i, static_cast<__mmask8>(to_kmask(active)));
  }
#endif
  const auto take = arg_takes<kMax>(v, i, best, best_i) & to_mask<T>(active);
  best.v = take ? v.v : best.v;
  best_i.v = __builtin_convertvector(take, raw_t<int64_t, N>) ? i.v : best_i.v;
}
/// Ordered updates: the caller guarantees that each lane sees its indices in increasing order
/// (the accumulator's only update is in a loop over its index, from its identity: the
/// emitter's ordered_arg_updates_), so a tie or a later NaN never replaces the best and the
/// index compare drops off the loop-carried path: a column argmax (1024 x 4096, 2 threads)
/// 1.66 -> 1.03 ms. The first element is taken whatever it is (best_i still kNoIndex).
template <bool kMax, class T>
IC_INLINE void arg_update_ordered(T& best, int64_t& best_i, T v, int64_t i) {
  const bool take = best_i == kNoIndex ||
                    (!isnan(best) && (isnan(v) || (kMax ? v > best : v < best)));
  if (take) {
    best = v;
    best_i = i;
  }
}
template <bool kMax, class T, int N>
IC_INLINE void arg_update_ordered(Vec<T, N>& best, Vec<int64_t, N>& best_i, const Vec<T, N>& v,
                                  const Vec<int64_t, N>& i, const Vec<bool, N>* active = nullptr) {
#if defined(IC_AVX512)
  if constexpr (N == 8 && std::is_same<T, float>::value) {
    const __m256 b = (__m256)best.v, x = (__m256)v.v;
    const __m512i bi = (__m512i)best_i.v;
    __mmask8 take = _mm256_cmp_ps_mask(x, b, kMax ? _CMP_GT_OQ : _CMP_LT_OQ) |
                    (_mm256_cmp_ps_mask(x, x, _CMP_UNORD_Q) & ~_mm256_cmp_ps_mask(b, b, _CMP_UNORD_Q)) |
                    _mm512_cmpeq_epi64_mask(bi, _mm512_set1_epi64(kNoIndex));
    if (active) take &= static_cast<__mmask8>(to_kmask(*active));
    best.v = (raw_t<float, 8>)_mm256_mask_blend_ps(take, b, x);
    best_i.v = (raw_t<int64_t, 8>)_mm512_mask_blend_epi64(take, bi, (__m512i)i.v);
    return;
  }
  if constexpr (N == 16 && std::is_same<T, float>::value) {
    // 16 lanes (loop_plan.cpp gives them to ordered float updates): the indices in two
    // registers, one 16-bit lane mask for both.
    const __m512 b = (__m512)best.v, x = (__m512)v.v;
    __m512i lo, hi, ilo, ihi;
    std::memcpy(&lo, &best_i.v, 64);
    std::memcpy(&hi, reinterpret_cast<const char*>(&best_i.v) + 64, 64);
    std::memcpy(&ilo, &i.v, 64);
    std::memcpy(&ihi, reinterpret_cast<const char*>(&i.v) + 64, 64);
    const __m512i none = _mm512_set1_epi64(kNoIndex);
    __mmask16 take = _mm512_cmp_ps_mask(x, b, kMax ? _CMP_GT_OQ : _CMP_LT_OQ) |
                     (_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q) & ~_mm512_cmp_ps_mask(b, b, _CMP_UNORD_Q)) |
                     static_cast<__mmask16>(_mm512_cmpeq_epi64_mask(lo, none) |
                                            (_mm512_cmpeq_epi64_mask(hi, none) << 8));
    if (active) take &= static_cast<__mmask16>(to_kmask(*active));
    best.v = (raw_t<float, 16>)_mm512_mask_blend_ps(take, b, x);
    lo = _mm512_mask_blend_epi64(static_cast<__mmask8>(take), lo, ilo);
    hi = _mm512_mask_blend_epi64(static_cast<__mmask8>(take >> 8), hi, ihi);
    std::memcpy(&best_i.v, &lo, 64);
    std::memcpy(reinterpret_cast<char*>(&best_i.v) + 64, &hi, 64);
    return;
  }
#endif
  using M = raw_t<sint_t<T>, N>;
  const M fresh = __builtin_convertvector(best_i.v == kNoIndex, M);
  M take = fresh | (kMax ? M(v.v > best.v) : M(v.v < best.v));
  if constexpr (is_float_v<T>) {
    const M best_nan = best.v != best.v, v_nan = v.v != v.v;
    take = fresh | (~best_nan & (v_nan | take));
  }
  if (active) take &= to_mask<T>(*active);
  best.v = take ? v.v : best.v;
  best_i.v = __builtin_convertvector(take, raw_t<int64_t, N>) ? i.v : best_i.v;
}
template <class T>
IC_INLINE void argmax_update_ordered(T& best, int64_t& best_i, T v, int64_t i) {
  arg_update_ordered<true>(best, best_i, v, i);
}
template <class T>
IC_INLINE void argmin_update_ordered(T& best, int64_t& best_i, T v, int64_t i) {
  arg_update_ordered<false>(best, best_i, v, i);
}
template <class T, int N, class... Mask>
IC_INLINE void argmax_update_ordered(Vec<T, N>& best, Vec<int64_t, N>& best_i, const Vec<T, N>& v,
                                     const Vec<int64_t, N>& i, const Mask&... active) {
  arg_update_ordered<true>(best, best_i, v, i, &active...);
}
template <class T, int N, class... Mask>
IC_INLINE void argmin_update_ordered(Vec<T, N>& best, Vec<int64_t, N>& best_i, const Vec<T, N>& v,
                                     const Vec<int64_t, N>& i, const Mask&... active) {
  arg_update_ordered<false>(best, best_i, v, i, &active...);
}
template <class T>
IC_INLINE void argmax_update(T& best, int64_t& best_i, T v, int64_t i) {
  arg_update<true>(best, best_i, v, i);
}
template <class T>
IC_INLINE void argmin_update(T& best, int64_t& best_i, T v, int64_t i) {
  arg_update<false>(best, best_i, v, i);
}
template <class T, int N, class... Mask>
IC_INLINE void argmax_update(Vec<T, N>& best, Vec<int64_t, N>& best_i, const Vec<T, N>& v,
                             const Vec<int64_t, N>& i, const Mask&... active) {
  arg_update<true>(best, best_i, v, i, active...);
}
template <class T, int N, class... Mask>
IC_INLINE void argmin_update(Vec<T, N>& best, Vec<int64_t, N>& best_i, const Vec<T, N>& v,
                             const Vec<int64_t, N>& i, const Mask&... active) {
  arg_update<false>(best, best_i, v, i, active...);
}

/// Welford's running mean and sum of squared deviations; `count` in T like Inductor's. The
/// mean moves by delta * (1 / count), as ATen's Welford does (moments_utils.h): the copies of
/// an unrolled loop have equal counts, so they share one division (a vector division costs
/// as much as a dozen other operations).
template <class T>
IC_INLINE void welford_update(T& mean, T& m2, T& count, T x) {
  count = count + T(1);
  const T delta = x - mean;
  mean = mean + delta * (T(1) / count);
  m2 = m2 + delta * (x - mean);
}
template <class T, int N>
IC_INLINE void welford_update(Vec<T, N>& mean, Vec<T, N>& m2, Vec<T, N>& count,
                              const Vec<T, N>& x) {
  count.v = count.v + T(1);
  const auto delta = x.v - mean.v;
  mean.v = mean.v + delta * (T(1) / count.v);
  m2.v = m2.v + delta * (x.v - mean.v);
}
template <class T, int N>
IC_INLINE void welford_update(Vec<T, N>& mean, Vec<T, N>& m2, Vec<T, N>& count, const Vec<T, N>& x,
                              const Vec<bool, N>& active) {
  Vec<T, N> mean2 = mean, m22 = m2, count2 = count;
  welford_update(mean2, m22, count2, x);
  mean = where(active, mean2, mean);
  m2 = where(active, m22, m2);
  count = where(active, count2, count);
}
/// Chan et al.'s parallel combination of two Welford states (a := a + b).
template <class T>
IC_INLINE void welford_combine(T& mean, T& m2, T& count, T mean_b, T m2_b, T count_b) {
  const T total = count + count_b;
  if (count_b == T(0)) return;
  const T delta = mean_b - mean;
  const T b_share = count_b / total;
  mean = mean + delta * b_share;
  m2 = m2 + m2_b + delta * delta * count * b_share;
  count = total;
}
/// The same for each lane (the same operations, so the same roundings).
template <class T, int N>
IC_INLINE void welford_combine(Vec<T, N>& mean, Vec<T, N>& m2, Vec<T, N>& count,
                               const Vec<T, N>& mean_b, const Vec<T, N>& m2_b,
                               const Vec<T, N>& count_b) {
  static_assert(is_float_v<T>, "Welford states are float or double");
  const auto total = count.v + count_b.v;
  const auto b_empty = count_b.v == T(0);
  const auto delta = mean_b.v - mean.v;
  const auto b_share = count_b.v / total;  // 0/0 where both are empty: not taken
  mean.v = b_empty ? mean.v : mean.v + delta * b_share;
  m2.v = b_empty ? m2.v : m2.v + m2_b.v + delta * delta * count.v * b_share;
  count.v = b_empty ? count.v : total;
}

/// Combines lanes l and l + N/2, then halves again: a fixed order, done on half vectors.
/// f is overloaded for scalars and vectors (a generic lambda over ic:: ops).
template <class T, int N, class F>
IC_INLINE T tree_reduce(const Vec<T, N>& x, F f) {
  if constexpr (N == 1) {
    return x.lane(0);
  } else if constexpr (N == 2) {
    return f(x.lane(0), x.lane(1));
  } else {
    return tree_reduce(f(low_half(x), high_half(x)), f);
  }
}
template <class T, int N>
IC_INLINE T reduce_sum(const Vec<T, N>& x) {
  return tree_reduce(x, [](const auto& a, const auto& b) { return add(a, b); });
}
template <class T, int N>
IC_INLINE T reduce_prod(const Vec<T, N>& x) {
  return tree_reduce(x, [](const auto& a, const auto& b) { return mul(a, b); });
}
template <class T, int N>
IC_INLINE T reduce_max(const Vec<T, N>& x) {
  return tree_reduce(x, [](const auto& a, const auto& b) { return maximum(a, b); });
}
template <class T, int N>
IC_INLINE T reduce_min(const Vec<T, N>& x) {
  return tree_reduce(x, [](const auto& a, const auto& b) { return minimum(a, b); });
}
template <int N>
IC_INLINE bool reduce_any(const Vec<bool, N>& x) {
  bool r = false;
  for (int l = 0; l < N; ++l) r = r || x.v[l];
  return r;
}
template <int N>
IC_INLINE bool reduce_all(const Vec<bool, N>& x) {
  bool r = true;
  for (int l = 0; l < N; ++l) r = r && x.v[l];
  return r;
}
/// best := the better of (best, best_i) and (other, other_i), lane by lane (arg_takes' order,
/// so the result does not depend on which side is which).
template <bool kMax, class T, int N>
IC_INLINE void arg_combine(Vec<T, N>& best, Vec<int64_t, N>& best_i, const Vec<T, N>& other,
                           const Vec<int64_t, N>& other_i) {
  if constexpr (is_float_v<T> || is_int_v<T>) {
    arg_update<kMax>(best, best_i, other, other_i);
  } else {  // bool, half, bfloat16: no vector comparisons of their lane bits
    for (int l = 0; l < N; ++l) {
      T value = best.lane(l);
      int64_t index = best_i.v[l];
      arg_update<kMax>(value, index, other.lane(l), other_i.v[l]);
      best.set_lane(l, value);
      best_i.v[l] = index;
    }
  }
}
template <class T, int N>
IC_INLINE void argmax_combine(Vec<T, N>& best, Vec<int64_t, N>& best_i, const Vec<T, N>& other,
                              const Vec<int64_t, N>& other_i) {
  arg_combine<true>(best, best_i, other, other_i);
}
template <class T, int N>
IC_INLINE void argmin_combine(Vec<T, N>& best, Vec<int64_t, N>& best_i, const Vec<T, N>& other,
                              const Vec<int64_t, N>& other_i) {
  arg_combine<false>(best, best_i, other, other_i);
}
/// Lanes l and l + N/2 (lane l the incumbent), then halves again.
template <bool kMax, class T, int N>
IC_INLINE int64_t reduce_arg(const Vec<T, N>& best, const Vec<int64_t, N>& best_i) {
  if constexpr (N == 1) {
    return best_i.v[0];
  } else {
    Vec<T, N / 2> lo = low_half(best);
    Vec<int64_t, N / 2> lo_i = low_half(best_i);
    arg_combine<kMax>(lo, lo_i, high_half(best), high_half(best_i));
    return reduce_arg<kMax>(lo, lo_i);
  }
}
template <class T, int N>
IC_INLINE int64_t reduce_argmax(const Vec<T, N>& best, const Vec<int64_t, N>& best_i) {
  return reduce_arg<true>(best, best_i);
}
template <class T, int N>
IC_INLINE int64_t reduce_argmin(const Vec<T, N>& best, const Vec<int64_t, N>& best_i) {
  return reduce_arg<false>(best, best_i);
}
/// The sum of squared deviations of all lanes together: lanes l and l + N/2, then halves
/// again.
template <class T, int N>
IC_INLINE T reduce_welford_m2(const Vec<T, N>& mean, const Vec<T, N>& m2, const Vec<T, N>& count) {
  if constexpr (N == 1) {
    return m2.lane(0);
  } else {
    Vec<T, N / 2> lo_mean = low_half(mean), lo_m2 = low_half(m2), lo_count = low_half(count);
    welford_combine(lo_mean, lo_m2, lo_count, high_half(mean), high_half(m2), high_half(count));
    return reduce_welford_m2(lo_mean, lo_m2, lo_count);
  }
}

}  // namespace ic
