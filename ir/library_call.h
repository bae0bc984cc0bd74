/// \file
/// Library calls: the loop-level IR's node for work done by a library kernel (on the CPU our
/// GEMM, convolution and attention kernels, matrix/; on the GPU cuBLAS(Lt) and cuDNN through
/// ATen, runtime/gpu_library_step.h) rather than by generated loops.
///
/// Lowering chooses one for a matrix op (mm, addmm, bmm, convolution, its backward, flash
/// attention and its backward) when the op's operands suit the library (inductor/lower/
/// library_calls.cpp); everything else about the op is then data here: the operand buffers,
/// literal attributes, and the epilogue, an ordinary Value expression applied to each element
/// of the library's result before it is stored. A library call rides on an extern step
/// (loop_ir.h ExternCall::library): the passes already treat extern steps as "reads these
/// buffers whole, writes those", which is exactly what a library call does.
///
/// The epilogue is written over the coordinates of the call's first output (i0, i1, ...: one
/// per dimension of that buffer), with `local(acc, <dtype>)` standing for the library's result
/// at that point; loads of other buffers (a bias, a residual, batch-norm parameters) are at
/// indices in those coordinates. Lowering starts it as `acc` or `acc + bias`;
/// absorb_epilogues (ir/passes/absorb_epilogues.h) composes the pointwise computes that read
/// the result into it, and the call then writes their buffer. epilogue_ops.h turns the
/// expression into the library's fixed epilogue operations.
///
/// A consumer the fixed operations cannot express may still run inside the library call, one
/// output tile at a time (ir/passes/tile_epilogue.h): `tile_compute` names that compute (kept in
/// the program, in no kernel step) and `tile_input` the buffer it reads the library's result
/// from (the call's result before the tile, stored where the call's output is).
///
/// Text form (after the extern step's own, ir/ir_text.h):
///   extern node 5 (%in0, %c1, %c2) -> (%7) library conv2d(%in0, %c1) {padding_h=1, ...}
///       epilogue=maximum(add(local(acc, float32), load(%c2, [i1])), 0.0:float32)
///       tile=%8 from %5 absorbs [6, 7]
/// (one line; each clause after the operand list only when it differs from its default).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/value.h"

namespace inductor_cpp::ir {

/// The library ops, listed once. Operands (LibraryCall::operands) and outputs (the extern
/// step's outputs; "" for one not computed) per op:
///   mm, addmm, bmm       (a, b)                                  -> (out)
///   conv2d               (input, weight)                         -> (out)
///   conv2d_backward      (grad_output, input, weight)            -> (grad_input, grad_weight, grad_bias)
///   attention            (query, key, value, mask)               -> (out, logsumexp)
///   attention_backward   (grad_output, query, key, value, out, logsumexp, mask)
///                                                                -> (grad_query, grad_key, grad_value)
/// ("" for an absent mask.) addmm's bias is the first term of its epilogue; a convolution's too.
#define INDUCTOR_CPP_LIBRARY_CALL_OPS(X) \
  X(mm) X(addmm) X(bmm) X(conv2d) X(conv2d_backward) X(attention) X(attention_backward)

enum class LibraryOp : uint8_t {
#define INDUCTOR_CPP_ENUM_ENTRY(k) k,
  INDUCTOR_CPP_LIBRARY_CALL_OPS(INDUCTOR_CPP_ENUM_ENTRY)
#undef INDUCTOR_CPP_ENUM_ENTRY
};
const char* library_op_name(LibraryOp op);
std::optional<LibraryOp> library_op_from_name(const std::string& name);
/// mm, addmm, bmm, conv2d: the ops whose single output an epilogue may transform.
bool library_op_has_epilogue(LibraryOp op);

/// The name `local(acc, ...)` has in an epilogue.
inline constexpr const char* kEpilogueAccumulator = "acc";

struct LibraryCall {
  LibraryOp op = LibraryOp::mm;
  std::vector<std::string> operands;
  /// Literal attributes by name: alpha (mm, addmm, bmm); stride_h, stride_w, padding_h,
  /// padding_w, dilation_h, dilation_w, groups (convolutions; groups > 1 on the GPU only);
  /// scale, causal (attention).
  std::map<std::string, double> attrs;
  /// Null: the result is stored as computed. See the file comment.
  Value epilogue;
  std::string tile_compute;  ///< "" when none
  std::string tile_input;
  /// Graph nodes whose work the epilogue (and tile) took over; metadata for messages and
  /// counters, not part of equality.
  std::vector<int32_t> absorbed_nodes;

  /// attrs[name], or `fallback` when absent.
  double attr(const std::string& name, double fallback) const;
  /// Every buffer the call reads: operands, epilogue loads, the tile compute's loads excluded
  /// (the caller knows the compute).
  std::vector<std::string> reads() const;
  bool operator==(const LibraryCall& o) const;
};

/// `local(acc, dtype)`: the library's result in an epilogue.
Value epilogue_accumulator(DType dtype);

/// The call with every buffer name `rename` maps replaced (operands, epilogue loads, tile
/// input); names it does not map stay.
LibraryCall renamed(const LibraryCall& call, const std::map<std::string, std::string>& rename);

}  // namespace inductor_cpp::ir
