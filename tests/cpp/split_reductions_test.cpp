/// \file
/// split_reductions: IR text in -> pass -> IR text out.
#include <gtest/gtest.h>

#include "ir/passes/split_reductions.h"
#include "tests/cpp/pass_test_util.h"

namespace inductor_cpp::ir {
namespace {

using testing::program;
using testing::run_pass;
using testing::scheduled;

// x.sum() over 2^20 elements: 64 partial sums, then their sum.
TEST(SplitReductions, FullSumBecomesTwoStages) {
  const std::string in = program(R"(  buffer %in0: float32[1024, 1024]{1024, 1} input 0 cpu
  buffer %1: float32[]{} computed cpu
  compute %1 (node 1) reduce sum[] over [1024, 1024] = load(%in0, [r0, r1])
  kernel %1
  output %1
)");
  EXPECT_EQ(run_pass(in, [](const LoopProgram& p) { return split_reductions(p); }), R"(program {
  buffer %in0: float32[1024, 1024]{1024, 1} input 0 cpu
  buffer %1: float32[]{} computed cpu
  buffer %1.part: float32[64]{1} computed cpu
  compute %1 (node 1) reduce sum[] over [64] = load(%1.part, [r0])
  compute %1.part (node 1) reduce sum[64] over [16384] = load(%in0, [i0*16 + r0 // 1024, r0 % 1024])
  kernel %1.part
  kernel %1
  output %1
}
)");
}

}  // namespace
}  // namespace inductor_cpp::ir
