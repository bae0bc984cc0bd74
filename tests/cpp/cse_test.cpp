/// \file
/// eliminate_common_subexpressions: IR text in -> pass -> IR text out.
#include <gtest/gtest.h>

#include "ir/passes/cse.h"
#include "ir/verify.h"
#include "tests/cpp/pass_test_util.h"

namespace inductor_cpp::ir {
namespace {

using testing::program;
using testing::run_pass;
using testing::scheduled;

// %2 computes what %1 does: its reader is pointed at %1.
TEST(Cse, MergesEqualComputes) {
  const std::string in = program(R"(  buffer %in0: float32[8]{1} input 0 cpu
  buffer %1: float32[8]{1} computed cpu
  buffer %2: float32[8]{1} computed cpu
  buffer %3: float32[8]{1} computed cpu
  compute %1 pointwise[8] = exp(load(%in0, [i0]))
  compute %2 pointwise[8] = exp(load(%in0, [i0]))
  compute %3 pointwise[8] = add(load(%1, [i0]), load(%2, [i0]))
  kernel %1
  kernel %2
  kernel %3
  output %3
)");
  EXPECT_EQ(run_pass(in, eliminate_common_subexpressions), R"(program {
  buffer %in0: float32[8]{1} input 0 cpu
  buffer %1: float32[8]{1} computed cpu
  buffer %3: float32[8]{1} computed cpu
  compute %1 pointwise[8] = exp(load(%in0, [i0]))
  compute %3 pointwise[8] = add(load(%1, [i0]), load(%1, [i0]))
  kernel %1
  kernel %3
  output %3
}
)");
}

// A library call naming a merged compute follows the merge, in its operands and epilogue.
// (A verified program lists every such name among the step's inputs, which CSE keeps; this is
// a program mid-rewrite whose step does not list %2 yet, so only the output is verified.)
TEST(Cse, RenamesLibraryCallBuffers) {
  const LoopProgram in = parse_program(program(R"(  buffer %in0: float32[8, 8]{8, 1} input 0 cpu
  buffer %1: float32[8, 8]{8, 1} computed cpu
  buffer %2: float32[8, 8]{8, 1} computed cpu
  buffer %3: float32[8, 8]{8, 1} extern cpu
  compute %1 pointwise[8, 8] = exp(load(%in0, [i0, i1]))
  compute %2 pointwise[8, 8] = exp(load(%in0, [i0, i1]))
  kernel %1
  kernel %2
  extern node 3 (%1) -> (%3) library mm(%2, %1) epilogue=add(local(acc, float32), load(%2, [i1, i0]))
  output %3
)"));
  const LoopProgram out = eliminate_common_subexpressions(in);
  verify(out);
  EXPECT_EQ(program_to_text(out), R"(program {
  buffer %in0: float32[8, 8]{8, 1} input 0 cpu
  buffer %1: float32[8, 8]{8, 1} computed cpu
  buffer %3: float32[8, 8]{8, 1} extern cpu
  compute %1 pointwise[8, 8] = exp(load(%in0, [i0, i1]))
  kernel %1
  extern node 3 (%1) -> (%3) library mm(%1, %1) epilogue=add(local(acc, float32), load(%1, [i1, i0]))
  output %3
}
)");
}

// A library call's tile compute keeps its name: an equal compute elsewhere is not merged
// into it, nor it into that one.
TEST(Cse, KeepsTileComputes) {
  const std::string in = program(R"(  buffer %in0: float32[8, 8]{8, 1} input 0 cpu
  buffer %1: float32[8, 8]{8, 1} computed cpu
  buffer %2: float32[8, 8]{8, 1} extern cpu
  buffer %4: float32[8, 8]{8, 1} computed cpu
  buffer %5: float32[8, 8]{8, 1} computed cpu
  compute %1 pointwise[8, 8] = abs(load(%in0, [i0, i1]))
  compute %4 pointwise[8, 8] = abs(load(%in0, [i0, i1]))
  compute %5 pointwise[8, 8] = add(load(%1, [i0, i1]), load(%4, [i0, i1]))
  extern node 3 (%in0, %in0) -> (%1) library mm(%in0, %in0) tile=%1 from %2
  kernel %4
  kernel %5
  output %5
)");
  EXPECT_EQ(run_pass(in, eliminate_common_subexpressions), in);
}

// Two equal views of an extern's output (an alias kept for backward, a same-shape view read
// by a chain ATen must materialize): ATen runs that chain with its graph node's arguments, so
// the view it reads (%3) keeps its name (HF BERT's SDPA output, aten::permute got None).
TEST(Cse, KeepsViewsAtenMaterializes) {
  const std::string in = program(R"(  buffer %in0: float32[4, 8]{8, 1} input 0 cpu
  buffer %1: float32[4, 8]{8, 1} extern cpu
  buffer %2: float32[4, 8]{8, 1} computed cpu
  buffer %3: float32[4, 8]{8, 1} computed cpu
  buffer %4: float32[8, 4]{1, 8} computed cpu
  buffer %5: float32[8, 4]{4, 1} extern cpu
  compute %2 (node 2) view pointwise[4, 8] = load(%1, [i0, i1])
  compute %3 (node 3) view pointwise[4, 8] = load(%1, [i0, i1])
  compute %4 (node 4) view pointwise[8, 4] = load(%3, [i1, i0])
  extern node 1 (%in0) -> (%1)
  extern node 5 (%4) -> (%5)
  output %2, %5
)");
  EXPECT_EQ(run_pass(in, eliminate_common_subexpressions), in);
}

}  // namespace
}  // namespace inductor_cpp::ir
