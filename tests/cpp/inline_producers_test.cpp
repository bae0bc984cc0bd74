/// \file
/// inline_producers: IR text in -> pass -> IR text out.
#include <gtest/gtest.h>

#include "ir/passes/inline_producers.h"
#include "tests/cpp/pass_test_util.h"

namespace inductor_cpp::ir {
namespace {

using testing::program;
using testing::run_pass;

/// The program after inline_producers with the default options.
std::string after_inlining(const std::string& text) {
  return run_pass(text, [](const LoopProgram& p) { return inline_producers(p); });
}

// %1 is realized (a materialized view reads it); the transpose view %2 is inlined as an index
// rewrite into generated readers and made by ATen (extern view) for the extern that needs it.
TEST(InlineProducers, ViewsAndSingleUseProducersInline) {
  const std::string buffers = R"(  buffer %in0: float32[4, 8]{8, 1} input 0 cpu
  buffer %1: float32[4, 8]{8, 1} computed cpu
  buffer %2: float32[8, 4]{1, 8} computed cpu
  buffer %3: float32[8, 4]{4, 1} computed cpu
  buffer %4: float32[8, 4]{4, 1} computed cpu
  buffer %5: float32[8, 4]{4, 1} computed cpu
  buffer %6: float32[8, 4]{4, 1} extern cpu
)";
  const std::string in =
      program(buffers + R"(  compute %1 pointwise[4, 8] = tanh(exp(sigmoid(load(%in0, [i0, i1]))))
  compute %2 view pointwise[8, 4] = load(%1, [i1, i0])
  compute %3 pointwise[8, 4] = mul(load(%2, [i0, i1]), 2.0:float32)
  compute %4 pointwise[8, 4] = add(load(%2, [i0, i1]), load(%3, [i0, i1]))
  compute %5 pointwise[8, 4] = neg(load(%2, [i0, i1]))
  kernel %1
  kernel %3
  kernel %4
  kernel %5
  extern node 6 (%2, %5) -> (%6)
  output %4, %6
)");
  EXPECT_EQ(
      after_inlining(in),
      program(buffers + R"(  compute %1 pointwise[4, 8] = tanh(exp(sigmoid(load(%in0, [i0, i1]))))
  compute %3 pointwise[8, 4] = mul(load(%1, [i1, i0]), 2.0:float32)
  compute %4 pointwise[8, 4] = add(load(%1, [i1, i0]), mul(load(%1, [i1, i0]), 2.0:float32))
  compute %5 pointwise[8, 4] = neg(load(%1, [i1, i0]))
  kernel %1
  kernel %4
  kernel %5
  extern view node -1 (%1) -> (%2)
  extern node 6 (%2, %5) -> (%6)
  output %4, %6
)"));
}

// One reader loading a producer at several indices (max_pool2d's backward reading the pooled
// gradient at the windows that hold a pixel) would evaluate it once per load: a producer
// larger than max_shared_inline_nodes with what it carries is realized (%2: small itself, but
// it carries %1), a cheap one (%3) is still inlined.
TEST(InlineProducers, ProducerLoadedAtSeveralIndicesIsRealizedUnlessCheap) {
  const std::string buffers = R"(  buffer %in0: float32[9]{1} input 0 cpu
  buffer %in1: float32[9]{1} input 1 cpu
  buffer %1: float32[9]{1} computed cpu
  buffer %2: float32[9]{1} computed cpu
  buffer %3: float32[9]{1} computed cpu
  buffer %4: float32[8]{1} computed cpu
  compute %1 pointwise[9] = add(load(%in1, [i0]), exp(load(%in1, [i0])))
)";
  const std::string in = program(
      buffers +
      R"(  compute %2 pointwise[9] = where(le(load(%in0, [i0]), 0.0:float32), 0.0:float32, load(%1, [i0]))
  compute %3 pointwise[9] = neg(load(%in0, [i0]))
  compute %4 pointwise[8] = add(add(load(%2, [i0]), load(%2, [i0 + 1])), add(load(%3, [i0]), load(%3, [i0 + 1])))
  kernel %1
  kernel %2
  kernel %3
  kernel %4
  output %4
)");
  EXPECT_EQ(
      after_inlining(in),
      program(
          buffers +
          R"(  compute %2 pointwise[9] = where(le(load(%in0, [i0]), 0.0:float32), 0.0:float32, add(load(%in1, [i0]), exp(load(%in1, [i0]))))
  compute %3 pointwise[9] = neg(load(%in0, [i0]))
  compute %4 pointwise[8] = add(add(load(%2, [i0]), load(%2, [i0 + 1])), add(neg(load(%in0, [i0])), neg(load(%in0, [i0 + 1]))))
  kernel %2
  kernel %4
  output %4
)"));
}

// A shared compute with a small body is inlined into its readers, unless the single-use
// producers it would carry along make it large (each reader would recompute them).
TEST(InlineProducers, SharedBodyCarryingALargeChainIsRealized) {
  const std::string in = program(R"(  buffer %in0: float32[8]{1} input 0 cpu
  buffer %1: float32[8]{1} computed cpu
  buffer %2: float32[8]{1} computed cpu
  buffer %3: float32[8]{1} computed cpu
  buffer %4: float32[8]{1} computed cpu
  compute %1 pointwise[8] = exp(sin(load(%in0, [i0])))
  compute %2 pointwise[8] = add(load(%1, [i0]), 1.0:float32)
  compute %3 pointwise[8] = neg(load(%2, [i0]))
  compute %4 pointwise[8] = abs(load(%2, [i0]))
  kernel %1
  kernel %2
  kernel %3
  kernel %4
  output %3, %4
)");
  InlineOptions small;
  small.max_shared_inline_expanded_nodes = 5;  // %2 with %1 inlined: 6 nodes
  const std::string realized =
      run_pass(in, [&](const LoopProgram& p) { return inline_producers(p, small); });
  EXPECT_NE(realized.find("compute %2 pointwise[8] = add(exp(sin(load(%in0, [i0]))), 1.0:float32)"),
            std::string::npos)
      << realized;
  EXPECT_NE(realized.find("compute %3 pointwise[8] = neg(load(%2, [i0]))"), std::string::npos)
      << realized;
  const std::string inlined = after_inlining(in);
  EXPECT_NE(
      inlined.find("compute %3 pointwise[8] = neg(add(exp(sin(load(%in0, [i0]))), 1.0:float32))"),
      std::string::npos)
      << inlined;
}

// A producer broadcast to many more points than it has is computed once when its body is
// large or gathers; a cheap one stays inlined.
TEST(InlineProducers, LargeBroadcastProducerIsComputedOnce) {
  const auto program_with = [](const std::string& body) {
    return program(R"(  buffer %in0: float32[4]{1} input 0 cpu
  buffer %in1: float32[64, 4]{4, 1} input 1 cpu
  buffer %1: float32[4]{1} computed cpu
  buffer %2: float32[64, 4]{0, 1} computed cpu
  buffer %3: float32[64, 4]{4, 1} computed cpu
  compute %1 pointwise[4] = )" +
                   body + R"(
  compute %2 view pointwise[64, 4] = load(%1, [i1])
  compute %3 pointwise[64, 4] = add(load(%2, [i0, i1]), load(%in1, [i0, i1]))
  kernel %1
  kernel %3
  output %3
)");
  };
  std::string big = "load(%in0, [i0])";
  for (int k = 0; k < 16; ++k) big = (k % 2 ? "sin(" : "cos(") + big + ")";
  const std::string realized = after_inlining(program_with(big));
  EXPECT_NE(
      realized.find("compute %3 pointwise[64, 4] = add(load(%1, [i1]), load(%in1, [i0, i1]))"),
      std::string::npos)
      << realized;
  const std::string inlined = run_pass(program_with("exp(load(%in0, [i0]))"),
                                       [](const LoopProgram& p) { return inline_producers(p); });
  EXPECT_NE(inlined.find(
                "compute %3 pointwise[64, 4] = add(exp(load(%in0, [i1])), load(%in1, [i0, i1]))"),
            std::string::npos)
      << inlined;
}

// cat-like masked read of a producer: the producer's own loads get the reader's mask.
// A residual stream h1 = x + a, h2 = h1 + b, h3 = h2 + c, each read by its layer (exp) and the
// next: with realize_by_streams, h3 (4 input streams, 2 readers: 8 loads inlined against 7
// realized) is realized, and h4 = h3 + d reads it instead of the whole sum; h1 and h2 (2 and 3
// streams) stay inlined. Without it, nothing is realized.
TEST(InlineProducers, ResidualStreamIsRealizedWhenInliningMovesMoreMemory) {
  std::string lines;
  for (int k = 0; k < 5; ++k) lines += "  buffer %in" + std::to_string(k) + ": float32[64]{1} input " + std::to_string(k) + " cpu\n";
  for (int k = 1; k <= 7; ++k) lines += "  buffer %" + std::to_string(k) + ": float32[64]{1} computed cpu\n";
  lines += R"(  compute %1 pointwise[64] = add(load(%in0, [i0]), load(%in1, [i0]))
  compute %2 pointwise[64] = add(load(%1, [i0]), load(%in2, [i0]))
  compute %3 pointwise[64] = add(load(%2, [i0]), load(%in3, [i0]))
  compute %4 pointwise[64] = add(load(%3, [i0]), load(%in4, [i0]))
  compute %5 pointwise[64] = exp(load(%1, [i0]))
  compute %6 pointwise[64] = exp(load(%2, [i0]))
  compute %7 pointwise[64] = exp(load(%3, [i0]))
  kernel %1
  kernel %2
  kernel %3
  kernel %4
  kernel %5
  kernel %6
  kernel %7
  output %4, %5, %6, %7
)";
  const std::string in = program(lines);
  InlineOptions streams;
  streams.realize_by_streams = true;
  const std::string out = run_pass(in, [&](const LoopProgram& p) { return inline_producers(p, streams); });
  EXPECT_NE(out.find("  kernel %3\n  kernel %4\n"), std::string::npos) << out;
  EXPECT_NE(out.find("compute %4 pointwise[64] = add(load(%3, [i0]), load(%in4, [i0]))"), std::string::npos) << out;
  EXPECT_EQ(out.find("  kernel %1\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("  kernel %2\n"), std::string::npos) << out;
  EXPECT_EQ(after_inlining(in).find("  kernel %3\n"), std::string::npos);
}

TEST(InlineProducers, MaskIsAndedIntoInlinedLoads) {
  const std::string buffers = R"(  buffer %in0: float32[4]{1} input 0 cpu
  buffer %in1: float32[4]{1} input 1 cpu
  buffer %1: float32[4]{1} computed cpu
  buffer %2: float32[8]{1} computed cpu
  compute %1 (node 1) pointwise[4] = exp(load(%in1, [i0]))
)";
  const std::string in = program(
      buffers +
      R"(  compute %2 (node 2) pointwise[8] = where(lt(index(i0, int64), 4:int64), load(%in0, [i0], mask=i0 < 4), load(%1, [i0 - 4], mask=4 <= i0))
  kernel %1
  kernel %2
  output %2
)");
  EXPECT_EQ(
      after_inlining(in),
      program(
          buffers +
          R"(  compute %2 (node 2) pointwise[8] = where(lt(index(i0, int64), 4:int64), load(%in0, [i0], mask=i0 < 4), exp(load(%in1, [i0 - 4], mask=4 <= i0)))
  kernel %2
  output %2
)"));
}

}  // namespace
}  // namespace inductor_cpp::ir
