/// \file
/// Tensor-creating ops: full/zeros/ones (and _like), scalar_tensor, arange, prims::iota.
/// Their result types are checked against torch's inference (a Python int fill gives int64, a
/// float the default float32) and the metadata. empty* has no values to compute and stays
/// with ATen.
#include <cmath>

#include "inductor/lower/elementwise.h"

namespace inductor_cpp::inductor::lowering {
namespace {

using ir::BinaryOp;
using ir::DType;

/// The dtype torch infers for a tensor created from a Python number.
DType inferred_dtype(const ir::Arg& number) {
  if (number.kind == ir::Arg::Kind::Bool) return DType::Bool;
  if (number.kind == ir::Arg::Kind::Int) return DType::Int64;
  return DType::Float32;
}

/// Defines output 0 as `value` everywhere, after checking shape and dtype.
void define_constant_tensor(NodeLowering& n, const std::vector<int64_t>& sizes, DType dtype,
                            const ir::Arg& value) {
  check_plain_tensor_args(n);
  const OutputInfo out = n.output(0);
  expect_output_sizes(out, sizes, "the factory");
  if (out.dtype != dtype)
    decline(std::string("expected ") + ir::dtype_name(dtype) + " but the graph says " +
            ir::dtype_name(out.dtype));
  n.define(make_pointwise(out.buffer, out.sizes, scalar_constant(value, dtype), n.node_index()));
}

void lower_full(NodeLowering& n) {
  const ir::Arg fill = n.scalar("fill_value");
  define_constant_tensor(n, n.int_list("size"), n.dtype_arg("dtype").value_or(inferred_dtype(fill)),
                         fill);
}

void lower_full_like(NodeLowering& n, std::optional<ir::Arg> fixed_value) {
  const TensorInfo self = n.tensor("self");
  const ir::Arg fill = fixed_value ? *fixed_value : n.scalar("fill_value");
  define_constant_tensor(n, self.sizes, n.dtype_arg("dtype").value_or(self.dtype), fill);
}

bool is_whole(const ir::Arg& a) {
  return a.kind != ir::Arg::Kind::Float || a.float_value == std::floor(a.float_value);
}

double as_double(const ir::Arg& a) {
  if (a.kind == ir::Arg::Kind::Float) return a.float_value;
  if (a.kind == ir::Arg::Kind::Int) return static_cast<double>(a.int_value);
  return a.bool_value ? 1 : 0;
}

/// arange as ATen's CPU kernel: length ceil((end - start) / step); element i is
/// start + step * i computed in the accumulation type (int64 for integers, double for
/// float32/float64, float for float16/bfloat16), then cast.
void lower_arange(NodeLowering& n) {
  const ir::Arg start = n.scalar("start", ir::Arg::of_int(0));
  const ir::Arg end = n.scalar("end");
  const ir::Arg step = n.scalar("step", ir::Arg::of_int(1));
  check_plain_tensor_args(n);
  const bool all_ints = start.kind == ir::Arg::Kind::Int && end.kind == ir::Arg::Kind::Int &&
                        step.kind == ir::Arg::Kind::Int;
  const DType dtype = n.dtype_arg("dtype").value_or(all_ints ? DType::Int64 : DType::Float32);
  if (as_double(step) == 0) decline("arange step 0");
  const OutputInfo out = n.output(0);
  if (out.dtype != dtype) decline("arange dtype disagrees with the graph");
  if (out.sizes.size() != 1) decline("arange output is not 1-D");
  const bool integral = !ir::is_floating(dtype);
  if (integral && !(is_whole(start) && is_whole(step))) decline("fractional arange into integers");
  const double length = std::ceil((as_double(end) - as_double(start)) / as_double(step));
  expect_output_sizes(out, {static_cast<int64_t>(length)}, "arange");

  const ir::Expr i = ir::Expr::var(ir::range_var(0));
  ir::Value v;
  if (integral) {
    v = bin(BinaryOp::add, ir::constant_int(static_cast<int64_t>(as_double(start)), DType::Int64),
            ir::index_value(i * ir::Expr(static_cast<int64_t>(as_double(step))), DType::Int64));
  } else {
    const DType acc = ir::is_reduced_float(dtype) ? DType::Float32 : DType::Float64;
    const ir::Value position = ir::cast(ir::index_value(i, DType::Int64), acc);
    v = bin(BinaryOp::add, ir::constant_float(as_double(start), acc),
            bin(BinaryOp::mul, ir::constant_float(as_double(step), acc), position));
  }
  n.define(make_pointwise(out.buffer, out.sizes, ir::cast(v, dtype), n.node_index()));
}

/// prims::iota(length, *, start, step, dtype, device, requires_grad): start + i * step.
void lower_iota(NodeLowering& n) {
  const int64_t length = n.int_arg("length");
  const int64_t start = n.int_arg("start"), step = n.int_arg("step");
  n.bool_arg("requires_grad", false);
  const auto dtype = n.dtype_arg("dtype");
  const OutputInfo out = n.output(0);
  if (!dtype || *dtype != out.dtype) decline("iota dtype disagrees with the graph");
  expect_output_sizes(out, {length}, "iota");
  const ir::Expr i = ir::Expr::var(ir::range_var(0));
  const ir::Value v = ir::index_value(ir::Expr(start) + i * ir::Expr(step), DType::Int64);
  n.define(make_pointwise(out.buffer, out.sizes, ir::cast(v, out.dtype), n.node_index()));
}

}  // namespace

void register_creation_ops(OpTable& table) {
  const std::string factory_args = "dtype layout device pin_memory";
  table.add("aten::full", "size fill_value " + factory_args, lower_full);
  table.add("aten::full_like", "self fill_value " + factory_args + " memory_format",
            [](NodeLowering& n) { lower_full_like(n, std::nullopt); });
  table.add("aten::zeros_like", "self " + factory_args + " memory_format",
            [](NodeLowering& n) { lower_full_like(n, ir::Arg::of_int(0)); });
  table.add("aten::ones_like", "self " + factory_args + " memory_format",
            [](NodeLowering& n) { lower_full_like(n, ir::Arg::of_int(1)); });
  for (const auto& [op, value] : {std::pair{"aten::zeros", 0}, {"aten::ones", 1}}) {
    table.add(op, "size " + factory_args, [v = value](NodeLowering& n) {
      define_constant_tensor(n, n.int_list("size"), n.dtype_arg("dtype").value_or(DType::Float32),
                             ir::Arg::of_int(v));
    });
  }
  table.add("aten::scalar_tensor", "s " + factory_args, [](NodeLowering& n) {
    define_constant_tensor(n, {}, n.dtype_arg("dtype").value_or(DType::Float32), n.scalar("s"));
  });
  table.add("aten::arange", "end " + factory_args, lower_arange);
  table.add("aten::arange.start", "start end " + factory_args, lower_arange);
  table.add("aten::arange.start_step", "start end step " + factory_args, lower_arange);
  table.add("prims::iota", "length start step dtype device requires_grad", lower_iota);
  for (const char* op : {"aten::empty.memory_format", "aten::empty_strided", "aten::empty_like",
                         "aten::empty_permuted", "aten::new_empty", "aten::new_empty_strided"})
    table.add_fallback(op, "uninitialized memory: nothing to compute");
}

}  // namespace inductor_cpp::inductor::lowering
