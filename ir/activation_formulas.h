/// \file
/// The formulas of the activations a library epilogue can apply (GELU, SiLU), written once:
/// lowering builds the ops' bodies with them (inductor/lower/pointwise_activations.cpp) and
/// epilogue selection (epilogue_ops.h) recognises them by building the same expression: values
/// are interned, so "is this GELU of x" is a pointer compare.
#pragma once

#include "ir/value.h"

namespace inductor_cpp::ir {

/// ATen's CPU GELU: x · ½ · (1 + erf(x / √2)), or with `tanh_approx`
/// ½ · x · (1 + tanh(√(2/π) · (x + 0.044715 · x³))).
Value gelu_formula(const Value& x, bool tanh_approx);
/// x / (1 + exp(-x)).
Value silu_formula(const Value& x);

}  // namespace inductor_cpp::ir
