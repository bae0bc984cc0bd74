/// \file
/// fuse_horizontal and plan_input_writebacks: IR text in -> passes -> text out.
#include <gtest/gtest.h>

#include "ir/passes/fuse_horizontal.h"
#include "ir/passes/input_writeback.h"
#include "tests/cpp/pass_test_util.h"

namespace inductor_cpp::ir {
namespace {

using testing::program;

std::string horizontally_fused(const std::string& text, const HorizontalFusionOptions& options = {}) {
  return scheduled_to_text(fuse_horizontal(schedule(parse_program(text)), options));
}

// An SGD-like step over two parameters of different shapes: two independent kernels become
// one with both nests; the second's local is renamed apart, shared inputs are one parameter.
TEST(FuseHorizontal, IndependentKernelsShareOneKernel) {
  const std::string in = program(R"(  buffer %in0: float32[8]{1} input 0 cpu
  buffer %in1: float32[4, 3]{3, 1} input 1 cpu
  buffer %in2: float32[]{} input 2 cpu
  buffer %1: float32[8]{1} computed cpu
  buffer %2: float32[4, 3]{3, 1} computed cpu
  compute %1 (node 1) pointwise[8] = mul(load(%in0, [i0]), load(%in2, []))
  compute %2 (node 2) pointwise[4, 3] = mul(load(%in1, [i0, i1]), load(%in2, []))
  kernel %1
  kernel %2
  output %1, %2
)");
  EXPECT_EQ(horizontally_fused(in), R"(kernel kernel0(%in0: float32 in, %in2: float32 in, %1: float32 out, %in1: float32 in, %2: float32 out) {
  for x0 in 0..8 vector(16) {
    let t0 = mul(load(%in0, [x0]), load(%in2, [0]))
    %1[x0] = local(t0, float32)
  }
  for x1 in 0..12 vector(16) {
    let t0_h0 = mul(load(%in1, [x1]), load(%in2, [0]))
    %2[x1] = local(t0_h0, float32)
  }
}
)");
  verify(fuse_horizontal(schedule(parse_program(in))).steps.at(0).kernel);
}

// A kernel reading what the previous one writes stays separate; so do kernels across an
// extern step and kernels above the size limit.
TEST(FuseHorizontal, DependentOrLargeKernelsStaySeparate) {
  const std::string in = program(R"(  buffer %in0: float32[8]{1} input 0 cpu
  buffer %1: float32[8]{1} computed cpu
  buffer %2: float32[8]{1} computed cpu
  buffer %3: float32[8]{1} extern cpu
  buffer %4: float32[8]{1} computed cpu
  buffer %5: float32[8]{1} computed cpu
  compute %1 (node 1) pointwise[8] = exp(load(%in0, [i0]))
  compute %2 (node 2) pointwise[8] = exp(load(%1, [7 - i0]))
  compute %4 (node 4) pointwise[8] = exp(load(%3, [i0]))
  compute %5 (node 5) pointwise[8] = sin(load(%in0, [i0]))
  kernel %1
  kernel %2
  extern node 3 (%2) -> (%3)
  kernel %4
  kernel %5
  output %4, %5
)");
  const ScheduledProgram s = schedule(parse_program(in));
  EXPECT_EQ(fuse_horizontal(s).steps.size(), 4u);  // %1 | %2 | extern | %4 + %5
  EXPECT_EQ(fuse_horizontal(s, {4, 64}).steps.size(), 5u);  // 8 iterations > 4: nothing fuses
}

std::vector<InputWriteback> writebacks(const std::string& text, const std::vector<InputWriteback>& candidates) {
  const ScheduledProgram s = schedule(parse_program(text));
  return plan_input_writebacks(s, plan_memory(s), candidates);
}

// Momentum SGD: buf' = buf*0.9 + g and p' = p - 0.1*buf', then copy_(buf, buf'), copy_(p, p').
// Each kernel reads its input only where it writes the new value: both are done in place.
TEST(InputWriteback, OptimizerStateUpdatedInPlace) {
  const std::string in = program(R"(  buffer %in0: float32[16]{1} input 0 cpu
  buffer %in1: float32[16]{1} input 1 cpu
  buffer %in2: float32[16]{1} input 2 cpu
  buffer %3: float32[16]{1} computed cpu
  buffer %4: float32[16]{1} computed cpu
  buffer %5: float32[16]{1} extern cpu
  buffer %6: float32[16]{1} extern cpu
  compute %3 (node 3) pointwise[16] = add(mul(load(%in1, [i0]), 0.9:float32), load(%in2, [i0]))
  compute %4 (node 4) pointwise[16] = sub(load(%in0, [i0]), mul(load(%3, [i0]), 0.1:float32))
  kernel %3, %4
  extern node 5 (%in1, %3) -> (%5)
  extern node 6 (%in0, %4) -> (%6)
)");
  const std::vector<InputWriteback> candidates{{1, "%3", "%in1"}, {2, "%4", "%in0"}};
  EXPECT_EQ(writebacks(in, candidates), candidates);
}

// Not in place: the input is read elsewhere than where the value is written (reversed), read
// by a later kernel, a different layout, or the value is a graph output.
TEST(InputWriteback, IllegalCasesKeepTheCopy) {
  const std::string reversed = program(R"(  buffer %in0: float32[16]{1} input 0 cpu
  buffer %1: float32[16]{1} computed cpu
  buffer %2: float32[16]{1} extern cpu
  compute %1 (node 1) pointwise[16] = mul(load(%in0, [15 - i0]), 2.0:float32)
  kernel %1
  extern node 2 (%in0, %1) -> (%2)
)");
  EXPECT_TRUE(writebacks(reversed, {{1, "%1", "%in0"}}).empty());

  const std::string read_later = program(R"(  buffer %in0: float32[16]{1} input 0 cpu
  buffer %1: float32[16]{1} computed cpu
  buffer %2: float32[16]{1} computed cpu
  buffer %3: float32[16]{1} extern cpu
  compute %1 (node 1) pointwise[16] = mul(load(%in0, [i0]), 2.0:float32)
  compute %2 (node 2) pointwise[16] = exp(load(%in0, [15 - i0]))
  kernel %1
  kernel %2
  extern node 3 (%in0, %1) -> (%3)
  output %2
)");
  EXPECT_TRUE(writebacks(read_later, {{2, "%1", "%in0"}}).empty());

  const std::string other_layout = program(R"(  buffer %in0: float32[4, 4]{1, 4} input 0 cpu
  buffer %1: float32[4, 4]{4, 1} computed cpu
  buffer %2: float32[4, 4]{4, 1} extern cpu
  compute %1 (node 1) pointwise[4, 4] = mul(load(%in0, [i0, i1]), 2.0:float32)
  kernel %1
  extern node 2 (%in0, %1) -> (%2)
)");
  EXPECT_TRUE(writebacks(other_layout, {{1, "%1", "%in0"}}).empty());

  const std::string value_returned = program(R"(  buffer %in0: float32[16]{1} input 0 cpu
  buffer %1: float32[16]{1} computed cpu
  buffer %2: float32[16]{1} extern cpu
  compute %1 (node 1) pointwise[16] = mul(load(%in0, [i0]), 2.0:float32)
  kernel %1
  extern node 2 (%in0, %1) -> (%2)
  output %1
)");
  EXPECT_TRUE(writebacks(value_returned, {{1, "%1", "%in0"}}).empty());
}

}  // namespace
}  // namespace inductor_cpp::ir
