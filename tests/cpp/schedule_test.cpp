/// \file
/// schedule: IR text in -> pass -> IR text out.
#include <gtest/gtest.h>

#include "ir/passes/schedule.h"
#include "tests/cpp/pass_test_util.h"
#include "tests/cpp/pipeline_check.h"

namespace inductor_cpp::ir {
namespace {

using testing::program;
using testing::run_pass;
using testing::scheduled;

// The broadcast operand blocks merging: parallel rows, vector columns.
TEST(Schedule, BroadcastAddKeepsTwoLoops) {
  const std::string in = program(R"(  buffer %in0: float32[256, 1024]{1024, 1} input 0 cpu
  buffer %in1: float32[1024]{1} input 1 cpu
  buffer %1: float32[256, 1024]{1024, 1} computed cpu
  compute %1 (node 1) pointwise[256, 1024] = add(load(%in0, [i0, i1]), load(%in1, [i1]))
  kernel %1
  output %1
)");
  EXPECT_EQ(scheduled(in), R"(kernel kernel0(%in0: float32 in, %in1: float32 in, %1: float32 out) {
  for x0 in 0..256 parallel {
    for x1 in 0..1024 vector(16) {
      let t0 = add(load(%in0, [x0*1024 + x1]), load(%in1, [x1]))
      %1[x0*1024 + x1] = local(t0, float32)
    }
  }
}
)");
}

// Contiguous: merged to one loop, split into parallel blocks of vectors.
TEST(Schedule, ContiguousPointwiseIsOneBlockedLoop) {
  const std::string in = program(R"(  buffer %in0: float32[256, 1024]{1024, 1} input 0 cpu
  buffer %1: float32[256, 1024]{1024, 1} computed cpu
  compute %1 (node 1) pointwise[256, 1024] = sigmoid(load(%in0, [i0, i1]))
  kernel %1
  output %1
)");
  EXPECT_EQ(scheduled(in), R"(kernel kernel0(%in0: float32 in, %1: float32 out) {
  for x1_blk in 0..64 parallel {
    for x1_in in 0..4096 vector(16) {
      let t0 = sigmoid(load(%in0, [x1_blk*4096 + x1_in]))
      %1[x1_blk*4096 + x1_in] = local(t0, float32)
    }
  }
}
)");
}

// Loop order follows the stored buffer.
// A transpose: the load is contiguous along x0, the store along x1. Both dims are tiled by 16
// (ScheduleOptions::transpose_tile), so a tile's 16 scattered rows stay in L1 and the TLB; the
// store's contiguous dim is the vector loop (the load is the tile's transposed read).
TEST(Schedule, TransposeIsTiled) {
  const std::string in = program(R"(  buffer %in0: float32[512, 256]{256, 1} input 0 cpu
  buffer %1: float32[256, 512]{512, 1} computed cpu
  compute %1 (node 1) pointwise[256, 512] = load(%in0, [i1, i0])
  kernel %1
  output %1
)");
  EXPECT_EQ(scheduled(in), R"(kernel kernel0(%in0: float32 in, %1: float32 out) {
  for x0_tb in 0..16 parallel {
    for x1_tb in 0..32 {
      for x0_ti in 0..16 {
        for x1_ti in 0..16 vector(16) {
          let t0 = load(%in0, [x0_tb*16 + x0_ti + x1_tb*4096 + x1_ti*256])
          %1[x0_tb*8192 + x0_ti*512 + x1_tb*16 + x1_ti] = local(t0, float32)
        }
      }
    }
  }
}
)");
}

// Short rows along the vector dim (2 tiles of 16 channels) and long ones along the other (128
// tiles): tiles walk along the long dim in chunks of 16 (the parallel loop).
TEST(Schedule, TransposeWithShortRowsWalksTheLongDim) {
  const std::string in = program(R"(  buffer %in0: float32[32, 2048]{2048, 1} input 0 cpu
  buffer %1: float32[2048, 32]{32, 1} computed cpu
  compute %1 (node 1) pointwise[2048, 32] = load(%in0, [i1, i0])
  kernel %1
  output %1
)");
  const std::string out = scheduled(in);
  EXPECT_NE(out.find("for x0_tc in 0..8 parallel {\n    for x1_tb in 0..2 {\n      for x0_tb in 0..16 {"),
            std::string::npos) << out;
  EXPECT_EQ(testing::pipeline_mismatch(in), "");
}

// Scans (cumsum along a dim): one running accumulator per line, stored at each step; along
// rows of a row-major matrix the lines run in vector lanes. Same values as the lowered program
// (whose masked reduction the IR interpreter evaluates as written).
TEST(Schedule, ScansKeepRunningAccumulators) {
  const std::string along_rows = program(R"(  buffer %in0: float32[37, 70]{70, 1} input 0 cpu
  buffer %1: float32[37, 70]{70, 1} computed cpu
  compute %1 scan sum[37, 70] along 0 = where(ne(index(r0 <= i0, int64), 0:int64), load(%in0, [r0, i1]), 0.0:float32)
  kernel %1
  output %1
)");
  EXPECT_EQ(scheduled(along_rows), R"(kernel kernel0(%in0: float32 in, %1: float32 out) {
  for x1 in 0..70 vector(32) {
    t0 = accumulator sum float32
    for y0 in 0..37 {
      t0 += load(%in0, [x1 + y0*70])
      %1[x1 + y0*70] = local(t0, float32)
    }
  }
}
)");
  EXPECT_EQ(testing::pipeline_mismatch(along_rows), "");
  const std::string along_columns = program(R"(  buffer %in0: int64[3, 5, 40]{200, 40, 1} input 0 cpu
  buffer %1: int64[3, 5, 40]{200, 40, 1} computed cpu
  compute %1 scan prod[3, 5, 40] along 2 = where(ne(index(r0 <= i2, int64), 0:int64), load(%in0, [i0, i1, r0]), 1:int64)
  kernel %1
  output %1
)");
  const std::string out = scheduled(along_columns);
  EXPECT_EQ(out.find("vector"), std::string::npos) << out;  // lines along the contiguous dim
  EXPECT_NE(out.find("%1[x0*200 + x1*40 + y0] = local(t0, int64)"), std::string::npos) << out;
  EXPECT_EQ(testing::pipeline_mismatch(along_columns), "");
  // float32 summed in float64, each running value rounded as it is stored.
  const std::string wider = program(R"(  buffer %in0: float32[300, 20]{20, 1} input 0 cpu
  buffer %1: float32[300, 20]{20, 1} computed cpu
  compute %1 scan sum[300, 20] along 0 = where(ne(index(r0 <= i0, int64), 0:int64), cast(load(%in0, [r0, i1]), float64), 0.0:float64)
  kernel %1
  output %1
)");
  EXPECT_NE(scheduled(wider).find("%1[x1 + y0*20] = cast(local(t0, float64), float32)"), std::string::npos)
      << scheduled(wider);
  EXPECT_EQ(testing::pipeline_mismatch(wider), "");
}

// Odd sizes leave partial tiles (min(16, n - 16 * block) iterations); a batch dim stays
// outside the tiles. Same values as the lowered program (IR interpreter).
TEST(Schedule, TiledTransposeOfOddSizesKeepsItsValues) {
  const std::string text = program(R"(  buffer %in0: float32[3, 97, 131]{12707, 131, 1} input 0 cpu
  buffer %in1: float32[3, 131, 97]{12707, 97, 1} input 1 cpu
  buffer %1: float32[3, 131, 97]{12707, 97, 1} computed cpu
  compute %1 (node 1) pointwise[3, 131, 97] = add(load(%in0, [i0, i2, i1]), load(%in1, [i0, i1, i2]))
  kernel %1
  output %1
)");
  const std::string out = scheduled(text);
  EXPECT_NE(out.find("x1_tb in 0..9 parallel"), std::string::npos) << out;
  EXPECT_NE(out.find("min("), std::string::npos) << out;
  EXPECT_EQ(testing::pipeline_mismatch(text), "");
}

// A concatenation along the vector loop: one loop per input's range, the masks folded to
// constants and the untaken where branches dropped (densenet121's cat + BN + ReLU kernels).
TEST(Schedule, ConcatSplitsTheVectorLoopAtItsInputs) {
  const std::string text = program(R"(  buffer %in0: float32[64, 24]{24, 1} input 0 cpu
  buffer %in1: float32[64, 16]{16, 1} input 1 cpu
  buffer %1: float32[64, 40]{40, 1} computed cpu
  compute %1 (node 1) pointwise[64, 40] = maximum(where(ne(index(i1 < 24, int64), 0:int64), load(%in0, [i0, i1], mask=i1 < 24), load(%in1, [i0, i1 - 24], mask=24 <= i1)), 0.0:float32)
  kernel %1
  output %1
)");
  EXPECT_EQ(scheduled(text), R"(kernel kernel0(%in0: float32 in, %in1: float32 in, %1: float32 out) {
  for x0 in 0..64 {
    for x1 in 0..24 vector(16) {
      let t0 = maximum(load(%in0, [x0*24 + x1]), 0.0:float32)
      %1[x0*40 + x1] = local(t0, float32)
    }
    for x1 in 0..16 vector(16) {
      let t0 = maximum(load(%in1, [x0*16 + x1]), 0.0:float32)
      %1[x0*40 + x1 + 24] = local(t0, float32)
    }
  }
}
)");
  EXPECT_EQ(testing::pipeline_mismatch(text), "");
}

// A batch of one does not hide the layout: channels-last [1, C, H, W] (indexed with 0 in dim
// 0) is one contiguous blocked loop, not channels outside 256-strided gathers.
TEST(Schedule, ChannelsLastBatchOfOneIsOneContiguousLoop) {
  const std::string in =
      program(R"(  buffer %in0: float32[1, 256, 56, 56]{802816, 1, 14336, 256} input 0 cpu
  buffer %in1: float32[1, 256, 56, 56]{802816, 1, 14336, 256} input 1 cpu
  buffer %1: float32[1, 256, 56, 56]{802816, 1, 14336, 256} computed cpu
  compute %1 (node 1) pointwise[1, 256, 56, 56] = maximum(add(load(%in0, [0, i1, i2, i3]), load(%in1, [0, i1, i2, i3])), 0.0:float32)
  kernel %1
  output %1
)");
  EXPECT_EQ(scheduled(in), R"(kernel kernel0(%in0: float32 in, %in1: float32 in, %1: float32 out) {
  for x1_blk in 0..196 parallel {
    for x1_in in 0..4096 vector(16) {
      let t0 = maximum(add(load(%in0, [x1_blk*4096 + x1_in]), load(%in1, [x1_blk*4096 + x1_in])), 0.0:float32)
      %1[x1_blk*4096 + x1_in] = local(t0, float32)
    }
  }
}
)");
}

// The outer-dim strategy: lanes are output columns, rows reduce inside, summed in blocks of
// 64 rows (a single running sum over 4096 rows would lose accuracy).
TEST(Schedule, SumOverDimZeroVectorizesAcrossOutputs) {
  const std::string in = program(R"(  buffer %in0: float32[4096, 1000]{1000, 1} input 0 cpu
  buffer %1: float32[1000]{1} computed cpu
  compute %1 (node 1) reduce sum[1000] over [4096] = load(%in0, [r0, i0])
  kernel %1
  output %1
)");
  EXPECT_EQ(scheduled(in), R"(kernel kernel0(%in0: float32 in, %1: float32 out) {
  for x0_blk in 0..16 parallel {
    for x0_in in 0..min(x0_blk*-64 + 1000, 64) vector(64) {
      t0 = accumulator sum float32
      for y0_blk in 0..64 {
        t0_p0 = accumulator sum float32
        for y0_in in 0..64 {
          t0_p0 += load(%in0, [x0_blk*64 + x0_in + y0_blk*64000 + y0_in*1000])
        }
        t0 += local(t0_p0, float32)
      }
      %1[x0_blk*64 + x0_in] = local(t0, float32)
    }
  }
}
)");
}

// A batch norm's weight gradient over an NHWC view whose dims do not merge (rows of a wider
// tensor): 8 x 16 x 16 rows through three short loops are one long sum too. Blocks of whole
// images (256 rows each), each blocked again by 4 rows of 16 (64 values).
TEST(Schedule, NestedShortLoopsSumInBlocks) {
  const std::string in = program(R"(  buffer %in0: float32[8, 16, 16, 16]{16384, 1, 512, 16} input 0 cpu
  buffer %1: float32[16]{1} computed cpu
  compute %1 (node 1) reduce sum[16] over [8, 16, 16] = load(%in0, [r0, i0, r1, r2])
  kernel %1
  output %1
)");
  const std::string out = scheduled(in);
  EXPECT_NE(out.find("for y0_blk in 0..8 {"), std::string::npos) << out;
  EXPECT_NE(out.find("for y1_blk in 0..4 {"), std::string::npos) << out;
  EXPECT_NE(out.find("t0_p0 = accumulator sum float32"), std::string::npos) << out;
  EXPECT_NE(out.find("t0_p0_p1 = accumulator sum float32"), std::string::npos) << out;
  EXPECT_NE(out.find("for y2 in 0..16 {"), std::string::npos) << "64 values per inner block: " << out;
  // Empty rows inside (an OpInfo sample of zero size): nothing to block, no division by zero.
  const std::string empty = program(R"(  buffer %in0: float32[200, 16, 0, 16]{16384, 1, 512, 16} input 0 cpu
  buffer %1: float32[16]{1} computed cpu
  compute %1 (node 1) reduce sum[16] over [200, 0, 16] = load(%in0, [r0, i0, r1, r2])
  kernel %1
  output %1
)");
  EXPECT_NO_THROW(scheduled(empty));
}

// Layernorm group: both reductions share one loop; results come from registers.
TEST(Schedule, LayerNormGroupIsOneKernel) {
  const std::string in = program(testing::kLayerNormComputes + R"(  kernel %1, %2, %3, %4
  output %4, %3
)");
  EXPECT_EQ(scheduled(in), R"(kernel kernel0(%in0: float32 in, %3: float32 out, %4: float32 out) {
  for x0 in 0..32 {
    t0 = accumulator sum float32
    t1 = accumulator welford_m2 float32
    for y0 in 0..512 vector(16) {
      t0 += load(%in0, [x0*512 + y0])
      t1 += load(%in0, [x0*512 + y0])
    }
    let t2 = rsqrt(add(div(local(t1, float32), 512.0:float32), 1e-05:float32))
    %3[x0] = local(t2, float32)
    for y0 in 0..512 vector(16) {
      let t3 = mul(sub(load(%in0, [x0*512 + y0]), div(local(t0, float32), 512.0:float32)), local(t2, float32))
      %4[x0*512 + y0] = local(t3, float32)
    }
  }
}
)");
}

}  // namespace
}  // namespace inductor_cpp::ir
