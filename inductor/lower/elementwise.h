/// \file
/// Elementwise lowering support (private to inductor/lower/): torch's type promotion with
/// categories (tensors, zero-dim tensors, Python numbers), the operand conversions it implies,
/// and the driver every pointwise op goes through.
///
/// Promotion follows c10's ResultTypeState: the result type is that of the dimensioned
/// tensors, unless a zero-dim tensor or a Python number belongs to a higher category (bool <
/// integral < floating); Python ints count as int64 and Python floats as the default dtype
/// (float32). The op's promotion kind then adjusts it (int -> float for `exp`, bool for
/// comparisons). Operands are converted to that common type (what ATen's TensorIterator does)
/// and then to the compute type (float32 for float16/bfloat16).
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "inductor/lower/lowering_internal.h"

namespace inductor_cpp::inductor::lowering {

/// torch's ELEMENTWISE_TYPE_PROMOTION_KIND (COMPLEX_TO_FLOAT and NO_OPMATH act as Default for
/// our real types: a select computed in float32 and cast back is exact).
enum class Promotion { Default, IntToFloat, AlwaysBool, BoolToLong };

/// One operand of an elementwise op: a tensor, or a Python number literal.
struct Operand {
  std::optional<TensorInfo> tensor;
  ir::Arg number;

  bool is_tensor() const { return tensor.has_value(); }
};

/// The tensor or number given for `param` (declines on anything else).
Operand operand(const NodeLowering& n, const std::string& param);
Operand number_operand(const ir::Arg& number);

/// torch.result_type over the operands.
ir::DType result_type(const std::vector<Operand>& operands);

struct ElementwiseTypes {
  ir::DType common;   ///< operands are converted to it first (as TensorIterator does)
  ir::DType compute;  ///< then to this one, where the arithmetic happens
  ir::DType result;   ///< the op's result type
};
ElementwiseTypes elementwise_types(const std::vector<Operand>& operands, Promotion kind);

/// The operand's value at `out_index` of an output of `out_sizes` (broadcast), converted to
/// the common and then the compute type. Python numbers become constants; with
/// `number_in_opmath` they go straight to the compute type (ATen's add/sub/mul/div use the
/// number's full value in float32 arithmetic for float16 tensors).
ir::Value operand_value(const Operand& op, const ElementwiseTypes& types,
                        const std::vector<int64_t>& out_sizes,
                        const std::vector<ir::Expr>& out_index, bool number_in_opmath = false);

/// Builds the result from the operands' values (in the compute type); returns a value of the
/// compute type (or Bool), which the driver casts to the output type.
using ElementwiseBody =
    std::function<ir::Value(const std::vector<ir::Value>& x, const ElementwiseTypes& types)>;

struct ElementwiseOptions {
  Promotion promotion = Promotion::Default;
  bool number_in_opmath = false;
  /// The types computed by promotion; when set, replaces them (ops with their own rules).
  std::optional<ElementwiseTypes> types;
  /// The first this many operands are bool conditions (where, masked_fill): they take no
  /// part in promotion and are loaded as they are.
  size_t leading_conditions = 0;
};

/// The whole pointwise lowering of output 0: checks the promoted type and the broadcast shape
/// against the output's metadata (declining on disagreement), loads and converts the
/// operands, applies `body`, casts to the output type, defines the compute.
void lower_elementwise(NodeLowering& n, const std::vector<Operand>& operands,
                       const ElementwiseBody& body, const ElementwiseOptions& options = {});

/// Declines unless the compute type is floating (ops torch defines for floats only).
void require_floating(const ElementwiseTypes& types, const char* what);

/// Integer division and remainder by a tensor may divide by zero, which must raise like ATen
/// does; declines unless the divisor is a nonzero number (or the type is floating).
void require_safe_divisor(const Operand& divisor, const ElementwiseTypes& types);

/// maximum/minimum that also work on bool (as logical or/and), as torch's do.
ir::Value max_value(const ir::Value& a, const ir::Value& b);
ir::Value min_value(const ir::Value& a, const ir::Value& b);
/// Shorthands for building bodies.
ir::Value bin(ir::BinaryOp op, const ir::Value& a, const ir::Value& b);
ir::Value un(ir::UnaryOp op, const ir::Value& a);
/// A constant in the type of `like` (a value of a floating or integral type).
ir::Value constant_like(double value, const ir::Value& like);

}  // namespace inductor_cpp::inductor::lowering
