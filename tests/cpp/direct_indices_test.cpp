/// \file
/// direct_indices: IR text in -> pass -> IR text out; values kept (IR interpreter).
#include <gtest/gtest.h>

#include "ir/passes/direct_indices.h"
#include "tests/cpp/pass_test_util.h"
#include "tests/cpp/pipeline_check.h"

namespace inductor_cpp::ir {
namespace {

using testing::program;
using testing::run_pass;

std::string after(const std::string& text) {
  return run_pass(text, [](const LoopProgram& p) { return direct_indices(p); });
}

const char* const kBuffers = R"(  buffer %in0: float32[6, 40]{40, 1} input 0 cpu
  buffer %in1: int64[40]{1} input 1 cpu
  buffer %1: float32[6, 40]{40, 1} computed cpu
)";

// roll(x, 3, -1): the index value (i1 + 37) fmod 40 becomes an index expression, in bounds.
TEST(DirectIndices, RollReadsThroughAnIndexExpression) {
  const std::string in = program(std::string(kBuffers) +
                                 R"(  compute %1 pointwise[6, 40] = load(%in0, [i0, %ind0], indirect=[fmod(add(index(i1, int64), 37:int64), 40:int64)], bounds=[40])
  kernel %1
  output %1
)");
  const std::string out = after(in);
  EXPECT_NE(out.find("load(%in0, [i0, (i1 + 37) % 40])"), std::string::npos) << out;
  EXPECT_EQ(out.find("indirect"), std::string::npos) << out;
  EXPECT_EQ(testing::pipeline_mismatch(in), "");
}

// index_select's wrap of negative indices: where(lt(i, 0), i + n, i) is decided by the ranges.
TEST(DirectIndices, DecidedWrapsFold) {
  const std::string in = program(std::string(kBuffers) +
                                 R"(  compute %1 pointwise[6, 40] = load(%in0, [i0, %ind0], indirect=[where(lt(sub(39:int64, index(i1, int64)), 0:int64), add(sub(39:int64, index(i1, int64)), 40:int64), sub(39:int64, index(i1, int64)))], bounds=[40])
  kernel %1
  output %1
)");
  const std::string out = after(in);
  EXPECT_NE(out.find("load(%in0, [i0, -i1 + 39])"), std::string::npos) << out;
  EXPECT_EQ(testing::pipeline_mismatch(in), "");
}

// Kept indirect: an index read from memory, one that may leave its bound (i1 + 1 reaches 40),
// and an fmod of a value that may be negative.
TEST(DirectIndices, DataDependentOrUnprovenIndicesStayIndirect) {
  for (const char* index : {"load(%in1, [i1])", "add(index(i1, int64), 1:int64)",
                            "fmod(sub(index(i1, int64), 3:int64), 40:int64)"}) {
    const std::string in = program(std::string(kBuffers) + "  compute %1 pointwise[6, 40] = load(%in0, [i0, %ind0], indirect=[" +
                                   index + "], bounds=[40])\n  kernel %1\n  output %1\n");
    EXPECT_NE(after(in).find("indirect"), std::string::npos) << index;
  }
}

}  // namespace
}  // namespace inductor_cpp::ir
