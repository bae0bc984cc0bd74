/// \file
/// The elementwise driver (promotion check, broadcast, operand conversion, final cast) and
/// the small value builders pointwise lowerings share.
#include "inductor/lower/elementwise.h"

namespace inductor_cpp::inductor::lowering {

void lower_elementwise(NodeLowering& n, const std::vector<Operand>& operands,
                       const ElementwiseBody& body, const ElementwiseOptions& options) {
  const OutputInfo out = n.output(0);
  const size_t k = options.leading_conditions;
  const std::vector<Operand> promoted(operands.begin() + k, operands.end());
  const ElementwiseTypes types =
      options.types ? *options.types : elementwise_types(promoted, options.promotion);
  if (types.result != out.dtype)
    decline(std::string("type promotion gives ") + ir::dtype_name(types.result) +
            " but the graph says " + ir::dtype_name(out.dtype));
  std::vector<std::vector<int64_t>> shapes;
  for (const Operand& op : operands)
    if (op.is_tensor()) shapes.push_back(op.tensor->sizes);
  expect_output_sizes(out, broadcast_shapes(shapes), "broadcasting");

  const std::vector<ir::Expr> index = range_vars(out.sizes.size());
  std::vector<ir::Value> values;
  for (size_t i = 0; i < operands.size(); ++i) {
    const Operand& op = operands[i];
    if (i < k) {
      if (!op.is_tensor() || op.tensor->dtype != ir::DType::Bool)
        decline("condition is not a bool tensor");
      values.push_back(load_broadcast(*op.tensor, out.sizes, index));
      continue;
    }
    values.push_back(operand_value(op, types, out.sizes, index, options.number_in_opmath));
  }
  ir::Value result = ir::cast(body(values, types), out.dtype);
  n.define(make_pointwise(out.buffer, out.sizes, result, n.node_index()));
}

void require_floating(const ElementwiseTypes& types, const char* what) {
  if (!ir::is_floating(types.compute))
    decline(std::string(what) + " of " + ir::dtype_name(types.common) + " is not generated");
}

ir::Value bin(ir::BinaryOp op, const ir::Value& a, const ir::Value& b) {
  return ir::binary(op, a, b);
}

ir::Value un(ir::UnaryOp op, const ir::Value& a) {
  return ir::unary(op, a);
}

ir::Value max_value(const ir::Value& a, const ir::Value& b) {
  if (a->dtype == ir::DType::Bool) return bin(ir::BinaryOp::logical_or, a, b);
  return bin(ir::BinaryOp::maximum, a, b);
}

ir::Value min_value(const ir::Value& a, const ir::Value& b) {
  if (a->dtype == ir::DType::Bool) return bin(ir::BinaryOp::logical_and, a, b);
  return bin(ir::BinaryOp::minimum, a, b);
}

ir::Value constant_like(double value, const ir::Value& like) {
  return constant_number(value, like->dtype);
}

}  // namespace inductor_cpp::inductor::lowering
