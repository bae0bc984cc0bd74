/// \file
/// Part of ic_runtime.h (included from there, after its macros): loads, stores, gathers,
/// scatters and indirect index checks.
#pragma once

namespace ic {

// ---------------------------------------------------------------------------------------------
// 4. Loads and stores. `n` is the number of active lanes (loop tails); lanes past it read 0
//    and are never written. Indexed and strided accesses go lane by lane in lane order, so a
//    scatter to repeated addresses leaves the last lane's value, as a serial loop would.

template <int N, class T>
IC_INLINE Vec<T, N> loadu(const T* p) {
  return load_vec<T, N>(p);
}
template <class T, int N>
IC_INLINE void storeu(T* p, const Vec<T, N>& x) {
  store_vec(p, x);
}

#if defined(IC_AVX512)
IC_INLINE uint64_t lane_bits(int64_t n) {
  return n <= 0 ? 0 : (n >= 64 ? ~uint64_t(0) : (uint64_t(1) << n) - 1);
}
template <int ES>
IC_INLINE __m512i load512_n(const void* p, int64_t n) {
  if constexpr (ES == 1)
    return _mm512_maskz_loadu_epi8(lane_bits(n), p);
  else if constexpr (ES == 2)
    return _mm512_maskz_loadu_epi16((__mmask32)lane_bits(n), p);
  else if constexpr (ES == 4)
    return _mm512_maskz_loadu_epi32((__mmask16)lane_bits(n), p);
  else
    return _mm512_maskz_loadu_epi64((__mmask8)lane_bits(n), p);
}
template <int ES>
IC_INLINE void store512_n(void* p, __m512i x, int64_t n) {
  if constexpr (ES == 1)
    _mm512_mask_storeu_epi8(p, lane_bits(n), x);
  else if constexpr (ES == 2)
    _mm512_mask_storeu_epi16(p, (__mmask32)lane_bits(n), x);
  else if constexpr (ES == 4)
    _mm512_mask_storeu_epi32(p, (__mmask16)lane_bits(n), x);
  else
    _mm512_mask_storeu_epi64(p, (__mmask8)lane_bits(n), x);
}
template <int ES>
IC_INLINE __m256i load256_n(const void* p, int64_t n) {
  if constexpr (ES == 1)
    return _mm256_maskz_loadu_epi8((__mmask32)lane_bits(n), p);
  else if constexpr (ES == 2)
    return _mm256_maskz_loadu_epi16((__mmask16)lane_bits(n), p);
  else if constexpr (ES == 4)
    return _mm256_maskz_loadu_epi32((__mmask8)lane_bits(n), p);
  else
    return _mm256_maskz_loadu_epi64((__mmask8)(lane_bits(n) & 0xF), p);
}
template <int ES>
IC_INLINE void store256_n(void* p, __m256i x, int64_t n) {
  if constexpr (ES == 1)
    _mm256_mask_storeu_epi8(p, (__mmask32)lane_bits(n), x);
  else if constexpr (ES == 2)
    _mm256_mask_storeu_epi16(p, (__mmask16)lane_bits(n), x);
  else if constexpr (ES == 4)
    _mm256_mask_storeu_epi32(p, (__mmask8)lane_bits(n), x);
  else
    _mm256_mask_storeu_epi64(p, (__mmask8)(lane_bits(n) & 0xF), x);
}
#endif

/// The first n lanes from p, the rest 0; reads nothing past p[n - 1].
template <int N, class T>
IC_INLINE Vec<T, N> loadu_n(const T* p, int64_t n) {
  constexpr int kElem = sizeof(lane_t<T>);
#if defined(IC_AVX512)
  constexpr int kBytes = N * kElem;
  using Raw = typename Vec<T, N>::raw;
  if constexpr (kBytes == 64) return Vec<T, N>{(Raw)load512_n<kElem>(p, n)};
  if constexpr (kBytes == 32) return Vec<T, N>{(Raw)load256_n<kElem>(p, n)};
  if constexpr (kBytes > 64 && kBytes % 64 == 0) {
    return concat(loadu_n<N / 2>(p, n), loadu_n<N / 2>(p + N / 2, n - N / 2));
  }
#endif
  Vec<T, N> r;
  for (int l = 0; l < N; ++l) {
    lane_t<T> x = 0;
    if (l < n) std::memcpy(&x, p + l, kElem);
    r.v[l] = x;
  }
  return r;
}
/// Writes the first n lanes only.
template <class T, int N>
IC_INLINE void storeu_n(T* p, const Vec<T, N>& x, int64_t n) {
  constexpr int kElem = sizeof(lane_t<T>);
#if defined(IC_AVX512)
  constexpr int kBytes = N * kElem;
  if constexpr (kBytes == 64) return store512_n<kElem>(p, (__m512i)x.v, n);
  if constexpr (kBytes == 32) return store256_n<kElem>(p, (__m256i)x.v, n);
  if constexpr (kBytes > 64 && kBytes % 64 == 0) {
    storeu_n(p, low_half(x), n);
    storeu_n(p + N / 2, high_half(x), n - N / 2);
    return;
  }
#endif
  for (int l = 0; l < N && l < n; ++l) {
    const lane_t<T> lane = x.v[l];
    std::memcpy(p + l, &lane, kElem);
  }
}
/// Lanes l where m[l]: p[l]; others 0.
template <int N, class T>
IC_INLINE Vec<T, N> loadu_masked(const T* p, const Vec<bool, N>& m) {
  Vec<T, N> r;
  for (int l = 0; l < N; ++l) {
    lane_t<T> x = 0;
    if (m.v[l]) std::memcpy(&x, p + l, sizeof(x));
    r.v[l] = x;
  }
  return r;
}
/// p[l * stride] for lanes l < n.
template <int N, class T>
IC_INLINE Vec<T, N> gather_strided(const T* p, int64_t stride, int64_t n = N) {
  Vec<T, N> r;
  for (int l = 0; l < N; ++l) {
    lane_t<T> x = 0;
    if (l < n) std::memcpy(&x, p + l * stride, sizeof(x));
    r.v[l] = x;
  }
  return r;
}
template <int N, class T>
IC_INLINE Vec<T, N> gather_strided_masked(const T* p, int64_t stride, const Vec<bool, N>& m) {
  Vec<T, N> r;
  for (int l = 0; l < N; ++l) {
    lane_t<T> x = 0;
    if (m.v[l]) std::memcpy(&x, p + l * stride, sizeof(x));
    r.v[l] = x;
  }
  return r;
}
/// p[l / D] for lanes l < n: the first ceil(n / D) elements, each repeated D times. A load
/// through floordiv(vector variable, D) (the backward of a stride-D pooling, a nearest
/// upsampling), which otherwise is a gather with a vector division per lane.
template <int N, int D, class T>
IC_INLINE Vec<T, N> load_repeat(const T* p, int64_t n = N) {
  static_assert(N % D == 0, "the repeat factor divides the vector width");
  const Vec<T, N / D> src = loadu_n<N / D>(p, (n + D - 1) / D);
  Vec<T, N> r;
  for (int l = 0; l < N; ++l) r.v[l] = src.v[l / D];
  return r;
}
/// p[idx[l]] for lanes l < n.
template <int N, class T>
IC_INLINE Vec<T, N> gather(const T* p, const Vec<int64_t, N>& idx, int64_t n = N) {
  Vec<T, N> r;
  for (int l = 0; l < N; ++l) {
    lane_t<T> x = 0;
    if (l < n) std::memcpy(&x, p + idx.v[l], sizeof(x));
    r.v[l] = x;
  }
  return r;
}
template <int N, class T>
IC_INLINE Vec<T, N> gather_masked(const T* p, const Vec<int64_t, N>& idx, const Vec<bool, N>& m) {
  Vec<T, N> r;
  for (int l = 0; l < N; ++l) {
    lane_t<T> x = 0;
    if (m.v[l]) std::memcpy(&x, p + idx.v[l], sizeof(x));
    r.v[l] = x;
  }
  return r;
}
template <class T, int N>
IC_INLINE void scatter_strided(T* p, int64_t stride, const Vec<T, N>& x, int64_t n = N) {
  for (int l = 0; l < N && l < n; ++l) {
    const lane_t<T> lane = x.v[l];
    std::memcpy(p + l * stride, &lane, sizeof(lane));
  }
}
template <class T, int N>
IC_INLINE void scatter(T* p, const Vec<int64_t, N>& idx, const Vec<T, N>& x, int64_t n = N) {
  for (int l = 0; l < N && l < n; ++l) {
    const lane_t<T> lane = x.v[l];
    std::memcpy(p + idx.v[l], &lane, sizeof(lane));
  }
}
/// A store whose address does not depend on the lane: the last active lane wins.
template <class T, int N>
IC_INLINE void store_last_lane(T* p, const Vec<T, N>& x, int64_t n = N) {
  if (n <= 0) return;
  const lane_t<T> lane = x.v[(n < N ? n : N) - 1];
  std::memcpy(p, &lane, sizeof(lane));
}

// ---------------------------------------------------------------------------------------------
// 4b. Transposed tiles (codegen/cpu/transposed_tiles.cpp): a tiled transpose's read copied,
//     before the tile's loops, into a stack array in the order its vector loop reads it.

#if defined(IC_AVX512)
constexpr int kTransposeBlock = 16;
/// Rows r[0..15] of 16 x 32-bit lanes become its columns: 32-bit, then 64-bit unpacks, then
/// two rounds of 128-bit lane shuffles (64 one-cycle shuffles; as many two-source permutes
/// would take three cycles each).
IC_INLINE void transpose16(__m512 (&r)[16]) {
  __m512 t[16];
  for (int k = 0; k < 8; ++k) {
    t[2 * k] = _mm512_unpacklo_ps(r[2 * k], r[2 * k + 1]);
    t[2 * k + 1] = _mm512_unpackhi_ps(r[2 * k], r[2 * k + 1]);
  }
  auto pd = [](__m512 x) { return _mm512_castps_pd(x); };
  for (int k = 0; k < 4; ++k) {
    r[4 * k + 0] = _mm512_castpd_ps(_mm512_unpacklo_pd(pd(t[4 * k + 0]), pd(t[4 * k + 2])));
    r[4 * k + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(pd(t[4 * k + 0]), pd(t[4 * k + 2])));
    r[4 * k + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(pd(t[4 * k + 1]), pd(t[4 * k + 3])));
    r[4 * k + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(pd(t[4 * k + 1]), pd(t[4 * k + 3])));
  }
  for (int k = 0; k < 2; ++k) {
    for (int j = 0; j < 4; ++j) {
      t[8 * k + j] = _mm512_shuffle_f32x4(r[8 * k + j], r[8 * k + 4 + j], 0x88);
      t[8 * k + 4 + j] = _mm512_shuffle_f32x4(r[8 * k + j], r[8 * k + 4 + j], 0xdd);
    }
  }
  for (int j = 0; j < 8; ++j) {
    r[j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0x88);
    r[8 + j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0xdd);
  }
}
/// The 16 x 16 block at src (rows `stride` elements apart) transposed into dst (rows
/// `dst_stride` apart). 2-byte elements (bf16, fp16) ride in 32-bit lanes (zero-extended, then
/// narrowed back).
template <class T>
IC_INLINE void transpose_block(T* dst, int64_t dst_stride, const T* src, int64_t stride) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 2, "4- or 2-byte elements");
  __m512 r[16];
  for (int i = 0; i < 16; ++i) {
    if constexpr (sizeof(T) == 4) {
      r[i] = _mm512_loadu_ps(src + i * stride);
    } else {
      const __m256i row = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i * stride));
      r[i] = _mm512_castsi512_ps(_mm512_cvtepu16_epi32(row));
    }
  }
  transpose16(r);
  for (int j = 0; j < 16; ++j) {
    if constexpr (sizeof(T) == 4) {
      _mm512_storeu_ps(dst + j * dst_stride, r[j]);
    } else {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + j * dst_stride),
                          _mm512_cvtepi32_epi16(_mm512_castps_si512(r[j])));
    }
  }
}
template <class T>
constexpr bool kTransposesInRegisters = sizeof(T) == 4 || sizeof(T) == 2;
#elif defined(IC_AVX2)
constexpr int kTransposeBlock = 8;
/// The 8 x 8 block of 4-byte elements at src transposed into dst: 32-bit unpacks, 64-bit
/// shuffles, 128-bit lane permutes (24 shuffles).
template <class T>
IC_INLINE void transpose_block(T* dst_elements, int64_t dst_stride, const T* src_elements, int64_t stride) {
  float* dst = reinterpret_cast<float*>(dst_elements);
  const float* src = reinterpret_cast<const float*>(src_elements);
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * stride);
  for (int k = 0; k < 4; ++k) {
    t[2 * k] = _mm256_unpacklo_ps(r[2 * k], r[2 * k + 1]);
    t[2 * k + 1] = _mm256_unpackhi_ps(r[2 * k], r[2 * k + 1]);
  }
  for (int k = 0; k < 2; ++k) {
    r[4 * k + 0] = _mm256_shuffle_ps(t[4 * k + 0], t[4 * k + 2], 0x44);
    r[4 * k + 1] = _mm256_shuffle_ps(t[4 * k + 0], t[4 * k + 2], 0xee);
    r[4 * k + 2] = _mm256_shuffle_ps(t[4 * k + 1], t[4 * k + 3], 0x44);
    r[4 * k + 3] = _mm256_shuffle_ps(t[4 * k + 1], t[4 * k + 3], 0xee);
  }
  for (int j = 0; j < 4; ++j) {
    _mm256_storeu_ps(dst + j * dst_stride, _mm256_permute2f128_ps(r[j], r[4 + j], 0x20));
    _mm256_storeu_ps(dst + (4 + j) * dst_stride, _mm256_permute2f128_ps(r[j], r[4 + j], 0x31));
  }
}
template <class T>
constexpr bool kTransposesInRegisters = sizeof(T) == 4;
#endif

/// dst[i * DC + j] = src[j * stride + i] for i < nu, j < nv (nu <= DR, nv <= DC). A full tile
/// goes through registers in blocks of the native vector (16 x 16 with AVX-512, 4- and 2-byte
/// elements; 8 x 8 with AVX2, 4-byte); a partial one (the matrix's edge) element by element.
template <int DR, int DC, class T>
IC_INLINE void transpose_tile(T* dst, const T* src, int64_t stride, int64_t nu, int64_t nv) {
#if defined(IC_AVX512) || defined(IC_AVX2)
  constexpr int B = kTransposeBlock;
  if constexpr (kTransposesInRegisters<T> && DR % B == 0 && DC % B == 0) {
    if (nu == DR && nv == DC) {
      for (int bj = 0; bj < DC; bj += B) {
        for (int bi = 0; bi < DR; bi += B) transpose_block(dst + bi * DC + bj, DC, src + bj * stride + bi, stride);
      }
      return;
    }
  }
#endif
  for (int64_t j = 0; j < nv; ++j) {
    for (int64_t i = 0; i < nu; ++i) std::memcpy(dst + i * DC + j, src + j * stride + i, sizeof(T));
  }
}

/// dst[j * stride + i] = tile[i * DC + j] for i < nu, j < nv: a tile write (the vector loop
/// stored rows i of the tile) transposed out to its destination.
template <int DR, int DC, class T>
IC_INLINE void transpose_tile_out(T* dst, int64_t stride, const T* tile, int64_t nu, int64_t nv) {
#if defined(IC_AVX512) || defined(IC_AVX2)
  constexpr int B = kTransposeBlock;
  if constexpr (kTransposesInRegisters<T> && DR % B == 0 && DC % B == 0) {
    if (nu == DR && nv == DC) {
      for (int bj = 0; bj < DC; bj += B) {
        for (int bi = 0; bi < DR; bi += B) transpose_block(dst + bj * stride + bi, stride, tile + bi * DC + bj, DC);
      }
      return;
    }
  }
#endif
  for (int64_t j = 0; j < nv; ++j) {
    for (int64_t i = 0; i < nu; ++i) std::memcpy(dst + j * stride + i, tile + i * DC + j, sizeof(T));
  }
}

/// Indirect index check: whether 0 <= v < bound; a violation in an active lane sets err.
IC_INLINE bool check_index(int32_t& err, bool active, int64_t v, int64_t bound) {
  const bool ok = v >= 0 && v < bound;
  if (active && !ok) err = 1;
  return ok;
}
template <int N>
IC_INLINE Vec<bool, N> check_index(int32_t& err, const Vec<bool, N>& active,
                                   const Vec<int64_t, N>& v, int64_t bound) {
  const Vec<bool, N> ok{from_mask<N>(v.v >= 0).v & from_mask<N>(v.v < bound).v};
  if (any_lane(Vec<bool, N>{active.v & (ok.v ^ uint8_t(1))})) err = 1;
  return ok;
}
template <int N>
IC_INLINE Vec<bool, N> check_index(int32_t& err, bool active, const Vec<int64_t, N>& v,
                                   int64_t bound) {
  return check_index(err, broadcast<N>(active), v, bound);
}
template <int N>
IC_INLINE Vec<bool, N> check_index(int32_t& err, const Vec<bool, N>& active, int64_t v,
                                   int64_t bound) {
  const bool ok = v >= 0 && v < bound;
  if (!ok && any_lane(active)) err = 1;
  return broadcast<N>(ok);
}
template <int N>
IC_INLINE Vec<bool, N> operator&(const Vec<bool, N>& a, const Vec<bool, N>& b) {
  return Vec<bool, N>{a.v & b.v};
}

}  // namespace ic
