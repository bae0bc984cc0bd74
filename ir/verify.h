/// \file
/// Verifiers for the loop-level IR and for scheduled kernels.
///
/// Passes assume well-formed input; the pipeline runs these between passes (in debug builds
/// and tests) so a broken pass is caught where it breaks things, with a message naming the
/// compute, step or statement, not three passes later as a wrong number.
///
/// A LoopProgram is well formed when:
///   * buffer names are unique, strides match sizes in rank, inputs/constants have an index;
///   * every compute defines a `computed` buffer of its name with the compute's dtype and its
///     ranges as sizes, and every `computed` buffer has a compute (or, for a view that ATen
///     materializes, an extern view step writing it); views are pointwise;
///   * bodies are non-null, hold no locals, and every load names a known buffer with the
///     buffer's dtype, one index per buffer dimension, one bound per indirect value;
///   * index expressions use only the compute's loop variables (i<k> for its ranges, r<k> for
///     its reduce ranges), declared symbols, and in a load's index its %ind<k> placeholders;
///   * no compute reads its own buffer, directly or through inlined computes;
///   * steps read only buffers already defined: inputs, constants, buffers written by earlier
///     steps (or earlier in the same kernel group), and computes inlined into them; a kernel
///     group holds known, non-view computes, each stored by one step only; extern steps write
///     `extern` buffers, and extern view steps also views' `computed` buffers, each once;
///   * an extern step's library call (library_call.h) has its op's operand and output counts;
///     its operands and every buffer its epilogue loads are among the step's inputs; its
///     epilogue (only mm, addmm, bmm, conv2d have one) reads no local but `acc` of a floating
///     type, and loads known buffers with their dtype, one index per dimension, over i<k> for
///     the dims of the first output (of the tile input, with a tile) and symbols; its tile
///     compute is a pointwise compute no kernel step stores (the step may write its buffer),
///     and its tile input a known buffer;
///   * outputs are defined buffers (or "" for None) and symbol ranges are non-empty.
///   Extern inputs and outputs may also be views not materialized yet (as lowering leaves
///   them, before inline_producers adds their extern view steps), if their sources hold data.
///
/// A Kernel is well formed when:
///   * params name distinct buffers, symbols are distinct;
///   * loads read params with their dtype and a single (flat) index; stores write params
///     marked written, with the param's dtype;
///   * index expressions and extents use only enclosing loop variables, the kernel's symbols
///     and (in a load's index) its %ind<k> placeholders; loop variables are not reused by a
///     nested loop; parallel loops do not nest;
///   * locals are read (with their type) only after their Let/DefineAccumulator in an
///     enclosing scope, names are not redefined while visible, Accumulate targets an
///     accumulator with the value's dtype.
#pragma once

#include "ir/kernel_ir.h"
#include "ir/loop_ir.h"

namespace inductor_cpp::ir {

/// Throws std::invalid_argument naming the first violation found.
void verify(const LoopProgram& program);
/// Throws std::invalid_argument naming the kernel, statement and violation.
void verify(const Kernel& kernel);

}  // namespace inductor_cpp::ir
