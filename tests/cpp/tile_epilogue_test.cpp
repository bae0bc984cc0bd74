/// \file
/// tile_epilogue: a matrix step's consumer rescheduled over one output tile (IR text in, tile
/// kernel text out), and the cases that must keep the consumer a kernel of its own.
#include <gtest/gtest.h>

#include "ir/ir_text.h"
#include "ir/passes/tile_epilogue.h"
#include "tests/cpp/pass_test_util.h"

namespace inductor_cpp::ir {
namespace {

using testing::program;

/// The consumer step of `lines` (step 1, after the extern matrix step) as a tile kernel of
/// the 64 x 96 matrix output %1, or "none: <why>".
std::string tile_of(const std::string& lines, int64_t rows = 64, int64_t cols = 96) {
  const LoopProgram p = parse_program(program(lines));
  std::string why;
  const auto tile = tile_epilogue_kernel(p, {1, "%1", rows, cols, "tile0"}, &why);
  return tile ? kernel_to_text(tile->kernel) : "none: " + why;
}

const char* const kMatrixStep = R"(  buffer %in0: float32[64, 32]{32, 1} input 0 cpu
  buffer %in1: float32[32, 96]{96, 1} input 1 cpu
  buffer %in2: float32[64, 96]{96, 1} input 2 cpu
  buffer %in3: float32[96]{1} input 3 cpu
  buffer %1: float32[64, 96]{96, 1} extern cpu
  extern node 1 (%in0, %in1) -> (%1)
)";

// x * 0.5 + y * y: a residual of the output's shape and a constant, at the tile's offsets.
TEST(TileEpilogue, ResidualMix) {
  const std::string lines = std::string(kMatrixStep) + R"(  buffer %2: float32[64, 96]{96, 1} computed cpu
  compute %2 (node 2) pointwise[64, 96] = add(mul(load(%1, [i0, i1]), 0.5:float32), mul(load(%in2, [i0, i1]), load(%in2, [i0, i1])))
  kernel %2
  output %2
)";
  EXPECT_EQ(tile_of(lines),
            R"(kernel tile0(%1: float32 in, %in2: float32 in, %2: float32 out) symbols(tile_row0, tile_rows, tile_col0, tile_cols) {
  for x0 in 0..tile_rows {
    for x1 in 0..tile_cols vector(16) {
      let t0 = add(mul(load(%1, [tile_col0 + tile_row0*96 + x0*96 + x1]), 0.5:float32), mul(load(%in2, [tile_col0 + tile_row0*96 + x0*96 + x1]), load(%in2, [tile_col0 + tile_row0*96 + x0*96 + x1])))
      %2[tile_col0 + tile_row0*96 + x0*96 + x1] = local(t0, float32)
    }
  }
}
)");
}

// A per-column vector (its absolute value) broadcast along the rows, and the consumer viewing the output as
// [4, 16, 96] (Linear on a 3-D input): the row splits into the two leading indices.
TEST(TileEpilogue, BroadcastAndReshape) {
  const std::string lines = std::string(kMatrixStep) + R"(  buffer %2: float32[4, 16, 96]{1536, 96, 1} computed cpu
  compute %2 (node 2) pointwise[4, 16, 96] = mul(load(%1, [i0*16 + i1, i2]), abs(load(%in3, [i2])))
  kernel %2
  output %2
)";
  EXPECT_EQ(tile_of(lines),
            R"(kernel tile0(%1: float32 in, %in3: float32 in, %2: float32 out) symbols(tile_row0, tile_rows, tile_col0, tile_cols) {
  for x0 in 0..tile_rows {
    for x1 in 0..tile_cols vector(16) {
      let t0 = mul(load(%1, [tile_col0 + tile_row0*96 + x0*96 + x1]), abs(load(%in3, [tile_col0 + x1])))
      %2[tile_col0 + tile_row0*96 + x0*96 + x1] = local(t0, float32)
    }
  }
}
)");
}

// One row: the consumer indexes the size-1 dim with 0, so its reads name no row; the tile's
// tile_row0 can only be 0.
TEST(TileEpilogue, OneRow) {
  const LoopProgram p = parse_program(program(R"(  buffer %in0: float32[1, 32]{32, 1} input 0 cpu
  buffer %in1: float32[32, 96]{96, 1} input 1 cpu
  buffer %1: float32[1, 96]{96, 1} extern cpu
  extern node 1 (%in0, %in1) -> (%1)
  buffer %2: float32[1, 96]{96, 1} computed cpu
  compute %2 (node 2) pointwise[1, 96] = neg(load(%1, [0, i1]))
  kernel %2
  output %2
)"));
  std::string why;
  EXPECT_TRUE(tile_epilogue_kernel(p, {1, "%1", 1, 96, "tile0"}, &why)) << why;
}

// A convolution's channels-last output [N, C, H, W] = [2, 8, 3, 5] is a [N·H·W, C] = [30, 8]
// matrix: the channel is the column, the pixel row splits into n, h, w.
TEST(TileEpilogue, ChannelsLast) {
  const LoopProgram p = parse_program(program(R"(  buffer %in0: float32[2, 4, 3, 5]{60, 1, 20, 4} input 0 cpu
  buffer %in1: float32[8, 4, 1, 1]{4, 1, 1, 1} input 1 cpu
  buffer %in2: float32[2, 8, 3, 5]{120, 1, 40, 8} input 2 cpu
  buffer %1: float32[2, 8, 3, 5]{120, 1, 40, 8} extern cpu
  extern node 1 (%in0, %in1) -> (%1)
  buffer %2: float32[2, 8, 3, 5]{120, 1, 40, 8} computed cpu
  compute %2 (node 2) pointwise[2, 8, 3, 5] = mul(load(%1, [i0, i1, i2, i3]), abs(load(%in2, [i0, i1, i2, i3])))
  kernel %2
  output %2
)"));
  std::string why;
  const auto tile = tile_epilogue_kernel(p, {1, "%1", 30, 8, "tile0"}, &why);
  ASSERT_TRUE(tile) << why;
  EXPECT_EQ(kernel_to_text(tile->kernel),
            R"(kernel tile0(%1: float32 in, %in2: float32 in, %2: float32 out) symbols(tile_row0, tile_rows, tile_col0, tile_cols) {
  for x0 in 0..tile_rows {
    for x1 in 0..tile_cols vector(16) {
      let t0 = mul(load(%1, [tile_col0 + tile_row0*8 + x0*8 + x1]), abs(load(%in2, [tile_col0 + tile_row0*8 + x0*8 + x1])))
      %2[tile_col0 + tile_row0*8 + x0*8 + x1] = local(t0, float32)
    }
  }
}
)");
}

TEST(TileEpilogue, KeepsTheKernel) {
  const std::string layout = std::string(kMatrixStep) + R"(  buffer %2: float32[64, 96]{1, 64} computed cpu
  compute %2 (node 2) pointwise[64, 96] = abs(load(%1, [i0, i1]))
  kernel %2
  output %2
)";
  EXPECT_EQ(tile_of(layout), "none: output is not the matrix output's rows x cols");
  const std::string transposed = std::string(kMatrixStep) + R"(  buffer %2: float32[96, 64]{64, 1} computed cpu
  compute %2 (node 2) pointwise[96, 64] = abs(load(%1, [i1, i0]))
  kernel %2
  output %2
)";
  EXPECT_EQ(tile_of(transposed), "none: output is not the matrix output's rows x cols");
  const std::string neighbour = std::string(kMatrixStep) + R"(  buffer %2: float32[64, 96]{96, 1} computed cpu
  compute %2 (node 2) pointwise[64, 96] = add(load(%1, [i0, i1]), load(%1, [i0, 95 - i1]))
  kernel %2
  output %2
)";
  EXPECT_EQ(tile_of(neighbour),
            "none: the consumer reads the matrix output outside the element it writes");
  const std::string reduction = std::string(kMatrixStep) + R"(  buffer %2: float32[64]{1} computed cpu
  compute %2 (node 2) reduce sum[64] over [96] = load(%1, [i0, r0])
  kernel %2
  output %2
)";
  EXPECT_EQ(tile_of(reduction), "none: not a pointwise compute");
  const std::string to_double = std::string(kMatrixStep) + R"(  buffer %2: float64[64, 96]{96, 1} computed cpu
  compute %2 (node 2) pointwise[64, 96] = cast(load(%1, [i0, i1]), float64)
  kernel %2
  output %2
)";
  EXPECT_EQ(tile_of(to_double), "none: output is not float32 on the CPU");
  const std::string transcendental = std::string(kMatrixStep) + R"(  buffer %2: float32[64, 96]{96, 1} computed cpu
  compute %2 (node 2) pointwise[64, 96] = mul(load(%1, [i0, i1]), sigmoid(load(%in3, [i1])))
  kernel %2
  output %2
)";
  EXPECT_EQ(tile_of(transcendental), "none: the consumer computes a transcendental function");
}

}  // namespace
}  // namespace inductor_cpp::ir
