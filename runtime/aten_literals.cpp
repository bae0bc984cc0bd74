/// \file
/// Plan literals to IValues, as the operator schema declares each argument (aten_literals.h).
#include "runtime/aten_literals.h"

#include <ATen/ScalarOps.h>
#include <c10/core/Device.h>
#include <c10/core/Layout.h>
#include <c10/core/MemoryFormat.h>
#include <c10/core/ScalarType.h>

#include <algorithm>
#include <cctype>
#include <limits>
#include <stdexcept>
#include <unordered_map>

namespace inductor_cpp::runtime {

using nlohmann::json;

namespace {

c10::ScalarType dtype_from_name_impl(const std::string& name) {
  static const std::unordered_map<std::string, c10::ScalarType> table = {
      {"float32", c10::kFloat},
      {"float64", c10::kDouble},
      {"float16", c10::kHalf},
      {"bfloat16", c10::kBFloat16},
      {"int8", c10::kChar},
      {"int16", c10::kShort},
      {"int32", c10::kInt},
      {"int64", c10::kLong},
      {"uint8", c10::kByte},
      {"uint16", c10::kUInt16},
      {"uint32", c10::kUInt32},
      {"uint64", c10::kUInt64},
      {"bool", c10::kBool},
      {"complex32", c10::kComplexHalf},
      {"complex64", c10::kComplexFloat},
      {"complex128", c10::kComplexDouble},
      {"float8_e4m3fn", c10::ScalarType::Float8_e4m3fn},
      {"float8_e5m2", c10::ScalarType::Float8_e5m2},
  };
  auto it = table.find(name);
  if (it != table.end()) return it->second;
  // Newer dtypes are named after their c10 name in lower case: float8_e4m3fnuz, uint3, ...
  for (int i = 0; i < static_cast<int>(c10::ScalarType::NumOptions); ++i) {
    const auto type = static_cast<c10::ScalarType>(i);
    std::string lowered = c10::toString(type);
    std::transform(lowered.begin(), lowered.end(), lowered.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    if (lowered == name) return type;
  }
  throw std::runtime_error("unknown dtype '" + name + "'");
}

c10::Layout layout_from_name(const std::string& name) {
  if (name == "strided") return c10::kStrided;
  if (name == "sparse_coo") return c10::kSparse;
  if (name == "sparse_csr") return c10::kSparseCsr;
  if (name == "sparse_csc") return c10::kSparseCsc;
  if (name == "sparse_bsr") return c10::kSparseBsr;
  if (name == "sparse_bsc") return c10::kSparseBsc;
  if (name == "_mkldnn") return c10::kMkldnn;
  if (name == "jagged") return c10::kJagged;
  throw std::runtime_error("unknown layout '" + name + "'");
}

c10::MemoryFormat memory_format_from_name(const std::string& name) {
  if (name == "contiguous_format") return c10::MemoryFormat::Contiguous;
  if (name == "channels_last") return c10::MemoryFormat::ChannelsLast;
  if (name == "channels_last_3d") return c10::MemoryFormat::ChannelsLast3d;
  if (name == "preserve_format") return c10::MemoryFormat::Preserve;
  throw std::runtime_error("unknown memory format '" + name + "'");
}

bool is_int_like(const c10::TypePtr& t) {
  return t->kind() == c10::TypeKind::IntType || t->kind() == c10::TypeKind::SymIntType;
}

}  // namespace

at::Tensor wrapped_number(const c10::IValue& number) {
  at::Tensor t = at::scalar_to_tensor(number.toScalar());
  t.unsafeGetTensorImpl()->set_wrapped_number(true);
  return t;
}

c10::TypePtr strip_optional(const c10::TypePtr& type) {
  if (auto opt = type->cast<c10::OptionalType>()) return opt->getElementType();
  return type;
}

c10::IValue list_literal(const json& items, const c10::ListTypePtr& list_type) {
  const c10::TypePtr elem = list_type->getElementType();
  if (is_int_like(elem)) {
    c10::List<int64_t> out;
    for (const json& i : items) out.push_back(literal_to_ivalue(i, elem, std::nullopt).toInt());
    return out;
  }
  if (elem->kind() == c10::TypeKind::FloatType || elem->kind() == c10::TypeKind::SymFloatType) {
    c10::List<double> out;
    for (const json& i : items) out.push_back(literal_to_ivalue(i, elem, std::nullopt).toDouble());
    return out;
  }
  if (elem->kind() == c10::TypeKind::BoolType) {
    c10::List<bool> out;
    for (const json& i : items) out.push_back(literal_to_ivalue(i, elem, std::nullopt).toBool());
    return out;
  }
  c10::impl::GenericList out(elem);
  for (const json& i : items) out.push_back(literal_to_ivalue(i, elem, std::nullopt));
  return out;
}

c10::IValue literal_to_ivalue(const json& lit, const c10::TypePtr& declared,
                              std::optional<int32_t> fixed_len) {
  if (lit.is_null()) return c10::IValue();
  const c10::TypePtr type = strip_optional(declared);
  const auto only = lit.begin();
  const std::string tag = only.key();
  const json& v = only.value();
  if (tag == "list") {
    auto list_type = type->cast<c10::ListType>();
    if (!list_type)
      throw std::runtime_error("a list was given where the schema declares " + declared->str());
    return list_literal(v, list_type);
  }
  if (auto list_type = type->cast<c10::ListType>()) {
    // Python lets `int[2] stride=1` stand for [1, 1]; the FX graph keeps the short form.
    json items = json::array();
    for (int32_t i = 0; i < fixed_len.value_or(1); ++i) items.push_back(lit);
    return list_literal(items, list_type);
  }
  if (type->kind() == c10::TypeKind::TensorType &&
      (tag == "int" || tag == "float" || tag == "bool")) {
    // Python passes a number where a Tensor is declared (`mul.Tensor(x, 2)`) as a 0-dim
    // "wrapped number" tensor, which type promotion treats like a Python scalar. Same here.
    return c10::IValue(
        wrapped_number(literal_to_ivalue(lit, c10::NumberType::get(), std::nullopt)));
  }
  if (tag == "int") {
    if (type->kind() == c10::TypeKind::FloatType)
      return c10::IValue(static_cast<double>(v.get<int64_t>()));
    if (type->kind() == c10::TypeKind::BoolType) return c10::IValue(v.get<int64_t>() != 0);
    return c10::IValue(v.get<int64_t>());
  }
  if (tag == "float") {
    if (v.is_string()) {
      const std::string s = v.get<std::string>();
      const double inf = std::numeric_limits<double>::infinity();
      return c10::IValue(s == "inf"    ? inf
                         : s == "-inf" ? -inf
                                       : std::numeric_limits<double>::quiet_NaN());
    }
    return c10::IValue(v.get<double>());
  }
  if (tag == "bool") return c10::IValue(v.get<bool>());
  if (tag == "str") return c10::IValue(v.get<std::string>());
  if (tag == "dtype")
    return c10::IValue(static_cast<int64_t>(dtype_from_name_impl(v.get<std::string>())));
  if (tag == "device") return c10::IValue(c10::Device(v.get<std::string>()));
  if (tag == "layout")
    return c10::IValue(static_cast<int64_t>(layout_from_name(v.get<std::string>())));
  if (tag == "memory_format")
    return c10::IValue(static_cast<int64_t>(memory_format_from_name(v.get<std::string>())));
  throw std::runtime_error("cannot pass literal " + lit.dump() + " as " + declared->str());
}

c10::ScalarType scalar_type_from_name(const std::string& name) { return dtype_from_name_impl(name); }

}  // namespace inductor_cpp::runtime
