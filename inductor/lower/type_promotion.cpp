/// \file
/// torch's type promotion for elementwise ops: result_type with categories (c10's
/// ResultTypeState) and the per-op promotion kinds of torch._prims_common.elementwise_dtypes.
/// Lowerings cross-check the result against the graph's metadata, so a rule we get wrong
/// makes a node fall back instead of producing a wrong dtype.
#include "inductor/lower/elementwise.h"

namespace inductor_cpp::inductor::lowering {

Operand operand(const NodeLowering& n, const std::string& param) {
  if (n.is_tensor(param)) return Operand{n.tensor(param), ir::Arg{}};
  return number_operand(n.scalar(param));
}

Operand number_operand(const ir::Arg& number) {
  return Operand{std::nullopt, number};
}

namespace {

/// The dtype a Python number has in promotion: bool, int64, or the default float dtype.
ir::DType number_category_type(const ir::Arg& number) {
  switch (number.kind) {
    case ir::Arg::Kind::Bool:
      return ir::DType::Bool;
    case ir::Arg::Kind::Int:
      return ir::DType::Int64;
    case ir::Arg::Kind::Float:
      return ir::DType::Float32;
    default:
      decline("not a number: " + ir::to_string(number));
  }
}

using MaybeType = std::optional<ir::DType>;

MaybeType promote(MaybeType a, ir::DType b) {
  return a ? ir::promote_types(*a, b) : b;
}

/// c10's combine_categories: `higher` wins unless `lower` is of a higher category.
MaybeType combine_categories(MaybeType higher, MaybeType lower) {
  if (!higher) return lower;
  if (ir::is_floating(*higher)) return higher;
  if (*higher == ir::DType::Bool || (lower && ir::is_floating(*lower)))
    return lower ? ir::promote_types(*higher, *lower) : higher;
  return higher;
}

}  // namespace

ir::DType result_type(const std::vector<Operand>& operands) {
  MaybeType dim_result, zero_dim_result, number_result;
  for (const Operand& op : operands) {
    if (!op.is_tensor()) {
      number_result = promote(number_result, number_category_type(op.number));
    } else if (op.tensor->rank() == 0) {
      zero_dim_result = promote(zero_dim_result, op.tensor->dtype);
    } else {
      dim_result = promote(dim_result, op.tensor->dtype);
    }
  }
  MaybeType r = combine_categories(dim_result, combine_categories(zero_dim_result, number_result));
  if (!r) throw std::logic_error("result_type of no operands");
  return *r;
}

ElementwiseTypes elementwise_types(const std::vector<Operand>& operands, Promotion kind) {
  ir::DType promoted = result_type(operands);
  switch (kind) {
    case Promotion::Default:
      break;
    case Promotion::IntToFloat:
      if (!ir::is_floating(promoted)) promoted = ir::DType::Float32;
      break;
    case Promotion::BoolToLong:
      if (promoted == ir::DType::Bool) promoted = ir::DType::Int64;
      break;
    case Promotion::AlwaysBool:
      return ElementwiseTypes{promoted, ir::compute_type(promoted), ir::DType::Bool};
  }
  return ElementwiseTypes{promoted, ir::compute_type(promoted), promoted};
}

ir::Value operand_value(const Operand& op, const ElementwiseTypes& types,
                        const std::vector<int64_t>& out_sizes,
                        const std::vector<ir::Expr>& out_index, bool number_in_opmath) {
  if (op.is_tensor()) {
    ir::Value v = load_broadcast(*op.tensor, out_sizes, out_index);
    return ir::cast(ir::cast(v, types.common), types.compute);
  }
  if (number_in_opmath) return scalar_constant(op.number, types.compute);
  return ir::cast(scalar_constant(op.number, types.common), types.compute);
}

void require_safe_divisor(const Operand& divisor, const ElementwiseTypes& types) {
  if (ir::is_floating(types.compute)) return;
  if (divisor.is_tensor())
    decline("integer division by a tensor (a zero divisor must raise as in ATen)");
  if (scalar_constant(divisor.number, types.compute)->int_value == 0)
    decline("integer division by zero");
}

}  // namespace inductor_cpp::inductor::lowering
