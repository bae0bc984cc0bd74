/// \file
/// Epilogue absorption: the pointwise compute that consumes a library call's result (a bias,
/// an activation, a residual add, an eval batch norm, a gate) becomes part of the call's
/// epilogue expression (ir/library_call.h), and the call stores the consumer's buffer itself:
/// one pass over the output less, one kernel less.
///
/// Runs after inline_producers, so a consumer's body already holds the whole chain of ops
/// applied to the result (relu(bn(x)) + r is one compute). A consumer C of call L (output O)
/// is absorbed when
///   * O is read by C alone (not an extern, not a graph output), C is pointwise, float32, the
///     only compute of its kernel step, and reads O at one index at which each element of C
///     sits where O's element sits in memory (a reshape of O, such as a Linear's [B·S, N]
///     viewed as [B, S, N], qualifies) over as many elements;
///   * everything else C reads is ready before L runs (inputs, constants, earlier steps);
///   * the composed epilogue, after per-column folding (below), is a sequence of the library's
///     fixed operations (ir/epilogue_ops.h).
/// Absorption repeats along the chain while it succeeds.
///
/// Per-column folding: a run of +, -, · by per-column values (loads at the column index only:
/// a convolution's bias, batch norm's mean, 1/sqrt(var + eps), weight and bias) is one affine
/// map y·s[c] + t[c]; when s or t is not already a constant or a plain vector, a small compute
/// over the columns evaluates it (a kernel step placed before the call, run on every call, so
/// parameters may change between calls) and the epilogue reads that vector (scale_col,
/// bias_col).
///
/// On a GPU (the output buffer's device), only what cuBLAS(Lt) and cuDNN apply themselves
/// (ir/epilogue_ops.h gpu_epilogue_fits: a bias or residual, then relu or tanh-GELU), with
/// no folding and no tile: everything else is a generated kernel as before.
///
/// Tile epilogues: a consumer that is not such a sequence (and has no transcendental math, and
/// the call is a 2-D mm / addmm or a conv2d with static sizes) may still run inside the call,
/// on each finished output tile (ir/passes/tile_epilogue.h): the call keeps its epilogue, names
/// the consumer as its tile compute (LibraryCall::tile_compute) and stores the consumer's buffer.
#pragma once

#include "ir/loop_ir.h"

namespace inductor_cpp::ir {

struct AbsorbOptions {
  bool enabled = true;
  bool tile_epilogues = true;  ///< the "matrix_tile_epilogues" option
};

LoopProgram absorb_epilogues(const LoopProgram& program, const AbsorbOptions& options = {});

}  // namespace inductor_cpp::ir
