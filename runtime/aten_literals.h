/// \file
/// Literals of the plan (tagged JSON, docs/graph_schema.md) as c10 IValues, converted the way
/// an operator's schema declares the argument — what Python's argument parser does for a
/// torch.ops call: int where float is declared becomes float, a number where Tensor is
/// declared becomes a 0-dim wrapped-number tensor, `int[2] stride=1` becomes [1, 1].
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>
#include <ATen/core/jit_type.h>

#include <nlohmann/json.hpp>
#include <optional>

namespace inductor_cpp::runtime {

/// `lit` converted for an argument declared as `declared`; `fixed_len` is the N of `int[N]`.
c10::IValue literal_to_ivalue(const nlohmann::json& lit, const c10::TypePtr& declared,
                              std::optional<int32_t> fixed_len);

/// A list literal's items converted for `list_type` (int[], float[], bool[], or generic).
c10::IValue list_literal(const nlohmann::json& items, const c10::ListTypePtr& list_type);

/// The c10 scalar type for a torch dtype name ("float32"); throws on unknown names.
c10::ScalarType scalar_type_from_name(const std::string& name);

/// A 0-dim tensor that type promotion treats like a Python number (what the Python argument
/// parser makes of `torch.mul(x, 2)`).
at::Tensor wrapped_number(const c10::IValue& number);

/// `Optional[T]` -> `T`; anything else unchanged.
c10::TypePtr strip_optional(const c10::TypePtr& type);

}  // namespace inductor_cpp::runtime
