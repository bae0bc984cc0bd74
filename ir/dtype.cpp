/// \file
/// Element-type tables and torch's promotion lattice.
#include "ir/dtype.h"

namespace inductor_cpp::ir {

const char* dtype_name(DType t) {
  switch (t) {
#define INDUCTOR_CPP_DTYPE_NAME(e, name, ctype, size) \
  case DType::e:                                      \
    return name;
    INDUCTOR_CPP_DTYPES(INDUCTOR_CPP_DTYPE_NAME)
#undef INDUCTOR_CPP_DTYPE_NAME
  }
  return "?";
}

const char* dtype_cpp_type(DType t) {
  switch (t) {
#define INDUCTOR_CPP_DTYPE_CTYPE(e, name, ctype, size) \
  case DType::e:                                       \
    return ctype;
    INDUCTOR_CPP_DTYPES(INDUCTOR_CPP_DTYPE_CTYPE)
#undef INDUCTOR_CPP_DTYPE_CTYPE
  }
  return "?";
}

int dtype_size(DType t) {
  switch (t) {
#define INDUCTOR_CPP_DTYPE_SIZE(e, name, ctype, size) \
  case DType::e:                                      \
    return size;
    INDUCTOR_CPP_DTYPES(INDUCTOR_CPP_DTYPE_SIZE)
#undef INDUCTOR_CPP_DTYPE_SIZE
  }
  return 0;
}

std::optional<DType> dtype_from_name(const std::string& name) {
#define INDUCTOR_CPP_DTYPE_FROM(e, n, ctype, size) \
  if (name == n) return DType::e;
  INDUCTOR_CPP_DTYPES(INDUCTOR_CPP_DTYPE_FROM)
#undef INDUCTOR_CPP_DTYPE_FROM
  return std::nullopt;
}

bool is_floating(DType t) {
  return t == DType::Float16 || t == DType::BFloat16 || t == DType::Float32 || t == DType::Float64;
}

bool is_integral(DType t) {
  return t == DType::UInt8 || t == DType::Int8 || t == DType::Int16 || t == DType::Int32 ||
         t == DType::Int64;
}

bool is_reduced_float(DType t) { return t == DType::Float16 || t == DType::BFloat16; }

DType compute_type(DType t) { return is_reduced_float(t) ? DType::Float32 : t; }

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::Bool) return b;
  if (b == DType::Bool) return a;
  const bool fa = is_floating(a), fb = is_floating(b);
  if (fa != fb) return fa ? a : b;
  if (fa) {  // both floating
    if ((a == DType::Float16 && b == DType::BFloat16) || (a == DType::BFloat16 && b == DType::Float16))
      return DType::Float32;
    return dtype_size(a) >= dtype_size(b) ? a : b;
  }
  // Both integers. uint8 with a signed type: the smallest signed type holding both.
  if (a == DType::UInt8 || b == DType::UInt8) {
    const DType other = a == DType::UInt8 ? b : a;
    return other == DType::Int8 ? DType::Int16 : other;
  }
  return dtype_size(a) >= dtype_size(b) ? a : b;
}

}  // namespace inductor_cpp::ir
