/// \file
/// The "gpu_tuning" option: parsing, its errors, and the schedule fields it sets; the GPU
/// schedule then follows them (a row reduction's threads per row).
#include "inductor/gpu_tuning.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "inductor/options.h"
#include "ir/ir_text.h"
#include "ir/kernel_ir.h"
#include "ir/passes/pipeline.h"

namespace inductor_cpp::inductor {
namespace {

TEST(GpuTuning, ParsesNamesIntoScheduleFields) {
  const GpuTuning t = parse_gpu_tuning(" max_threads=256, column_threads=262144 ,read_once_hints=0,");
  EXPECT_EQ(t.emitter.read_once_hints, 0);
  ASSERT_EQ(t.settings.size(), 2u);
  const ir::PipelineOptions o = apply_gpu_tuning(t, {});
  EXPECT_EQ(o.schedule.gpu_max_threads, 256);
  EXPECT_EQ(o.schedule.gpu_column_threads, 262144);
  EXPECT_EQ(o.schedule.gpu_max_column_rows, ir::ScheduleOptions{}.gpu_max_column_rows);
  EXPECT_EQ(parse_gpu_tuning("").emitter.read_once_hints, 1);
  EXPECT_EQ(parse_gpu_tuning("row_unroll=8,max_column_block=512").emitter.max_column_block, 512);
  EXPECT_EQ(parse_gpu_tuning("row_unroll=8").emitter.row_unroll, 8);
  EXPECT_TRUE(parse_gpu_tuning("").settings.empty());
  EXPECT_EQ(parse_gpu_tuning("").emitter.programmatic_launch, 1);
  EXPECT_EQ(parse_gpu_tuning("programmatic_launch=0").emitter.programmatic_launch, 0);
}

TEST(GpuTuning, BadItemsAreErrorsThatNameThem) {
  for (const char* bad : {"max_thread=4", "max_threads", "max_threads=x", "max_threads=-1",
                          "max_threads=0", "max_threads=4k",
                          "max_column_block=384", "max_column_block=2048", "read_once_hints=5",
                          "programmatic_launch=4"}) {
    try {
      parse_gpu_tuning(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("gpu_tuning"), std::string::npos) << e.what();
    }
  }
  try {
    parse_gpu_tuning("unknown=1");
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("max_column_rows"), std::string::npos)
        << "lists the known names: " << e.what();
  }
  // Checked when the options are read, before any build.
  EXPECT_THROW(CompileOptions::from_json({{"gpu_tuning", "nope=1"}}), std::invalid_argument);
  EXPECT_THROW(CompileOptions::from_json({{"gpu_tuning", 3}}), std::invalid_argument);
  EXPECT_EQ(CompileOptions::from_json({{"gpu_tuning", "max_threads=128"}}).codegen["gpu_tuning"],
            "max_threads=128");
}

TEST(GpuTuning, ScheduleFollowsTheLimits) {
  const std::string program = R"(program {
  buffer %in0: float32[64, 8192]{8192, 1} input 0 cuda
  buffer %1: float32[64]{1} computed cuda
  compute %1 (node 1) reduce sum[64] over [8192] = load(%in0, [i0, r0])
  kernel %1
  output %1
}
)";
  auto scheduled_text = [&](const std::string& tuning) {
    ir::PipelineOptions o = apply_gpu_tuning(parse_gpu_tuning(tuning), {});
    o.schedule.target = ir::Target::Gpu;
    const ir::PipelineResult r = ir::run_pipeline(ir::parse_program(program), o);
    std::string text;
    for (const ir::ScheduledStep& s : r.scheduled.steps) {
      if (s.kind == ir::ScheduledStep::Kind::Kernel) text += ir::kernel_to_text(s.kernel);
    }
    return text;
  };
  EXPECT_NE(scheduled_text("").find("gpu(threads=512)"), std::string::npos) << scheduled_text("");
  EXPECT_NE(scheduled_text("max_threads=128").find("gpu(threads=128)"), std::string::npos)
      << scheduled_text("max_threads=128");
}

// Per-channel sums over NCHW pixels with a 7x7 image (too small a block to split): a row per
// channel over N*H*W, its loads contiguous between image boundaries, many threads per row, not
// the sum(0)-like column kernel the reduction's contiguous store once suggested (32 threads).
TEST(GpuSchedule, PerChannelSumsOverSmallImagesAreRows) {
  const std::string program = R"(program {
  buffer %in0: float32[32, 512, 7, 7]{25088, 49, 7, 1} input 0 cuda
  buffer %1: float32[512]{1} computed cuda
  compute %1 (node 1) reduce sum[512] over [32, 7, 7] = load(%in0, [r0, i0, r1, r2])
  kernel %1
  output %1
}
)";
  ir::PipelineOptions o;
  o.schedule.target = ir::Target::Gpu;
  const ir::PipelineResult r = ir::run_pipeline(ir::parse_program(program), ir::PipelineOptions(o));
  std::string text;
  for (const ir::ScheduledStep& s : r.scheduled.steps)
    if (s.kind == ir::ScheduledStep::Kind::Kernel) text += ir::kernel_to_text(s.kernel);
  EXPECT_NE(text.find("for x0 in 0..512 parallel gpu(threads=512)"), std::string::npos) << text;
}

}  // namespace
}  // namespace inductor_cpp::inductor
