/// \file
/// NVPTX emitter: pointwise kernels (vector widths, reduced floats, rounding, zero sizes,
/// transposes and layout copies), the programmatic-launch prologue, scheduled kernels written
/// as text, errors, random programs, and the GPU attribute of the text form. The reductions,
/// load hints and division have their own files (nvptx_emit_*_test.cpp); nvptx_emit_test_util.h
/// says how kernels are emitted and assembled.
#include <exception>
#include <stdexcept>

#include "ir/ir_text.h"
#include "tests/cpp/nvptx_emit_test_util.h"
#include "tests/cpp/random_program.h"

namespace inductor_cpp::codegen::nvptx::emit_test {
namespace {

TEST_F(NvptxEmit, PointwiseFloat32IsVectorized) {
  const auto kernels = gpu_kernels(R"(  buffer %in0: float32[64, 1000]{1000, 1} input 0 cuda
  buffer %in1: float32[64, 1000]{1000, 1} input 1 cuda
  buffer %1: float32[64, 1000]{1000, 1} computed cuda
  compute %1 (node 1) pointwise[64, 1000] = add(tanh(erf(load(%in0, [i0, i1]))), sigmoid(exp(load(%in1, [i0, i1]))))
  output %1
)");
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_TRUE(schedule_has(kernels, "for x1 in 0..64000 parallel vector(4) gpu(threads=1) {"));
  const PtxModule m = emit_and_assemble(kernels, "pointwise_f32");
  EXPECT_NE(m.ptx.find("ld.global.v4.f32"), std::string::npos) << m.ptx;
  EXPECT_NE(m.ptx.find("st.global.v4.f32"), std::string::npos) << m.ptx;
  EXPECT_EQ(m.launches[0].block[0], 256);
  EXPECT_EQ(m.launches[0].grid[0], (64000 / 4 + 255) / 256);
}

// Programmatic dependent launch on sm_90: every kernel allows the next one's launch and
// waits for its predecessor before its first memory access; sm_80 (no griddepcontrol) and
// programmatic_launch = false emit neither, and their launches are plain.
TEST_F(NvptxEmit, ProgrammaticLaunchPrologueComesBeforeAnyMemoryAccess) {
  const auto kernels = gpu_kernels(R"(  buffer %in0: float32[64, 1000]{1000, 1} input 0 cuda
  buffer %1: float32[64]{1} computed cuda
  buffer %2: float32[64, 1000]{1000, 1} computed cuda
  compute %1 (node 1) reduce sum[64] over [1000] = load(%in0, [i0, r0])
  compute %2 (node 2) pointwise[64, 1000] = div(load(%in0, [i0, i1]), load(%1, [i0]))
  output %2
)");
  const PtxModule sm90 = emit_and_assemble(kernels, "programmatic_launch");
  ASSERT_FALSE(sm90.launches.empty());
  for (const GpuLaunch& l : sm90.launches) EXPECT_TRUE(l.programmatic) << l.name;
  EXPECT_EQ(occurrences(sm90.ptx, "griddepcontrol.wait;"), sm90.launches.size()) << sm90.ptx;
  EXPECT_EQ(occurrences(sm90.ptx, "griddepcontrol.launch_dependents;"), sm90.launches.size());
  for (size_t entry = sm90.ptx.find(".entry"); entry != std::string::npos;
       entry = sm90.ptx.find(".entry", entry + 1)) {
    const size_t wait = sm90.ptx.find("griddepcontrol.wait;", entry);
    ASSERT_NE(wait, std::string::npos);
    for (const char* access : {"ld.global", "st.global", "ld.shared", "st.shared", "atom."}) {
      const size_t first = sm90.ptx.find(access, entry);
      if (first != std::string::npos) {
        EXPECT_LT(wait, first) << access << "\n" << sm90.ptx;
      }
    }
  }
  GpuTarget older;
  older.sm = 80;
  const PtxModule sm80 = emit_ptx(kernels, older, default_libdevice_path());
  EXPECT_EQ(sm80.ptx.find("griddepcontrol"), std::string::npos);
  for (const GpuLaunch& l : sm80.launches) EXPECT_FALSE(l.programmatic);
  GpuTarget plain;
  plain.programmatic_launch = 0;
  const PtxModule off = emit_ptx(kernels, plain, default_libdevice_path());
  EXPECT_EQ(off.ptx.find("griddepcontrol"), std::string::npos);
  for (const GpuLaunch& l : off.launches) EXPECT_FALSE(l.programmatic);
  GpuTarget wait_only;
  wait_only.programmatic_launch = 2;
  const PtxModule late = emit_ptx(kernels, wait_only, default_libdevice_path());
  EXPECT_EQ(occurrences(late.ptx, "griddepcontrol.wait;"), late.launches.size());
  EXPECT_EQ(late.ptx.find("griddepcontrol.launch_dependents"), std::string::npos);
  for (const GpuLaunch& l : late.launches) EXPECT_TRUE(l.programmatic);
  // Column-group kernels: OuterReductionSplitsRowsOverThreadRows.
}

TEST_F(NvptxEmit, PointwiseReducedFloats) {
  const auto kernels = gpu_kernels(R"(  buffer %in0: float16[4096]{1} input 0 cuda
  buffer %in1: bfloat16[4096]{1} input 1 cuda
  buffer %in2: float16[4096]{1} input 2 cuda
  buffer %in3: bfloat16[4096]{1} input 3 cuda
  buffer %1: float16[4096]{1} computed cuda
  buffer %2: bfloat16[4096]{1} computed cuda
  buffer %3: float32[4096]{1} computed cuda
  compute %1 (node 1) pointwise[4096] = cast(mul(cast(load(%in0, [i0]), float32), 3.0:float32), float16)
  compute %2 (node 2) pointwise[4096] = cast(exp(cast(load(%in1, [i0]), float32)), bfloat16)
  compute %3 (node 3) pointwise[4096] = add(cast(load(%in2, [i0]), float32), cast(load(%in3, [i0]), float32))
  output %1, %2, %3
)");
  ASSERT_EQ(kernels.size(), 3u);
  // 16-byte chunks of the widest contiguous element: 8 lanes of float16, 4 when float32 is
  // stored.
  EXPECT_EQ(kernels[0].body.at(0).vector_width, 8) << kernels_text(kernels);
  EXPECT_EQ(kernels[2].body.at(0).vector_width, 4) << kernels_text(kernels);
  const PtxModule m = emit_and_assemble(kernels, "pointwise_reduced");
  EXPECT_NE(m.ptx.find("ld.global.v4.b32"), std::string::npos) << m.ptx;  // 8 x float16
  // 8 x bfloat16 as i16 bits: LLVM 16's NVPTX splits it into two 64-bit accesses.
  EXPECT_NE(m.ptx.find("ld.global.v4.u16"), std::string::npos) << m.ptx;
}

// round is half to even in every float type (torch.round): -0.5 -> -0, -2.5 -> -2.
TEST_F(NvptxEmit, RoundIsHalfToEven) {
  const auto kernels = gpu_kernels(R"(  buffer %in0: float16[4096]{1} input 0 cuda
  buffer %in1: float32[4096]{1} input 1 cuda
  buffer %1: float16[4096]{1} computed cuda
  buffer %2: float32[4096]{1} computed cuda
  compute %1 (node 1) pointwise[4096] = cast(round(cast(load(%in0, [i0]), float32)), float16)
  compute %2 (node 2) pointwise[4096] = round(load(%in1, [i0]))
  output %1, %2
)");
  const PtxModule m = emit_and_assemble(kernels, "round");
  // libdevice's __nv_rintf became llvm.round (half away from zero) in LLVM 16's upgrade of
  // llvm.nvvm.round.f: -0.5 gave -1 on the GPU (test_gpu.py enumerates every half value).
  EXPECT_EQ(m.llvm_ir.find("@llvm.round."), std::string::npos) << m.llvm_ir;
  EXPECT_NE(m.ptx.find("cvt.rni.f32.f32"), std::string::npos) << m.ptx;
}

// Zero-size tensors: every mapping (pointwise, rows, columns, a full reduction) emits,
// assembles and launches one block that does nothing (grids are at least 1).
TEST_F(NvptxEmit, ZeroSizeKernelsEmitAndLaunchNothing) {
  const auto kernels = gpu_kernels(R"(  buffer %in0: float32[0, 64]{64, 1} input 0 cuda
  buffer %in1: float32[64, 0]{0, 1} input 1 cuda
  buffer %1: float32[0, 64]{64, 1} computed cuda
  buffer %2: float32[0]{1} computed cuda
  buffer %3: float32[64]{1} computed cuda
  buffer %4: float32[64]{1} computed cuda
  buffer %5: float32[0]{1} computed cuda
  buffer %6: float32[]{} computed cuda
  compute %1 (node 1) pointwise[0, 64] = exp(load(%in0, [i0, i1]))
  compute %2 (node 2) reduce sum[0] over [64] = load(%in0, [i0, r0])
  compute %3 (node 3) reduce sum[64] over [0] = load(%in0, [r0, i0])
  compute %4 (node 4) reduce max[64] over [0] = load(%in1, [i0, r0])
  compute %5 (node 5) reduce welford_m2[0] over [64] = load(%in0, [i0, r0])
  compute %6 (node 6) reduce sum[] over [0, 64] = load(%in0, [r0, r1])
  output %1, %2, %3, %4, %5, %6
)");
  ASSERT_FALSE(kernels.empty());
  const PtxModule m = emit_and_assemble(kernels, "zero_size");
  for (const GpuLaunch& l : m.launches) {
    EXPECT_GE(l.grid[0], 1) << l.name;
    EXPECT_GE(l.block[0], 1) << l.name;
  }
}

TEST_F(NvptxEmit, IntegerAndBoolPointwise) {
  const auto kernels = gpu_kernels(R"(  buffer %in0: int64[1000]{1} input 0 cuda
  buffer %in1: int64[1000]{1} input 1 cuda
  buffer %in2: int8[1000]{1} input 2 cuda
  buffer %1: int64[1000]{1} computed cuda
  buffer %2: bool[1000]{1} computed cuda
  buffer %3: float64[1000]{1} computed cuda
  compute %1 (node 1) pointwise[1000] = add(floordiv(load(%in0, [i0]), add(abs(load(%in1, [i0])), 1:int64)), remainder(load(%in0, [i0]), add(abs(load(%in1, [i0])), 1:int64)))
  compute %2 (node 2) pointwise[1000] = logical_and(gt(load(%in2, [i0]), 0:int8), lt(load(%in0, [i0]), 5:int64))
  compute %3 (node 3) pointwise[1000] = log1p(abs(cast(load(%in0, [i0]), float64)))
  output %1, %2, %3
)");
  emit_and_assemble(kernels, "int_bool");
}

TEST_F(NvptxEmit, TransposeIsOneFlatLoop) {
  const auto kernels = gpu_kernels(R"(  buffer %in0: float32[512, 256]{256, 1} input 0 cuda
  buffer %1: float32[256, 512]{512, 1} computed cuda
  compute %1 (node 1) pointwise[256, 512] = load(%in0, [i1, i0])
  output %1
)");
  EXPECT_TRUE(schedule_has(kernels, "gpu(threads=1)"));
  emit_and_assemble(kernels, "transpose");
}

TEST_F(NvptxEmit, LayoutCopyFollowsTheStore) {
  // NCHW -> NHWC (a convolution input going channels-last): the threads walk the output in
  // memory order, so a warp writes whole sectors and gathers its reads from the 3 planes.
  const auto kernels = gpu_kernels(R"(  buffer %in0: float32[2, 3, 8, 8]{192, 64, 8, 1} input 0 cuda
  buffer %1: float32[2, 3, 8, 8]{192, 1, 24, 3} computed cuda
  compute %1 (node 1) pointwise[2, 3, 8, 8] = load(%in0, [i0, i1, i2, i3])
  output %1
)");
  EXPECT_TRUE(schedule_has(kernels, "%1[xf] = "));
  emit_and_assemble(kernels, "layout_copy");
}

// Scheduled kernels written as text, in the CPU's shape (the emitter maps any top loop).
TEST_F(NvptxEmit, MaskedAndIndirectLoads) {
  std::vector<ir::Kernel> kernels;
  for (const char* text : {
           R"(kernel pad(%a: float32 in, %o: float32 out) symbols(s0) {
  for x0 in 0..s0 + 4 vector(4) gpu(threads=1) {
    %o[x0] = add(load(%a, [x0 - 2], mask=(2 <= x0)*(x0 < s0 + 2)), 1.0:float32)
  }
})",
           R"(kernel gather(%src: float32 in, %idx: int64 in, %o: float32 out) symbols(s0, s1) {
  for x0 in 0..s0 vector(4) {
    %o[x0] = load(%src, [%ind0], indirect=[load(%idx, [x0])], bounds=[s1])
  }
})",
           R"(kernel embed(%w: bfloat16 in, %idx: int32 in, %o: bfloat16 out) symbols(s0, s1) {
  for x0 in 0..s0 parallel {
    for x1 in 0..8 vector(4) {
      %o[x0*8 + x1] = load(%w, [%ind0*8 + x1], indirect=[load(%idx, [x0])], bounds=[s1])
    }
  }
})"}) {
    kernels.push_back(ir::parse_kernel(text));
  }
  const PtxModule m = emit_and_assemble(kernels, "masked_indirect");
  EXPECT_EQ(m.launches[1].grid[0], 1024) << "symbolic extent: a fixed grid-stride grid";
}

TEST_F(NvptxEmit, UnsupportedConstructThrowsNamingTheKernel) {
  const ir::Kernel k = ir::parse_kernel(R"(kernel ipow(%a: int64 in, %o: int64 out) {
  for x0 in 0..16 {
    %o[x0] = pow(load(%a, [x0]), load(%a, [x0]))
  }
})");
  try {
    emit_ptx({k}, GpuTarget{}, default_libdevice_path());
    FAIL() << "expected std::runtime_error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("ipow"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("pow"), std::string::npos) << e.what();
  }
}

// Random programs (tests/cpp/random_program.h): the GPU schedule computes the same as the
// lowered program, and every kernel emits; a few are assembled.
TEST_F(NvptxEmit, RandomProgramsScheduleAndEmit) {
  constexpr uint64_t kPrograms = 25;
  int failures = 0;
  for (uint64_t seed = 1; seed <= kPrograms && failures < 3; ++seed) {
    ir::testing::RandomProgram r = ir::testing::random_program(seed);
    std::string problem;
    try {
      problem = gpu_schedule_mismatch(r.text, r.check);
      const std::vector<ir::Kernel> kernels = gpu_scheduled_kernels(r.text, r.check.options);
      if (kernels.empty()) continue;
      if (seed % 10 == 0) {
        emit_and_assemble(kernels, "random" + std::to_string(seed));
      } else {
        emit_ptx(kernels, GpuTarget{}, default_libdevice_path());
      }
    } catch (const std::exception& e) {
      problem = std::string("threw: ") + e.what() + "\n" + r.text;
    }
    if (problem.empty()) continue;
    ++failures;
    ADD_FAILURE() << "random program " << seed << ": " << problem;
  }
}

TEST(NvptxVersion, LlvmVersionAndLibdevicePath) {
  EXPECT_EQ(llvm_version().rfind("16.", 0), 0u) << llvm_version();
  EXPECT_NE(default_libdevice_path().find("libdevice.10.bc"), std::string::npos);
}

// The GPU attribute round-trips through the text form and is absent from CPU schedules.
TEST(NvptxSchedule, GpuAttributeRoundTripsAndCpuTextIsUnchanged) {
  const std::string text = R"(kernel k(%a: float32 in, %o: float32 out) {
  for x0 in 0..64 parallel gpu(threads=128) {
    %o[x0] = load(%a, [x0])
  }
}
)";
  EXPECT_EQ(ir::kernel_to_text(ir::parse_kernel(text)), text);
  ir::PipelineOptions cpu;
  const ir::PipelineResult r = ir::run_pipeline(ir::parse_program(R"(program {
  buffer %in0: float32[32, 512]{512, 1} input 0 cpu
  buffer %1: float32[32]{1} computed cpu
  compute %1 (node 1) reduce sum[32] over [512] = load(%in0, [i0, r0])
  kernel %1
  output %1
}
)"),
                                                cpu);
  EXPECT_EQ(ir::scheduled_to_text(r.scheduled).find("gpu("), std::string::npos);
}

}  // namespace
}  // namespace inductor_cpp::codegen::nvptx::emit_test
