/// \file
/// plan_memory: IR text in -> pass -> IR text out.
#include <gtest/gtest.h>

#include "ir/passes/plan_memory.h"
#include "tests/cpp/pass_test_util.h"

namespace inductor_cpp::ir {
namespace {

using testing::program;
using testing::run_pass;
using testing::scheduled;

// %2 overwrites %1 in place; %4 takes %2's storage once %2 is dead.
TEST(PlanMemory, InPlaceAndReuse) {
  const std::string in = program(R"(  buffer %in0: float32[1024]{1} input 0 cpu
  buffer %1: float32[1024]{1} computed cpu
  buffer %2: float32[1024]{1} computed cpu
  buffer %3: float32[1024]{1} computed cpu
  buffer %4: float32[1024]{1} computed cpu
  compute %1 (node 1) reduce sum[1024] over [4] = load(%in0, [i0])
  compute %2 (node 2) pointwise[1024] = exp(load(%1, [i0]))
  compute %3 (node 3) pointwise[1024] = add(load(%2, [1023 - i0]), 1.0:float32)
  compute %4 (node 4) pointwise[1024] = add(load(%3, [1023 - i0]), 1.0:float32)
  kernel %1
  kernel %2
  kernel %3
  kernel %4
  output %4
)");
  EXPECT_EQ(testing::memory_plan(in), R"(kernel kernel0(%in0: float32 in, %1: float32 out) {
  for x0 in 0..1024 vector(16) {
    t0 = accumulator sum float32
    for y0 in 0..4 {
      t0 += load(%in0, [x0])
    }
    %1[x0] = local(t0, float32)
  }
}
kernel kernel1(%1: float32 in, %2: float32 out) {
  for x0 in 0..1024 vector(16) {
    let t0 = exp(load(%1, [x0]))
    %2[x0] = local(t0, float32)
  }
}
kernel kernel2(%2: float32 in, %3: float32 out) {
  for x0 in 0..1024 vector(16) {
    let t0 = add(load(%2, [-x0 + 1023]), 1.0:float32)
    %3[x0] = local(t0, float32)
  }
}
kernel kernel3(%3: float32 in, %4: float32 out) {
  for x0 in 0..1024 vector(16) {
    let t0 = add(load(%3, [-x0 + 1023]), 1.0:float32)
    %4[x0] = local(t0, float32)
  }
}
reuse %2 <- %1
reuse %4 <- %2
)");
}

// %1 was read by an ATen op (it may alias it): never reused.
TEST(PlanMemory, NeverReusesWhatAnExternRead) {
  const std::string in = program(R"(  buffer %in0: float32[1024]{1} input 0 cpu
  buffer %1: float32[1024]{1} computed cpu
  buffer %2: float32[1024]{1} extern cpu
  buffer %3: float32[1024]{1} computed cpu
  buffer %4: float32[1024]{1} computed cpu
  compute %1 (node 1) pointwise[1024] = exp(load(%in0, [i0]))
  compute %3 (node 3) pointwise[1024] = mul(load(%2, [i0]), 2.0:float32)
  compute %4 (node 4) pointwise[1024] = add(load(%3, [1023 - i0]), 1.0:float32)
  kernel %1
  extern node 2 (%1) -> (%2)
  kernel %3
  kernel %4
  output %4
)");
  EXPECT_EQ(testing::memory_plan(in), R"(kernel kernel0(%in0: float32 in, %1: float32 out) {
  for x0 in 0..1024 vector(16) {
    let t0 = exp(load(%in0, [x0]))
    %1[x0] = local(t0, float32)
  }
}
extern node 2 (%1) -> (%2)
kernel kernel1(%2: float32 in, %3: float32 out) {
  for x0 in 0..1024 vector(16) {
    let t0 = mul(load(%2, [x0]), 2.0:float32)
    %3[x0] = local(t0, float32)
  }
}
kernel kernel2(%3: float32 in, %4: float32 out) {
  for x0 in 0..1024 vector(16) {
    let t0 = add(load(%3, [-x0 + 1023]), 1.0:float32)
    %4[x0] = local(t0, float32)
  }
}
)");
}

}  // namespace
}  // namespace inductor_cpp::ir
