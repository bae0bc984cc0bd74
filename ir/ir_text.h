/// \file
/// Text form of the loop-level IR and of scheduled kernels: printers and parsers.
///
/// The text is the test oracle (passes are tested as "IR text in -> pass -> IR text out") and
/// what the logs show, so it is line-oriented, readable and exact: parse(print(x)) == x, and
/// print(parse(t)) == t for canonical text (what the printers produce). Parse errors throw
/// std::invalid_argument naming the line (and column) and what was expected.
///
/// Values (see ir/value.h): `add(load(%in0, [i0, i1]), 1.0:float32)`. A load names its buffer;
/// its element type comes from the context (the program's buffer table, the kernel's params)
/// and is written out only where there is no context or it differs from it:
/// `load(%in0:float16, [i0])`. Optional load arguments follow the index list in this order:
/// `mask=<expr>`, `indirect=[<value>, ...]`, `bounds=[<expr>, ...]`.
///
/// Programs (one item per line, `#` starts a comment line):
///   program {
///     buffer %in0: float32[8, 16]{16, 1} input 0 cpu
///     buffer %v: float32[4]{1}+(s0 + 2) computed cpu        sizes{strides}+offset (if != 0)
///     compute %2 pointwise[8, 16] = add(load(%in0, [i0, i1]), 1.0:float32)
///     compute %3 (node 3) reduce sum[8] over [16] = load(%2, [i0, r0])
///     compute %4 view pointwise[16, 8] = load(%2, [i1, i0])
///     kernel %2, %3
///     extern node 4 (%3) -> (%5, _)                           `_`: an unused ("") name
///     extern view node 6 (%2) -> (%6)
///     extern view alias node 7 (%6) -> (%7)                   no op: %7 is %6 (loop_ir.h)
///     output %3, %5
///     symbol s0 in [2, 9223372036854775807]
///   }
/// Buffers print in definition order, computes in the order of their buffers, then steps,
/// outputs and symbols.
///
/// An extern step carrying a library call (library_call.h) ends with its clause, on the same
/// line: `library <op>(<operands>)` (`_` for an absent one), then, each only when not the
/// default and in this order:
///   {alpha=0.5, padding_h=1}     attributes, by name; integral values print as integers,
///                                others as the shortest text that reads back exactly
///   epilogue=<value>             over i0, i1, ... with `local(acc, <dtype>)`, the result
///   tile=%8 from %5              the tile compute and the buffer it reads the result from
///   absorbs [6, 7]               the graph nodes the epilogue and tile took over
/// e.g. `extern node 4 (%in0, %w, %b) -> (%4) library addmm(%in0, %w) {alpha=2}
///       epilogue=add(local(acc, float32), load(%b, [i1]))` (one line).
///
/// Kernels: the form documented in ir/kernel_ir.h, plus `let t0 = <value>`, accumulation with
/// a position `acc0 += <value> at <expr>` (argmax/argmin), `parallel` (chunk 0) and a
/// ` symbols(s0, s1)` clause after the parameter list.
#pragma once

#include <map>
#include <string>

#include "ir/dtype.h"
#include "ir/kernel_ir.h"
#include "ir/loop_ir.h"
#include "ir/value.h"

namespace inductor_cpp::ir {

/// Element types of the buffers a value may load, known from its context.
using BufferTypes = std::map<std::string, DType>;

/// A value, with loads of buffers in `known` whose type matches printed without a type.
/// (`to_string(const Value&)`, declared in value.h, prints every load's type.)
std::string to_string(const Value& v, const BufferTypes& known);
/// Reads a value; a load without a written type takes it from `known` (error if absent).
Value parse_value(const std::string& text, const BufferTypes& known = {});

/// A library call's clause, `library <op>(...) ...` as above (no leading space); loads of
/// buffers in `known` print without their type. Shared by the program and schedule texts.
std::string library_text(const LibraryCall& call, const BufferTypes& known);

std::string program_to_text(const LoopProgram& program);
LoopProgram parse_program(const std::string& text);

/// (kernel_to_text is declared in ir/kernel_ir.h.)
Kernel parse_kernel(const std::string& text);

/// The element types of a program's buffers / a kernel's params, as printing context.
BufferTypes buffer_types(const LoopProgram& program);
BufferTypes buffer_types(const Kernel& kernel);

}  // namespace inductor_cpp::ir
