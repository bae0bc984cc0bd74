/// \file
/// split_reductions: IR text in -> pass -> IR text out.
#include <gtest/gtest.h>

#include "ir/passes/pipeline.h"
#include "ir/passes/split_reductions.h"
#include "tests/cpp/ir_interpreter.h"
#include "tests/cpp/pass_test_util.h"

namespace inductor_cpp::ir {
namespace {

using testing::program;
using testing::run_pass;
using testing::scheduled;

// x.sum() over 2^20 elements: 64 partial sums, then their sum.
TEST(SplitReductions, FullSumBecomesTwoStages) {
  const std::string in = program(R"(  buffer %in0: float32[1024, 1024]{1024, 1} input 0 cpu
  buffer %1: float32[]{} computed cpu
  compute %1 (node 1) reduce sum[] over [1024, 1024] = load(%in0, [r0, r1])
  kernel %1
  output %1
)");
  EXPECT_EQ(run_pass(in, [](const LoopProgram& p) { return split_reductions(p); }), R"(program {
  buffer %in0: float32[1024, 1024]{1024, 1} input 0 cpu
  buffer %1: float32[]{} computed cpu
  buffer %1.part: float32[64]{1} computed cpu
  compute %1 (node 1) reduce sum[] over [64] = load(%1.part, [r0])
  compute %1.part (node 1) reduce sum[64] over [16384] = load(%in0, [i0*16 + r0 // 1024, r0 % 1024])
  kernel %1.part
  kernel %1
  output %1
}
)");
}

// x.sum(0) over 4100 rows of 1000 columns (past 2^21 elements): chunks of 16 rows, the partials
// chunk-major so that the first stage reads 16 rows side by side; the last chunk is masked.
TEST(SplitReductions, ColumnSumBecomesChunksOfRows) {
  const std::string in = program(R"(  buffer %in0: float32[4100, 1000]{1000, 1} input 0 cpu
  buffer %1: float32[1000]{1} computed cpu
  compute %1 (node 1) reduce sum[1000] over [4100] = load(%in0, [r0, i0])
  kernel %1
  output %1
)");
  EXPECT_EQ(run_pass(in, [](const LoopProgram& p) { return split_reductions(p); }), R"(program {
  buffer %in0: float32[4100, 1000]{1000, 1} input 0 cpu
  buffer %1: float32[1000]{1} computed cpu
  buffer %1.part: float32[257, 1000]{1000, 1} computed cpu
  compute %1 (node 1) reduce sum[1000] over [257] = load(%1.part, [r0, i0])
  compute %1.part (node 1) reduce sum[257, 1000] over [16] = where(ne(index(i0*16 + r0 < 4100, int64), 0:int64), load(%in0, [(i0*16 + r0) % 4100, i1], mask=i0*16 + r0 < 4100), 0.0:float32)
  kernel %1.part
  kernel %1
  output %1
}
)");
}

// A batch norm's per-channel sum (64 channels of 16x56x56 channels-last pixels, under 2^21
// elements and too few columns to give threads whole vectors): the leading reduce ranges
// (16x56 = 896 rows) are cut into 64 parts of 14 rows, partials laid out [part, channel]; the
// pixel loop stays whole (no division per element). The partials are summed eight at a time
// in a balanced tree (float rounding: tests/python/test_codegen.py).
TEST(SplitReductions, FewColumnsSplitTheirLeadingReduceRanges) {
  const std::string in = program(R"(  buffer %in0: float32[16, 64, 56, 56]{200704, 1, 3584, 64} input 0 cpu
  buffer %1: float32[64]{1} computed cpu
  compute %1 (node 1) reduce sum[64] over [16, 56, 56] = load(%in0, [r0, i0, r1, r2])
  kernel %1
  output %1
)");
  EXPECT_EQ(run_pass(in, [](const LoopProgram& p) { return split_reductions(p); }), R"(program {
  buffer %in0: float32[16, 64, 56, 56]{200704, 1, 3584, 64} input 0 cpu
  buffer %1: float32[64]{1} computed cpu
  buffer %1.part: float32[64, 64]{64, 1} computed cpu
  compute %1 (node 1) reduce sum[64] over [8] = add(add(add(load(%1.part, [r0*8, i0]), load(%1.part, [r0*8 + 1, i0])), add(load(%1.part, [r0*8 + 2, i0]), load(%1.part, [r0*8 + 3, i0]))), add(add(load(%1.part, [r0*8 + 4, i0]), load(%1.part, [r0*8 + 5, i0])), add(load(%1.part, [r0*8 + 6, i0]), load(%1.part, [r0*8 + 7, i0]))))
  compute %1.part (node 1) reduce sum[64, 64] over [14, 56] = load(%in0, [(i0*14 + r0) // 56, i1, (i0*14 + r0) % 56, r1])
  kernel %1.part
  kernel %1
  output %1
}
)");
  // A prime row count has no divisor to cut by: left to the other paths (here none).
  const std::string prime = program(R"(  buffer %in0: float32[4099, 64]{64, 1} input 0 cpu
  buffer %1: float32[64]{1} computed cpu
  compute %1 (node 1) reduce sum[64] over [4099] = load(%in0, [r0, i0])
  kernel %1
  output %1
)");
  EXPECT_EQ(run_pass(prime, [](const LoopProgram& p) { return split_reductions(p); }), prime);
  // A gathered load (max_pool2d's backward window) does not stop the split when another load
  // walks the columns; 32 images are enough parts. A row reduction (contiguous along the
  // reduction) is not a column walk.
  const std::string gathered = program(R"(  buffer %in0: float32[32, 64, 56, 56]{200704, 1, 3584, 64} input 0 cpu
  buffer %in1: float32[32, 64, 28, 28]{50176, 1, 1792, 64} input 1 cpu
  buffer %1: float32[64]{1} computed cpu
  compute %1 (node 1) reduce sum[64] over [32, 56, 56] = add(load(%in0, [r0, i0, r1, r2]), load(%in1, [r0, i0, min(r1 // 2, 27), min(r2 // 2, 27)]))
  kernel %1
  output %1
)");
  const std::string split_gathered = run_pass(gathered, [](const LoopProgram& p) { return split_reductions(p); });
  EXPECT_NE(split_gathered.find(
                "compute %1.part (node 1) reduce sum[32, 64] over [1, 56, 56] = add(load(%in0, [i0, i1, r1, r2]), load(%in1, [i0, i1, r1 // 2, r2 // 2]))"),
            std::string::npos) << split_gathered;
  const std::string rows = program(R"(  buffer %in0: float32[64, 8192]{8192, 1} input 0 cpu
  buffer %1: float32[64]{1} computed cpu
  compute %1 (node 1) reduce sum[64] over [8192] = load(%in0, [i0, r0])
  kernel %1
  output %1
)");
  EXPECT_EQ(run_pass(rows, [](const LoopProgram& p) { return split_reductions(p); }), rows);
}

// var_mean over a batch norm's pixels: the variance (welford_m2) becomes the sum of squared
// deviations from the sum's mean, after that sum (hoisted ahead of it), and both are split.
TEST(SplitReductions, ColumnVarianceBecomesTwoPassAndSplits) {
  const std::string in = program(R"(  buffer %in0: float32[16, 64, 56, 56]{200704, 1, 3584, 64} input 0 cpu
  buffer %1.m2: float32[64]{1} computed cpu
  buffer %1.sum: float32[64]{1} computed cpu
  compute %1.m2 (node 1) reduce welford_m2[64] over [16, 56, 56] = load(%in0, [r0, i0, r1, r2])
  compute %1.sum (node 1) reduce sum[64] over [16, 56, 56] = load(%in0, [r0, i0, r1, r2])
  kernel %1.m2
  kernel %1.sum
  output %1.m2, %1.sum
)");
  EXPECT_EQ(run_pass(in, [](const LoopProgram& p) { return split_reductions(p); }), R"(program {
  buffer %in0: float32[16, 64, 56, 56]{200704, 1, 3584, 64} input 0 cpu
  buffer %1.m2: float32[64]{1} computed cpu
  buffer %1.sum: float32[64]{1} computed cpu
  buffer %1.sum.part: float32[64, 64]{64, 1} computed cpu
  buffer %1.m2.part: float32[64, 64]{64, 1} computed cpu
  compute %1.m2 (node 1) reduce sum[64] over [8] = add(add(add(load(%1.m2.part, [r0*8, i0]), load(%1.m2.part, [r0*8 + 1, i0])), add(load(%1.m2.part, [r0*8 + 2, i0]), load(%1.m2.part, [r0*8 + 3, i0]))), add(add(load(%1.m2.part, [r0*8 + 4, i0]), load(%1.m2.part, [r0*8 + 5, i0])), add(load(%1.m2.part, [r0*8 + 6, i0]), load(%1.m2.part, [r0*8 + 7, i0]))))
  compute %1.sum (node 1) reduce sum[64] over [8] = add(add(add(load(%1.sum.part, [r0*8, i0]), load(%1.sum.part, [r0*8 + 1, i0])), add(load(%1.sum.part, [r0*8 + 2, i0]), load(%1.sum.part, [r0*8 + 3, i0]))), add(add(load(%1.sum.part, [r0*8 + 4, i0]), load(%1.sum.part, [r0*8 + 5, i0])), add(load(%1.sum.part, [r0*8 + 6, i0]), load(%1.sum.part, [r0*8 + 7, i0]))))
  compute %1.sum.part (node 1) reduce sum[64, 64] over [14, 56] = load(%in0, [(i0*14 + r0) // 56, i1, (i0*14 + r0) % 56, r1])
  compute %1.m2.part (node 1) reduce sum[64, 64] over [14, 56] = mul(sub(load(%in0, [(i0*14 + r0) // 56, i1, (i0*14 + r0) % 56, r1]), div(load(%1.sum, [i1]), 50176.0:float32)), sub(load(%in0, [(i0*14 + r0) // 56, i1, (i0*14 + r0) % 56, r1]), div(load(%1.sum, [i1]), 50176.0:float32)))
  kernel %1.sum.part
  kernel %1.sum
  kernel %1.m2.part
  kernel %1.m2
  output %1.m2, %1.sum
}
)");
  // With symbolic sizes (Dynamo's dynamic shapes) nothing is split: it stays Welford's.
  const std::string symbolic = program(R"(  buffer %in0: float32[s0, 64]{64, 1} input 0 cpu
  buffer %1.m2: float32[64]{1} computed cpu
  buffer %1.sum: float32[64]{1} computed cpu
  compute %1.m2 (node 1) reduce welford_m2[64] over [s0] = load(%in0, [r0, i0])
  compute %1.sum (node 1) reduce sum[64] over [s0] = load(%in0, [r0, i0])
  kernel %1.m2
  kernel %1.sum
  output %1.m2, %1.sum
  symbol s0 in [2, 9223372036854775807]
)");
  EXPECT_EQ(run_pass(symbolic, [](const LoopProgram& p) { return split_reductions(p); }), symbolic);
  // A row variance (layer norm's) is not split: it stays Welford's.
  const std::string rows = program(R"(  buffer %in0: float32[64, 8192]{8192, 1} input 0 cpu
  buffer %1.m2: float32[64]{1} computed cpu
  buffer %1.sum: float32[64]{1} computed cpu
  compute %1.m2 (node 1) reduce welford_m2[64] over [8192] = load(%in0, [i0, r0])
  compute %1.sum (node 1) reduce sum[64] over [8192] = load(%in0, [i0, r0])
  kernel %1.m2
  kernel %1.sum
  output %1.m2, %1.sum
)");
  EXPECT_EQ(run_pass(rows, [](const LoopProgram& p) { return split_reductions(p); }), rows);
}

// On the GPU (strided_head_max_parts), a batch norm's statistics over an NCHW tensor cut off
// the batch: the first stages read rows of H*W contiguous elements ([N, C] of them), the sum's
// second stage adds the N parts and the variance's combines them with Chan's formula, which
// the reference interpreter checks against the one-stage Welford.
TEST(SplitReductions, StridedHeadCutsTheBatchOffAndCombinesVariances) {
  const std::string in = program(R"(  buffer %in0: float32[8, 4, 16, 16]{1024, 256, 16, 1} input 0 cuda:0
  buffer %1.m2: float32[4]{1} computed cuda:0
  buffer %1.sum: float32[4]{1} computed cuda:0
  compute %1.m2 (node 1) reduce welford_m2[4] over [8, 16, 16] = load(%in0, [r0, i0, r1, r2])
  compute %1.sum (node 1) reduce sum[4] over [8, 16, 16] = load(%in0, [r0, i0, r1, r2])
  kernel %1.m2
  kernel %1.sum
  output %1.m2, %1.sum
)");
  SplitOptions gpu;
  gpu.strided_head_max_parts = 256;
  gpu.two_pass_variance = false;
  const auto split = [&](const LoopProgram& p) { return split_reductions(p, gpu); };
  EXPECT_EQ(run_pass(in, split), R"(program {
  buffer %in0: float32[8, 4, 16, 16]{1024, 256, 16, 1} input 0 cuda:0
  buffer %1.m2: float32[4]{1} computed cuda:0
  buffer %1.sum: float32[4]{1} computed cuda:0
  buffer %1.sum.part: float32[8, 4]{4, 1} computed cuda:0
  buffer %1.m2.part: float32[8, 4]{4, 1} computed cuda:0
  compute %1.m2 (node 1) reduce sum[4] over [8] = add(load(%1.m2.part, [r0, i0]), mul(256.0:float32, mul(sub(div(load(%1.sum.part, [r0, i0]), 256.0:float32), div(load(%1.sum, [i0]), 2048.0:float32)), sub(div(load(%1.sum.part, [r0, i0]), 256.0:float32), div(load(%1.sum, [i0]), 2048.0:float32)))))
  compute %1.sum (node 1) reduce sum[4] over [8] = load(%1.sum.part, [r0, i0])
  compute %1.sum.part (node 1) reduce sum[8, 4] over [16, 16] = load(%in0, [i0, i1, r0, r1])
  compute %1.m2.part (node 1) reduce welford_m2[8, 4] over [16, 16] = load(%in0, [i0, i1, r0, r1])
  kernel %1.sum.part
  kernel %1.sum
  kernel %1.m2.part
  kernel %1.m2
  output %1.m2, %1.sum
}
)");
  const LoopProgram before = parse_program(in);
  const interp::BufferStorage inputs = interp::random_inputs(before.buffers, 7, {-1.0, 3.0});
  EXPECT_EQ(interp::compare(interp::run_loop_program(split(before), inputs),
                            interp::run_loop_program(before, inputs), 1e-9, 1e-9), "");
  // With float64 totals (the GPU's), the sum's parts add up in float64, rounded once.
  gpu.float64_totals = true;
  const std::string wide = run_pass(in, split);
  for (const char* line : {"compute %1.sum.total (node 1) reduce sum[4] over [8] = cast(load(%1.sum.part, [r0, i0]), float64)",
                           "compute %1.sum (node 1) pointwise[4] = cast(load(%1.sum.total, [i0]), float32)",
                           "kernel %1.sum.part\n  kernel %1.sum.total\n  kernel %1.sum\n"})
    EXPECT_NE(wide.find(line), std::string::npos) << line << " in " << wide;
  EXPECT_EQ(interp::compare(interp::run_loop_program(split(before), inputs),
                            interp::run_loop_program(before, inputs), 1e-6, 1e-6), "");
  // Contiguous across the whole reduction (a plain row), or a block under 256: left alone.
  for (const char* compute :
       {"  buffer %in0: float32[4, 8, 16, 16]{2048, 256, 16, 1} input 0 cuda:0\n  buffer %1: float32[4]{1} computed cuda:0\n"
        "  compute %1 (node 1) reduce sum[4] over [8, 16, 16] = load(%in0, [i0, r0, r1, r2])\n",
        "  buffer %in0: float32[8, 4, 8, 8]{256, 64, 8, 1} input 0 cuda:0\n  buffer %1: float32[4]{1} computed cuda:0\n"
        "  compute %1 (node 1) reduce sum[4] over [8, 8, 8] = load(%in0, [r0, i0, r1, r2])\n"}) {
    const std::string alone = program(std::string(compute) + "  kernel %1\n  output %1\n");
    EXPECT_EQ(run_pass(alone, split), alone) << compute;
  }
}

// On the GPU (split_options_for), few-column reductions split too: a column kernel gives a
// block to a few columns, so a channels-last batch norm's 96 per-channel statistics over 16384
// pixels ran on one multiprocessor. The sum cuts off the batch (64 parts) and its variance
// combines the same parts with Chan's formula; the interpreter checks both against the
// one-stage reductions.
TEST(SplitReductions, GpuFewColumnsSplitWithChansCombine) {
  const std::string in = program(R"(  buffer %in0: float32[64, 96, 16, 16]{24576, 1, 1536, 96} input 0 cuda:0
  buffer %1.m2: float32[96]{1} computed cuda:0
  buffer %1.sum: float32[96]{1} computed cuda:0
  compute %1.m2 (node 1) reduce welford_m2[96] over [64, 16, 16] = load(%in0, [r0, i0, r1, r2])
  compute %1.sum (node 1) reduce sum[96] over [64, 16, 16] = load(%in0, [r0, i0, r1, r2])
  kernel %1.m2
  kernel %1.sum
  output %1.m2, %1.sum
)");
  PipelineOptions options;
  options.schedule.target = Target::Gpu;
  const SplitOptions gpu = split_options_for(options);
  const auto split = [&](const LoopProgram& p) { return split_reductions(p, gpu); };
  const std::string out = run_pass(in, split);
  for (const char* line :
       {"compute %1.sum.part (node 1) reduce sum[64, 96] over [1, 16, 16] = load(%in0, [i0, i1, r1, r2])",
        "compute %1.m2.part (node 1) reduce welford_m2[64, 96] over [1, 16, 16] = load(%in0, [i0, i1, r1, r2])",
        "compute %1.m2 (node 1) reduce sum[96] over [64] = add(load(%1.m2.part, [r0, i0])"})
    EXPECT_NE(out.find(line), std::string::npos) << line << " in " << out;
  const LoopProgram before = parse_program(in);
  const interp::BufferStorage inputs = interp::random_inputs(before.buffers, 3, {-1.0, 3.0});
  EXPECT_EQ(interp::compare(interp::run_loop_program(split(before), inputs),
                            interp::run_loop_program(before, inputs), 1e-6, 1e-6), "");
  // A linear layer's bias gradient over an NHWC activation viewed as [N*H*W, C]: the view's
  // index walks down the columns only within runs of 16 and 256 (coefficient_within_runs).
  const std::string viewed = program(R"(  buffer %in0: float32[64, 96, 16, 16]{24576, 1, 1536, 96} input 0 cuda:0
  buffer %1: float32[96]{1} computed cuda:0
  compute %1 (node 1) reduce sum[96] over [16384] = load(%in0, [r0 // 256, i0, (r0 // 16) % 16, r0 % 16])
  kernel %1
  output %1
)");
  const std::string viewed_out = run_pass(viewed, split);
  EXPECT_NE(viewed_out.find("compute %1.part (node 1) reduce sum[64, 96] over [256]"), std::string::npos) << viewed_out;
  const LoopProgram viewed_before = parse_program(viewed);
  EXPECT_EQ(interp::compare(interp::run_loop_program(split(viewed_before), inputs),
                            interp::run_loop_program(viewed_before, inputs), 1e-6, 1e-6), "");
  // 48 images: parts of whole images (48 x 256 pixels) rather than 64 x 192 pixels, which
  // would keep a division by 256 per element and cut images apart.
  const std::string images = program(R"(  buffer %in0: float32[48, 96, 16, 16]{24576, 1, 1536, 96} input 0 cuda:0
  buffer %1: float32[96]{1} computed cuda:0
  compute %1 (node 1) reduce sum[96] over [12288] = load(%in0, [r0 // 256, i0, (r0 // 16) % 16, r0 % 16])
  kernel %1
  output %1
)");
  const std::string images_out = run_pass(images, split);
  EXPECT_NE(images_out.find("compute %1.part (node 1) reduce sum[48, 96] over [256]"), std::string::npos) << images_out;
  // Under 2^20 elements the column kernel alone is quick enough: left alone.
  const std::string small = program(R"(  buffer %in0: float32[8, 96, 16, 16]{24576, 1, 1536, 96} input 0 cuda:0
  buffer %1: float32[96]{1} computed cuda:0
  compute %1 (node 1) reduce sum[96] over [8, 16, 16] = load(%in0, [r0, i0, r1, r2])
  kernel %1
  output %1
)");
  EXPECT_EQ(run_pass(small, split), small);
}

// Not column walks, or too small: left alone. A row sum (contiguous in the reduction), a column
// sum under 2^21 elements, and a column sum of a transposed view (contiguous along the
// reduction).
TEST(SplitReductions, OtherReductionsStayOneStage) {
  for (const char* compute :
       {"  buffer %in0: float32[4096, 1024]{1024, 1} input 0 cpu\n  buffer %1: float32[4096]{1} computed cpu\n"
        "  compute %1 (node 1) reduce sum[4096] over [1024] = load(%in0, [i0, r0])\n",
        "  buffer %in0: float32[1024, 1024]{1024, 1} input 0 cpu\n  buffer %1: float32[1024]{1} computed cpu\n"
        "  compute %1 (node 1) reduce sum[1024] over [1024] = load(%in0, [r0, i0])\n",
        "  buffer %in0: float32[4096, 1024]{1, 4096} input 0 cpu\n  buffer %1: float32[1024]{1} computed cpu\n"
        "  compute %1 (node 1) reduce sum[1024] over [4096] = load(%in0, [r0, i0])\n"}) {
    const std::string in = program(std::string(compute) + "  kernel %1\n  output %1\n");
    EXPECT_EQ(run_pass(in, [](const LoopProgram& p) { return split_reductions(p); }), in) << compute;
  }
  // Off (column_chunk 0), as the GPU pipeline runs it.
  const std::string in = program(R"(  buffer %in0: float32[4096, 1024]{1024, 1} input 0 cpu
  buffer %1: float32[1024]{1} computed cpu
  compute %1 (node 1) reduce sum[1024] over [4096] = load(%in0, [r0, i0])
  kernel %1
  output %1
)");
  SplitOptions off;
  off.column_chunk = 0;
  EXPECT_EQ(run_pass(in, [&](const LoopProgram& p) { return split_reductions(p, off); }), in);
}

}  // namespace
}  // namespace inductor_cpp::ir
