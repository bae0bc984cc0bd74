/// \file
/// Loop-level IR: name tables, structural equality, buffer lookup and the small helpers the
/// passes share (loop variable names, variable ranges of a compute, contiguous strides).
#include "ir/loop_ir.h"

#include <cstdint>
#include <stdexcept>

namespace inductor_cpp::ir {

const char* buffer_origin_name(BufferOrigin o) {
  switch (o) {
    case BufferOrigin::Input:
      return "input";
    case BufferOrigin::Constant:
      return "constant";
    case BufferOrigin::Extern:
      return "extern";
    case BufferOrigin::Computed:
      return "computed";
  }
  return "?";
}

bool Buffer::operator==(const Buffer& o) const {
  return name == o.name && dtype == o.dtype && sizes == o.sizes && strides == o.strides &&
         offset == o.offset && origin == o.origin && device == o.device && index == o.index;
}

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
#define INDUCTOR_CPP_REDUCE_NAME(k) \
  case ReduceOp::k:                 \
    return #k;
    INDUCTOR_CPP_REDUCE_OPS(INDUCTOR_CPP_REDUCE_NAME)
#undef INDUCTOR_CPP_REDUCE_NAME
  }
  return "?";
}

std::optional<ReduceOp> reduce_op_from_name(const std::string& name) {
#define INDUCTOR_CPP_REDUCE_FROM(k) \
  if (name == #k) return ReduceOp::k;
  INDUCTOR_CPP_REDUCE_OPS(INDUCTOR_CPP_REDUCE_FROM)
#undef INDUCTOR_CPP_REDUCE_FROM
  return std::nullopt;
}

DType reduce_result_type(ReduceOp op, DType body_type) {
  switch (op) {
    case ReduceOp::argmax:
    case ReduceOp::argmin:
      return DType::Int64;
    case ReduceOp::any:
    case ReduceOp::all:
      return DType::Bool;
    default:
      return body_type;
  }
}

DType Compute::dtype() const {
  if (!body) throw std::logic_error("compute " + name + " has no body");
  return is_reduction() ? reduce_result_type(reduce_op, body->dtype) : body->dtype;
}

// reduce_op means nothing for a pointwise compute, so it does not take part in equality there.
bool Compute::operator==(const Compute& o) const {
  if (is_reduction() && reduce_op != o.reduce_op) return false;
  return name == o.name && ranges == o.ranges && reduce_ranges == o.reduce_ranges &&
         body == o.body && view == o.view && graph_node == o.graph_node && scan_dim == o.scan_dim;
}

std::string range_var(size_t k) {
  return "i" + std::to_string(k);
}
std::string reduce_var(size_t k) {
  return "r" + std::to_string(k);
}

bool ExternCall::operator==(const ExternCall& o) const {
  return graph_node == o.graph_node && inputs == o.inputs && outputs == o.outputs && view == o.view &&
         alias == o.alias && library == o.library;
}

bool KernelGroup::operator==(const KernelGroup& o) const {
  return computes == o.computes;
}

// Only the part the kind uses takes part in equality.
bool Step::operator==(const Step& o) const {
  if (kind != o.kind) return false;
  return kind == Kind::Kernel ? kernel == o.kernel : call == o.call;
}

const Buffer& LoopProgram::buffer(const std::string& name) const {
  const Buffer* b = find_buffer(name);
  if (b == nullptr) throw std::out_of_range("no buffer named " + name + " in the loop program");
  return *b;
}

const Buffer* LoopProgram::find_buffer(const std::string& name) const {
  for (const Buffer& b : buffers) {
    if (b.name == name) return &b;
  }
  return nullptr;
}

bool LoopProgram::operator==(const LoopProgram& o) const {
  return buffers == o.buffers && computes == o.computes && steps == o.steps &&
         outputs == o.outputs && symbol_ranges == o.symbol_ranges;
}

namespace {

/// [0, extent - 1] with the extent's upper bound under the symbol ranges (an empty loop
/// gets [0, 0] rather than an inverted interval).
Interval loop_interval(const Expr& extent, const RangeMap& symbols) {
  const Interval b = bounds(extent, symbols);
  if (b.hi == INT64_MAX) return {0, INT64_MAX};
  if (b.hi <= 1) return {0, 0};
  return {0, b.hi - 1};
}

}  // namespace

RangeMap ranges_of(const Compute& c, const LoopProgram& program) {
  RangeMap ranges(program.symbol_ranges.begin(), program.symbol_ranges.end());
  for (size_t k = 0; k < c.ranges.size(); ++k) {
    ranges[range_var(k)] = loop_interval(c.ranges[k], program.symbol_ranges);
  }
  for (size_t k = 0; k < c.reduce_ranges.size(); ++k) {
    ranges[reduce_var(k)] = loop_interval(c.reduce_ranges[k], program.symbol_ranges);
  }
  return ranges;
}

// As c10 does: a size-0 dimension counts as 1, so strides stay nonzero. Symbolic sizes are
// >= 2 (Dynamo specializes 0 and 1), so they are used as they are.
std::vector<Expr> contiguous_strides(const std::vector<Expr>& sizes) {
  std::vector<Expr> strides(sizes.size());
  Expr running(1);
  for (size_t k = sizes.size(); k-- > 0;) {
    strides[k] = running;
    const Expr& size = sizes[k];
    running = running * (size.is_const() && size.value() < 1 ? Expr(1) : size);
  }
  return strides;
}

}  // namespace inductor_cpp::ir
