/// \file
/// Common-subexpression elimination across computes.
///
/// Inside one body, interning already shares equal subtrees. This pass merges whole computes
/// that compute the same thing (same kind, ranges, reduction and body, and not graph outputs
/// whose identity matters): readers of the duplicate are pointed at the first one. Typical
/// source: AOT autograd's decompositions recomputing the same broadcast or cast twice.
#pragma once

#include "ir/loop_ir.h"

namespace inductor_cpp::ir {

LoopProgram eliminate_common_subexpressions(const LoopProgram& program);

}  // namespace inductor_cpp::ir
