/// \file
/// absorb_epilogues: IR text in -> pass -> IR text out.
#include <gtest/gtest.h>

#include "ir/epilogue_ops.h"
#include "ir/passes/absorb_epilogues.h"
#include "tests/cpp/pass_test_util.h"

namespace inductor_cpp::ir {
namespace {

using testing::program;
using testing::run_pass;

std::string absorbed(const std::string& text, bool tiles = true) {
  return run_pass(text, [tiles](const LoopProgram& p) {
    AbsorbOptions options;
    options.tile_epilogues = tiles;
    return absorb_epilogues(p, options);
  });
}

// mm then relu then a residual add: both computes join the call's epilogue, which now writes
// %3; the kernels are gone.
TEST(AbsorbEpilogues, ActivationAndResidualChainJoinTheCall) {
  const std::string buffers = R"(  buffer %in0: float32[8, 16]{16, 1} input 0 cpu
  buffer %in1: float32[16, 32]{32, 1} input 1 cpu
  buffer %in2: float32[8, 32]{32, 1} input 2 cpu
  buffer %1: float32[8, 32]{32, 1} extern cpu
)";
  const std::string in = program(buffers + R"(  buffer %2: float32[8, 32]{32, 1} computed cpu
  buffer %3: float32[8, 32]{32, 1} computed cpu
  compute %2 (node 2) pointwise[8, 32] = maximum(load(%1, [i0, i1]), 0.0:float32)
  compute %3 (node 3) pointwise[8, 32] = add(load(%2, [i0, i1]), load(%in2, [i0, i1]))
  extern node 1 (%in0, %in1) -> (%1) library mm(%in0, %in1)
  kernel %2
  kernel %3
  output %3
)");
  EXPECT_EQ(absorbed(in), program(buffers + R"(  buffer %2: float32[8, 32]{32, 1} extern cpu
  buffer %3: float32[8, 32]{32, 1} extern cpu
  extern node 1 (%in0, %in1, %in2) -> (%3) library mm(%in0, %in1) epilogue=add(maximum(local(acc, float32), 0.0:float32), load(%in2, [i0, i1])) absorbs [2, 3]
  output %3
)"));
}

// A Linear's addmm on [B·S, N] viewed as [B, S, N] before its GELU: the call writes the GELU's
// [2, 4, 32] buffer, the bias load moves into its coordinates.
TEST(AbsorbEpilogues, ThroughARowMajorReshape) {
  const std::string in = program(R"(  buffer %in0: float32[8, 16]{16, 1} input 0 cpu
  buffer %in1: float32[16, 32]{32, 1} input 1 cpu
  buffer %in2: float32[32]{1} input 2 cpu
  buffer %1: float32[8, 32]{32, 1} extern cpu
  buffer %3: float32[2, 4, 32]{128, 32, 1} computed cpu
  compute %3 (node 3) pointwise[2, 4, 32] = tanh(load(%1, [i0*4 + i1, i2]))
  extern node 1 (%in0, %in1, %in2) -> (%1) library addmm(%in0, %in1) epilogue=add(local(acc, float32), load(%in2, [i1]))
  kernel %3
  output %3
)");
  const std::string out = absorbed(in);
  EXPECT_NE(out.find("-> (%3) library addmm(%in0, %in1) epilogue=tanh(add(local(acc, float32), load(%in2, [i2]))) absorbs [3]"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("kernel %3"), std::string::npos) << out;
}

// Eval batch norm on a convolution's output, then relu: the per-channel run folds into one
// scale and one shift, computed by a kernel of their own right before the call.
TEST(AbsorbEpilogues, BatchNormFoldsIntoAScaleAndAShift) {
  const std::string in = program(R"(  buffer %in0: float32[2, 8, 5, 5]{200, 1, 40, 8} input 0 cpu
  buffer %in1: float32[16, 8, 3, 3]{72, 9, 3, 1} input 1 cpu
  buffer %in2: float32[16]{1} input 2 cpu
  buffer %in3: float32[16]{1} input 3 cpu
  buffer %1: float32[2, 16, 5, 5]{400, 1, 80, 16} extern cpu
  buffer %2: float32[2, 16, 5, 5]{400, 1, 80, 16} computed cpu
  compute %2 (node 2) pointwise[2, 16, 5, 5] = maximum(mul(sub(load(%1, [i0, i1, i2, i3]), load(%in2, [i1])), rsqrt(add(load(%in3, [i1]), 1e-05:float32))), 0.0:float32)
  extern node 1 (%in0, %in1) -> (%1) library conv2d(%in0, %in1) {padding_h=1, padding_w=1}
  kernel %2
  output %2
)");
  const std::string out = absorbed(in);
  EXPECT_NE(out.find("compute %2_scale0 pointwise[16] = rsqrt(add(load(%in3, [i0]), 1e-05:float32))"), std::string::npos)
      << out;
  EXPECT_NE(out.find("compute %2_shift1 pointwise[16] = neg(mul(rsqrt(add(load(%in3, [i0]), 1e-05:float32)), load(%in2, [i0])))"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("  kernel %2_scale0, %2_shift1\n  extern node 1 (%in0, %in1, %2_scale0, %2_shift1) -> (%2) library "
                     "conv2d(%in0, %in1) {padding_h=1, padding_w=1} epilogue=maximum(add(mul(local(acc, float32), "
                     "load(%2_scale0, [i1])), load(%2_shift1, [i1])), 0.0:float32) absorbs [2]"),
            std::string::npos)
      << out;
}

// The result read by two kernels, or by a consumer that needs a buffer computed after the call,
// stays as it is.
TEST(AbsorbEpilogues, SecondReaderOrLateOperandKeepsTheKernel) {
  const std::string buffers = R"(  buffer %in0: float32[8, 16]{16, 1} input 0 cpu
  buffer %in1: float32[16, 32]{32, 1} input 1 cpu
  buffer %1: float32[8, 32]{32, 1} extern cpu
  buffer %2: float32[8, 32]{32, 1} computed cpu
  buffer %3: float32[8, 32]{32, 1} computed cpu
)";
  const std::string two_readers = program(buffers + R"(  compute %2 (node 2) pointwise[8, 32] = maximum(load(%1, [i0, i1]), 0.0:float32)
  compute %3 (node 3) pointwise[8, 32] = neg(load(%1, [i0, i1]))
  extern node 1 (%in0, %in1) -> (%1) library mm(%in0, %in1)
  kernel %2
  kernel %3
  output %2, %3
)");
  EXPECT_EQ(absorbed(two_readers), two_readers);
  const std::string late = program(buffers + R"(  compute %2 (node 2) pointwise[8, 32] = exp(load(%in1, [i1, i0]))
  compute %3 (node 3) pointwise[8, 32] = add(load(%1, [i0, i1]), load(%2, [i0, i1]))
  extern node 1 (%in0, %in1) -> (%1) library mm(%in0, %in1)
  kernel %2
  kernel %3
  output %3
)");
  EXPECT_EQ(absorbed(late), late);
}

// relu(conv_b(x) + conv_a(x) · 2), the consumer of two calls: the earlier one takes the part
// that depends on its result alone (· 2) into a buffer of its own, the later one the rest.
TEST(AbsorbEpilogues, TwoCallsSplitTheirConsumer) {
  const std::string in = program(R"(  buffer %in0: float32[8, 16]{16, 1} input 0 cpu
  buffer %in1: float32[16, 32]{32, 1} input 1 cpu
  buffer %in2: float32[16, 32]{32, 1} input 2 cpu
  buffer %1: float32[8, 32]{32, 1} extern cpu
  buffer %2: float32[8, 32]{32, 1} extern cpu
  buffer %3: float32[8, 32]{32, 1} computed cpu
  compute %3 (node 3) pointwise[8, 32] = maximum(add(load(%2, [i0, i1]), mul(load(%1, [i0, i1]), 2.0:float32)), 0.0:float32)
  extern node 1 (%in0, %in1) -> (%1) library mm(%in0, %in1)
  extern node 2 (%in0, %in2) -> (%2) library mm(%in0, %in2)
  kernel %3
  output %3
)");
  const std::string out = absorbed(in);
  EXPECT_NE(out.find("extern node 1 (%in0, %in1) -> (%1_part) library mm(%in0, %in1) epilogue=mul(local(acc, float32), "
                     "2.0:float32)\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("extern node 2 (%in0, %in2, %1_part) -> (%3) library mm(%in0, %in2) epilogue=maximum(add(local(acc, "
                     "float32), load(%1_part, [i0, i1])), 0.0:float32) absorbs [3]"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("kernel %3"), std::string::npos) << out;
}

// x·x + x is no sequence of the library's operations: with tiles on, the consumer runs per
// output tile inside the call; with them off, it stays a kernel.
TEST(AbsorbEpilogues, OtherPointwiseWorkBecomesATile) {
  const std::string in = program(R"(  buffer %in0: float32[8, 16]{16, 1} input 0 cpu
  buffer %in1: float32[16, 32]{32, 1} input 1 cpu
  buffer %1: float32[8, 32]{32, 1} extern cpu
  buffer %2: float32[8, 32]{32, 1} computed cpu
  compute %2 (node 2) pointwise[8, 32] = add(mul(load(%1, [i0, i1]), load(%1, [i0, i1])), load(%1, [i0, i1]))
  extern node 1 (%in0, %in1) -> (%1) library mm(%in0, %in1)
  kernel %2
  output %2
)");
  const std::string out = absorbed(in);
  EXPECT_NE(out.find("extern node 1 (%in0, %in1) -> (%2) library mm(%in0, %in1) tile=%2 from %1 absorbs [2]"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("kernel %2"), std::string::npos) << out;
  EXPECT_EQ(absorbed(in, /*tiles=*/false), in);
}

TEST(EpilogueOps, SelectionReadsTheExpressionFromTheAccumulatorOut) {
  Buffer bias{"%b", DType::Float32, {Expr(32)}, {Expr(1)}, Expr(0), BufferOrigin::Input, "cpu", 0};
  const auto buffer_of = [&](const std::string& name) -> const Buffer* { return name == "%b" ? &bias : nullptr; };
  const Value acc = epilogue_accumulator(DType::Float32);
  const Value biased = binary(BinaryOp::add, acc, load("%b", DType::Float32, {Expr::var("i1")}));
  const Value clamped = binary(BinaryOp::minimum, binary(BinaryOp::maximum, binary(BinaryOp::mul, biased,
                                                                                 constant_float(0.5, DType::Float32)),
                                                         constant_float(0, DType::Float32)),
                               constant_float(6, DType::Float32));
  EpilogueShape shape{{Expr(8), Expr(32)}, 1, 0};
  const auto ops = select_epilogue_ops(clamped, shape, buffer_of);
  ASSERT_TRUE(ops);
  EXPECT_EQ(epilogue_ops_text(*ops), "bias_col(%b) -> scale(0.500000) -> clamp(0.000000, 6.000000)");
  // bfloat16 (the AMX GEMM): the bias ops too.
  Buffer bf16_bias = bias;
  bf16_bias.dtype = DType::BFloat16;
  const auto bf16_ops = select_epilogue_ops(
      binary(BinaryOp::add, epilogue_accumulator(DType::BFloat16), load("%b", DType::BFloat16, {Expr::var("i1")})),
      shape, [&](const std::string&) -> const Buffer* { return &bf16_bias; });
  ASSERT_TRUE(bf16_ops);
  EXPECT_EQ(epilogue_ops_text(*bf16_ops), "bias_col(%b)");
  std::string why;
  EXPECT_FALSE(select_epilogue_ops(unary(UnaryOp::exp, acc), shape, buffer_of, &why));
  EXPECT_NE(why.find("no library epilogue operation for exp("), std::string::npos) << why;
}

}  // namespace
}  // namespace inductor_cpp::ir
