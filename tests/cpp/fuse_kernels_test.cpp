/// \file
/// fuse_kernels: IR text in -> pass -> IR text out.
#include <gtest/gtest.h>

#include "ir/passes/fuse_kernels.h"
#include "tests/cpp/pass_test_util.h"

namespace inductor_cpp::ir {
namespace {

using testing::program;
using testing::run_pass;
using testing::scheduled;

// mean and variance reductions, the per-row rstd epilogue and the normalize: one kernel.
TEST(FuseKernels, LayerNormIsOneGroup) {
  const std::string in = program(R"(  buffer %in0: float32[32, 512]{512, 1} input 0 cpu
  buffer %1: float32[32]{1} computed cpu
  buffer %2: float32[32]{1} computed cpu
  buffer %3: float32[32]{1} computed cpu
  buffer %4: float32[32, 512]{512, 1} computed cpu
  compute %1 (node 1) reduce sum[32] over [512] = load(%in0, [i0, r0])
  compute %2 (node 2) reduce welford_m2[32] over [512] = load(%in0, [i0, r0])
  compute %3 (node 3) pointwise[32] = rsqrt(add(div(load(%2, [i0]), 512.0:float32), 1e-05:float32))
  compute %4 (node 4) pointwise[32, 512] = mul(sub(load(%in0, [i0, i1]), div(load(%1, [i0]), 512.0:float32)), load(%3, [i0]))
  kernel %1
  kernel %2
  kernel %3
  kernel %4
  output %4, %3
)");
  EXPECT_EQ(run_pass(in, fuse_kernels), R"(program {
  buffer %in0: float32[32, 512]{512, 1} input 0 cpu
  buffer %1: float32[32]{1} computed cpu
  buffer %2: float32[32]{1} computed cpu
  buffer %3: float32[32]{1} computed cpu
  buffer %4: float32[32, 512]{512, 1} computed cpu
  compute %1 (node 1) reduce sum[32] over [512] = load(%in0, [i0, r0])
  compute %2 (node 2) reduce welford_m2[32] over [512] = load(%in0, [i0, r0])
  compute %3 (node 3) pointwise[32] = rsqrt(add(div(load(%2, [i0]), 512.0:float32), 1e-05:float32))
  compute %4 (node 4) pointwise[32, 512] = mul(sub(load(%in0, [i0, i1]), div(load(%1, [i0]), 512.0:float32)), load(%3, [i0]))
  kernel %1, %2, %3, %4
  output %4, %3
}
)");
}

}  // namespace
}  // namespace inductor_cpp::ir
