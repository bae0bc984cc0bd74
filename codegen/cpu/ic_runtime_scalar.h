/// \file
/// Part of ic_runtime.h (included from there, after its macros): reduced-precision storage
/// types and the scalar ops with torch semantics.
#pragma once

namespace ic {

// ---------------------------------------------------------------------------------------------
// 1. Reduced-precision storage types.

IC_INLINE uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
IC_INLINE float float_from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// IEEE binary16 from float, round to nearest even (the FP16 library's branch-free method, as
/// in c10); NaN maps to a quiet NaN of the same sign.
IC_INLINE uint16_t float_to_half_bits(float f) {
  float base = (std::fabs(f) * 0x1.0p+112f) * 0x1.0p-110f;
  const uint32_t w = float_bits(f);
  const uint32_t shl1_w = w + w;
  const uint32_t sign = w & 0x80000000u;
  uint32_t bias = shl1_w & 0xFF000000u;
  if (bias < 0x71000000u) bias = 0x71000000u;
  base = float_from_bits((bias >> 1) + 0x07800000u) + base;
  const uint32_t bits = float_bits(base);
  const uint32_t exp_bits = (bits >> 13) & 0x00007C00u;
  const uint32_t mantissa_bits = bits & 0x00000FFFu;
  const uint32_t nonsign = exp_bits + mantissa_bits;
  return static_cast<uint16_t>((sign >> 16) | (shl1_w > 0xFF000000u ? 0x7E00u : nonsign));
}
IC_INLINE float half_bits_to_float(uint16_t h) {
  const uint32_t w = static_cast<uint32_t>(h) << 16;
  const uint32_t sign = w & 0x80000000u;
  const uint32_t two_w = w + w;
  const float normalized = float_from_bits((two_w >> 4) + (0xE0u << 23)) * 0x1.0p-112f;
  const float denormalized = float_from_bits((two_w >> 17) | (126u << 23)) - 0.5f;
  const uint32_t result =
      sign | (two_w < (1u << 27) ? float_bits(denormalized) : float_bits(normalized));
  return float_from_bits(result);
}
/// bfloat16 from float, round to nearest even; NaN maps to 0x7FC0 (as c10 does).
IC_INLINE uint16_t float_to_bfloat16_bits(float f) {
  if (f != f) return 0x7FC0;
  const uint32_t u = float_bits(f);
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
IC_INLINE float bfloat16_bits_to_float(uint16_t b) {
  return float_from_bits(static_cast<uint32_t>(b) << 16);
}

struct half {
  uint16_t bits;
  half() = default;
  IC_INLINE half(float f) : bits(float_to_half_bits(f)) {}  // NOLINT: implicit like c10::Half
  IC_INLINE operator float() const { return half_bits_to_float(bits); }
  static IC_INLINE half from_bits(uint16_t b) {
    half h;
    h.bits = b;
    return h;
  }
};
struct bfloat16 {
  uint16_t bits;
  bfloat16() = default;
  IC_INLINE bfloat16(float f) : bits(float_to_bfloat16_bits(f)) {}  // NOLINT
  IC_INLINE operator float() const { return bfloat16_bits_to_float(bits); }
  static IC_INLINE bfloat16 from_bits(uint16_t b) {
    bfloat16 h;
    h.bits = b;
    return h;
  }
};

template <class T>
constexpr bool is_reduced_float_v =
    std::is_same<T, half>::value || std::is_same<T, bfloat16>::value;
template <class T>
constexpr bool is_bool_v = std::is_same<T, bool>::value;
template <class T>
constexpr bool is_float_v = std::is_floating_point<T>::value;
template <class T>
constexpr bool is_int_v = std::is_integral<T>::value && !is_bool_v<T>;
/// The unsigned type integer arithmetic wraps in (at least 32 bits: no promotion to int).
template <class T>
using wrap_t = std::conditional_t<(sizeof(T) < 4), uint32_t, std::make_unsigned_t<T>>;

// ---------------------------------------------------------------------------------------------
// 2. Scalar ops (torch semantics). Integer arithmetic wraps; division by zero gives 0 (torch
//    raises; a kernel cannot), and INT_MIN / -1 wraps instead of trapping.

template <class To, class From>
IC_INLINE To cast(From x) {
  if constexpr (std::is_same<To, From>::value) {
    return x;
  } else if constexpr (is_reduced_float_v<From>) {
    return cast<To>(static_cast<float>(x));
  } else if constexpr (is_reduced_float_v<To>) {
    return To(cast<float>(x));
  } else if constexpr (is_bool_v<To>) {
    return x != From(0);
  } else if constexpr (is_float_v<From> && is_int_v<To>) {
    // As x86 converts (torch's static_cast, and our vector form): NaN and out-of-range give
    // INT_MIN; narrow types go through int32, then wrap.
    using Wide = std::conditional_t<sizeof(To) == 8, int64_t, int32_t>;
    constexpr From kLow = static_cast<From>(std::numeric_limits<Wide>::min());
    const Wide wide =
        x >= kLow && x < -kLow ? static_cast<Wide>(x) : std::numeric_limits<Wide>::min();
    return static_cast<To>(wide);
  } else {
    return static_cast<To>(x);
  }
}

template <class T>
IC_INLINE T add(T a, T b) {
  if constexpr (is_int_v<T>)
    return static_cast<T>(wrap_t<T>(a) + wrap_t<T>(b));
  else
    return static_cast<T>(a + b);
}
template <class T>
IC_INLINE T sub(T a, T b) {
  if constexpr (is_int_v<T>)
    return static_cast<T>(wrap_t<T>(a) - wrap_t<T>(b));
  else
    return static_cast<T>(a - b);
}
template <class T>
IC_INLINE T mul(T a, T b) {
  if constexpr (is_int_v<T>)
    return static_cast<T>(wrap_t<T>(a) * wrap_t<T>(b));
  else if constexpr (is_bool_v<T>)
    return a && b;
  else
    return a * b;
}
template <class T>
IC_INLINE T neg(T a) {
  if constexpr (is_int_v<T>)
    return static_cast<T>(wrap_t<T>(0) - wrap_t<T>(a));
  else
    return -a;
}
template <class T>
IC_INLINE T truncdiv(T a, T b) {
  if constexpr (is_float_v<T>) {
    return std::trunc(a / b);
  } else {
    if (b == 0) return 0;
    if constexpr (std::is_signed<T>::value) {
      if (b == T(-1)) return neg(a);
    }
    return static_cast<T>(a / b);
  }
}
template <class T>
IC_INLINE T fmod(T a, T b) {
  if constexpr (is_float_v<T>) {
    return std::fmod(a, b);
  } else {
    if (b == 0) return 0;
    if constexpr (std::is_signed<T>::value) {
      if (b == T(-1)) return 0;
    }
    return static_cast<T>(a % b);
  }
}
/// Python floor division: rounds toward -inf.
template <class T>
IC_INLINE T floordiv(T a, T b) {
  if constexpr (is_float_v<T>) {
    if (b == 0) return a / b;
    T mod = std::fmod(a, b);
    T div = (a - mod) / b;
    if ((mod != 0) && ((b < 0) != (mod < 0))) div -= T(1);
    if (div == 0) return std::copysign(T(0), a / b);
    T floored = std::floor(div);
    if (div - floored > T(0.5)) floored += T(1);
    return floored;
  } else {
    T q = truncdiv(a, b);
    if constexpr (std::is_signed<T>::value) {
      if (b != 0 && b != T(-1) && (a % b != 0) && ((a < 0) != (b < 0))) q = sub(q, T(1));
    }
    return q;
  }
}
/// Python remainder: the result has the divisor's sign.
template <class T>
IC_INLINE T remainder(T a, T b) {
  T r = fmod(a, b);
  if ((r != 0) && ((b < 0) != (r < 0))) r = static_cast<T>(r + b);
  return r;
}
/// Index arithmetic spells Python's // and % with these (int64 only).
IC_INLINE int64_t mod(int64_t a, int64_t b) {
  return remainder(a, b);
}
template <class T>
IC_INLINE T div(T a, T b) {
  if constexpr (is_float_v<T>)
    return a / b;
  else
    return truncdiv(a, b);
}
template <class T>
IC_INLINE T pow(T a, T b) {
  if constexpr (is_float_v<T>) {
    return std::pow(a, b);
  } else if constexpr (is_bool_v<T>) {
    return a || !b;
  } else {
    if constexpr (std::is_signed<T>::value) {
      if (b < 0) {
        if (a == 1) return 1;
        if (a == T(-1)) return (b & 1) ? T(-1) : T(1);
        return 0;
      }
    }
    T result = 1;
    while (b) {
      if (b & 1) result = mul(result, a);
      b = static_cast<T>(b >> 1);
      a = mul(a, a);
    }
    return result;
  }
}
template <class T>
IC_INLINE bool isnan(T a) {
  if constexpr (is_float_v<T>)
    return a != a;
  else
    return false;
}
/// NaN-propagating (torch.maximum / torch.minimum / max reductions).
template <class T>
IC_INLINE T maximum(T a, T b) {
  if constexpr (is_float_v<T>) {
    if (a != a) return a;
    if (b != b) return b;
  }
  return a > b ? a : b;
}
template <class T>
IC_INLINE T minimum(T a, T b) {
  if constexpr (is_float_v<T>) {
    if (a != a) return a;
    if (b != b) return b;
  }
  return a < b ? a : b;
}
template <class T>
IC_INLINE T fmax(T a, T b) {
  if constexpr (is_float_v<T>)
    return std::fmax(a, b);
  else
    return a > b ? a : b;
}
template <class T>
IC_INLINE T fmin(T a, T b) {
  if constexpr (is_float_v<T>)
    return std::fmin(a, b);
  else
    return a < b ? a : b;
}
template <class T>
IC_INLINE T atan2(T a, T b) {
  return static_cast<T>(std::atan2(a, b));
}
template <class T>
IC_INLINE T copysign(T a, T b) {
  return static_cast<T>(std::copysign(a, b));
}
template <class T>
IC_INLINE T hypot(T a, T b) {
  return static_cast<T>(std::hypot(a, b));
}
template <class T>
IC_INLINE T nextafter(T a, T b) {
  return static_cast<T>(std::nextafter(a, b));
}
template <class T>
IC_INLINE bool eq(T a, T b) {
  return a == b;
}
template <class T>
IC_INLINE bool ne(T a, T b) {
  return a != b;
}
template <class T>
IC_INLINE bool lt(T a, T b) {
  return a < b;
}
template <class T>
IC_INLINE bool le(T a, T b) {
  return a <= b;
}
template <class T>
IC_INLINE bool gt(T a, T b) {
  return a > b;
}
template <class T>
IC_INLINE bool ge(T a, T b) {
  return a >= b;
}
template <class T>
IC_INLINE bool logical_and(T a, T b) {
  return (a != T(0)) && (b != T(0));
}
template <class T>
IC_INLINE bool logical_or(T a, T b) {
  return (a != T(0)) || (b != T(0));
}
template <class T>
IC_INLINE bool logical_xor(T a, T b) {
  return (a != T(0)) != (b != T(0));
}
template <class T>
IC_INLINE T bitwise_and(T a, T b) {
  return static_cast<T>(a & b);
}
template <class T>
IC_INLINE T bitwise_or(T a, T b) {
  return static_cast<T>(a | b);
}
template <class T>
IC_INLINE T bitwise_xor(T a, T b) {
  return static_cast<T>(a ^ b);
}
/// Shifts as in ATen: a shift by >= the bit width (or negative) gives 0 (left) or the sign
/// fill (right).
template <class T>
IC_INLINE T lshift(T a, T b) {
  constexpr T kBits = static_cast<T>(sizeof(T) * 8);
  if ((std::is_signed<T>::value && b < 0) || b >= kBits) return 0;
  return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) << b);
}
template <class T>
IC_INLINE T rshift(T a, T b) {
  constexpr T kBits = static_cast<T>(sizeof(T) * 8);
  if constexpr (std::is_signed<T>::value) {
    if (b < 0 || b >= kBits) return static_cast<T>(a >> (kBits - 1));  // all sign bits
  } else {
    if (b >= kBits) return 0;  // (no shift by the full width: undefined for 32/64 bits)
  }
  return static_cast<T>(a >> b);
}

template <class T>
IC_INLINE T abs(T a) {
  if constexpr (is_float_v<T>)
    return std::fabs(a);
  else if constexpr (is_int_v<T> && std::is_signed<T>::value)
    return a < 0 ? neg(a) : a;
  else
    return a;
}
template <class T>
IC_INLINE T reciprocal(T a) {
  return static_cast<T>(T(1) / a);
}
template <class T>
IC_INLINE T rsqrt(T a) {
  return static_cast<T>(T(1) / std::sqrt(a));
}

#define IC_SCALAR_LIBM(X)                                                                         \
  X(sqrt)                                                                                         \
  X(exp)                                                                                          \
  X(exp2)                                                                                         \
  X(expm1)                                                                                        \
  X(log)                                                                                          \
  X(log2)                                                                                         \
  X(log10) X(log1p) X(sin) X(cos) X(tan) X(asin) X(acos) X(atan) X(sinh) X(cosh) X(tanh) X(asinh) \
      X(acosh) X(atanh) X(erf) X(erfc) X(lgamma)
#define IC_DEFINE_SCALAR_LIBM(name)      \
  template <class T>                     \
  IC_INLINE T name(T a) {                \
    return static_cast<T>(std::name(a)); \
  }
IC_SCALAR_LIBM(IC_DEFINE_SCALAR_LIBM)
#undef IC_DEFINE_SCALAR_LIBM

/// Inverse error function as ATen computes it: a rational first guess refined by two Newton
/// steps.
template <class T>
IC_INLINE T erfinv(T y) {
  const T a[4] = {T(0.886226899), T(-1.645349621), T(0.914624893), T(-0.140543331)};
  const T b[4] = {T(-2.118377725), T(1.442710462), T(-0.329097515), T(0.012229801)};
  const T c[4] = {T(-1.970840454), T(-1.624906493), T(3.429567803), T(1.641345311)};
  const T d[2] = {T(3.543889200), T(1.637067800)};
  const T y_abs = std::fabs(y);
  if (y_abs > T(1)) return std::numeric_limits<T>::quiet_NaN();
  if (y_abs == T(1)) return std::copysign(std::numeric_limits<T>::infinity(), y);
  T x;
  if (y_abs <= T(0.7)) {
    const T z = y * y;
    const T num = (((a[3] * z + a[2]) * z + a[1]) * z + a[0]);
    const T dem = ((((b[3] * z + b[2]) * z + b[1]) * z + b[0]) * z + T(1));
    x = y * num / dem;
  } else {
    const T z = std::sqrt(-std::log((T(1) - y_abs) / T(2)));
    const T num = ((c[3] * z + c[2]) * z + c[1]) * z + c[0];
    const T dem = (d[1] * z + d[0]) * z + T(1);
    x = std::copysign(num, y) / dem;
  }
  const T two_over_sqrt_pi = T(2) / static_cast<T>(std::sqrt(3.14159265358979323846));
  x = x - (std::erf(x) - y) / (two_over_sqrt_pi * std::exp(-x * x));
  x = x - (std::erf(x) - y) / (two_over_sqrt_pi * std::exp(-x * x));
  return x;
}
template <class T>
IC_INLINE T sigmoid(T a) {
  return static_cast<T>(T(1) / (T(1) + std::exp(-a)));
}
template <class T>
IC_INLINE T floor(T a) {
  if constexpr (is_float_v<T>)
    return std::floor(a);
  else
    return a;
}
template <class T>
IC_INLINE T ceil(T a) {
  if constexpr (is_float_v<T>)
    return std::ceil(a);
  else
    return a;
}
template <class T>
IC_INLINE T trunc(T a) {
  if constexpr (is_float_v<T>)
    return std::trunc(a);
  else
    return a;
}
/// Round half to even (torch.round).
template <class T>
IC_INLINE T round(T a) {
  if constexpr (is_float_v<T>)
    return std::nearbyint(a);
  else
    return a;
}
/// torch.sign: -1, 0 or 1; 0 for NaN.
template <class T>
IC_INLINE T sign(T a) {
  if constexpr (is_bool_v<T>)
    return a;
  else
    return static_cast<T>((T(0) < a) - (a < T(0)));
}
template <class T>
IC_INLINE bool signbit(T a) {
  if constexpr (is_float_v<T>)
    return std::signbit(a);
  else if constexpr (std::is_signed<T>::value)
    return a < 0;
  else
    return false;
}
template <class T>
IC_INLINE bool logical_not(T a) {
  return a == T(0);
}
template <class T>
IC_INLINE T bitwise_not(T a) {
  if constexpr (is_bool_v<T>)
    return !a;
  else
    return static_cast<T>(~a);
}
template <class T>
IC_INLINE bool isinf(T a) {
  if constexpr (is_float_v<T>)
    return std::fabs(a) == std::numeric_limits<T>::infinity();
  else
    return false;
}
template <class T>
IC_INLINE T where(bool c, T a, T b) {
  return c ? a : b;
}

}  // namespace ic
