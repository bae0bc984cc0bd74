/// \file
/// eliminate_common_subexpressions: IR text in -> pass -> IR text out.
#include <gtest/gtest.h>

#include "ir/passes/cse.h"
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

}  // namespace
}  // namespace inductor_cpp::ir
