/// \file
/// Lowering: ATen-level graphs (built from JSON descriptions) -> loop-level programs. Checks
/// decisions, the program text of small cases (broadcasting, promotion, views, reductions),
/// and that every produced program verifies.
#include <gtest/gtest.h>

#include "ir/ir_text.h"
#include "tests/cpp/lowering_test_util.h"

namespace inductor_cpp::inductor {
namespace {

using namespace lowering_test;

/// The program text, after checking that it verifies and every node was generated.
std::string generated_text(const ir::Graph& g) {
  return ir::program_to_text(lower_all_generated(g).program);
}

/// The body of compute `name`, printed with the program's buffer types.
std::string body_of(const LoweredGraph& l, const std::string& name) {
  return ir::to_string(l.program.computes.at(name).body, ir::buffer_types(l.program));
}

TEST(Lowering, AddBroadcastsRightAlignedAndScalesByAlpha) {
  const auto g = graph({meta({2, 3}), meta({3}), meta({2, 1})},
                       {node("aten::add.Tensor", {in(0), in(1)}, {meta({2, 3})}, {{"alpha", i(2)}}),
                        node("aten::mul.Tensor", {val(0), in(2)}, {meta({2, 3})})});
  EXPECT_EQ(generated_text(g),
            "program {\n"
            "  buffer %in0: float32[2, 3]{3, 1} input 0 cpu\n"
            "  buffer %in1: float32[3]{1} input 1 cpu\n"
            "  buffer %in2: float32[2, 1]{1, 1} input 2 cpu\n"
            "  buffer %0: float32[2, 3]{3, 1} computed cpu\n"
            "  buffer %1: float32[2, 3]{3, 1} computed cpu\n"
            "  compute %0 (node 0) pointwise[2, 3] = add(load(%in0, [i0, i1]), mul(2.0:float32, "
            "load(%in1, [i1])))\n"
            "  compute %1 (node 1) pointwise[2, 3] = mul(load(%0, [i0, i1]), load(%in2, [i0, 0]))\n"
            "  kernel %0\n"
            "  kernel %1\n"
            "  output %1\n"
            "}\n");
}

TEST(Lowering, PythonFloatPromotesIntTensorToDefaultFloat) {
  const LoweredGraph l =
      lower(graph({meta({4}, "int32")}, {node("aten::add.Scalar", {in(0), f(2.5)}, {meta({4})})}));
  EXPECT_EQ(body_of(l, "%0"), "add(cast(load(%in0, [i0]), float32), 2.5:float32)");
}

TEST(Lowering, ZeroDimTensorOfHigherKindOnlyWinsAcrossCategories) {
  // int8 tensor + int64 zero-dim tensor -> int8: same category, the dimensioned tensor wins.
  const LoweredGraph ints =
      lower(graph({meta({4}, "int8"), meta({}, "int64")},
                  {node("aten::add.Tensor", {in(0), in(1)}, {meta({4}, "int8")})}));
  EXPECT_EQ(body_of(ints, "%0"), "add(load(%in0, [i0]), cast(load(%in1, []), int8))");
  // float16 tensor * float64 zero-dim -> float16, computed in float32; the zero-dim operand
  // is converted to float16 first, as ATen's TensorIterator does.
  const LoweredGraph halves =
      lower(graph({meta({4}, "float16"), meta({}, "float64")},
                  {node("aten::mul.Tensor", {in(0), in(1)}, {meta({4}, "float16")})}));
  EXPECT_EQ(body_of(halves, "%0"),
            "cast(mul(cast(load(%in0, [i0]), float32), cast(cast(load(%in1, []), float16), "
            "float32)), float16)");
  // int32 tensor + float64 zero-dim tensor -> float64: a higher category wins.
  const LoweredGraph mixed =
      lower(graph({meta({4}, "int32"), meta({}, "float64")},
                  {node("aten::add.Tensor", {in(0), in(1)}, {meta({4}, "float64")})}));
  EXPECT_EQ(body_of(mixed, "%0"), "add(cast(load(%in0, [i0]), float64), load(%in1, []))");
}

TEST(Lowering, PromotionDisagreeingWithMetadataDeclines) {
  const auto g = graph({meta({4}, "int32")},
                       {node("aten::add.Scalar", {in(0), f(2.5)}, {meta({4}, "int32")})});
  EXPECT_EQ(reason_of(g), "type promotion gives float32 but the graph says int32");
}

TEST(Lowering, ComparisonsYieldBoolAndUnaryFloatOpsPromoteInts) {
  const LoweredGraph l = lower(graph(
      {meta({3}, "int64")},
      {node("aten::lt.Scalar", {in(0), f(0.5)}, {meta({3}, "bool")}),
       node("aten::exp", {in(0)}, {meta({3})}), node("aten::floor", {in(0)}, {meta({3}, "int64")})},
      json::array({val(0), val(1), val(2)})));
  EXPECT_EQ(body_of(l, "%0"), "lt(cast(load(%in0, [i0]), float32), 0.5:float32)");
  EXPECT_EQ(body_of(l, "%1"), "exp(cast(load(%in0, [i0]), float32))");
  EXPECT_EQ(body_of(l, "%2"), "load(%in0, [i0])");  // floor of an integer is itself
}

TEST(Lowering, PermuteIsAViewInlinedByReaders) {
  const auto g = graph({meta({2, 3}), meta({3, 2})},
                       {node("aten::permute", {in(0), ints({1, 0})},
                             {meta({3, 2}, "float32", std::vector<int64_t>{1, 3})}),
                        node("aten::add.Tensor", {val(0), in(1)}, {meta({3, 2})})});
  EXPECT_EQ(
      generated_text(g),
      "program {\n"
      "  buffer %in0: float32[2, 3]{3, 1} input 0 cpu\n"
      "  buffer %in1: float32[3, 2]{2, 1} input 1 cpu\n"
      "  buffer %0: float32[3, 2]{1, 3} computed cpu\n"
      "  buffer %1: float32[3, 2]{2, 1} computed cpu\n"
      "  compute %0 (node 0) view pointwise[3, 2] = load(%in0, [i1, i0])\n"
      "  compute %1 (node 1) pointwise[3, 2] = add(load(%0, [i0, i1]), load(%in1, [i0, i1]))\n"
      "  kernel %1\n"
      "  output %1\n"
      "}\n");
}

TEST(Lowering, ReshapeIndexingSimplifies) {
  const LoweredGraph l = lower(graph({meta({2, 3, 4})},
                                     {node("aten::view", {in(0), ints({6, -1})}, {meta({6, 4})}),
                                      node("aten::view", {in(0), ints({2, 12})}, {meta({2, 12})})},
                                     json::array({val(0), val(1)})));
  EXPECT_EQ(body_of(l, "%0"), "load(%in0, [i0 // 3, i0 % 3, i1])");
  EXPECT_EQ(body_of(l, "%1"), "load(%in0, [i0, i1 // 4, i1 % 4])");
  EXPECT_TRUE(l.program.computes.at("%0").view);
  EXPECT_TRUE(l.program.steps.empty());  // views get no kernel step
}

TEST(Lowering, SliceSelectExpandSqueezeUnsqueeze) {
  const LoweredGraph l = lower(
      graph({meta({10, 3}), meta({3, 1})},
            {node("aten::slice.Tensor", {in(0), i(0), i(-8), json(nullptr), i(3)}, {meta({3, 3})}),
             node("aten::select.int", {in(0), i(1), i(-1)}, {meta({10})}),
             node("aten::expand", {in(1), ints({2, -1, 4})}, {meta({2, 3, 4})}),
             node("aten::squeeze.dim", {in(1), i(-1)}, {meta({3})}),
             node("aten::unsqueeze", {in(1), i(0)}, {meta({1, 3, 1})})},
            json::array({val(0), val(1), val(2), val(3), val(4)})));
  EXPECT_EQ(body_of(l, "%0"), "load(%in0, [i0*3 + 2, i1])");
  EXPECT_EQ(body_of(l, "%1"), "load(%in0, [i0, 2])");
  EXPECT_EQ(body_of(l, "%2"), "load(%in1, [i1, 0])");
  EXPECT_EQ(body_of(l, "%3"), "load(%in1, [i0, 0])");
  EXPECT_EQ(body_of(l, "%4"), "load(%in1, [i1, 0])");  // i2 ranges over [0, 1)
}

// The keepdim result re-indexes the accumulator; not a view compute (materializing a view runs
// its node's ATen op, and sum.dim_IntList on the accumulator would be wrong).
TEST(Lowering, SumWithKeepdimIsAReductionPlusAReindex) {
  const auto g = graph(
      {meta({2, 3})}, {node("aten::sum.dim_IntList", {in(0), ints({1}), b(true)}, {meta({2, 1})})});
  EXPECT_EQ(generated_text(g),
            "program {\n"
            "  buffer %in0: float32[2, 3]{3, 1} input 0 cpu\n"
            "  buffer %0.sum: float32[2]{1} computed cpu\n"
            "  buffer %0: float32[2, 1]{1, 1} computed cpu\n"
            "  compute %0.sum (node 0) reduce sum[2] over [3] = load(%in0, [i0, r0])\n"
            "  compute %0 (node 0) pointwise[2, 1] = load(%0.sum, [i0])\n"
            "  kernel %0.sum\n"
            "  kernel %0\n"
            "  output %0\n"
            "}\n");
}

TEST(Lowering, ReductionsAccumulateHalfInFloatAndIntsInInt64) {
  const LoweredGraph half =
      lower(graph({meta({2, 3}, "float16")},
                  {node("aten::mean.dim", {in(0), ints({0})}, {meta({3}, "float16")})}));
  EXPECT_EQ(body_of(half, "%0.sum"), "cast(load(%in0, [r0, i0]), float32)");
  EXPECT_EQ(body_of(half, "%0"), "cast(div(load(%0.sum, [i0]), 2.0:float32), float16)");
  const LoweredGraph bools =
      lower(graph({meta({2, 3}, "bool")}, {node("aten::sum", {in(0)}, {meta({}, "int64")})}));
  const ir::Compute& sum = bools.program.computes.at("%0");
  EXPECT_TRUE(sum.ranges.empty());
  EXPECT_EQ(sum.reduce_ranges.size(), 2u);
  EXPECT_EQ(body_of(bools, "%0"), "cast(load(%in0, [r0, r1]), int64)");
}

TEST(Lowering, MaxDimDefinesValuesAndIndices) {
  const LoweredGraph l =
      lower(graph({meta({2, 3, 4})},
                  {node("aten::max.dim", {in(0), i(1)}, {meta({2, 4}), meta({2, 4}, "int64")})},
                  json::array({val(0, 0), val(0, 1)})));
  const ir::Compute& values = l.program.computes.at("%0");
  const ir::Compute& indices = l.program.computes.at("%0.1");
  EXPECT_EQ(values.reduce_op, ir::ReduceOp::max);
  EXPECT_EQ(indices.reduce_op, ir::ReduceOp::argmax);
  EXPECT_EQ(body_of(l, "%0.1"), "load(%in0, [i0, r0, i1])");
  EXPECT_EQ(l.program.steps.size(), 2u);
  EXPECT_EQ(l.program.outputs, (std::vector<std::string>{"%0", "%0.1"}));
}

TEST(Lowering, VarianceDividesM2ByDegreesOfFreedom) {
  const LoweredGraph l = lower(graph(
      {meta({4, 5})},
      {node("aten::var.correction", {in(0), ints({1})}, {meta({4})}, {{"correction", i(1)}})}));
  EXPECT_EQ(l.program.computes.at("%0.m2").reduce_op, ir::ReduceOp::welford_m2);
  EXPECT_EQ(body_of(l, "%0"), "div(load(%0.m2, [i0]), 4.0:float32)");
}

TEST(Lowering, CatSelectsMaskedPieces) {
  const LoweredGraph l =
      lower(graph({meta({2, 3}), meta({1, 3}, "int32")},
                  {node("aten::cat", {json{{"list", {in(0), in(1)}}}}, {meta({3, 3})})}));
  EXPECT_EQ(body_of(l, "%0"),
            "where(ne(index(i0 < 2, int64), 0:int64), load(%in0, [i0, i1], mask=i0 < 2), "
            "cast(load(%in1, [i0 - 2, i1], mask=2 <= i0), float32))");
}

TEST(Lowering, PadReadsTheFillValueOutside) {
  const LoweredGraph l =
      lower(graph({meta({2, 3})},
                  {node("aten::constant_pad_nd", {in(0), ints({1, 0}), f(-1.0)}, {meta({2, 4})})}));
  EXPECT_EQ(body_of(l, "%0"),
            "where(ne(index(0 <= i1 - 1, int64), 0:int64), load(%in0, [i0, i1 - 1], "
            "mask=0 <= i1 - 1), "
            "-1.0:float32)");
}

TEST(Lowering, SliceScatterWritesTheSourceOverItsStridedRegion) {
  // slice_scatter(x, src, 1, 1, 6, 2): columns 1, 3, 5 come from src[:, 0..2].
  const LoweredGraph l = lower(
      graph({meta({2, 7}), meta({2, 3})},
            {node("aten::slice_scatter", {in(0), in(1), i(1), i(1), i(6), i(2)}, {meta({2, 7})})}));
  EXPECT_EQ(body_of(l, "%0"),
            "where(ne(index((i1 < 6)*(0 <= i1 - 1)*((i1 + 1) % 2 == 0), int64), 0:int64), "
            "load(%in1, [i0, (i1 + 1) // 2 - 1], "
            "mask=(i1 < 6)*(0 <= i1 - 1)*((i1 + 1) % 2 == 0)), "
            "load(%in0, [i0, i1]))");
  EXPECT_FALSE(l.program.computes.at("%0").view);
}

TEST(Lowering, FlipAndUnfoldRewriteIndices) {
  const LoweredGraph flip =
      lower(graph({meta({4, 5})}, {node("aten::flip", {in(0), ints({-1})}, {meta({4, 5})})}));
  EXPECT_EQ(body_of(flip, "%0"), "load(%in0, [i0, -i1 + 4])");
  const LoweredGraph unfold = lower(
      graph({meta({4, 9})}, {node("aten::unfold", {in(0), i(1), i(3), i(2)}, {meta({4, 4, 3})})}));
  EXPECT_EQ(body_of(unfold, "%0"), "load(%in0, [i0, i1*2 + i2])");
  EXPECT_EQ(reason_of(graph(
                {meta({4, 9}), meta({2, 2})},
                {node("aten::slice_scatter", {in(0), in(1), i(1), i(0), i(3)}, {meta({4, 9})})})),
            "slice_scatter: source of shape [2, 2], the view has [4, 3]");
}

// scatter.value with one index per row (nll_loss's backward) is a pointwise where; with more
// it is an `any` over the row's indices, then the where.
TEST(Lowering, ScatterValueOneIndexPerRowIsPointwise) {
  const auto scatter = [](int64_t per_row) {
    return lower(graph({meta({4, 10}), meta({4, per_row}, "int64")},
                       {node("aten::scatter.value", {in(0), i(1), in(1), f(-1.0)}, {meta({4, 10})})}));
  };
  const LoweredGraph one = scatter(1);
  EXPECT_EQ(body_of(one, "%0"), "where(eq(load(%in1, [i0, 0]), index(i1, int64)), -1.0:float32, load(%in0, [i0, i1]))");
  EXPECT_FALSE(one.program.computes.at("%0").is_reduction());
  EXPECT_EQ(one.program.computes.size(), 1u);
  const LoweredGraph two = scatter(2);
  EXPECT_EQ(two.program.computes.size(), 2u);
  EXPECT_EQ(body_of(two, "%0"), "where(load(%0.hit, [i0, i1]), -1.0:float32, load(%in0, [i0, i1]))");
}

TEST(Lowering, IndexWrapsNegativeIndicesAndChecksBounds) {
  const LoweredGraph l = lower(graph(
      {meta({5, 4}), meta({3}, "int64")},
      {node("aten::index.Tensor", {in(0), json{{"list", {nullptr, in(1)}}}}, {meta({5, 3})})}));
  EXPECT_EQ(body_of(l, "%0"),
            "load(%in0, [i0, %ind0], indirect=[where(lt(load(%in1, [i1]), 0:int64), "
            "add(load(%in1, [i1]), 4:int64), load(%in1, [i1]))], bounds=[4])");
}

TEST(Lowering, BoolMaskIndexDeclines) {
  const auto g = graph({meta({5}), meta({5}, "bool")},
                       {node("aten::index.Tensor", {in(0), json{{"list", {in(1)}}}}, {meta({3})})});
  EXPECT_EQ(reason_of(g), "indices of type bool (bool masks are not generated)");
}

TEST(Lowering, ArangeAndFull) {
  const LoweredGraph l =
      lower(graph({},
                  {node("aten::arange.start_step", {i(1), i(10), i(3)}, {meta({3}, "int64")}),
                   node("aten::full", {ints({2}), f(0.5)}, {meta({2})},
                        {{"dtype", json{{"dtype", "float32"}}}})},
                  json::array({val(0), val(1)})));
  EXPECT_EQ(body_of(l, "%0"), "add(1:int64, index(i0*3, int64))");
  EXPECT_EQ(body_of(l, "%1"), "0.5:float32");
}

TEST(Lowering, UnknownOpBecomesAnExternWithDeduplicatedInputs) {
  const auto g = graph({meta({2, 2})}, {node("aten::mm", {in(0), in(0)}, {meta({2, 2})}),
                                        node("aten::relu", {val(0)}, {meta({2, 2})})});
  const LoweredGraph l = lower(g);
  EXPECT_FALSE(l.decisions[0].generated);
  EXPECT_EQ(l.decisions[0].reason, "no lowering for aten::mm");
  EXPECT_TRUE(l.decisions[1].generated);
  EXPECT_EQ(l.program.buffer("%0").origin, ir::BufferOrigin::Extern);
  const std::string text = ir::program_to_text(l.program);
  EXPECT_NE(text.find("  extern node 0 (%in0) -> (%0)\n  kernel %1\n"), std::string::npos) << text;
}

TEST(Lowering, DeclinesWhatItCannotExpress) {
  // Unknown keyword arguments are never ignored.
  EXPECT_EQ(reason_of(graph({meta({2})},
                            {node("aten::relu", {in(0)}, {meta({2})}, {{"fast", b(true)}})})),
            "unknown keyword argument 'fast'");
  // Integer division by a tensor could divide by zero, which must raise.
  EXPECT_EQ(
      reason_of(graph({meta({2}, "int64"), meta({2}, "int64")},
                      {node("aten::remainder.Tensor", {in(0), in(1)}, {meta({2}, "int64")})})),
      "integer division by a tensor (a zero divisor must raise as in ATen)");
  // A reduction over an empty dim (eager: identity, nan or an error) stays an ATen call; an
  // empty result of empty operands is generated (nothing to compute).
  EXPECT_EQ(reason_of(graph({meta({0, 2})},
                            {node("aten::sum.dim_IntList", {in(0), ints({0})}, {meta({2})})})),
            "zero-size operand of a non-empty result");
  EXPECT_EQ(reason_of(graph({meta({0, 2})}, {node("aten::relu", {in(0)}, {meta({0, 2})})})), "");
  EXPECT_EQ(reason_of(graph({}, {node("aten::empty.memory_format", {ints({2})}, {meta({2})})})),
            "uninitialized memory: nothing to compute");
  // A number computed at run time used as an operand.
  const json number_input = json{{"scalar", "float"}};
  EXPECT_EQ(reason_of(graph({meta({2}), number_input},
                            {node("aten::mul.Tensor", {in(0), in(1)}, {meta({2})})})),
            "numbers computed at run time are not generated yet ('other')");
}

TEST(Lowering, SymbolicShapesBecomeExternsWithSymbolRanges) {
  json sym_meta = meta({1, 1});
  sym_meta["sizes"] = {"s0", "s1"};
  sym_meta["strides"] = {"s1", 1};
  json flat = meta({1});
  flat["sizes"] = {"s0*s1"};
  const auto g =
      graph({sym_meta},
            {node("aten::sym_size.int", {in(0), i(0)}, {nullptr}),
             node("sym::mul", {val(0), val(0)}, {nullptr}), node("aten::relu", {in(0)}, {sym_meta}),
             node("aten::view", {val(2), json{{"list", {val(1)}}}}, {flat})});
  const LoweredGraph l = lower(g);
  EXPECT_EQ(l.decisions[1].reason, "scalar arithmetic, run by the runtime");
  EXPECT_EQ(l.decisions[2].reason, "symbolic sizes not generated yet");
  EXPECT_EQ(l.program.symbol_ranges.at("s0").lo, 2);
  EXPECT_EQ(ir::to_string(l.program.buffer("%3").sizes[0]), "s0*s1");
  EXPECT_EQ(l.program.steps.size(), 4u);
  EXPECT_EQ(l.program.steps[1].call.outputs, (std::vector<std::string>{""}));
}

TEST(Lowering, GraphOutputsNameBuffersOrNone) {
  const auto g = graph({meta({2})}, {node("aten::neg", {in(0)}, {meta({2})})},
                       json::array({val(0), in(0), nullptr}));
  EXPECT_EQ(lower(g).program.outputs, (std::vector<std::string>{"%0", "%in0", ""}));
}

TEST(Lowering, ProgramsRoundTripThroughText) {
  const auto g = graph(
      {meta({2, 3, 4}), meta({3}, "int64")},
      {node("aten::index.Tensor", {in(0), json{{"list", {nullptr, in(1)}}}}, {meta({2, 3, 4})}),
       node("aten::constant_pad_nd", {val(0), ints({1, 1})}, {meta({2, 3, 6})}),
       node("aten::var_mean.correction", {val(1), ints({2})}, {meta({2, 3, 1}), meta({2, 3, 1})},
            {{"keepdim", b(true)}}),
       node("aten::mm", {val(2, 1), val(2, 0)}, {meta({2, 3, 1})})},
      json::array({val(2, 0), val(3)}));
  const LoweredGraph l = lower(g);
  const std::string text = ir::program_to_text(l.program);
  EXPECT_EQ(ir::program_to_text(ir::parse_program(text)), text);
  EXPECT_TRUE(ir::parse_program(text) == l.program);
}

TEST(Lowering, BufferNames) {
  EXPECT_EQ(buffer_name_of(ir::Arg::input(3)), "%in3");
  EXPECT_EQ(buffer_name_of(ir::Arg::constant(0)), "%c0");
  EXPECT_EQ(buffer_name_of(ir::Arg::value(5)), "%5");
  EXPECT_EQ(buffer_name_of(ir::Arg::value(5, 1)), "%5.1");
  EXPECT_THROW(buffer_name_of(ir::Arg::of_int(1)), std::invalid_argument);
}

TEST(Lowering, TypesWithoutElementTypeThrow) {
  EXPECT_THROW(lower_graph(graph({meta({2}, "complex64")},
                                 {node("aten::neg", {in(0)}, {meta({2}, "complex64")})})),
               std::invalid_argument);
}

}  // namespace
}  // namespace inductor_cpp::inductor
