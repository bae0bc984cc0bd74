/// \file
/// eliminate_dead_code: IR text in -> pass -> IR text out.
#include <gtest/gtest.h>

#include "ir/passes/dce.h"
#include "tests/cpp/pass_test_util.h"

namespace inductor_cpp::ir {
namespace {

using testing::program;
using testing::run_pass;
using testing::scheduled;

// %2 is read by nothing; the extern and what it reads stay.
TEST(Dce, DropsUnreadComputesKeepsExterns) {
  const std::string in = program(R"(  buffer %in0: float32[8]{1} input 0 cpu
  buffer %1: float32[8]{1} computed cpu
  buffer %2: float32[8]{1} computed cpu
  buffer %3: float32[8]{1} computed cpu
  buffer %4: float32[8]{1} extern cpu
  compute %1 pointwise[8] = exp(load(%in0, [i0]))
  compute %2 pointwise[8] = neg(load(%1, [i0]))
  compute %3 pointwise[8] = abs(load(%in0, [i0]))
  kernel %1
  kernel %2
  kernel %3
  extern node 4 (%3) -> (%4)
  output %1
)");
  EXPECT_EQ(run_pass(in, eliminate_dead_code), R"(program {
  buffer %in0: float32[8]{1} input 0 cpu
  buffer %1: float32[8]{1} computed cpu
  buffer %3: float32[8]{1} computed cpu
  buffer %4: float32[8]{1} extern cpu
  compute %1 pointwise[8] = exp(load(%in0, [i0]))
  compute %3 pointwise[8] = abs(load(%in0, [i0]))
  kernel %1
  kernel %3
  extern node 4 (%3) -> (%4)
  output %1
}
)");
}

}  // namespace
}  // namespace inductor_cpp::ir
