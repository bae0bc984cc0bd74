/// \file
/// Tests of the verifiers: a well-formed program and kernel pass, and for each rule of
/// ir/verify.h a program or kernel breaking it (written as IR text, or built where the text
/// cannot express the fault) is rejected with a message naming the culprit.
#include "ir/verify.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "ir/ir_text.h"

namespace inductor_cpp::ir {
namespace {

using ::testing::HasSubstr;

/// Expects verify(x) to throw std::invalid_argument whose message contains every needle.
template <typename T>
void expect_rejected(const T& x, std::initializer_list<const char*> needles) {
  try {
    verify(x);
    ADD_FAILURE() << "verified without error";
  } catch (const std::invalid_argument& e) {
    for (const char* needle : needles) EXPECT_THAT(e.what(), HasSubstr(needle));
  }
}

/// A program of the given body lines, with these buffers declared first:
///   %in0 float32[8, 16] input, %idx int64[8] input,
///   %1 float32[8, 16], %2 float32[8], %3 int64[8] computed, %4 float32[8] extern.
LoopProgram program(const std::string& lines) {
  return parse_program(
      "program {\n"
      "  buffer %in0: float32[8, 16]{16, 1} input 0 cpu\n"
      "  buffer %idx: int64[8]{1} input 1 cpu\n"
      "  buffer %1: float32[8, 16]{16, 1} computed cpu\n"
      "  buffer %2: float32[8]{1} computed cpu\n"
      "  buffer %3: int64[8]{1} computed cpu\n"
      "  buffer %4: float32[8]{1} extern cpu\n" +
      lines + "}\n");
}

const char* const kGoodComputes =
    "  compute %1 pointwise[8, 16] = exp(load(%in0, [i0, i1]))\n"
    "  compute %2 reduce sum[8] over [16] = load(%1, [i0, r0])\n"
    "  compute %3 reduce argmax[8] over [16] = load(%1, [i0, r0])\n";

TEST(VerifyProgramTest, WellFormedProgramsPass) {
  EXPECT_NO_THROW(verify(program(std::string(kGoodComputes) + "  kernel %2, %3\n"
                                                              "  extern node 9 (%2) -> (%4)\n"
                                                              "  output %4, %3, _, %in0\n")));
  // Fused: the consumer reads its producer stored earlier in the same group.
  EXPECT_NO_THROW(verify(program(std::string(kGoodComputes) + "  kernel %1, %2, %3\n")));
  // Indirect load with a bound, masked load, symbol in sizes.
  EXPECT_NO_THROW(
      verify(parse_program("program {\n"
                           "  buffer %in0: float32[s0, 16]{16, 1} input 0 cpu\n"
                           "  buffer %idx: int64[8]{1} input 1 cpu\n"
                           "  buffer %1: float32[8, 16]{16, 1} computed cpu\n"
                           "  compute %1 pointwise[8, 16] = load(%in0, [%ind0, i1], mask=i1 < s0, "
                           "indirect=[load(%idx, [i0])], bounds=[s0])\n"
                           "  kernel %1\n"
                           "  output %1\n"
                           "  symbol s0 in [2, 100]\n"
                           "}\n")));
}

TEST(VerifyProgramTest, UnknownBuffer) {
  expect_rejected(program("  compute %1 pointwise[8, 16] = load(%nope:float32, [i0, i1])\n"
                          "  compute %2 reduce sum[8] over [16] = load(%1, [i0, r0])\n"
                          "  compute %3 reduce argmax[8] over [16] = load(%1, [i0, r0])\n"),
                  {"compute %1", "load of %nope", "unknown buffer"});
}

TEST(VerifyProgramTest, LoadArityMustMatchRank) {
  expect_rejected(program("  compute %1 pointwise[8, 16] = load(%in0, [i0 * 16 + i1])\n"
                          "  compute %2 reduce sum[8] over [16] = load(%1, [i0, r0])\n"
                          "  compute %3 reduce argmax[8] over [16] = load(%1, [i0, r0])\n"),
                  {"compute %1", "1 indices", "rank 2"});
}

TEST(VerifyProgramTest, LoadTypeMustMatchBuffer) {
  expect_rejected(program("  compute %1 pointwise[8, 16] = cast(load(%in0:float64, [i0, i1]), "
                          "float32)\n"
                          "  compute %2 reduce sum[8] over [16] = load(%1, [i0, r0])\n"
                          "  compute %3 reduce argmax[8] over [16] = load(%1, [i0, r0])\n"),
                  {"compute %1", "as float64", "buffer is float32"});
}

TEST(VerifyProgramTest, LoopVariablesMustExist) {
  expect_rejected(program("  compute %1 pointwise[8, 16] = load(%in0, [i0, i2])\n"
                          "  compute %2 reduce sum[8] over [16] = load(%1, [i0, r0])\n"
                          "  compute %3 reduce argmax[8] over [16] = load(%1, [i0, r0])\n"),
                  {"compute %1", "uses i2"});
  expect_rejected(program("  compute %1 pointwise[8, 16] = load(%in0, [i0, r0])\n"
                          "  compute %2 reduce sum[8] over [16] = load(%1, [i0, r0])\n"
                          "  compute %3 reduce argmax[8] over [16] = load(%1, [i0, r0])\n"),
                  {"compute %1", "uses r0"});
  expect_rejected(program("  compute %1 pointwise[8, 16] = load(%in0, [i0, i1], mask=i1 < s9)\n"
                          "  compute %2 reduce sum[8] over [16] = load(%1, [i0, r0])\n"
                          "  compute %3 reduce argmax[8] over [16] = load(%1, [i0, r0])\n"),
                  {"compute %1", "mask", "uses s9"});
  expect_rejected(program(std::string(kGoodComputes) +
                          "  buffer %5: float32[8]{1} computed cpu\n"
                          "  compute %5 pointwise[8] = cast(index(i0 + r0, int64), float32)\n"),
                  {"compute %5", "index value", "uses r0"});
}

TEST(VerifyProgramTest, IndirectPlaceholdersNeedIndirectValuesAndBounds) {
  expect_rejected(program("  compute %1 pointwise[8, 16] = load(%in0, [%ind0, i1])\n"
                          "  compute %2 reduce sum[8] over [16] = load(%1, [i0, r0])\n"
                          "  compute %3 reduce argmax[8] over [16] = load(%1, [i0, r0])\n"),
                  {"compute %1", "uses %ind0"});
  // The builder itself refuses mismatched bounds, so this one can only come from a bad pass
  // that builds nodes by hand; the text form cannot even say it.
}

TEST(VerifyProgramTest, ReductionsMustNotReadTheirOwnBuffer) {
  expect_rejected(program("  compute %1 pointwise[8, 16] = exp(load(%in0, [i0, i1]))\n"
                          "  compute %2 reduce sum[8] over [16] = load(%2, [i0])\n"
                          "  compute %3 reduce argmax[8] over [16] = load(%1, [i0, r0])\n"),
                  {"compute %2", "reads its own buffer"});
  // Through an inlined compute: %1 reads %2 reads %1.
  expect_rejected(program("  compute %1 pointwise[8, 16] = load(%2, [i0])\n"
                          "  compute %2 reduce sum[8] over [16] = load(%1, [i0, r0])\n"
                          "  compute %3 reduce argmax[8] over [16] = load(%1, [i0, r0])\n"),
                  {"reads its own buffer through", "%1", "%2"});
}

TEST(VerifyProgramTest, ComputeMustMatchItsBuffer) {
  expect_rejected(program("  compute %1 pointwise[8, 16] = exp(load(%in0, [i0, i1]))\n"
                          "  compute %2 reduce sum[8] over [16] = load(%1, [i0, r0])\n"
                          "  compute %3 reduce sum[8] over [16] = load(%1, [i0, r0])\n"),
                  {"compute %3", "produces float32", "buffer is int64"});
  expect_rejected(program("  compute %1 pointwise[8, 16] = exp(load(%in0, [i0, i1]))\n"
                          "  compute %2 reduce sum[4] over [16] = load(%1, [i0, r0])\n"
                          "  compute %3 reduce argmax[8] over [16] = load(%1, [i0, r0])\n"),
                  {"compute %2", "range 0 is 4", "size is 8"});
  expect_rejected(program("  compute %1 pointwise[8] = load(%in0, [i0, 0])\n"
                          "  compute %2 reduce sum[8] over [16] = load(%1, [i0, r0])\n"
                          "  compute %3 reduce argmax[8] over [16] = load(%1, [i0, r0])\n"),
                  {"compute %1", "1 ranges", "rank 2"});
  expect_rejected(
      program(std::string(kGoodComputes) + "  compute %4 pointwise[8] = load(%2, [i0])\n"),
      {"buffer %4", "is extern but a compute defines it"});
  expect_rejected(program("  compute %1 pointwise[8, 16] = exp(load(%in0, [i0, i1]))\n"
                          "  compute %2 reduce sum[8] over [16] = load(%1, [i0, r0])\n"),
                  {"buffer %3", "no compute defines it"});
  expect_rejected(
      program(std::string(kGoodComputes) + "  compute %9 pointwise[8] = load(%2, [i0])\n"),
      {"compute %9", "defines no buffer"});
}

TEST(VerifyProgramTest, StepsReadOnlyDefinedBuffers) {
  // %2 is stored by a later kernel, so the extern reads it too early.
  expect_rejected(program(std::string(kGoodComputes) + "  extern node 9 (%2) -> (%4)\n"
                                                       "  kernel %2, %3\n"),
                  {"step 0 (extern node 9)", "reads %2 before it is materialized"});
  // %3's kernel reads %1, which a later kernel stores.
  expect_rejected(program(std::string(kGoodComputes) + "  kernel %3\n"
                                                       "  kernel %1, %2\n"),
                  {"step 0 (kernel)", "%3 reads %1 before it is defined"});
  // Reads an extern buffer before the extern step writes it.
  expect_rejected(program("  compute %1 pointwise[8, 16] = load(%4, [i0])\n"
                          "  compute %2 reduce sum[8] over [16] = load(%in0, [i0, r0])\n"
                          "  compute %3 reduce argmax[8] over [16] = load(%in0, [i0, r0])\n"
                          "  kernel %1\n"
                          "  kernel %2\n"
                          "  extern node 9 (%2) -> (%4)\n"),
                  {"%1 reads %4 before it is defined"});
  // An output no step materializes (%1 is only inlined).
  expect_rejected(program(std::string(kGoodComputes) + "  kernel %2, %3\n  output %1\n"),
                  {"output %1", "never materialized"});
}

TEST(VerifyProgramTest, StepRules) {
  expect_rejected(program(std::string(kGoodComputes) + "  kernel %2, %2\n"),
                  {"stores %2, already written"});
  expect_rejected(program(std::string(kGoodComputes) + "  kernel %in0\n"),
                  {"%in0 is not a compute"});
  expect_rejected(
      program(std::string(kGoodComputes) + "  kernel %2\n  extern node 1 (%2) -> (%3)\n"),
      {"extern node 1", "writes %3, a computed buffer"});
  expect_rejected(program(std::string(kGoodComputes) + "  kernel %2\n  extern node 1 (%2) -> (%4)\n"
                                                       "  extern node 2 (%2) -> (%4)\n"),
                  {"extern node 2", "writes %4, already written"});
  expect_rejected(program(std::string(kGoodComputes) + "  extern node 1 (%zz) -> ()\n"),
                  {"reads unknown buffer %zz"});
  // Views are never stored by a kernel; an extern view step materializes them.
  const std::string view = std::string(kGoodComputes) +
                           "  buffer %5: float32[16, 8]{1, 16} computed cpu\n"
                           "  compute %5 view pointwise[16, 8] = load(%1, [i1, i0])\n";
  expect_rejected(program(view + "  kernel %1\n  kernel %5\n"), {"stores view %5"});
  EXPECT_NO_THROW(verify(program(view + "  kernel %1\n  extern view node 5 (%1) -> (%5)\n"
                                        "  output %5\n")));
  // As lowering leaves it: an extern and the output read the view before any step
  // materializes it (inline_producers adds that step).
  EXPECT_NO_THROW(verify(program(view + "  kernel %1\n  extern node 9 (%5) -> (%4)\n"
                                        "  output %5, %4\n")));
  expect_rejected(program(view + "  extern node 9 (%5) -> (%4)\n  kernel %1\n"),
                  {"extern node 9", "%5 reads %1 before it is defined"});
  // Once every reader has inlined the view, its compute may go; the extern view step still
  // materializes its buffer. A plain extern may not write a computed buffer, though.
  LoopProgram dropped = program(view + "  kernel %1\n  extern view node 5 (%1) -> (%5)\n");
  dropped.computes.erase("%5");
  EXPECT_NO_THROW(verify(dropped));
  dropped.steps[1].call.view = false;
  expect_rejected(dropped, {"buffer %5", "no compute defines it"});
  expect_rejected(program(view + "  kernel %1\n  extern node 5 (%1) -> (%5)\n"),
                  {"extern node 5", "writes %5, a computed buffer"});
}

TEST(VerifyProgramTest, BufferAndSymbolRules) {
  expect_rejected(parse_program("program {\n  buffer %a: float32[2, 2]{1} input 0 cpu\n}\n"),
                  {"buffer %a", "2 sizes but 1 strides"});
  expect_rejected(parse_program("program {\n  buffer %a: float32[2]{1} input cpu\n}\n"),
                  {"buffer %a", "without an index"});
  expect_rejected(parse_program("program {\n  symbol s0 in [5, 2]\n}\n"),
                  {"symbol s0", "empty range"});
  LoopProgram twice = program(kGoodComputes);
  twice.buffers.push_back(twice.buffers[0]);
  expect_rejected(twice, {"buffer %in0", "declared twice"});
}

TEST(VerifyProgramTest, BodiesHoldNoLocalsAndAreNotNull) {
  LoopProgram p = program(kGoodComputes);
  p.computes.at("%1").body = local("acc0", DType::Float32);
  expect_rejected(p, {"compute %1", "reads local acc0"});
  p.computes.at("%1").body = Value();
  expect_rejected(p, {"compute %1", "has no body"});
}

// ---- Library calls ------------------------------------------------------------------------

/// kGoodComputes, a weight %w [16, 8], the mm's result %5 [8, 8] and `extern` (an mm step),
/// after %2 is stored.
LoopProgram library_program(const std::string& extern_line, const std::string& more = "") {
  return program(std::string(kGoodComputes) +
                 "  buffer %w: float32[16, 8]{8, 1} input 2 cpu\n"
                 "  buffer %5: float32[8, 8]{8, 1} extern cpu\n"
                 "  kernel %2, %3\n" +
                 extern_line + "\n" + more);
}

TEST(VerifyLibraryCallTest, WellFormedCallsPass) {
  EXPECT_NO_THROW(
      verify(library_program("  extern node 5 (%in0, %w) -> (%5) library mm(%in0, %w)")));
  EXPECT_NO_THROW(verify(
      library_program("  extern node 5 (%in0, %w, %2) -> (%5) library mm(%in0, %w) {alpha=2} "
                      "epilogue=mul(local(acc, float32), load(%2, [i0])) absorbs [6]")));
  // A tile compute: kept out of kernel steps, the call writes its (computed) buffer.
  EXPECT_NO_THROW(verify(
      library_program("  extern node 5 (%in0, %w) -> (%6) library mm(%in0, %w) tile=%6 from %5",
                      "  buffer %6: float32[8, 8]{8, 1} computed cpu\n"
                      "  compute %6 pointwise[8, 8] = abs(load(%5, [i0, i1]))\n"
                      "  output %6\n")));
}

TEST(VerifyLibraryCallTest, EpilogueRules) {
  expect_rejected(library_program("  extern node 5 (%in0, %w) -> (%5) library mm(%in0, %w) "
                                  "epilogue=add(local(acc, float32), load(%2, [i0]))"),
                  {"extern node 5", "epilogue load of %2", "not among the step's inputs"});
  expect_rejected(library_program("  extern node 5 (%in0, %w, %2) -> (%5) library mm(%in0, %w) "
                                  "epilogue=add(local(acc, float32), load(%2, [i2]))"),
                  {"extern node 5", "load of %2", "uses i2"});
  expect_rejected(library_program("  extern node 5 (%in0, %w, %2) -> (%5) library mm(%in0, %w) "
                                  "epilogue=add(local(acc, float32), load(%2, [i0, i1]))"),
                  {"extern node 5", "2 indices", "rank 1"});
  expect_rejected(library_program("  extern node 5 (%in0, %w) -> (%5) library mm(%in0, %w) "
                                  "epilogue=local(t0, float32)"),
                  {"extern node 5", "local(t0, float32)"});
  expect_rejected(library_program("  extern node 5 (%in0, %w) -> (%5) library mm(%in0, %w) "
                                  "epilogue=local(acc, int64)"),
                  {"extern node 5", "local(acc, int64)"});
}

TEST(VerifyLibraryCallTest, OperandAndTileRules) {
  expect_rejected(library_program("  extern node 5 (%in0) -> (%5) library mm(%in0, %w)"),
                  {"extern node 5", "library operand %w is not among the step's inputs"});
  expect_rejected(library_program("  extern node 5 (%in0, %w) -> (%5) library mm(%in0)"),
                  {"library mm has 1 operands but takes 2"});
  expect_rejected(library_program("  extern node 5 (%in0, %w) -> (%5) library mm(%in0, %w) "
                                  "tile=%9 from %5"),
                  {"tile compute %9 is not a compute"});
  expect_rejected(library_program("  extern node 5 (%in0, %w) -> (%5) library mm(%in0, %w) "
                                  "tile=%2 from %5"),
                  {"tile compute %2 is a reduction"});
  expect_rejected(library_program("  extern node 5 (%in0, %w) -> (%5) library mm(%in0, %w) "
                                  "tile=%6 from %5",
                                  "  buffer %6: float32[8, 8]{8, 1} computed cpu\n"
                                  "  compute %6 pointwise[8, 8] = abs(load(%5, [i0, i1]))\n"
                                  "  kernel %6\n"),
                  {"extern node 5", "tile compute %6 is also stored by step 2"});
  expect_rejected(library_program("  extern node 5 (%in0, %w) -> (%5) library mm(%in0, %w) "
                                  "tile=%1 from %nope"),
                  {"tile input %nope is not a buffer"});
}

// ---- Kernels ------------------------------------------------------------------------------

/// A kernel with params %in0 float32 in, %idx int64 in, %out float32 out, symbol s0.
Kernel kernel(const std::string& body) {
  return parse_kernel(
      "kernel k0(%in0: float32 in, %idx: int64 in, %out: float32 out) "
      "symbols(s0) {\n" +
      body + "}\n");
}

TEST(VerifyKernelTest, WellFormedKernelPasses) {
  EXPECT_NO_THROW(verify(
      kernel("  for i0 in 0..8 parallel(chunk=1) {\n"
             "    acc0 = accumulator sum float32\n"
             "    acc1 = accumulator argmax float32\n"
             "    for r0 in 0..min(16, s0) vector(16) {\n"
             "      let t0 = exp(load(%in0, [i0*16 + r0]))\n"
             "      acc0 += local(t0, float32)\n"
             "      acc1 += local(t0, float32) at r0\n"
             "    }\n"
             "    %out[i0] = add(local(acc0, float32), cast(local(acc1, int64), float32))\n"
             "    %out[i0 + 8] = load(%in0, [%ind0], indirect=[load(%idx, [i0])], bounds=[s0*16])\n"
             "  }\n")));
}

TEST(VerifyKernelTest, LoadsAndStoresUseParams) {
  expect_rejected(kernel("  %out[0] = load(%nope:float32, [0])\n"),
                  {"kernel k0 > store %out[0]", "loads from %nope, not a kernel param"});
  expect_rejected(kernel("  %in0[0] = 1.0:float32\n"), {"store %in0[0]", "marked in"});
  expect_rejected(kernel("  %zz[0] = 1.0:float32\n"), {"stores to %zz, not a kernel param"});
  expect_rejected(kernel("  %out[0] = load(%in0:float64, [0])\n"),
                  {"load of %in0 as float64", "param is float32"});
  expect_rejected(kernel("  %out[0] = cast(load(%idx, [0]), float64)\n"),
                  {"stores float64 into %out of float32"});
  expect_rejected(kernel("  for i0 in 0..8 {\n    %out[i0] = load(%in0, [i0, 0])\n  }\n"),
                  {"kernel k0 > for i0 > store %out[i0]", "2 indices", "one element offset"});
}

TEST(VerifyKernelTest, VariablesMustBeInScope) {
  expect_rejected(kernel("  for i0 in 0..8 {\n  }\n  %out[i0] = 1.0:float32\n"),
                  {"store %out[i0]", "store index", "uses i0"});
  expect_rejected(kernel("  for i0 in 0..8 {\n    %out[i0] = load(%in0, [i1])\n  }\n"),
                  {"uses i1"});
  expect_rejected(kernel("  for i0 in 0..s1 {\n  }\n"), {"for i0", "extent", "uses s1"});
  expect_rejected(kernel("  for i0 in 0..8 {\n    for i0 in 0..2 {\n    }\n  }\n"),
                  {"for i0 > for i0", "reuses i0"});
  expect_rejected(kernel("  for i0 in 0..8 {\n    %out[i0] = load(%in0, [%ind0])\n  }\n"),
                  {"uses %ind0"});
}

TEST(VerifyKernelTest, LocalsReadOnlyAfterDefinition) {
  expect_rejected(kernel("  %out[0] = local(t0, float32)\n  let t0 = 1.0:float32\n"),
                  {"store %out[0]", "reads local t0 before its definition"});
  // Defined inside the loop, gone after it.
  expect_rejected(kernel("  for i0 in 0..8 {\n    let t0 = 1.0:float32\n  }\n"
                         "  %out[0] = local(t0, float32)\n"),
                  {"reads local t0 before its definition"});
  expect_rejected(kernel("  let t0 = 1.0:float32\n  %out[0] = cast(local(t0, float64), float32)\n"),
                  {"reads t0 as float64 but it is float32"});
  expect_rejected(kernel("  acc = accumulator argmax float32\n  %out[0] = local(acc, float32)\n"),
                  {"reads acc as float32 but it is int64"});
  expect_rejected(kernel("  let t0 = 1.0:float32\n  let t0 = 2.0:float32\n"),
                  {"let t0", "redefines t0"});
}

TEST(VerifyKernelTest, AccumulateRules) {
  expect_rejected(kernel("  acc += 1.0:float32\n"), {"acc +=", "not defined before"});
  expect_rejected(kernel("  let t = 1.0:float32\n  t += 1.0:float32\n"),
                  {"t is a let, not an accumulator"});
  expect_rejected(kernel("  acc = accumulator sum float32\n  acc += 1.0:float64\n"),
                  {"adds float64 to a float32 accumulator"});
  expect_rejected(kernel("  acc = accumulator argmax float32\n  acc += 1.0:float32 at r7\n"),
                  {"reduction position", "uses r7"});
}

TEST(VerifyKernelTest, ParallelLoopsDoNotNest) {
  expect_rejected(kernel("  for i0 in 0..8 parallel {\n    for i1 in 0..8 parallel {\n    }\n"
                         "  }\n"),
                  {"for i0 > for i1", "parallel loop inside a parallel loop"});
}

TEST(VerifyKernelTest, ParamsAndSymbolsAreDistinct) {
  expect_rejected(parse_kernel("kernel k(%a: float32 in, %a: float32 out) {\n}\n"),
                  {"param %a twice"});
  expect_rejected(parse_kernel("kernel k() symbols(s0, s0) {\n}\n"), {"symbol s0 twice"});
}

}  // namespace
}  // namespace inductor_cpp::ir
