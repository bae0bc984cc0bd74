/// \file
/// The reference interpreter itself: op semantics (torch's integer division, casts, NaN
/// handling, argmax ties, welford), masked and indirect loads, kernels, memory plans. The
/// pipeline semantics tests trust it, so it is pinned down here with hand-computed values.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ir/ir_text.h"
#include "ir/verify.h"
#include "tests/cpp/ir_interpreter.h"
#include "tests/cpp/pass_test_util.h"

namespace inductor_cpp::ir::interp {
namespace {

using testing::program;

const double kNaN = std::numeric_limits<double>::quiet_NaN();

Elements floats(std::vector<double> v) {
  Elements e(DType::Float32, v.size());
  e.floats = std::move(v);
  return e;
}

Elements ints(std::vector<int64_t> v, DType type = DType::Int64) {
  Elements e(type, v.size());
  e.ints = std::move(v);
  return e;
}

/// Runs `text` (program lines) on `inputs`; returns the first output.
Tensor run(const std::string& text, const BufferStorage& inputs) {
  const LoopProgram p = parse_program(program(text));
  verify(p);
  return *run_loop_program(p, inputs).at(0);
}

TEST(IrInterpreter, IntegerDivisionFollowsTorch) {
  const std::string head =
      "  buffer %in0: int64[4]{1} input 0 cpu\n  buffer %1: int64[4]{1} computed cpu\n";
  const BufferStorage in{{"%in0", ints({7, -7, 6, -1})}};
  auto op = [&](const std::string& name) {
    return run(head + "  compute %1 pointwise[4] = " + name +
                   "(load(%in0, [i0]), -3:int64)\n  kernel %1\n  output %1\n",
               in)
        .elements.ints;
  };
  EXPECT_EQ(op("floordiv"), (std::vector<int64_t>{-3, 2, -2, 0}));
  EXPECT_EQ(op("remainder"), (std::vector<int64_t>{-2, -1, 0, -1}));
  EXPECT_EQ(op("truncdiv"), (std::vector<int64_t>{-2, 2, -2, 0}));
  EXPECT_EQ(op("fmod"), (std::vector<int64_t>{1, -1, 0, -1}));
}

TEST(IrInterpreter, CastsTruncateAndWrapAndComparisonsYieldBool) {
  const BufferStorage in{{"%in0", floats({-2.7, 2.7, -0.5, 300.0})}};
  const Tensor t = run(R"(  buffer %in0: float32[4]{1} input 0 cpu
  buffer %1: int8[4]{1} computed cpu
  compute %1 pointwise[4] = cast(cast(load(%in0, [i0]), int64), int8)
  kernel %1
  output %1
)",
                       in);
  EXPECT_EQ(t.elements.ints, (std::vector<int64_t>{-2, 2, 0, 44}));
  const Tensor b = run(R"(  buffer %in0: float32[4]{1} input 0 cpu
  buffer %1: bool[4]{1} computed cpu
  compute %1 pointwise[4] = lt(load(%in0, [i0]), 0.0:float32)
  kernel %1
  output %1
)",
                       in);
  EXPECT_EQ(b.elements.dtype, DType::Bool);
  EXPECT_EQ(b.elements.ints, (std::vector<int64_t>{1, 0, 1, 0}));
}

TEST(IrInterpreter, MaximumPropagatesNaNAndFmaxDoesNot) {
  const BufferStorage in{{"%in0", floats({1.0, kNaN})}};
  const std::string head =
      "  buffer %in0: float32[2]{1} input 0 cpu\n  buffer %1: float32[2]{1} computed cpu\n";
  const Tensor m = run(head +
                           "  compute %1 pointwise[2] = maximum(load(%in0, [i0]), 0.5:float32)\n  "
                           "kernel %1\n  output %1\n",
                       in);
  EXPECT_EQ(m.elements.floats[0], 1.0);
  EXPECT_TRUE(std::isnan(m.elements.floats[1]));
  const Tensor f = run(head +
                           "  compute %1 pointwise[2] = fmax(load(%in0, [i0]), 0.5:float32)\n  "
                           "kernel %1\n  output %1\n",
                       in);
  EXPECT_EQ(f.elements.floats, (std::vector<double>{1.0, 0.5}));
}

TEST(IrInterpreter, ReductionsArgmaxTiesNaNAndWelford) {
  const std::string head = "  buffer %in0: float32[2, 4]{4, 1} input 0 cpu\n";
  const BufferStorage in{{"%in0", floats({1.0, 3.0, 3.0, 2.0, 1.0, kNaN, 5.0, kNaN})}};
  const Tensor argmax = run(head + R"(  buffer %1: int64[2]{1} computed cpu
  compute %1 reduce argmax[2] over [4] = load(%in0, [i0, r0])
  kernel %1
  output %1
)",
                            in);
  EXPECT_EQ(argmax.elements.ints, (std::vector<int64_t>{1, 1}));  // first of the ties; NaN wins
  const Tensor max = run(head + R"(  buffer %1: float32[2]{1} computed cpu
  compute %1 reduce max[2] over [4] = load(%in0, [i0, r0])
  kernel %1
  output %1
)",
                         in);
  EXPECT_EQ(max.elements.floats[0], 3.0);
  EXPECT_TRUE(std::isnan(max.elements.floats[1]));
  const Tensor m2 = run(R"(  buffer %in0: float32[4]{1} input 0 cpu
  buffer %1: float32[]{} computed cpu
  compute %1 reduce welford_m2[] over [4] = load(%in0, [r0])
  kernel %1
  output %1
)",
                        {{"%in0", floats({1, 2, 3, 4})}});
  EXPECT_DOUBLE_EQ(m2.elements.floats.at(0), 5.0);
}

TEST(IrInterpreter, MaskedLoadsYieldZeroAndIndirectLoadsCheckBounds) {
  const std::string text = R"(  buffer %in0: float32[3]{1} input 0 cpu
  buffer %in1: int64[4]{1} input 1 cpu
  buffer %1: float32[4]{1} computed cpu
  compute %1 pointwise[4] = add(load(%in0, [i0], mask=i0 < 3), load(%in0, [%ind0], mask=1 <= i0, indirect=[load(%in1, [i0])], bounds=[3]))
  kernel %1
  output %1
)";
  // Element 0's indirect index (-1) is masked off: not read, not checked.
  const Tensor t = run(text, {{"%in0", floats({10, 20, 30})}, {"%in1", ints({-1, 2, 0, 1})}});
  EXPECT_EQ(t.elements.floats, (std::vector<double>{10, 50, 40, 20}));
  EXPECT_THROW(run(text, {{"%in0", floats({10, 20, 30})}, {"%in1", ints({0, 3, 0, 1})}}),
               IndexOutOfBounds);
}

TEST(IrInterpreter, ViewsAreEvaluatedWhereRead) {
  const LoopProgram p = parse_program(program(R"(  buffer %in0: float32[2, 3]{1, 2} input 0 cpu
  buffer %1: float32[3, 2]{2, 1} computed cpu
  buffer %2: float32[3, 2]{2, 1} computed cpu
  compute %1 view pointwise[3, 2] = load(%in0, [i1, i0])
  compute %2 pointwise[3, 2] = neg(load(%1, [i0, i1]))
  kernel %2
  output %2, %1
)"));
  // Column-major storage: the transpose reads it in storage order.
  const Outputs out = run_loop_program(p, {{"%in0", floats({1, 2, 3, 4, 5, 6})}});
  EXPECT_EQ(out.at(0)->elements.floats, (std::vector<double>{-1, -2, -3, -4, -5, -6}));
  EXPECT_EQ(out.at(1)->elements.floats, (std::vector<double>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(out.at(1)->sizes, (std::vector<int64_t>{3, 2}));
}

TEST(IrInterpreter, KernelsAccumulateLetAndStoreByOffset) {
  ScheduledProgram s;
  s.buffers = parse_program(program(R"(  buffer %in0: float32[2, 3]{3, 1} input 0 cpu
  buffer %1: float32[2]{1} computed cpu
  buffer %2: int64[2]{1} computed cpu
  compute %1 reduce sum[2] over [3] = load(%in0, [i0, r0])
  compute %2 reduce argmin[2] over [3] = load(%in0, [i0, r0])
  kernel %1, %2
  output %1, %2
)"))
                  .buffers;
  ScheduledStep step;
  step.kernel = parse_kernel(R"(kernel k(%in0: float32 in, %1: float32 out, %2: int64 out) {
  for x0 in 0..2 {
    t0 = accumulator sum float32
    t1 = accumulator argmin float32
    for y0 in 0..3 vector(16) {
      let t2 = mul(load(%in0, [x0*3 + y0]), 2.0:float32)
      t0 += local(t2, float32)
      t1 += local(t2, float32) at y0
    }
    %1[x0] = local(t0, float32)
    %2[x0] = local(t1, int64)
  }
}
)");
  s.steps.push_back(step);
  s.outputs = {"%1", "%2"};
  const Outputs out = run_scheduled_program(s, {{"%in0", floats({3, 1, 2, 0, 5, 0})}});
  EXPECT_EQ(out.at(0)->elements.floats, (std::vector<double>{12, 10}));
  EXPECT_EQ(out.at(1)->elements.ints, (std::vector<int64_t>{1, 0}));
}

TEST(IrInterpreter, UnwrittenElementsShowUpAsWrongResults) {
  ScheduledProgram s;
  s.buffers = parse_program(program(R"(  buffer %in0: float32[4]{1} input 0 cpu
  buffer %1: float32[4]{1} computed cpu
  compute %1 pointwise[4] = load(%in0, [i0])
  kernel %1
  output %1
)"))
                  .buffers;
  ScheduledStep step;
  step.kernel = parse_kernel(R"(kernel k(%in0: float32 in, %1: float32 out) {
  for x0 in 0..3 {
    %1[x0] = load(%in0, [x0])
  }
}
)");
  s.steps.push_back(step);
  s.outputs = {"%1"};
  const Outputs out = run_scheduled_program(s, {{"%in0", floats({1, 2, 3, 4})}});
  const Tensor want{{4}, floats({1, 2, 3, 4})};
  EXPECT_EQ(compare(*out.at(0), want), "element 3: nan, expected 4");
}

TEST(IrInterpreter, MemoryPlanReusingALiveBufferIsCaught) {
  const LoopProgram p = parse_program(program(R"(  buffer %in0: float32[64]{1} input 0 cpu
  buffer %1: float32[64]{1} computed cpu
  buffer %2: float32[64]{1} computed cpu
  buffer %3: float32[64]{1} computed cpu
  compute %1 pointwise[64] = exp(load(%in0, [i0]))
  compute %2 pointwise[64] = neg(load(%1, [i0]))
  compute %3 pointwise[64] = add(load(%1, [i0]), load(%2, [i0]))
  kernel %1
  kernel %2
  kernel %3
  output %3
)"));
  const ScheduledProgram s = schedule(p);
  const BufferStorage in = random_inputs(s.buffers, 1);
  const Outputs want = run_loop_program(p, in);
  MemoryPlan good = plan_memory(s);
  InterpreterOptions options;
  options.memory_plan = &good;
  EXPECT_EQ(compare(run_scheduled_program(s, in, options), want), "");
  MemoryPlan bad;
  bad.reuse["%2"] = "%1";  // %1 is still read by the third kernel
  bad.last_use = {{"%1", 2}, {"%2", 2}};
  options.memory_plan = &bad;
  EXPECT_THROW(run_scheduled_program(s, in, options), std::logic_error);
}

}  // namespace
}  // namespace inductor_cpp::ir::interp
