/// \file
/// Lowering matrix ops to library calls (inductor/lower/library_calls.h): which ops become
/// extern steps carrying an ir::LibraryCall (operands, attributes, epilogue, outputs, inputs),
/// and which keep their ATen extern with the "matrix kernels: ..." reason in their decision.
/// Asserts on the call's fields rather than the program text (whose library clause is printed
/// by ir_text, tested there).
#include <gtest/gtest.h>

#include <cmath>

#include "ir/ir_text.h"
#include "ir/passes/dce.h"
#include "matrix/matrix.h"
#include "tests/cpp/lowering_test_util.h"

namespace inductor_cpp::inductor {
namespace {

using namespace lowering_test;

LoweringOptions library_options() {
  LoweringOptions o;
  o.library_calls = true;
  return o;
}

/// The lowered graph with library calls, after checking that its program verifies.
LoweredGraph lower_library(const ir::Graph& g) {
  LoweredGraph l = lower_graph(g, library_options());
  ir::verify(l.program);
  return l;
}

/// The library call of graph node `node`, after checking the node counts as generated.
const ir::LibraryCall& library_of(const LoweredGraph& l, int32_t node) {
  EXPECT_TRUE(l.decisions.at(node).generated) << l.decisions.at(node).reason;
  EXPECT_EQ(l.decisions.at(node).reason, "");
  const ir::ExternCall& call = extern_of(l, node);
  if (!call.library) throw std::runtime_error("node " + std::to_string(node) + " has no library call");
  return *call.library;
}

/// The epilogue of graph node `node`'s call, printed with the program's buffer types.
std::string epilogue_of(const LoweredGraph& l, int32_t node) {
  return ir::to_string(library_of(l, node).epilogue, ir::buffer_types(l.program));
}

using Names = std::vector<std::string>;
using Attrs = std::map<std::string, double>;

/// Channels-last strides of an [N, C, H, W] tensor.
std::vector<int64_t> nhwc(const std::vector<int64_t>& s) {
  return {s[1] * s[2] * s[3], 1, s[3] * s[1], s[1]};
}
json meta_nhwc(const std::vector<int64_t>& sizes) {
  return meta(sizes, "float32", nhwc(sizes));
}

const Attrs kUnitGeometry{{"stride_h", 1},  {"stride_w", 1},   {"padding_h", 1},
                          {"padding_w", 1}, {"dilation_h", 1}, {"dilation_w", 1}};

/// aten::convolution(x, w, bias, stride 1, padding 1, dilation 1, not transposed, groups 1).
json conv_node(json x, json w, json bias, json out) {
  return node("aten::convolution",
              {x, w, bias, ints({1, 1}), ints({1, 1}), ints({1, 1}), b(false), ints({0, 0}), i(1)},
              {out});
}

TEST(LoweringLibrary, MmBecomesALibraryCall) {
  const LoweredGraph l = lower_library(
      graph({meta({4, 8}), meta({8, 16})}, {node("aten::mm", {in(0), in(1)}, {meta({4, 16})})}));
  const ir::LibraryCall& call = library_of(l, 0);
  EXPECT_EQ(call.op, ir::LibraryOp::mm);
  EXPECT_EQ(call.operands, (Names{"%in0", "%in1"}));
  EXPECT_TRUE(call.attrs.empty());
  EXPECT_FALSE(call.epilogue);
  EXPECT_EQ(extern_of(l, 0).outputs, Names{"%0"});
  EXPECT_EQ(extern_of(l, 0).inputs, (Names{"%in0", "%in1"}));
  EXPECT_EQ(l.program.buffer("%0").origin, ir::BufferOrigin::Extern);
}

TEST(LoweringLibrary, AddmmBiasIsTheEpilogueBroadcastToTheOutput) {
  const LoweredGraph l = lower_library(graph(
      {meta({16}), meta({4, 8}), meta({8, 16})},
      {node("aten::addmm", {in(0), in(1), in(2)}, {meta({4, 16})}, {{"alpha", f(0.5)}})}));
  const ir::LibraryCall& call = library_of(l, 0);
  EXPECT_EQ(call.op, ir::LibraryOp::addmm);
  EXPECT_EQ(call.operands, (Names{"%in1", "%in2"}));
  EXPECT_EQ(call.attrs, (Attrs{{"alpha", 0.5}}));
  EXPECT_EQ(epilogue_of(l, 0), "add(local(acc, float32), load(%in0, [i1]))");
  EXPECT_EQ(extern_of(l, 0).inputs, (Names{"%in1", "%in2", "%in0"}));

  // A column of the output [4, 1] broadcasts along the rows.
  const LoweredGraph rows = lower_library(
      graph({meta({4, 1}), meta({4, 8}), meta({8, 16})},
            {node("aten::addmm", {in(0), in(1), in(2)}, {meta({4, 16})})}));
  EXPECT_EQ(epilogue_of(rows, 0), "add(local(acc, float32), load(%in0, [i0, 0]))");
  EXPECT_TRUE(library_of(rows, 0).attrs.empty());
}

TEST(LoweringLibrary, AddmmWithBetaTwoKeepsItsExternAndSaysWhy) {
  const LoweredGraph l = lower_library(
      graph({meta({16}), meta({4, 8}), meta({8, 16})},
            {node("aten::addmm", {in(0), in(1), in(2)}, {meta({4, 16})}, {{"beta", i(2)}})}));
  EXPECT_FALSE(l.decisions[0].generated);
  EXPECT_EQ(l.decisions[0].reason, "no lowering for aten::addmm; matrix kernels: addmm with beta != 1");
  EXPECT_FALSE(extern_of(l, 0).library);
  EXPECT_EQ(extern_of(l, 0).inputs, (Names{"%in0", "%in1", "%in2"}));
}

TEST(LoweringLibrary, ConvolutionWithBiasReadsItsClonedWeightInPlace) {
  // The channels-last FX pass's layout copy of the weight: the call reads the source, and the
  // copy, now unread, goes with dead-code elimination.
  const auto g = graph(
      {meta_nhwc({2, 8, 6, 6}), meta({16, 8, 3, 3}), meta({16})},
      {node("aten::clone", {in(1)}, {meta_nhwc({16, 8, 3, 3})}),
       conv_node(in(0), val(0), in(2), meta_nhwc({2, 16, 6, 6}))});
  const LoweredGraph l = lower_library(g);
  EXPECT_TRUE(l.decisions[0].generated);
  const ir::LibraryCall& call = library_of(l, 1);
  EXPECT_EQ(call.op, ir::LibraryOp::conv2d);
  EXPECT_EQ(call.operands, (Names{"%in0", "%in1"}));
  EXPECT_EQ(call.attrs, kUnitGeometry);
  EXPECT_EQ(epilogue_of(l, 1), "add(local(acc, float32), load(%in2, [i1]))");
  EXPECT_EQ(extern_of(l, 1).outputs, Names{"%1"});
  EXPECT_EQ(extern_of(l, 1).inputs, (Names{"%in0", "%in1", "%in2"}));
  ASSERT_TRUE(l.program.computes.count("%0"));
  const ir::LoopProgram live = ir::eliminate_dead_code(l.program);
  EXPECT_FALSE(live.computes.count("%0"));
  EXPECT_EQ(live.steps.size(), 1u);
}

TEST(LoweringLibrary, ClonedWeightWrittenInPlaceIsReadThroughTheCopy) {
  const auto g = graph(
      {meta_nhwc({2, 8, 6, 6}), meta({16, 8, 3, 3})},
      {node("aten::clone", {in(1)}, {meta_nhwc({16, 8, 3, 3})}),
       conv_node(in(0), val(0), json(nullptr), meta_nhwc({2, 16, 6, 6})),
       node("aten::add_.Tensor", {in(1), in(1)}, {meta({16, 8, 3, 3})})},
      json::array({val(1)}));
  const LoweredGraph l = lower_library(g);
  EXPECT_EQ(library_of(l, 1).operands, (Names{"%in0", "%0"}));
  EXPECT_FALSE(library_of(l, 1).epilogue);
}

TEST(LoweringLibrary, NchwConvolutionKeepsItsExternAndSaysWhy) {
  const LoweredGraph l = lower_library(
      graph({meta({2, 8, 6, 6}), meta({16, 8, 3, 3})},
            {conv_node(in(0), in(1), json(nullptr), meta({2, 16, 6, 6}))}));
  EXPECT_FALSE(l.decisions[0].generated);
  EXPECT_EQ(l.decisions[0].reason,
            "no lowering for aten::convolution; matrix kernels: input is not channels-last (our "
            "convolution reads NHWC; NCHW stays with ATen's kernel)");
  EXPECT_FALSE(extern_of(l, 0).library);
}

TEST(LoweringLibrary, ConvolutionBackwardComputesTheMaskedGradientsOnly) {
  const auto g = graph(
      {meta_nhwc({2, 16, 6, 6}), meta_nhwc({2, 8, 6, 6}), meta({16, 8, 3, 3})},
      {node("aten::convolution_backward",
            {in(0), in(1), in(2), ints({16}), ints({1, 1}), ints({1, 1}), ints({1, 1}), b(false),
             ints({0, 0}), i(1), json{{"list", {b(false), b(true), b(true)}}}},
            {nullptr, meta({16, 8, 3, 3}), meta({16})})},
      json::array({val(0, 1), val(0, 2)}));
  const LoweredGraph l = lower_library(g);
  const ir::LibraryCall& call = library_of(l, 0);
  EXPECT_EQ(call.op, ir::LibraryOp::conv2d_backward);
  EXPECT_EQ(call.operands, (Names{"%in0", "%in1", "%in2"}));
  EXPECT_EQ(call.attrs, kUnitGeometry);
  EXPECT_FALSE(call.epilogue);
  EXPECT_EQ(extern_of(l, 0).outputs, (Names{"", "%0.1", "%0.2"}));
  EXPECT_EQ(extern_of(l, 0).inputs, (Names{"%in0", "%in1", "%in2"}));
  EXPECT_EQ(l.program.find_buffer("%0"), nullptr);
}

TEST(LoweringLibrary, AttentionWithUnreadLogsumexpDoesNotComputeIt) {
  const std::vector<int64_t> qkv{1, 2, 16, 8};
  matrix::AttentionParams p;
  p.heads = 2, p.q_len = p.kv_len = 16, p.head_dim = p.value_dim = 8;
  if (!matrix::attention_supported(p)) GTEST_SKIP() << "our attention needs AVX-512";
  const LoweredGraph l = lower_library(
      graph({meta(qkv), meta(qkv), meta(qkv)},
            {node("aten::_scaled_dot_product_flash_attention_for_cpu", {in(0), in(1), in(2)},
                  {meta(qkv), meta({1, 2, 16})})}));
  const ir::LibraryCall& call = library_of(l, 0);
  EXPECT_EQ(call.op, ir::LibraryOp::attention);
  EXPECT_EQ(call.operands, (Names{"%in0", "%in1", "%in2", ""}));
  EXPECT_EQ(call.attrs, (Attrs{{"scale", 1 / std::sqrt(8.0)}, {"causal", 0}}));
  EXPECT_EQ(extern_of(l, 0).outputs, (Names{"%0", ""}));
  EXPECT_EQ(extern_of(l, 0).inputs, (Names{"%in0", "%in1", "%in2"}));
  EXPECT_EQ(l.program.find_buffer("%0.1"), nullptr);
}

TEST(LoweringLibrary, AttentionBackwardReadsTheForwardsOutputsAndMask) {
  const std::vector<int64_t> qkv{1, 2, 16, 8};
  matrix::AttentionParams p;
  p.heads = 2, p.q_len = p.kv_len = 16, p.head_dim = p.value_dim = 8;
  if (!matrix::attention_supported(p)) GTEST_SKIP() << "our attention needs AVX-512";
  // (grad_out, q, k, v, out, logsumexp, dropout_p, is_causal, attn_mask, scale)
  const LoweredGraph l = lower_library(graph(
      {meta(qkv), meta(qkv), meta(qkv), meta(qkv), meta(qkv), meta({1, 2, 16}), meta({16, 16})},
      {node("aten::_scaled_dot_product_flash_attention_for_cpu_backward",
            {in(0), in(1), in(2), in(3), in(4), in(5), f(0.0), b(false)},
            {meta(qkv), meta(qkv), meta(qkv)}, {{"attn_mask", in(6)}, {"scale", f(0.25)}})},
      json::array({val(0, 0), val(0, 1), val(0, 2)})));
  const ir::LibraryCall& call = library_of(l, 0);
  EXPECT_EQ(call.op, ir::LibraryOp::attention_backward);
  EXPECT_EQ(call.operands, (Names{"%in0", "%in1", "%in2", "%in3", "%in4", "%in5", "%in6"}));
  EXPECT_EQ(call.attrs, (Attrs{{"scale", 0.25}, {"causal", 0}}));
  EXPECT_EQ(extern_of(l, 0).outputs, (Names{"%0", "%0.1", "%0.2"}));
}

TEST(LoweringLibrary, WithoutTheOptionMatrixOpsStayAtenExterns) {
  const auto g =
      graph({meta({4, 8}), meta({8, 16})}, {node("aten::mm", {in(0), in(1)}, {meta({4, 16})})});
  const LoweredGraph l = lower(g);  // default options: library_calls off
  EXPECT_FALSE(l.decisions[0].generated);
  EXPECT_EQ(l.decisions[0].reason, "no lowering for aten::mm");
  EXPECT_FALSE(extern_of(l, 0).library);
  EXPECT_EQ(extern_of(l, 0).outputs, Names{"%0"});
}

}  // namespace
}  // namespace inductor_cpp::inductor
