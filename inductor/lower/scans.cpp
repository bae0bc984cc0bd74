/// \file
/// Scans: cumsum and cumprod (CPU graphs).
///
/// A scan is a reduction compute with one reduce range, the scanned dim's extent, flagged with
/// its dim (ir::Compute::scan_dim); its body reads the input at r0 along that dim and masks
/// itself to r0 <= i<dim>, so passes that see only a reduction compute the same values. The
/// CPU schedule runs it as running accumulators (ir/passes/schedule_scan.cpp): one serial loop
/// along the scan per line, lines side by side in vector lanes where the output is contiguous
/// across them. 2 threads, 1024 x 4096 float32: cumsum(0) 1.7-1.9 ms, eager 12.6-15.5, stock
/// 14.5 (an ATen call there too).
///
/// Accumulation follows eager's CPU kernels: float32 in float64, float16 / bfloat16 in float32,
/// each running value rounded to the output type as it is stored. Declined
/// (the op then runs as an ATen call, with the reason logged): CUDA graphs (the GPU schedule
/// would run the masked reduction, quadratic in the length), 0-dim inputs, and float scans
/// along the contiguous dim, which run serially in the wider type either way (eager's speed).
#include "inductor/lower/lowering_internal.h"

namespace inductor_cpp::inductor::lowering {
namespace {

using ir::DType;
using ir::ReduceOp;

/// The type eager's CPU kernels accumulate a scan of `type` in (at::acc_type on the CPU):
/// float32 in float64, float16 / bfloat16 in float32.
DType accumulation_type(DType type) {
  if (type == DType::Float32) return DType::Float64;
  return ir::compute_type(type);
}

void lower_scan(NodeLowering& n, ReduceOp op) {
  const TensorInfo t = n.tensor("self");
  const OutputInfo out = n.output(0);
  if (out.device.rfind("cpu", 0) != 0) decline("scans run as generated kernels on the CPU only");
  if (t.rank() == 0) decline("a scan of a 0-dim tensor");
  const bool integral = t.dtype == DType::Bool || ir::is_integral(t.dtype);
  const DType type = n.dtype_arg("dtype").value_or(integral ? DType::Int64 : t.dtype);
  if (out.dtype != type) decline("the graph's output type differs from the scan's");
  if (out.sizes != t.sizes) decline("the output's sizes differ from the input's");
  const int64_t dim = wrap_dim(n.int_arg("dim"), t.rank());
  const DType acc = accumulation_type(type);
  if (acc != type && t.strides[dim] == 1 && t.sizes[dim] > 1)
    decline(std::string("a ") + ir::dtype_name(type) + " scan along the contiguous dim runs serially in " +
            ir::dtype_name(acc) + ", as eager's does: left to ATen");
  std::vector<ir::Expr> index = range_vars(t.rank());
  const ir::Expr position = index[dim];
  index[dim] = ir::Expr::var(ir::reduce_var(0));
  const ir::Value x = ir::cast(load_at(t, index), acc);
  const ir::Value identity = ir::is_floating(acc)
                                 ? ir::constant_float(op == ReduceOp::prod ? 1.0 : 0.0, acc)
                                 : ir::constant_int(op == ReduceOp::prod ? 1 : 0, acc);
  const ir::Value in_prefix =
      ir::binary(ir::BinaryOp::ne,
                 ir::index_value(ir::le(ir::Expr::var(ir::reduce_var(0)), position), DType::Int64),
                 ir::constant_int(0, DType::Int64));
  ir::Compute c;
  c.name = out.buffer;  // a wider accumulation is rounded as each running value is stored
  c.ranges = to_exprs(t.sizes);
  c.reduce_ranges = {c.ranges[dim]};
  c.reduce_op = op;
  c.scan_dim = static_cast<int32_t>(dim);
  c.body = ir::where(in_prefix, x, identity);
  c.graph_node = n.node_index();
  n.define(c);
}

}  // namespace

void register_scan_ops(OpTable& table) {
  table.add("aten::cumsum", "self dim dtype", [](NodeLowering& n) { lower_scan(n, ReduceOp::sum); });
  table.add("aten::cumprod", "self dim dtype", [](NodeLowering& n) { lower_scan(n, ReduceOp::prod); });
}

}  // namespace inductor_cpp::inductor::lowering
