/// \file
/// Library calls in CUDA graphs, up to the plan, without a GPU: lowering (which matrix ops
/// become calls, inductor/lower/library_gpu.cpp), what the absorb pass moves into them
/// (ir/passes/absorb_epilogues.h: only what cuBLAS(Lt) and cuDNN apply themselves), and
/// gpu_epilogue_fits. Running them is tests/python/test_gpu.py's part, on the GPU machine.
#include <gtest/gtest.h>

#include "ir/epilogue_ops.h"
#include "ir/passes/absorb_epilogues.h"
#include "tests/cpp/lowering_test_util.h"
#include "tests/cpp/pass_test_util.h"

namespace inductor_cpp::inductor {
namespace {

using namespace lowering_test;
using Names = std::vector<std::string>;

json cuda(json m) {
  m["device"] = "cuda:0";
  return m;
}

LoweredGraph lower_gpu(const ir::Graph& g) {
  LoweringOptions o;
  o.library_calls = true;
  o.gpu = true;
  LoweredGraph l = lower_graph(g, o);
  ir::verify(l.program);
  return l;
}

TEST(GpuLibraryCalls, AddmmOfEveryFloatTypeBecomesACallWithItsBias) {
  for (const char* dtype : {"float32", "float16", "bfloat16"}) {
    const LoweredGraph l = lower_gpu(graph(
        {cuda(meta({16}, dtype)), cuda(meta({4, 8}, dtype)), cuda(meta({8, 16}, dtype, std::vector<int64_t>{1, 8}))},
        {node("aten::addmm", {in(0), in(1), in(2)}, {cuda(meta({4, 16}, dtype))})}));
    EXPECT_TRUE(l.decisions[0].generated) << dtype << ": " << l.decisions[0].reason;
    const ir::ExternCall& call = extern_of(l, 0);
    ASSERT_TRUE(call.library) << dtype;
    EXPECT_EQ(call.library->op, ir::LibraryOp::addmm);
    EXPECT_EQ(call.library->operands, (Names{"%in1", "%in2"}));  // B transposed: cuBLAS reads it
    EXPECT_EQ(ir::to_string(call.library->epilogue, ir::buffer_types(l.program)),
              std::string("add(local(acc, ") + dtype + "), load(%in0, [i1]))");
  }
}

TEST(GpuLibraryCalls, GroupedConvolutionAndItsBackwardBecomeCalls) {
  const LoweredGraph l = lower_gpu(graph(
      {cuda(meta({2, 8, 6, 6})), cuda(meta({16, 4, 3, 3})), cuda(meta({16}))},
      {node("aten::convolution", {in(0), in(1), in(2), ints({2, 2}), ints({1, 1}), ints({1, 1}), b(false), ints({0, 0}), i(2)},
            {cuda(meta({2, 16, 3, 3}))}),
       node("aten::convolution_backward",
            {val(0), in(0), in(1), ints({16}), ints({2, 2}), ints({1, 1}), ints({1, 1}), b(false), ints({0, 0}), i(2),
             json{{"list", {b(true), b(true), b(false)}}}},
            {cuda(meta({2, 8, 6, 6})), cuda(meta({16, 4, 3, 3})), nullptr})},
      json::array({val(1, 0), val(1, 1)})));
  const ir::LibraryCall& conv = *extern_of(l, 0).library;
  EXPECT_EQ(conv.op, ir::LibraryOp::conv2d);
  EXPECT_EQ(conv.attr("groups", 1), 2);
  EXPECT_EQ(conv.attr("stride_h", 1), 2);
  EXPECT_EQ(ir::to_string(conv.epilogue, ir::buffer_types(l.program)), "add(local(acc, float32), load(%in2, [i1]))");
  const ir::ExternCall& back = extern_of(l, 1);
  ASSERT_TRUE(back.library);
  EXPECT_EQ(back.library->op, ir::LibraryOp::conv2d_backward);
  EXPECT_EQ(back.library->attr("groups", 1), 2);
  EXPECT_EQ(back.outputs, (Names{"%1", "%1.1", ""}));
}

TEST(GpuLibraryCalls, CpuTensorsInACudaGraphAndTransposedConvolutionsStayAten) {
  const LoweredGraph cpu = lower_gpu(graph({meta({4, 8}), meta({8, 16})}, {node("aten::mm", {in(0), in(1)}, {meta({4, 16})})}));
  EXPECT_FALSE(extern_of(cpu, 0).library);
  EXPECT_NE(cpu.decisions[0].reason.find("matrix kernels: not a float32 / float16 / bfloat16 GPU matrix product"),
            std::string::npos)
      << cpu.decisions[0].reason;
  const LoweredGraph transposed = lower_gpu(graph(
      {cuda(meta({2, 8, 6, 6})), cuda(meta({8, 16, 3, 3}))},
      {node("aten::convolution", {in(0), in(1), nullptr, ints({1, 1}), ints({1, 1}), ints({1, 1}), b(true), ints({0, 0}), i(1)},
            {cuda(meta({2, 16, 8, 8}))})}));
  EXPECT_FALSE(extern_of(transposed, 0).library);
  EXPECT_NE(transposed.decisions[0].reason.find("transposed convolution"), std::string::npos);
}

TEST(GpuLibraryCalls, EpiloguesTheGpuLibrariesApply) {
  using K = ir::EpilogueOpKind;
  const auto ops = [](std::initializer_list<K> kinds) {
    std::vector<ir::EpilogueOp> out;
    for (K k : kinds) out.push_back({k, "", 0, 0});
    return out;
  };
  EXPECT_TRUE(ir::gpu_epilogue_fits(ir::LibraryOp::addmm, ops({K::scale, K::bias_col, K::relu})));
  EXPECT_TRUE(ir::gpu_epilogue_fits(ir::LibraryOp::mm, ops({K::residual, K::gelu_tanh})));
  EXPECT_TRUE(ir::gpu_epilogue_fits(ir::LibraryOp::bmm, ops({K::scale, K::residual})));
  EXPECT_TRUE(ir::gpu_epilogue_fits(ir::LibraryOp::conv2d, ops({K::bias_col})));
  std::string why;
  EXPECT_FALSE(ir::gpu_epilogue_fits(ir::LibraryOp::mm, ops({K::relu}), &why));  // no C: no cuBLASLt epilogue
  EXPECT_EQ(why, "the GPU's mm does not apply relu");
  EXPECT_FALSE(ir::gpu_epilogue_fits(ir::LibraryOp::addmm, ops({K::bias_col, K::gelu})));  // erf GELU
  EXPECT_FALSE(ir::gpu_epilogue_fits(ir::LibraryOp::addmm, ops({K::bias_col, K::residual})));
  EXPECT_FALSE(ir::gpu_epilogue_fits(ir::LibraryOp::bmm, ops({K::residual, K::relu})));
  EXPECT_FALSE(ir::gpu_epilogue_fits(ir::LibraryOp::conv2d, ops({K::bias_col, K::relu})));
  EXPECT_FALSE(ir::gpu_epilogue_fits(ir::LibraryOp::conv2d, ops({K::scale_col, K::bias_col})));
}

std::string absorbed(const std::string& text) {
  return ir::testing::run_pass(text, [](const ir::LoopProgram& p) { return ir::absorb_epilogues(p); });
}

// addmm then relu on the GPU: cuBLASLt's RELU_BIAS epilogue takes the relu; the kernel goes.
TEST(GpuLibraryCalls, AddmmAbsorbsItsRelu) {
  const std::string in = ir::testing::program(R"(  buffer %in0: float32[8, 16]{16, 1} input 0 cuda:0
  buffer %in1: float32[16, 32]{32, 1} input 1 cuda:0
  buffer %in2: float32[32]{1} input 2 cuda:0
  buffer %1: float32[8, 32]{32, 1} extern cuda:0
  buffer %2: float32[8, 32]{32, 1} computed cuda:0
  compute %2 (node 2) pointwise[8, 32] = maximum(load(%1, [i0, i1]), 0.0:float32)
  extern node 1 (%in0, %in1, %in2) -> (%1) library addmm(%in0, %in1) epilogue=add(local(acc, float32), load(%in2, [i1]))
  kernel %2
  output %2
)");
  const std::string out = absorbed(in);
  EXPECT_NE(out.find("-> (%2) library addmm(%in0, %in1) epilogue=maximum(add(local(acc, float32), load(%in2, [i1])), "
                     "0.0:float32) absorbs [2]"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("kernel %2"), std::string::npos) << out;
}

// What the GPU libraries do not apply stays a generated kernel: a relu with no bias before it,
// an eval batch norm after a convolution (no per-channel scale, no folding kernels), a
// convolution's bias, work
// that on the CPU would run as a tile.
TEST(GpuLibraryCalls, OtherConsumersStayKernels) {
  const std::string mm_relu = ir::testing::program(R"(  buffer %in0: float32[8, 16]{16, 1} input 0 cuda:0
  buffer %in1: float32[16, 32]{32, 1} input 1 cuda:0
  buffer %1: float32[8, 32]{32, 1} extern cuda:0
  buffer %2: float32[8, 32]{32, 1} computed cuda:0
  compute %2 (node 2) pointwise[8, 32] = maximum(load(%1, [i0, i1]), 0.0:float32)
  extern node 1 (%in0, %in1) -> (%1) library mm(%in0, %in1)
  kernel %2
  output %2
)");
  EXPECT_EQ(absorbed(mm_relu), mm_relu);
  const std::string square = ir::testing::program(R"(  buffer %in0: float32[8, 16]{16, 1} input 0 cuda:0
  buffer %in1: float32[16, 32]{32, 1} input 1 cuda:0
  buffer %1: float32[8, 32]{32, 1} extern cuda:0
  buffer %2: float32[8, 32]{32, 1} computed cuda:0
  compute %2 (node 2) pointwise[8, 32] = mul(load(%1, [i0, i1]), load(%1, [i0, i1]))
  extern node 1 (%in0, %in1) -> (%1) library mm(%in0, %in1)
  kernel %2
  output %2
)");
  EXPECT_EQ(absorbed(square), square);
  const std::string batch_norm = ir::testing::program(R"(  buffer %in0: float32[2, 8, 5, 5]{200, 25, 5, 1} input 0 cuda:0
  buffer %in1: float32[16, 8, 3, 3]{72, 9, 3, 1} input 1 cuda:0
  buffer %in2: float32[16]{1} input 2 cuda:0
  buffer %in3: float32[16]{1} input 3 cuda:0
  buffer %1: float32[2, 16, 5, 5]{400, 25, 5, 1} extern cuda:0
  buffer %2: float32[2, 16, 5, 5]{400, 25, 5, 1} computed cuda:0
  compute %2 (node 2) pointwise[2, 16, 5, 5] = mul(sub(load(%1, [i0, i1, i2, i3]), load(%in2, [i1])), load(%in3, [i1]))
  extern node 1 (%in0, %in1) -> (%1) library conv2d(%in0, %in1) {padding_h=1, padding_w=1}
  kernel %2
  output %2
)");
  EXPECT_EQ(absorbed(batch_norm), batch_norm);
  // A convolution's bias: cuDNN would add it in a second kernel; the generated kernel adds it.
  const std::string conv_bias = ir::testing::program(R"(  buffer %in0: float32[2, 8, 5, 5]{200, 25, 5, 1} input 0 cuda:0
  buffer %in1: float32[16, 8, 3, 3]{72, 9, 3, 1} input 1 cuda:0
  buffer %in2: float32[16]{1} input 2 cuda:0
  buffer %1: float32[2, 16, 5, 5]{400, 25, 5, 1} extern cuda:0
  buffer %2: float32[2, 16, 5, 5]{400, 25, 5, 1} computed cuda:0
  compute %2 (node 2) pointwise[2, 16, 5, 5] = add(load(%1, [i0, i1, i2, i3]), load(%in2, [i1]))
  extern node 1 (%in0, %in1) -> (%1) library conv2d(%in0, %in1) {padding_h=1, padding_w=1}
  kernel %2
  output %2
)");
  EXPECT_EQ(absorbed(conv_bias), conv_bias);
}

}  // namespace
}  // namespace inductor_cpp::inductor
