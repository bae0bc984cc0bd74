/// \file
/// Part of ic_runtime.h (included from there, after its macros): ic::Vec, lane helpers,
/// arithmetic, comparisons and logic.
#pragma once

namespace ic {

// ---------------------------------------------------------------------------------------------
// 3. Vectors.

template <class T>
struct lane_type {
  using type = T;
};
template <>
struct lane_type<bool> {
  using type = uint8_t;
};
template <>
struct lane_type<half> {
  using type = uint16_t;
};
template <>
struct lane_type<bfloat16> {
  using type = uint16_t;
};
template <class T>
using lane_t = typename lane_type<T>::type;

template <class L, int N>
struct raw_vec {
  typedef L type __attribute__((vector_size(sizeof(L) * N)));
  /// The same with alignment 1, allowed to alias anything: for loads and stores.
  typedef L unaligned __attribute__((vector_size(sizeof(L) * N), aligned(1), may_alias));
};
template <class L, int N>
using raw_t = typename raw_vec<L, N>::type;

template <size_t S>
struct int_of_size;
template <>
struct int_of_size<1> {
  using type = int8_t;
};
template <>
struct int_of_size<2> {
  using type = int16_t;
};
template <>
struct int_of_size<4> {
  using type = int32_t;
};
template <>
struct int_of_size<8> {
  using type = int64_t;
};
template <class T>
using sint_t = typename int_of_size<sizeof(lane_t<T>)>::type;
template <class T>
using uint_t = std::make_unsigned_t<sint_t<T>>;

/// N lanes of T (N a power of two).
template <class T, int N>
struct Vec {
  using value_type = T;
  using raw = raw_t<lane_t<T>, N>;
  raw v;
  IC_INLINE T lane(int l) const {
    if constexpr (is_bool_v<T>)
      return v[l] != 0;
    else if constexpr (is_reduced_float_v<T>)
      return T::from_bits(v[l]);
    else
      return v[l];
  }
  IC_INLINE void set_lane(int l, T x) { v[l] = to_lane(x); }
  /// x as lane bits.
  static IC_INLINE lane_t<T> to_lane(T x) {
    if constexpr (is_reduced_float_v<T>)
      return x.bits;
    else
      return static_cast<lane_t<T>>(x);
  }
};

// Moving vectors. Whole vectors move only as vector types: loads and stores through
// raw_vec::unaligned (as <immintrin.h>'s _mm512_loadu_ps does), halves and concatenations
// through __builtin_shufflevector, intrinsic types by vector casts. Never std::memcpy or a
// lane-copy loop over a whole vector: GCC 12 folds those into 256/512-bit integer moves
// (OImode/XImode), and it miscompiles such a move of a compile-time-constant vector whose
// lanes differ. The constant becomes a broadcast of its first lane(s): RTL DSE, forwarding a
// stored {1 x6, 0 x10} float vector into the 256-bit integer loads of a copy, read lanes 0-7
// as all 1.0 (-march=native); expanding VIEW_CONVERT_EXPR<uint512_t>(constant) gave all 16
// lanes 1.0 (-march=x86-64-v4). Constant vectors are common: a constant-extent loop's tail
// mask, and the Welford counts it selects, fold to constants. (Seen with g++ 12.2 at -O2 and
// -O3; a welford_m2 over 6 floats reported the variance of 8 values.)

template <class T, int N>
IC_INLINE Vec<T, N> load_vec(const void* p) {
  return Vec<T, N>{*static_cast<const typename raw_vec<lane_t<T>, N>::unaligned*>(p)};
}
template <class T, int N>
IC_INLINE void store_vec(void* p, const Vec<T, N>& x) {
  *static_cast<typename raw_vec<lane_t<T>, N>::unaligned*>(p) = x.v;
}
/// Lanes [start, start + K) of a raw vector, as a raw vector of K lanes.
template <int Start, class V, size_t... I>
IC_INLINE auto lane_slice(const V& v, std::index_sequence<I...>) {
  return __builtin_shufflevector(v, v, (Start + static_cast<int>(I))...);
}
template <class T, int N>
IC_INLINE Vec<T, N / 2> low_half(const Vec<T, N>& x) {
  static_assert(N >= 2, "halves of a vector");
  return Vec<T, N / 2>{lane_slice<0>(x.v, std::make_index_sequence<N / 2>())};
}
template <class T, int N>
IC_INLINE Vec<T, N / 2> high_half(const Vec<T, N>& x) {
  static_assert(N >= 2, "halves of a vector");
  return Vec<T, N / 2>{lane_slice<N / 2>(x.v, std::make_index_sequence<N / 2>())};
}
template <class T, int N, size_t... I>
IC_INLINE Vec<T, 2 * N> concat_impl(const Vec<T, N>& lo, const Vec<T, N>& hi,
                                    std::index_sequence<I...>) {
  return Vec<T, 2 * N>{__builtin_shufflevector(lo.v, hi.v, static_cast<int>(I)...)};
}
/// lo's lanes, then hi's.
template <class T, int N>
IC_INLINE Vec<T, 2 * N> concat(const Vec<T, N>& lo, const Vec<T, N>& hi) {
  return concat_impl(lo, hi, std::make_index_sequence<2 * N>());
}

/// Bool lanes written one by one, made 0/1 again. GCC 12's SLP vectorizer turns such a lane
/// loop (r[l] = (uint8_t)(x[l] != 0)) into a vector comparison whose -1/0 mask it stores as
/// the bytes unchanged (a VIEW_CONVERT_EXPR instead of a select of 1/0): a true lane read 255.
template <class R, int N>
IC_INLINE Vec<R, N> bool_lanes_fixed(Vec<R, N> r) {
  if constexpr (is_bool_v<R>) r.v &= uint8_t(1);
  return r;
}
template <class R, class T, int N, class F>
IC_INLINE Vec<R, N> map_lanes(const Vec<T, N>& x, F f) {
  Vec<R, N> r;
  for (int l = 0; l < N; ++l) r.set_lane(l, f(x.lane(l)));
  return bool_lanes_fixed(r);
}
template <class R, class T, int N, class F>
IC_INLINE Vec<R, N> map_lanes2(const Vec<T, N>& a, const Vec<T, N>& b, F f) {
  Vec<R, N> r;
  for (int l = 0; l < N; ++l) r.set_lane(l, f(a.lane(l), b.lane(l)));
  return bool_lanes_fixed(r);
}
/// Applies f to register-sized chunks of K lanes, each passed as the intrinsic type CIn; f's
/// result (an intrinsic type of K lanes of R) becomes the chunk of the result.
template <class R, int K, class CIn, class T, int N, class F>
IC_INLINE Vec<R, N> convert_chunks(const Vec<T, N>& x, F f) {
  static_assert(N % K == 0 && sizeof(CIn) == K * sizeof(lane_t<T>), "chunk size");
  if constexpr (N == K) {
    return Vec<R, N>{(typename Vec<R, N>::raw)f((CIn)x.v)};
  } else {
    return concat(convert_chunks<R, K, CIn>(low_half(x), f),
                  convert_chunks<R, K, CIn>(high_half(x), f));
  }
}
/// Applies f to register-sized chunks of K lanes (C: the intrinsic type of such a chunk).
template <int K, class C, class T, int N, class F>
IC_INLINE Vec<T, N> map_chunks(const Vec<T, N>& x, F f) {
  return convert_chunks<T, K, C>(x, f);
}
template <int K, class C, class T, int N, class F>
IC_INLINE Vec<T, N> map_chunks2(const Vec<T, N>& a, const Vec<T, N>& b, F f) {
  static_assert(N % K == 0 && sizeof(C) == K * sizeof(lane_t<T>), "chunk size");
  if constexpr (N == K) {
    return Vec<T, N>{(typename Vec<T, N>::raw)f((C)a.v, (C)b.v)};
  } else {
    return concat(map_chunks2<K, C>(low_half(a), low_half(b), f),
                  map_chunks2<K, C>(high_half(a), high_half(b), f));
  }
}

template <int N, class T>
IC_INLINE Vec<T, N> broadcast(T x) {
  // x - 0, not 0 + x: IEEE gives 0 + -0 = +0, which lost the sign of a broadcast -0.0
  // (x / broadcast(-0.0) was x / +0).
  return Vec<T, N>{Vec<T, N>::to_lane(x) - typename Vec<T, N>::raw{}};
}
/// {0, 1, ..., N - 1} in lanes of L: a compile-time constant.
template <class L, int N>
IC_INLINE raw_t<L, N> lane_numbers() {
  raw_t<L, N> r;
  for (int l = 0; l < N; ++l) r[l] = static_cast<L>(l);
  return r;
}
/// {start, start + step, ..., start + (N - 1) * step}
template <int N>
IC_INLINE Vec<int64_t, N> iota(int64_t start, int64_t step = 1) {
  if (step == 1) return Vec<int64_t, N>{lane_numbers<int64_t, N>() + start};
  return Vec<int64_t, N>{lane_numbers<int64_t, N>() * step + start};
}
/// Byte I·W of each W-byte lane of m (its lowest: all lanes of a mask are -1 or 0), by one
/// byte shuffle. Without AVX-512, GCC 12 scalarized __builtin_convertvector narrowing a mask of
/// one or two xmm/ymm registers to bytes (an extract, shift and or per lane: 53 instructions
/// for a 4-lane compare-and-select against 26 shuffled, 139 against 80 for 8 lanes), which
/// made a channels-last max_pool2d with indices (int64 lanes beside float ones) 5x slower than
/// eager on an AVX2 machine. With AVX-512 (vpmovdb) and for wider masks the conversion is
/// shorter, so it stays there.
template <int N, class M, size_t... I>
IC_INLINE raw_t<uint8_t, N> lowest_bytes(const M& m, std::index_sequence<I...>) {
  constexpr size_t W = sizeof(m[0]);
  raw_t<uint8_t, N * W> bytes;
  __builtin_memcpy(&bytes, &m, sizeof(bytes));
  return __builtin_shufflevector(bytes, bytes, (I * W)...);
}
/// A comparison result (lanes -1/0 of any width) as bool lanes.
template <int N, class M>
IC_INLINE Vec<bool, N> from_mask(const M& m) {
#if !defined(__AVX512F__) && (defined(__clang__) || __GNUC__ >= 12)  // __builtin_shufflevector
  if constexpr (sizeof(m[0]) > 1 && sizeof(m) <= 32)
    return Vec<bool, N>{lowest_bytes<N>(m, std::make_index_sequence<N>{}) & uint8_t(1)};
#endif
  return Vec<bool, N>{__builtin_convertvector(m, raw_t<uint8_t, N>) & uint8_t(1)};
}
/// Lanes [0, n) true: the active lanes of a loop tail.
template <int N>
IC_INLINE Vec<bool, N> first_n(int64_t n) {
  const int32_t count = static_cast<int32_t>(n < 0 ? 0 : (n > N ? N : n));
  return from_mask<N>(lane_numbers<int32_t, N>() < count);
}
/// Bool lanes as a select mask for lanes of T (-1/0 of T's width).
template <class T, int N>
IC_INLINE raw_t<sint_t<T>, N> to_mask(const Vec<bool, N>& c) {
  return __builtin_convertvector(c.v, raw_t<sint_t<T>, N>) != 0;
}
/// Lanes l where d0 + c*l < 0 (<= 0, == 0, != 0): a loop mask such as `x < n` without int64
/// lane vectors. |c| <= 2^20; d0 is clamped to +-2^30, which keeps every lane's sign.
#define IC_AFFINE_CONDITION(name, op)                                                         \
  template <int N>                                                                            \
  IC_INLINE Vec<bool, N> affine_##name(int64_t d0, int64_t c) {                               \
    const int64_t limit = int64_t(1) << 30;                                                   \
    const int32_t d = static_cast<int32_t>(d0 < -limit ? -limit : (d0 > limit ? limit : d0)); \
    return from_mask<N>(lane_numbers<int32_t, N>() * static_cast<int32_t>(c) + d op 0);       \
  }
IC_AFFINE_CONDITION(lt, <)
IC_AFFINE_CONDITION(le, <=)
IC_AFFINE_CONDITION(eq, ==)
IC_AFFINE_CONDITION(ne, !=)
#undef IC_AFFINE_CONDITION

template <class T, int N>
IC_INLINE Vec<T, N> where(const Vec<bool, N>& c, const Vec<T, N>& a, const Vec<T, N>& b) {
  return Vec<T, N>{to_mask<T>(c) ? a.v : b.v};
}
template <int N>
IC_INLINE bool any_lane(const Vec<bool, N>& c) {
  bool r = false;
  for (int l = 0; l < N; ++l) r |= c.v[l] != 0;
  return r;
}

template <class T, int N>
using uraw_t = raw_t<uint_t<T>, N>;

// Arithmetic. Integer lanes wrap (computed unsigned).
#define IC_VEC_ARITH(name, op)                                                             \
  template <class T, int N>                                                                \
  IC_INLINE Vec<T, N> name(const Vec<T, N>& a, const Vec<T, N>& b) {                       \
    if constexpr (is_float_v<T>)                                                           \
      return Vec<T, N>{a.v op b.v};                                                        \
    else if constexpr (is_int_v<T>)                                                        \
      return Vec<T, N>{(typename Vec<T, N>::raw)((uraw_t<T, N>)a.v op(uraw_t<T, N>) b.v)}; \
    else                                                                                   \
      return map_lanes2<T>(a, b, [](T x, T y) { return name(x, y); });                     \
  }
IC_VEC_ARITH(add, +)
IC_VEC_ARITH(sub, -)
IC_VEC_ARITH(mul, *)
#undef IC_VEC_ARITH

template <class T, int N>
IC_INLINE Vec<T, N> div(const Vec<T, N>& a, const Vec<T, N>& b) {
  if constexpr (is_float_v<T>)
    return Vec<T, N>{a.v / b.v};
  else
    return map_lanes2<T>(a, b, [](T x, T y) { return div(x, y); });
}
template <class T, int N>
IC_INLINE Vec<T, N> neg(const Vec<T, N>& a) {
  if constexpr (is_float_v<T>)
    return Vec<T, N>{-a.v};
  else if constexpr (is_int_v<T>)
    return Vec<T, N>{(typename Vec<T, N>::raw)(uraw_t<T, N>{} - (uraw_t<T, N>)a.v)};
  else
    return a;
}
template <class T, int N>
IC_INLINE Vec<T, N> abs(const Vec<T, N>& a) {
  if constexpr (is_float_v<T>) {
    const uint_t<T> mask = std::numeric_limits<sint_t<T>>::max();
    return Vec<T, N>{(typename Vec<T, N>::raw)((uraw_t<T, N>)a.v & mask)};
  } else if constexpr (is_int_v<T> && std::is_signed<T>::value) {
    return Vec<T, N>{a.v < 0 ? neg(a).v : a.v};
  } else {
    return a;
  }
}
template <class T, int N>
IC_INLINE Vec<T, N> reciprocal(const Vec<T, N>& a) {
  if constexpr (is_float_v<T>)
    return Vec<T, N>{T(1) / a.v};
  else
    return map_lanes<T>(a, [](T x) { return reciprocal(x); });
}

// Comparisons -> bool lanes. Bool and unsigned lanes compare unsigned, as they should.
#define IC_VEC_COMPARE(name, op)                                                        \
  template <class T, int N>                                                             \
  IC_INLINE Vec<bool, N> name(const Vec<T, N>& a, const Vec<T, N>& b) {                 \
    if constexpr (is_reduced_float_v<T>)                                                \
      return map_lanes2<bool>(a, b, [](T x, T y) { return name(float(x), float(y)); }); \
    else                                                                                \
      return from_mask<N>(a.v op b.v);                                                  \
  }
IC_VEC_COMPARE(eq, ==)
IC_VEC_COMPARE(ne, !=)
IC_VEC_COMPARE(lt, <)
IC_VEC_COMPARE(le, <=)
IC_VEC_COMPARE(gt, >)
IC_VEC_COMPARE(ge, >=)
#undef IC_VEC_COMPARE

template <class T, int N>
IC_INLINE Vec<bool, N> nonzero(const Vec<T, N>& a) {
  if constexpr (is_bool_v<T>)
    return a;
  else
    return ne(a, broadcast<N>(T(0)));
}
template <class T, int N>
IC_INLINE Vec<bool, N> logical_and(const Vec<T, N>& a, const Vec<T, N>& b) {
  return Vec<bool, N>{nonzero(a).v & nonzero(b).v};
}
template <class T, int N>
IC_INLINE Vec<bool, N> logical_or(const Vec<T, N>& a, const Vec<T, N>& b) {
  return Vec<bool, N>{nonzero(a).v | nonzero(b).v};
}
template <class T, int N>
IC_INLINE Vec<bool, N> logical_xor(const Vec<T, N>& a, const Vec<T, N>& b) {
  return Vec<bool, N>{nonzero(a).v ^ nonzero(b).v};
}
template <class T, int N>
IC_INLINE Vec<bool, N> logical_not(const Vec<T, N>& a) {
  return Vec<bool, N>{nonzero(a).v ^ uint8_t(1)};
}
template <class T, int N>
IC_INLINE Vec<T, N> bitwise_and(const Vec<T, N>& a, const Vec<T, N>& b) {
  return Vec<T, N>{a.v & b.v};
}
template <class T, int N>
IC_INLINE Vec<T, N> bitwise_or(const Vec<T, N>& a, const Vec<T, N>& b) {
  return Vec<T, N>{a.v | b.v};
}
template <class T, int N>
IC_INLINE Vec<T, N> bitwise_xor(const Vec<T, N>& a, const Vec<T, N>& b) {
  return Vec<T, N>{a.v ^ b.v};
}
template <class T, int N>
IC_INLINE Vec<T, N> bitwise_not(const Vec<T, N>& a) {
  if constexpr (is_bool_v<T>)
    return Vec<T, N>{a.v ^ uint8_t(1)};
  else
    return Vec<T, N>{~a.v};
}

template <class T, int N>
IC_INLINE Vec<bool, N> isnan(const Vec<T, N>& a) {
  if constexpr (is_float_v<T>)
    return from_mask<N>(a.v != a.v);
  else
    return broadcast<N>(false);
}
template <class T, int N>
IC_INLINE Vec<bool, N> isinf(const Vec<T, N>& a) {
  if constexpr (is_float_v<T>)
    return from_mask<N>(abs(a).v == std::numeric_limits<T>::infinity());
  else
    return broadcast<N>(false);
}
template <class T, int N>
IC_INLINE Vec<bool, N> signbit(const Vec<T, N>& a) {
  if constexpr (is_float_v<T>)
    return from_mask<N>((sint_t<T>)0 > (raw_t<sint_t<T>, N>)a.v);
  else
    return map_lanes<bool>(a, [](T x) { return signbit(x); });
}
template <class T, int N>
IC_INLINE Vec<T, N> sign(const Vec<T, N>& a) {
  if constexpr (is_float_v<T> || (is_int_v<T> && std::is_signed<T>::value)) {
    const auto zero = broadcast<N>(T(0));
    const auto one = broadcast<N>(T(1));
    return sub(where(gt(a, zero), one, zero), where(lt(a, zero), one, zero));
  } else if constexpr (is_int_v<T>) {
    // Unsigned: 1 where nonzero. Not a lane loop over the scalar (0 < x) - (x < 0): GCC 12's
    // SLP vectorizer (-march=znver3) kept the comparisons' -1 masks, and sign(4) read 255.
    return Vec<T, N>{(typename Vec<T, N>::raw)((a.v != 0) & 1)};
  } else {
    return map_lanes<T>(a, [](T x) { return sign(x); });
  }
}

/// NaN-propagating maximum / minimum (a NaN in `a` is taken by the mask, one in `b` by the
/// failed comparison); fmax / fmin ignore NaN.
template <class T, int N>
IC_INLINE Vec<T, N> maximum(const Vec<T, N>& a, const Vec<T, N>& b) {
  if constexpr (is_float_v<T>)
    return Vec<T, N>{(a.v > b.v) | (a.v != a.v) ? a.v : b.v};
  else
    return Vec<T, N>{a.v > b.v ? a.v : b.v};
}
template <class T, int N>
IC_INLINE Vec<T, N> minimum(const Vec<T, N>& a, const Vec<T, N>& b) {
  if constexpr (is_float_v<T>)
    return Vec<T, N>{(a.v < b.v) | (a.v != a.v) ? a.v : b.v};
  else
    return Vec<T, N>{a.v < b.v ? a.v : b.v};
}
template <class T, int N>
IC_INLINE Vec<T, N> fmax(const Vec<T, N>& a, const Vec<T, N>& b) {
  Vec<T, N> r{a.v > b.v ? a.v : b.v};
  if constexpr (is_float_v<T>) r.v = a.v != a.v ? b.v : (b.v != b.v ? a.v : r.v);
  return r;
}
template <class T, int N>
IC_INLINE Vec<T, N> fmin(const Vec<T, N>& a, const Vec<T, N>& b) {
  Vec<T, N> r{a.v < b.v ? a.v : b.v};
  if constexpr (is_float_v<T>) r.v = a.v != a.v ? b.v : (b.v != b.v ? a.v : r.v);
  return r;
}
template <class T, int N>
IC_INLINE Vec<T, N> copysign(const Vec<T, N>& a, const Vec<T, N>& b) {
  if constexpr (is_float_v<T>) {
    const uint_t<T> sign_bit = uint_t<T>(1) << (sizeof(T) * 8 - 1);
    return Vec<T, N>{(typename Vec<T, N>::raw)(((uraw_t<T, N>)a.v & ~sign_bit) |
                                               ((uraw_t<T, N>)b.v & sign_bit))};
  } else {
    return map_lanes2<T>(a, b, [](T x, T y) { return copysign(x, y); });
  }
}

// Lane-by-lane ops (integer division, shifts, ...): the scalar op on each lane.
#define IC_VEC_BINARY_BY_LANES(name)                                 \
  template <class T, int N>                                          \
  IC_INLINE Vec<T, N> name(const Vec<T, N>& a, const Vec<T, N>& b) { \
    return map_lanes2<T>(a, b, [](T x, T y) { return name(x, y); }); \
  }
IC_VEC_BINARY_BY_LANES(truncdiv)
IC_VEC_BINARY_BY_LANES(floordiv)
IC_VEC_BINARY_BY_LANES(remainder)
IC_VEC_BINARY_BY_LANES(lshift)
IC_VEC_BINARY_BY_LANES(rshift)
#undef IC_VEC_BINARY_BY_LANES
template <int N>
IC_INLINE Vec<int64_t, N> mod(const Vec<int64_t, N>& a, const Vec<int64_t, N>& b) {
  return remainder(a, b);
}

template <class T, int N>
IC_INLINE Vec<T, N> where(bool c, const Vec<T, N>& a, const Vec<T, N>& b) {
  return c ? a : b;
}

}  // namespace ic
