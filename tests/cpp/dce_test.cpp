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

// A library call's tile compute is in no kernel step and nothing else reads it, yet the
// call runs it (and writes its buffer): it stays, with the kernel storing what it reads.
// The unread %2 still goes.
TEST(Dce, KeepsTileComputes) {
  const std::string in = program(R"(  buffer %in0: float32[8, 8]{8, 1} input 0 cpu
  buffer %1: float32[8, 8]{8, 1} computed cpu
  buffer %2: float32[8, 8]{8, 1} computed cpu
  buffer %5: float32[8, 8]{8, 1} extern cpu
  buffer %6: float32[8, 8]{8, 1} computed cpu
  compute %1 pointwise[8, 8] = exp(load(%in0, [i0, i1]))
  compute %2 pointwise[8, 8] = neg(load(%in0, [i0, i1]))
  compute %6 pointwise[8, 8] = mul(load(%5, [i0, i1]), load(%1, [i0, i1]))
  kernel %1
  kernel %2
  extern node 5 (%in0, %in0) -> (%6) library mm(%in0, %in0) tile=%6 from %5
)");
  EXPECT_EQ(run_pass(in, eliminate_dead_code), R"(program {
  buffer %in0: float32[8, 8]{8, 1} input 0 cpu
  buffer %1: float32[8, 8]{8, 1} computed cpu
  buffer %5: float32[8, 8]{8, 1} extern cpu
  buffer %6: float32[8, 8]{8, 1} computed cpu
  compute %1 pointwise[8, 8] = exp(load(%in0, [i0, i1]))
  compute %6 pointwise[8, 8] = mul(load(%5, [i0, i1]), load(%1, [i0, i1]))
  kernel %1
  extern node 5 (%in0, %in0) -> (%6) library mm(%in0, %in0) tile=%6 from %5
}
)");
}

}  // namespace
}  // namespace inductor_cpp::ir
