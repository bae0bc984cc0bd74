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

// x.sum(0) over 4100 rows of 1000 columns (past 2^21 elements): chunks of 16 rows, the partials
// chunk-major so that the first stage reads 16 rows side by side; the last chunk is masked.
TEST(SplitReductions, ColumnSumBecomesChunksOfRows) {
  const std::string in = program(R"(  buffer %in0: float32[4100, 1000]{1000, 1} input 0 cpu
  buffer %1: float32[1000]{1} computed cpu
  compute %1 (node 1) reduce sum[1000] over [4100] = load(%in0, [r0, i0])
  kernel %1
  output %1
)");
  EXPECT_EQ(run_pass(in, [](const LoopProgram& p) { return split_reductions(p); }), R"(program {
  buffer %in0: float32[4100, 1000]{1000, 1} input 0 cpu
  buffer %1: float32[1000]{1} computed cpu
  buffer %1.part: float32[257, 1000]{1000, 1} computed cpu
  compute %1 (node 1) reduce sum[1000] over [257] = load(%1.part, [r0, i0])
  compute %1.part (node 1) reduce sum[257, 1000] over [16] = where(ne(index(i0*16 + r0 < 4100, int64), 0:int64), load(%in0, [(i0*16 + r0) % 4100, i1], mask=i0*16 + r0 < 4100), 0.0:float32)
  kernel %1.part
  kernel %1
  output %1
}
)");
}

// Not column walks, or too small: left alone. A row sum (contiguous in the reduction), a column
// sum under 2^21 elements, and a column sum of a transposed view (contiguous along the
// reduction).
TEST(SplitReductions, OtherReductionsStayOneStage) {
  for (const char* compute :
       {"  buffer %in0: float32[4096, 1024]{1024, 1} input 0 cpu\n  buffer %1: float32[4096]{1} computed cpu\n"
        "  compute %1 (node 1) reduce sum[4096] over [1024] = load(%in0, [i0, r0])\n",
        "  buffer %in0: float32[1024, 1024]{1024, 1} input 0 cpu\n  buffer %1: float32[1024]{1} computed cpu\n"
        "  compute %1 (node 1) reduce sum[1024] over [1024] = load(%in0, [r0, i0])\n",
        "  buffer %in0: float32[4096, 1024]{1, 4096} input 0 cpu\n  buffer %1: float32[1024]{1} computed cpu\n"
        "  compute %1 (node 1) reduce sum[1024] over [4096] = load(%in0, [r0, i0])\n"}) {
    const std::string in = program(std::string(compute) + "  kernel %1\n  output %1\n");
    EXPECT_EQ(run_pass(in, [](const LoopProgram& p) { return split_reductions(p); }), in) << compute;
  }
  // Off (column_chunk 0), as the GPU pipeline runs it.
  const std::string in = program(R"(  buffer %in0: float32[4096, 1024]{1024, 1} input 0 cpu
  buffer %1: float32[1024]{1} computed cpu
  compute %1 (node 1) reduce sum[1024] over [4096] = load(%in0, [r0, i0])
  kernel %1
  output %1
)");
  SplitOptions off;
  off.column_chunk = 0;
  EXPECT_EQ(run_pass(in, [&](const LoopProgram& p) { return split_reductions(p, off); }), in);
}

}  // namespace
}  // namespace inductor_cpp::ir
