/// \file
/// fuse_kernels: IR text in -> pass -> IR text out.
#include <gtest/gtest.h>

#include "ir/passes/fuse_kernels.h"
#include "tests/cpp/pass_test_util.h"

namespace inductor_cpp::ir {
namespace {

using testing::program;
using testing::run_pass;

// mean and variance reductions, the per-row rstd epilogue and the normalize: one kernel.
TEST(FuseKernels, LayerNormIsOneGroup) {
  const std::string in = program(testing::kLayerNormComputes + R"(  kernel %1
  kernel %2
  kernel %3
  kernel %4
  output %4, %3
)");
  EXPECT_EQ(run_pass(in, fuse_kernels),
            program(testing::kLayerNormComputes + R"(  kernel %1, %2, %3, %4
  output %4, %3
)"));
}

}  // namespace
}  // namespace inductor_cpp::ir
