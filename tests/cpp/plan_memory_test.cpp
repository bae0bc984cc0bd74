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

// Offsets compare with the ranges of the loops around the load: in a kernel of two nests (as
// horizontal fusion makes) whose second `x0` runs to 8 only, `x0 mod 8` read in the first nest
// (x0 < 1000) is not where that nest writes `x0`.
TEST(PlanMemory, ReadsOnlyWhereWrittenUsesTheLoadsOwnLoopRanges) {
  const Expr x0 = Expr::var("x0");
  Kernel k;
  k.body = {Stmt::loop("x0", Expr(1000),
                       {Stmt::store("%B", x0, load("%A", DType::Float32, {mod(x0, Expr(8))}))}),
            Stmt::loop("x0", Expr(8), {Stmt::store("%C", x0, constant_float(1.0, DType::Float32))})};
  EXPECT_FALSE(reads_only_where_written(k, "%A", "%B"));
  // Equal as sums, with a symbol's range: a one-row window's row is 0.
  const Expr row = Expr::var("row");
  Kernel window;
  window.body = {Stmt::loop("x0", Expr(16),
                            {Stmt::store("%B", row * Expr(16) + x0, load("%A", DType::Float32, {x0}))})};
  EXPECT_FALSE(reads_only_where_written(window, "%A", "%B"));
  EXPECT_TRUE(reads_only_where_written(window, "%A", "%B", {{"row", {0, 0}}}));
}

}  // namespace
}  // namespace inductor_cpp::ir
