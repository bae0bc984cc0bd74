/// \file
/// Semantic tests of the pass pipeline: programs as lowering produces them (softmax,
/// layernorm, reductions that split, argmax, cat, pad, gathers, views, externs) are run by the
/// reference interpreter before any pass, after each pass, scheduled, and with their memory
/// plan, on random inputs; every stage must compute the same values (pipeline_check.h). The
/// pass tests compare printed IR; these catch transformations that print fine but compute
/// something else.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "tests/cpp/pass_test_util.h"
#include "tests/cpp/pipeline_check.h"
#include "tests/cpp/random_program.h"

namespace inductor_cpp::ir {
namespace {

using testing::pipeline_mismatch;
using testing::PipelineCheck;
using testing::program;

/// `text` with every `$KEY` replaced by its value.
std::string with(std::string text, const std::map<std::string, int64_t>& values) {
  for (const auto& [key, value] : values) {
    const std::string pattern = "$" + key;
    for (size_t at = text.find(pattern); at != std::string::npos; at = text.find(pattern, at)) {
      text.replace(at, pattern.size(), std::to_string(value));
    }
  }
  return text;
}

/// A check drawing integer inputs from the given ranges (index tensors must be in bounds).
PipelineCheck with_int_ranges(const std::map<std::string, std::pair<int64_t, int64_t>>& ranges) {
  PipelineCheck c;
  for (const auto& [name, range] : ranges) c.fill.int_ranges[name] = range;
  return c;
}

TEST(PipelineSemantics, PointwiseChainWithBroadcasting) {
  EXPECT_EQ(pipeline_mismatch(program(R"(  buffer %in0: float32[37, 50]{50, 1} input 0 cpu
  buffer %in1: float32[50]{1} input 1 cpu
  buffer %in2: float32[37, 1]{1, 1} input 2 cpu
  buffer %0: float32[37, 50]{50, 1} computed cpu
  buffer %1: float32[37, 50]{50, 1} computed cpu
  buffer %2: float32[37, 50]{50, 1} computed cpu
  buffer %3: float32[37, 50]{50, 1} computed cpu
  compute %0 (node 0) pointwise[37, 50] = add(load(%in0, [i0, i1]), mul(2.0:float32, load(%in1, [i1])))
  compute %1 (node 1) pointwise[37, 50] = mul(load(%0, [i0, i1]), load(%in2, [i0, 0]))
  compute %2 (node 2) pointwise[37, 50] = tanh(load(%1, [i0, i1]))
  compute %3 (node 3) pointwise[37, 50] = sub(load(%2, [i0, i1]), load(%0, [i0, i1]))
  kernel %0
  kernel %1
  kernel %2
  kernel %3
  output %3, %1
)")),
            "");
}

// Big enough to run parallel blocks of vectors with a tail; an int input cast to float, and
// 3-D broadcasting of two inputs.
TEST(PipelineSemantics, BlockedLoopsCastsAndThreeDimBroadcast) {
  EXPECT_EQ(pipeline_mismatch(program(R"(  buffer %in0: int32[64, 1100]{1100, 1} input 0 cpu
  buffer %in1: float32[64, 1100]{1100, 1} input 1 cpu
  buffer %in2: float32[5, 1, 7]{7, 7, 1} input 2 cpu
  buffer %in3: float32[1, 6, 1]{6, 1, 1} input 3 cpu
  buffer %0: float32[64, 1100]{1100, 1} computed cpu
  buffer %1: float32[64, 1100]{1100, 1} computed cpu
  buffer %2: float32[5, 6, 7]{42, 7, 1} computed cpu
  buffer %3: bool[5, 6, 7]{42, 7, 1} computed cpu
  compute %0 (node 0) pointwise[64, 1100] = sigmoid(cast(load(%in0, [i0, i1]), float32))
  compute %1 (node 1) pointwise[64, 1100] = mul(load(%0, [i0, i1]), load(%in1, [i0, i1]))
  compute %2 (node 2) pointwise[5, 6, 7] = maximum(load(%in2, [i0, 0, i2]), load(%in3, [0, i1, 0]))
  compute %3 (node 3) pointwise[5, 6, 7] = gt(load(%2, [i0, i1, i2]), 0.5:float32)
  kernel %0
  kernel %1
  kernel %2
  kernel %3
  output %1, %3
)")),
            "");
}

// Python-style integer division and remainder, C-style truncdiv/fmod, through casts.
TEST(PipelineSemantics, IntegerArithmetic) {
  EXPECT_EQ(pipeline_mismatch(program(R"(  buffer %in0: int64[9, 13]{13, 1} input 0 cpu
  buffer %0: int64[9, 13]{13, 1} computed cpu
  buffer %1: int64[9, 13]{13, 1} computed cpu
  buffer %2: float32[9, 13]{13, 1} computed cpu
  compute %0 (node 0) pointwise[9, 13] = add(floordiv(load(%in0, [i0, i1]), -3:int64), remainder(load(%in0, [i0, i1]), 4:int64))
  compute %1 (node 1) pointwise[9, 13] = sub(truncdiv(load(%0, [i0, i1]), 2:int64), fmod(load(%in0, [i0, i1]), -3:int64))
  compute %2 (node 2) pointwise[9, 13] = div(cast(load(%1, [i0, i1]), float32), 3.0:float32)
  kernel %0
  kernel %1
  kernel %2
  output %2, %1
)"),
                              with_int_ranges({{"%in0", {-50, 50}}})),
            "");
}

// A column-major input read by a contiguous output: strided loads.
TEST(PipelineSemantics, TransposedInputLayout) {
  EXPECT_EQ(pipeline_mismatch(program(R"(  buffer %in0: float32[16, 40]{1, 16} input 0 cpu
  buffer %in1: float32[16, 40]{40, 1} input 1 cpu
  buffer %0: float32[16, 40]{40, 1} computed cpu
  compute %0 (node 0) pointwise[16, 40] = add(load(%in0, [i0, i1]), load(%in1, [i0, i1]))
  kernel %0
  output %0
)")),
            "");
}

// A transpose, a reshape of it (two views chained), a slice of a permute returned as the
// output (a view of an input), and the input itself returned.
TEST(PipelineSemantics, ViewChainsAndOutputsThatAreViews) {
  EXPECT_EQ(pipeline_mismatch(program(R"(  buffer %in0: float32[4, 6]{6, 1} input 0 cpu
  buffer %0: float32[6, 4]{1, 6} computed cpu
  buffer %1: float32[3, 8]{8, 1} computed cpu
  buffer %2: float32[3, 8]{8, 1} computed cpu
  buffer %3: float32[6, 4]{1, 6} computed cpu
  buffer %4: float32[2, 4]{2, 6}+1 computed cpu
  compute %0 (node 0) view pointwise[6, 4] = load(%in0, [i1, i0])
  compute %1 (node 1) view pointwise[3, 8] = load(%0, [i0*2 + i1 // 4, i1 % 4])
  compute %2 (node 2) pointwise[3, 8] = sigmoid(load(%1, [i0, i1]))
  compute %3 (node 3) view pointwise[6, 4] = load(%in0, [i1, i0])
  compute %4 (node 4) view pointwise[2, 4] = load(%3, [i0*2 + 1, i1])
  kernel %2
  output %2, %4, %in0, %1
)")),
            "");
}

std::string softmax(int64_t rows, int64_t cols) {
  return with(program(R"(  buffer %in0: float32[$R, $C]{$C, 1} input 0 cpu
  buffer %0.max: float32[$R]{1} computed cpu
  buffer %0: float32[$R, 1]{1, 1} computed cpu
  buffer %1: float32[$R, $C]{$C, 1} computed cpu
  buffer %2: float32[$R, $C]{$C, 1} computed cpu
  buffer %3.sum: float32[$R]{1} computed cpu
  buffer %3: float32[$R, 1]{1, 1} computed cpu
  buffer %4: float32[$R, $C]{$C, 1} computed cpu
  compute %0.max (node 0) reduce max[$R] over [$C] = load(%in0, [i0, r0])
  compute %0 (node 0) view pointwise[$R, 1] = load(%0.max, [i0])
  compute %1 (node 1) pointwise[$R, $C] = sub(load(%in0, [i0, i1]), load(%0, [i0, 0]))
  compute %2 (node 2) pointwise[$R, $C] = exp(load(%1, [i0, i1]))
  compute %3.sum (node 3) reduce sum[$R] over [$C] = load(%2, [i0, r0])
  compute %3 (node 3) view pointwise[$R, 1] = load(%3.sum, [i0])
  compute %4 (node 4) pointwise[$R, $C] = div(load(%2, [i0, i1]), load(%3, [i0, 0]))
  kernel %0.max
  kernel %1
  kernel %2
  kernel %3.sum
  kernel %4
  output %4
)"),
              {{"R", rows}, {"C", cols}});
}

TEST(PipelineSemantics, Softmax) {
  EXPECT_EQ(pipeline_mismatch(softmax(6, 40)), "");
  PipelineCheck one_seed;
  one_seed.seeds = {3};
  EXPECT_EQ(pipeline_mismatch(softmax(50, 1000), one_seed), "");
}

std::string layernorm(int64_t rows, int64_t cols) {
  return with(program(R"(  buffer %in0: float32[$R, $C]{$C, 1} input 0 cpu
  buffer %in1: float32[$C]{1} input 1 cpu
  buffer %in2: float32[$C]{1} input 2 cpu
  buffer %0.m2: float32[$R]{1} computed cpu
  buffer %0.sum: float32[$R]{1} computed cpu
  buffer %0: float32[$R, 1]{1, 1} computed cpu
  buffer %0.1: float32[$R, 1]{1, 1} computed cpu
  buffer %1: float32[$R, 1]{1, 1} computed cpu
  buffer %2: float32[$R, 1]{1, 1} computed cpu
  buffer %3: float32[$R, $C]{$C, 1} computed cpu
  buffer %4: float32[$R, $C]{$C, 1} computed cpu
  buffer %5: float32[$R, $C]{$C, 1} computed cpu
  buffer %6: float32[$R, $C]{$C, 1} computed cpu
  compute %0.m2 (node 0) reduce welford_m2[$R] over [$C] = load(%in0, [i0, r0])
  compute %0.sum (node 0) reduce sum[$R] over [$C] = load(%in0, [i0, r0])
  compute %0 (node 0) pointwise[$R, 1] = div(load(%0.m2, [i0]), $C.0:float32)
  compute %0.1 (node 0) pointwise[$R, 1] = div(load(%0.sum, [i0]), $C.0:float32)
  compute %1 (node 1) pointwise[$R, 1] = add(load(%0, [i0, 0]), 1e-05:float32)
  compute %2 (node 2) pointwise[$R, 1] = rsqrt(load(%1, [i0, 0]))
  compute %3 (node 3) pointwise[$R, $C] = sub(load(%in0, [i0, i1]), load(%0.1, [i0, 0]))
  compute %4 (node 4) pointwise[$R, $C] = mul(load(%3, [i0, i1]), load(%2, [i0, 0]))
  compute %5 (node 5) pointwise[$R, $C] = mul(load(%4, [i0, i1]), load(%in1, [i1]))
  compute %6 (node 6) pointwise[$R, $C] = add(load(%5, [i0, i1]), load(%in2, [i1]))
  kernel %0.m2
  kernel %0
  kernel %0.sum
  kernel %0.1
  kernel %1
  kernel %2
  kernel %3
  kernel %4
  kernel %5
  kernel %6
  output %6, %0.1, %2
)"),
              {{"R", rows}, {"C", cols}});
}

TEST(PipelineSemantics, LayerNorm) {
  EXPECT_EQ(pipeline_mismatch(layernorm(8, 48)), "");
  PipelineCheck one_seed;
  one_seed.seeds = {4};
  EXPECT_EQ(pipeline_mismatch(layernorm(64, 768), one_seed), "");
}

// sum(0) (outer strategy, 700 outputs: not split), sum() and amax() over 210000 elements
// (split in two stages, fused as siblings), and a row sum over 70000 (split, masked tail).
TEST(PipelineSemantics, LargeReductionsSplit) {
  PipelineCheck one_seed;
  one_seed.seeds = {5};
  EXPECT_EQ(pipeline_mismatch(program(R"(  buffer %in0: float32[300, 700]{700, 1} input 0 cpu
  buffer %0: float32[700]{1} computed cpu
  buffer %1: float32[]{} computed cpu
  buffer %2: float32[]{} computed cpu
  buffer %3: float32[]{} computed cpu
  compute %0 (node 0) reduce sum[700] over [300] = load(%in0, [r0, i0])
  compute %1 (node 1) reduce sum[] over [300, 700] = load(%in0, [r0, r1])
  compute %2 (node 2) reduce max[] over [300, 700] = load(%in0, [r0, r1])
  compute %3 (node 3) pointwise[] = div(load(%1, []), 210000.0:float32)
  kernel %0
  kernel %1
  kernel %2
  kernel %3
  output %0, %3, %2
)"),
                              one_seed),
            "");
  EXPECT_EQ(pipeline_mismatch(program(R"(  buffer %in0: float32[3, 70000]{70000, 1} input 0 cpu
  buffer %0: float32[3]{1} computed cpu
  buffer %1: bool[3]{1} computed cpu
  compute %0 (node 0) reduce sum[3] over [70000] = exp(load(%in0, [i0, r0]))
  compute %1 (node 1) reduce all[3] over [70000] = lt(load(%in0, [i0, r0]), 1.9:float32)
  kernel %0
  kernel %1
  output %0, %1
)"),
                              one_seed),
            "");
}

// prod, min and an integer sum over a column-major input, split in two stages: the first
// stage's delinearized index must follow the input's strides.
TEST(PipelineSemantics, SplitReductionsOfATransposedInput) {
  PipelineCheck one_seed;
  one_seed.seeds = {6};
  EXPECT_EQ(pipeline_mismatch(program(R"(  buffer %in0: float32[260, 260]{1, 260} input 0 cpu
  buffer %0: float32[]{} computed cpu
  buffer %1: float32[]{} computed cpu
  buffer %2: int64[]{} computed cpu
  compute %0 (node 0) reduce prod[] over [260, 260] = exp(mul(load(%in0, [r0, r1]), 0.0001:float32))
  compute %1 (node 1) reduce min[] over [260, 260] = load(%in0, [r1, r0])
  compute %2 (node 2) reduce sum[] over [260, 260] = cast(gt(load(%in0, [r0, r1]), 0.0:float32), int64)
  kernel %0
  kernel %1
  kernel %2
  output %0, %1, %2
)"),
                              one_seed),
            "");
}

// A batch norm's training forward and backward in channels-last layout, with the few-columns
// thresholds lowered to this size: the per-channel variance runs as the two-pass algorithm
// (the sum hoisted ahead of it), and the sums split by their leading reduce ranges, one of
// them reading a strided gather (a max-pool window).
TEST(PipelineSemantics, FewColumnSplitsAndTwoPassVariance) {
  PipelineCheck small;
  small.options.split.few_columns_min_elements = 1024;
  small.options.split.few_columns_parts = 8;
  small.rtol = 1e-7;  // two-pass and Welford variances round differently
  // The values sit around 3 (not 0), so that a wrong mean shows in the variance.
  const std::string text = program(R"(  buffer %in0: float32[6, 24, 10, 10]{2400, 1, 240, 24} input 0 cpu
  buffer %in1: float32[6, 24, 5, 5]{600, 1, 120, 24} input 1 cpu
  buffer %1.m2: float32[24]{1} computed cpu
  buffer %1.sum: float32[24]{1} computed cpu
  buffer %2: float32[24]{1} computed cpu
  buffer %3: float32[6, 24, 10, 10]{2400, 1, 240, 24} computed cpu
  compute %1.m2 (node 1) reduce welford_m2[24] over [6, 10, 10] = add(load(%in0, [r0, i0, r1, r2]), 3.0:float32)
  compute %1.sum (node 1) reduce sum[24] over [6, 10, 10] = add(load(%in0, [r0, i0, r1, r2]), 3.0:float32)
  compute %2 (node 2) reduce sum[24] over [6, 10, 10] = mul(load(%in0, [r0, i0, r1, r2]), load(%in1, [r0, i0, r1 // 2, r2 // 2]))
  compute %3 (node 3) pointwise[6, 24, 10, 10] = mul(sub(load(%in0, [i0, i1, i2, i3]), div(load(%1.sum, [i1]), 600.0:float32)), rsqrt(add(div(load(%1.m2, [i1]), 600.0:float32), 0.00001:float32)))
  kernel %1.m2
  kernel %1.sum
  kernel %2
  kernel %3
  output %3, %2, %1.m2
)");
  EXPECT_EQ(pipeline_mismatch(text, small), "");
  // The paths did apply: three reductions split by image (6 parts, within [8 / 2, 8]), no
  // Welford left.
  const std::string fused = program_to_text(run_pipeline(parse_program(text), small.options).fused);
  EXPECT_NE(fused.find("compute %1.m2.part (node 1) reduce sum[6, 24] over [1, 10, 10]"), std::string::npos) << fused;
  EXPECT_NE(fused.find("compute %1.sum.part (node 1) reduce sum[6, 24] over [1, 10, 10]"), std::string::npos) << fused;
  EXPECT_NE(fused.find("compute %2.part (node 2) reduce sum[6, 24] over [1, 10, 10]"), std::string::npos) << fused;
  EXPECT_EQ(fused.find("welford_m2"), std::string::npos) << fused;
}

// Softmax over dim 0: reductions over the non-contiguous dim (outer strategy), keepdim views
// of shape [1, C], and a sum over dims 0 and 2 of a 3-D tensor with an epilogue.
TEST(PipelineSemantics, ReductionsOverOuterAndNonAdjacentDims) {
  EXPECT_EQ(pipeline_mismatch(program(R"(  buffer %in0: float32[24, 37]{37, 1} input 0 cpu
  buffer %0.max: float32[37]{1} computed cpu
  buffer %0: float32[1, 37]{37, 1} computed cpu
  buffer %1: float32[24, 37]{37, 1} computed cpu
  buffer %2.sum: float32[37]{1} computed cpu
  buffer %2: float32[1, 37]{37, 1} computed cpu
  buffer %3: float32[24, 37]{37, 1} computed cpu
  compute %0.max (node 0) reduce max[37] over [24] = load(%in0, [r0, i0])
  compute %0 (node 0) view pointwise[1, 37] = load(%0.max, [i1])
  compute %1 (node 1) pointwise[24, 37] = exp(sub(load(%in0, [i0, i1]), load(%0, [0, i1])))
  compute %2.sum (node 2) reduce sum[37] over [24] = load(%1, [r0, i0])
  compute %2 (node 2) view pointwise[1, 37] = load(%2.sum, [i1])
  compute %3 (node 3) pointwise[24, 37] = div(load(%1, [i0, i1]), load(%2, [0, i1]))
  kernel %0.max
  kernel %1
  kernel %2.sum
  kernel %3
  output %3
)")),
            "");
  EXPECT_EQ(pipeline_mismatch(program(R"(  buffer %in0: float32[4, 5, 6]{30, 6, 1} input 0 cpu
  buffer %0: float32[5]{1} computed cpu
  buffer %1: float32[4, 5, 6]{30, 6, 1} computed cpu
  compute %0 (node 0) reduce sum[5] over [4, 6] = load(%in0, [r0, i0, r1])
  compute %1 (node 1) pointwise[4, 5, 6] = sub(load(%in0, [i0, i1, i2]), div(load(%0, [i1]), 24.0:float32))
  kernel %0
  kernel %1
  output %1
)")),
            "");
}

// Integer inputs make ties: argmax/argmin must pick the first position in every stage, also
// over two reduced dims and over a transposed input.
TEST(PipelineSemantics, ArgmaxTiesAndMaxWithIndices) {
  EXPECT_EQ(pipeline_mismatch(program(R"(  buffer %in0: int64[5, 7, 3]{21, 3, 1} input 0 cpu
  buffer %in1: int64[40, 30]{1, 40} input 1 cpu
  buffer %0: float32[5, 7, 3]{21, 3, 1} computed cpu
  buffer %1: int64[5, 3]{3, 1} computed cpu
  buffer %2: float32[5, 3]{3, 1} computed cpu
  buffer %3: int64[]{} computed cpu
  buffer %4: int64[30]{1} computed cpu
  compute %0 (node 0) pointwise[5, 7, 3] = cast(load(%in0, [i0, i1, i2]), float32)
  compute %1 (node 1) reduce argmax[5, 3] over [7] = load(%0, [i0, r0, i1])
  compute %2 (node 1) reduce max[5, 3] over [7] = load(%0, [i0, r0, i1])
  compute %3 (node 2) reduce argmin[] over [40, 30] = cast(load(%in1, [r0, r1]), float32)
  compute %4 (node 3) reduce argmax[30] over [40] = load(%in1, [r0, i0])
  kernel %0
  kernel %1
  kernel %2
  kernel %3
  kernel %4
  output %1, %2, %3, %4
)"),
                              with_int_ranges({{"%in0", {-2, 2}}, {"%in1", {0, 3}}})),
            "");
}

TEST(PipelineSemantics, CatThroughMaskedLoads) {
  EXPECT_EQ(pipeline_mismatch(program(R"(  buffer %in0: float32[2, 3]{3, 1} input 0 cpu
  buffer %in1: float32[4, 3]{3, 1} input 1 cpu
  buffer %0: float32[4, 3]{3, 1} computed cpu
  buffer %1: float32[8, 3]{3, 1} computed cpu
  compute %0 (node 0) pointwise[4, 3] = exp(load(%in1, [i0, i1]))
  compute %1 (node 1) pointwise[8, 3] = where(ne(index(i0 < 2, int64), 0:int64), load(%in0, [i0, i1], mask=i0 < 2), where(ne(index(i0 < 6, int64), 0:int64), load(%0, [i0 - 2, i1], mask=(i0 < 6)*(2 <= i0)), load(%in0, [i0 - 6, i1], mask=6 <= i0)))
  kernel %0
  kernel %1
  output %1
)")),
            "");
}

TEST(PipelineSemantics, PadOfAProducer) {
  EXPECT_EQ(pipeline_mismatch(program(R"(  buffer %in0: float32[3, 5]{5, 1} input 0 cpu
  buffer %0: float32[3, 5]{5, 1} computed cpu
  buffer %1: float32[4, 8]{8, 1} computed cpu
  buffer %2: float32[4]{1} computed cpu
  compute %0 (node 0) pointwise[3, 5] = maximum(load(%in0, [i0, i1]), 0.0:float32)
  compute %1 (node 1) pointwise[4, 8] = where(ne(index((i0 < 2)*(i1 < 7)*(0 <= i1 - 2), int64), 0:int64), load(%0, [i0 + 1, i1 - 2], mask=(i0 < 2)*(i1 < 7)*(0 <= i1 - 2)), -1.0:float32)
  compute %2 (node 2) reduce sum[4] over [8] = load(%1, [i0, r0])
  kernel %0
  kernel %1
  kernel %2
  output %1, %2
)")),
            "");
}

// index_select of index_select: the reader's indirect index moves into the producer's
// indirect load (the %ind placeholders of both must not collide).
TEST(PipelineSemantics, IndexSelectOfIndexSelect) {
  EXPECT_EQ(pipeline_mismatch(program(R"(  buffer %in0: float32[10, 4]{4, 1} input 0 cpu
  buffer %in1: int64[6]{1} input 1 cpu
  buffer %in2: int64[5]{1} input 2 cpu
  buffer %0: float32[6, 4]{4, 1} computed cpu
  buffer %1: float32[5, 4]{4, 1} computed cpu
  compute %0 (node 0) pointwise[6, 4] = load(%in0, [%ind0, i1], indirect=[load(%in1, [i0])], bounds=[10])
  compute %1 (node 1) pointwise[5, 4] = load(%0, [%ind0, i1], indirect=[load(%in2, [i0])], bounds=[6])
  kernel %0
  kernel %1
  output %1
)"),
                              with_int_ranges({{"%in1", {0, 9}}, {"%in2", {0, 5}}})),
            "");
}

// gather, index.Tensor (negative indices wrap) of the gather, embedding.
TEST(PipelineSemantics, GatherIndexAndEmbedding) {
  EXPECT_EQ(pipeline_mismatch(program(R"(  buffer %in0: float32[5, 4]{4, 1} input 0 cpu
  buffer %in1: int64[5, 3]{3, 1} input 1 cpu
  buffer %in2: int64[3]{1} input 2 cpu
  buffer %0: float32[5, 3]{3, 1} computed cpu
  buffer %1: float32[5, 3]{3, 1} computed cpu
  buffer %2: float32[5, 3, 4]{12, 4, 1} computed cpu
  compute %0 (node 0) pointwise[5, 3] = load(%in0, [i0, %ind0], indirect=[load(%in1, [i0, i1])], bounds=[4])
  compute %1 (node 1) pointwise[5, 3] = load(%0, [i0, %ind0], indirect=[where(lt(load(%in2, [i1]), 0:int64), add(load(%in2, [i1]), 3:int64), load(%in2, [i1]))], bounds=[3])
  compute %2 (node 2) pointwise[5, 3, 4] = load(%in0, [%ind0, i2], indirect=[load(%in1, [i0, i1])], bounds=[5])
  kernel %0
  kernel %1
  kernel %2
  output %1, %2
)"),
                              with_int_ranges({{"%in1", {0, 3}}, {"%in2", {-3, 2}}})),
            "");
}

// An index out of bounds must raise in every stage, whatever got inlined where.
TEST(PipelineSemantics, IndirectIndexOutOfBoundsRaisesInEveryStage) {
  const std::string text = program(R"(  buffer %in0: float32[10, 4]{4, 1} input 0 cpu
  buffer %in1: int64[6]{1} input 1 cpu
  buffer %in2: int64[5]{1} input 2 cpu
  buffer %0: float32[6, 4]{4, 1} computed cpu
  buffer %1: float32[5, 4]{4, 1} computed cpu
  compute %0 (node 0) pointwise[6, 4] = exp(load(%in0, [%ind0, i1], indirect=[load(%in1, [i0])], bounds=[10]))
  compute %1 (node 1) pointwise[5, 4] = load(%0, [%ind0, i1], indirect=[load(%in2, [i0])], bounds=[6])
  kernel %0
  kernel %1
  output %1
)");
  const LoopProgram p = parse_program(text);
  interp::RandomFill fill;
  fill.int_ranges = {{"%in1", {0, 9}}, {"%in2", {0, 5}}};
  interp::BufferStorage inputs = interp::random_inputs(p.buffers, 7, fill);
  inputs["%in2"].ints[3] = 6;  // the outer index_select reads row 6 of a 6-row tensor
  EXPECT_EQ(testing::stages_not_raising_out_of_bounds(text, inputs), "");
  inputs["%in2"].ints[3] = 0;
  inputs["%in1"].ints[0] = -1;  // the inner one reads row -1 (if the outer one selects row 0)
  inputs["%in2"].ints[0] = 0;
  EXPECT_EQ(testing::stages_not_raising_out_of_bounds(text, inputs), "");
}

// index_select(expand(x), 0, idx): the producer's loads do not depend on the selected row.
TEST(PipelineSemantics, IndexSelectOfABroadcastRaisesOutOfBounds) {
  const std::string text = program(R"(  buffer %in0: float32[4]{1} input 0 cpu
  buffer %in1: int64[3]{1} input 1 cpu
  buffer %0: float32[10, 4]{0, 1} computed cpu
  buffer %1: float32[3, 4]{4, 1} computed cpu
  compute %0 (node 0) view pointwise[10, 4] = load(%in0, [i1])
  compute %1 (node 1) pointwise[3, 4] = load(%0, [%ind0, i1], indirect=[load(%in1, [i0])], bounds=[10])
  kernel %1
  output %1
)");
  EXPECT_EQ(pipeline_mismatch(text, with_int_ranges({{"%in1", {0, 9}}})), "");
  const LoopProgram p = parse_program(text);
  interp::BufferStorage inputs = interp::random_inputs(p.buffers, 8);
  inputs["%in1"].ints = {1, 10, 2};
  EXPECT_EQ(testing::stages_not_raising_out_of_bounds(text, inputs), "");
}

// index_select of a pointwise producer that itself reads a cat: the cat's index value
// (its piece selector) ends up under the indirect index once both are inlined.
TEST(PipelineSemantics, IndexSelectOfAProducerOfACat) {
  const std::string text = program(R"(  buffer %in0: float32[4]{1} input 0 cpu
  buffer %in1: int64[3]{1} input 1 cpu
  buffer %0: float32[8]{1} computed cpu
  buffer %1: float32[8]{1} computed cpu
  buffer %2: float32[3]{1} computed cpu
  compute %0 (node 0) pointwise[8] = where(ne(index(i0 < 4, int64), 0:int64), load(%in0, [i0], mask=i0 < 4), neg(load(%in0, [i0 - 4], mask=4 <= i0)))
  compute %1 (node 1) pointwise[8] = sigmoid(load(%0, [i0]))
  compute %2 (node 2) pointwise[3] = load(%1, [%ind0], indirect=[load(%in1, [i0])], bounds=[8])
  kernel %0
  kernel %1
  kernel %2
  output %2
)");
  EXPECT_EQ(pipeline_mismatch(text, with_int_ranges({{"%in1", {0, 7}}})), "");
}

// A realized producer (too big to recompute, two readers) read twice by a reduction and
// again by an epilogue, and returned too.
TEST(PipelineSemantics, ReductionOfARealizedProducerReadTwice) {
  EXPECT_EQ(pipeline_mismatch(program(R"(  buffer %in0: float32[40, 64]{64, 1} input 0 cpu
  buffer %1: float32[40, 64]{64, 1} computed cpu
  buffer %2: float32[40]{1} computed cpu
  buffer %3: float32[40, 64]{64, 1} computed cpu
  compute %1 (node 1) pointwise[40, 64] = exp(mul(sin(load(%in0, [i0, i1])), cos(add(load(%in0, [i0, i1]), 1.0:float32))))
  compute %2 (node 2) reduce sum[40] over [64] = mul(load(%1, [i0, r0]), load(%1, [i0, r0]))
  compute %3 (node 3) pointwise[40, 64] = div(load(%1, [i0, i1]), load(%2, [i0]))
  kernel %1
  kernel %2
  kernel %3
  output %3, %1
)")),
            "");
}

// Fusion never crosses an extern; views an extern needs are made by an extern view step; a
// None output and an input returned as is.
TEST(PipelineSemantics, ExternStepsAndMultipleOutputs) {
  PipelineCheck check;
  check.externs =
      [](const ExternCall& call,
         const std::vector<interp::Tensor>& inputs) -> std::optional<std::vector<interp::Tensor>> {
    if (call.graph_node == 2) {  // x * 2, as an ATen op the interpreter stands in for
      interp::Tensor t = inputs.at(0);
      for (double& v : t.elements.floats) v *= 2;
      return std::vector<interp::Tensor>{t};
    }
    if (call.graph_node == 5) return std::vector<interp::Tensor>{inputs.at(0)};  // clone
    return std::nullopt;
  };
  EXPECT_EQ(pipeline_mismatch(program(R"(  buffer %in0: float32[8, 12]{12, 1} input 0 cpu
  buffer %1: float32[8, 12]{12, 1} computed cpu
  buffer %2: float32[8, 12]{12, 1} extern cpu
  buffer %3: float32[8, 12]{12, 1} computed cpu
  buffer %4: float32[12, 8]{1, 12} computed cpu
  buffer %5: float32[12, 8]{8, 1} extern cpu
  buffer %6: float32[12, 8]{8, 1} computed cpu
  compute %1 (node 1) pointwise[8, 12] = exp(load(%in0, [i0, i1]))
  compute %3 (node 3) pointwise[8, 12] = add(load(%2, [i0, i1]), load(%1, [i0, i1]))
  compute %4 (node 4) view pointwise[12, 8] = load(%3, [i1, i0])
  compute %6 (node 6) pointwise[12, 8] = sub(load(%5, [i0, i1]), load(%4, [i0, i1]))
  kernel %1
  extern node 2 (%1) -> (%2)
  kernel %3
  extern node 5 (%4) -> (%5)
  kernel %6
  output %6, _, %in0, %3
)"),
                              check),
            "");
}

// A group member stored in the storage of a buffer the same kernel reads again afterwards
// (the extern keeps %0 out of the group that reads it).
TEST(PipelineSemantics, InPlaceReuseReadAfterTheStore) {
  const std::string text = program(R"(  buffer %in0: float32[8]{1} input 0 cpu
  buffer %0: float32[8]{1} computed cpu
  buffer %1: float32[8]{1} extern cpu
  buffer %2: float32[8]{1} computed cpu
  buffer %3: float32[8]{1} computed cpu
  compute %0 (node 0) pointwise[8] = exp(mul(sin(load(%in0, [i0])), cos(add(load(%in0, [i0]), 1.0:float32))))
  compute %2 (node 2) pointwise[8] = sigmoid(load(%0, [i0]))
  compute %3 (node 3) pointwise[8] = add(load(%0, [i0]), load(%2, [i0]))
  kernel %0
  extern node 1 (%in0) -> (%1)
  kernel %2
  kernel %3
  output %3, %2, %1
)");
  PipelineCheck check;
  check.externs = [](const ExternCall&, const std::vector<interp::Tensor>& inputs) {
    return std::optional<std::vector<interp::Tensor>>(inputs);  // a clone
  };
  EXPECT_EQ(pipeline_mismatch(text, check), "");
}

// Random programs (random_program.h): each must compute the same at every stage.
TEST(PipelineSemantics, RandomPrograms) {
  constexpr uint64_t kPrograms = 600;
  int failures = 0;
  for (uint64_t seed = 1; seed <= kPrograms && failures < 3; ++seed) {
    testing::RandomProgram r = testing::random_program(seed);
    std::string mismatch;
    try {
      mismatch = pipeline_mismatch(r.text, r.check);
    } catch (const std::exception& e) {
      mismatch = std::string("threw: ") + e.what() + "\n" + r.text;
    }
    if (mismatch.empty()) continue;
    ++failures;
    ADD_FAILURE() << "random program " << seed << ": " << mismatch;
  }
}

}  // namespace
}  // namespace inductor_cpp::ir
