/// \file
/// Element types of the loop-level IR, and PyTorch's type-promotion lattice over them.
///
/// The names are torch's ("float32", "int64", "bool", ...), so the graph description and the
/// IR text form agree. Promotion follows torch.promote_types exactly (checked against torch in
/// the Python tests); category rules for Python scalars live in the lowering, not here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace inductor_cpp::ir {

/// Listed once; generates the enum, names and C spellings.
///   X(enumerator, torch name, C++ type in generated code, byte size)
#define INDUCTOR_CPP_DTYPES(X)             \
  X(Bool, "bool", "bool", 1)               \
  X(UInt8, "uint8", "uint8_t", 1)          \
  X(Int8, "int8", "int8_t", 1)             \
  X(Int16, "int16", "int16_t", 2)          \
  X(Int32, "int32", "int32_t", 4)          \
  X(Int64, "int64", "int64_t", 8)          \
  X(Float16, "float16", "ic::half", 2)     \
  X(BFloat16, "bfloat16", "ic::bfloat16", 2) \
  X(Float32, "float32", "float", 4)        \
  X(Float64, "float64", "double", 8)

enum class DType : uint8_t {
#define INDUCTOR_CPP_DTYPE_ENUM(e, name, ctype, size) e,
  INDUCTOR_CPP_DTYPES(INDUCTOR_CPP_DTYPE_ENUM)
#undef INDUCTOR_CPP_DTYPE_ENUM
};

const char* dtype_name(DType t);        ///< "float32"
const char* dtype_cpp_type(DType t);    ///< "float"
int dtype_size(DType t);                ///< bytes
std::optional<DType> dtype_from_name(const std::string& name);  ///< nullopt: not ours (complex...)

bool is_floating(DType t);  ///< float16, bfloat16, float32, float64
bool is_integral(DType t);  ///< integers, excluding bool
bool is_reduced_float(DType t);  ///< float16, bfloat16: computed in float32, stored narrow

/// torch.promote_types(a, b).
DType promote_types(DType a, DType b);

/// The type arithmetic is done in: float32 for float16/bfloat16, the type itself otherwise.
DType compute_type(DType t);

}  // namespace inductor_cpp::ir
