/// \file
/// Dead-code elimination: drops computes nothing needs, kernel steps left empty, and buffers
/// nothing defines or reads.
///
/// Needed = graph outputs, extern inputs, and (transitively) whatever needed computes read.
/// Extern steps are always kept: an ATen op may have effects we cannot see (input mutation).
#pragma once

#include "ir/loop_ir.h"

namespace inductor_cpp::ir {

LoopProgram eliminate_dead_code(const LoopProgram& program);

}  // namespace inductor_cpp::ir
