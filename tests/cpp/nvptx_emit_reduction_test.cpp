/// \file
/// NVPTX emitter, reductions: inner rows over warp shuffles, short rows sharing a block, outer
/// reductions over thread rows and column groups per dtype, Welford and argmax, layer norm and
/// softmax as one kernel, full reductions, and rows kept in registers (persistent rows).
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "tests/cpp/nvptx_emit_test_util.h"

namespace inductor_cpp::codegen::nvptx::emit_test {
namespace {

/// The text of the LLVM IR blocks reachable from block `from` without passing through block
/// `stop` (labels and `br`/`switch` targets of the printed IR; one function per module).
std::string reachable_blocks(const std::string& ir, const std::string& from,
                             const std::string& stop) {
  std::map<std::string, std::string> blocks;  // label -> body text
  std::string label, line;
  std::istringstream in(ir);
  const std::regex label_line(R"(^([A-Za-z0-9._]+):.*)");
  std::smatch match;
  while (std::getline(in, line)) {
    if (std::regex_match(line, match, label_line)) label = match[1];
    if (!label.empty()) blocks[label] += line + "\n";
  }
  const std::regex target(R"(label %([A-Za-z0-9._]+))");
  std::vector<std::string> work{from};
  std::set<std::string> seen{from};
  std::string text;
  while (!work.empty()) {
    const std::string b = work.back();
    work.pop_back();
    text += blocks[b];
    for (std::sregex_iterator it(blocks[b].begin(), blocks[b].end(), target), end; it != end;
         ++it) {
      const std::string next = (*it)[1];
      if (next != stop && seen.insert(next).second) work.push_back(next);
    }
  }
  return text;
}

TEST_F(NvptxEmit, InnerReductionUsesWarpShuffles) {
  const auto kernels = gpu_kernels(R"(  buffer %in0: float32[32, 512]{512, 1} input 0 cuda
  buffer %1: float32[32]{1} computed cuda
  compute %1 (node 1) reduce sum[32] over [512] = load(%in0, [i0, r0])
  output %1
)");
  EXPECT_TRUE(schedule_has(kernels, "for x0 in 0..32 parallel gpu(threads=128) {"));
  EXPECT_TRUE(schedule_has(kernels, "for y0 in 0..512 vector(4) {"));
  const PtxModule m = emit_and_assemble(kernels, "sum_inner");
  EXPECT_NE(m.ptx.find("shfl.sync.down"), std::string::npos) << m.ptx;
  EXPECT_NE(m.ptx.find("bar.sync"), std::string::npos) << m.ptx;
  EXPECT_TRUE(has_vector_load(m.ptx, "v4.f32", "v4.b32")) << m.ptx;
  EXPECT_EQ(m.launches[0].block[0], 128);
  EXPECT_EQ(m.launches[0].grid[0], 32);
}

TEST_F(NvptxEmit, ShortRowsShareABlock) {
  const auto kernels = gpu_kernels(R"(  buffer %in0: float32[4096, 16]{16, 1} input 0 cuda
  buffer %1: float32[4096]{1} computed cuda
  compute %1 (node 1) reduce max[4096] over [16] = load(%in0, [i0, r0])
  output %1
)");
  const PtxModule m = emit_and_assemble(kernels, "max_short_rows");
  EXPECT_TRUE(schedule_has(kernels, "gpu(threads=8)"));
  EXPECT_EQ(m.launches[0].block[0], 128);
  EXPECT_EQ(m.launches[0].grid[0], 4096 / 16);
  EXPECT_NE(m.ptx.find("shfl.sync.idx"), std::string::npos) << "broadcast from each row's leader";
  EXPECT_EQ(m.ptx.find("bar.sync"), std::string::npos) << "warp-only combine";
}

TEST_F(NvptxEmit, OuterReductionSplitsRowsOverThreadRows) {
  // sum(0): 32 thread rows per group of 4 columns (each thread 32 rows, one 128-bit load per
  // row), 8 groups per block of 256 threads laid along the columns; partial sums combined
  // through shared memory in thread-row order, column by column.
  const auto kernels = gpu_kernels(R"(  buffer %in0: float32[1024, 256]{256, 1} input 0 cuda
  buffer %1: float32[256]{1} computed cuda
  compute %1 (node 1) reduce sum[256] over [1024] = load(%in0, [r0, i0])
  output %1
)");
  EXPECT_TRUE(schedule_has(kernels, "for x0 in 0..256 parallel gpu(threads=32) {"));
  const PtxModule m = emit_and_assemble(kernels, "sum_outer");
  EXPECT_EQ(m.ptx.find("shfl.sync"), std::string::npos)
      << "threads of a column are in different warps";
  EXPECT_NE(m.ptx.find("bar.sync"), std::string::npos) << m.ptx;
  EXPECT_NE(m.ptx.find("kernel0_columns"), std::string::npos) << m.ptx;
  EXPECT_TRUE(has_vector_load(m.ptx, "v4.f32", "v4.b32")) << m.ptx;
  EXPECT_NE(m.ptx.find("st.global.v4.f32"), std::string::npos) << m.ptx;
  EXPECT_EQ(m.launches[0].block[0], 256);
  EXPECT_EQ(m.launches[0].grid[0], 256 / 4 / 8);
  // Column-group kernels wait for their predecessor but let the next kernel launch only as
  // their blocks exit (GpuTarget::programmatic_launch 1; measured on sum(0)).
  EXPECT_TRUE(m.launches[0].programmatic);
  EXPECT_NE(m.ptx.find("griddepcontrol.wait;"), std::string::npos) << m.ptx;
  EXPECT_EQ(m.ptx.find("griddepcontrol.launch_dependents"), std::string::npos) << m.ptx;
  GpuTarget everywhere;  // mode 3: the early trigger in column-group kernels too
  everywhere.programmatic_launch = 3;
  EXPECT_NE(emit_ptx(kernels, everywhere, default_libdevice_path())
                .ptx.find("griddepcontrol.launch_dependents;"),
            std::string::npos);
}

// Column groups of 16 bytes of the widest contiguous element: 8 float16 columns per group (a
// 128-bit load per row, float32 accumulators per column), 2 float64, and 2 float32 columns when
// an int64 argmax is stored next to them; 130 float32 columns (520-byte rows) stay one column
// per group.
TEST_F(NvptxEmit, OuterReductionVectorLanesPerDtype) {
  auto ptx = [&](const std::string& lines, const std::string& name) {
    const auto kernels = gpu_kernels(lines);
    return kernels_text(kernels) + emit_and_assemble(kernels, name).ptx;
  };
  const std::string half = ptx(R"(  buffer %in0: float16[256, 64]{64, 1} input 0 cuda
  buffer %1: float16[64]{1} computed cuda
  compute %1 (node 1) reduce sum[64] over [256] = load(%in0, [r0, i0])
  output %1
)",
                               "columns_f16");
  EXPECT_TRUE(has_vector_load(half, "v4.b32", "v4.b32")) << half;
  const std::string f64 = ptx(R"(  buffer %in0: float64[256, 64]{64, 1} input 0 cuda
  buffer %1: float64[64]{1} computed cuda
  compute %1 (node 1) reduce max[64] over [256] = load(%in0, [r0, i0])
  output %1
)",
                              "columns_f64");
  EXPECT_TRUE(has_vector_load(f64, "v2.f64", "v4.b32")) << f64;
  const std::string mixed = ptx(R"(  buffer %in0: float32[256, 64]{64, 1} input 0 cuda
  buffer %1: float32[64]{1} computed cuda
  buffer %2: int64[64]{1} computed cuda
  compute %1 (node 1) reduce welford_m2[64] over [256] = load(%in0, [r0, i0])
  compute %2 (node 2) reduce argmax[64] over [256] = load(%in0, [r0, i0])
  output %1, %2
)",
                                "columns_mixed");
  EXPECT_TRUE(has_vector_load(mixed, "v2.f32", "v2.b32")) << mixed;
  EXPECT_NE(mixed.find("st.global.v2.u64"), std::string::npos) << mixed;
  // Epilogues per column lane: the column sum divided by the column max, a let per lane.
  const std::string epilogue = ptx(R"(  buffer %in0: float32[256, 64]{64, 1} input 0 cuda
  buffer %1: float32[64]{1} computed cuda
  buffer %2: float32[64]{1} computed cuda
  buffer %3: float32[64]{1} computed cuda
  compute %1 (node 1) reduce sum[64] over [256] = mul(load(%in0, [r0, i0]), 3.0:float32)
  compute %2 (node 2) reduce max[64] over [256] = load(%in0, [r0, i0])
  compute %3 (node 3) pointwise[64] = div(load(%1, [i0]), add(load(%2, [i0]), 1.0:float32))
  output %3
)",
                                   "columns_epilogue");
  EXPECT_TRUE(has_vector_load(epilogue, "v4.f32", "v4.b32")) << epilogue;
  EXPECT_NE(epilogue.find("div.full.f32"), std::string::npos) << epilogue;
  const std::string odd = ptx(R"(  buffer %in0: float32[256, 130]{130, 1} input 0 cuda
  buffer %1: float32[130]{1} computed cuda
  compute %1 (node 1) reduce sum[130] over [256] = load(%in0, [r0, i0])
  output %1
)",
                              "columns_odd");
  EXPECT_EQ(odd.find("ld.global.v"), std::string::npos) << odd;
}

TEST_F(NvptxEmit, OuterReductionOfFewRowsIsOneThreadPerColumn) {
  const auto kernels = gpu_kernels(R"(  buffer %in0: float32[32, 4096]{4096, 1} input 0 cuda
  buffer %1: float32[4096]{1} computed cuda
  buffer %2: int64[4096]{1} computed cuda
  compute %1 (node 1) reduce sum[4096] over [32] = load(%in0, [r0, i0])
  compute %2 (node 2) reduce argmax[4096] over [32] = load(%in0, [r0, i0])
  output %1, %2
)");
  EXPECT_TRUE(schedule_has(kernels, "gpu(threads=1)"));
  const PtxModule m = emit_and_assemble(kernels, "sum_outer_short");
  EXPECT_EQ(m.ptx.find("shfl.sync"), std::string::npos);
}

TEST_F(NvptxEmit, OuterWelfordAndArgmaxCombineAlongColumns) {
  const auto kernels = gpu_kernels(R"(  buffer %in0: float32[4096, 64]{64, 1} input 0 cuda
  buffer %1: float32[64]{1} computed cuda
  buffer %2: int64[64]{1} computed cuda
  compute %1 (node 1) reduce welford_m2[64] over [4096] = load(%in0, [r0, i0])
  compute %2 (node 2) reduce argmax[64] over [4096] = load(%in0, [r0, i0])
  output %1, %2
)");
  EXPECT_TRUE(schedule_has(kernels, "parallel gpu(threads=32) {"));
  const PtxModule m = emit_and_assemble(kernels, "welford_outer");
  EXPECT_EQ(m.launches[0].block[0], 256);
}

TEST_F(NvptxEmit, ArgmaxAnyAndInt64Sum) {
  const auto kernels = gpu_kernels(R"(  buffer %in0: float32[64, 1000]{1000, 1} input 0 cuda
  buffer %in1: int64[64, 1000]{1000, 1} input 1 cuda
  buffer %1: int64[64]{1} computed cuda
  buffer %2: bool[64]{1} computed cuda
  buffer %3: int64[64]{1} computed cuda
  compute %1 (node 1) reduce argmax[64] over [1000] = load(%in0, [i0, r0])
  compute %2 (node 2) reduce any[64] over [1000] = gt(load(%in0, [i0, r0]), 0.5:float32)
  compute %3 (node 3) reduce sum[64] over [1000] = load(%in1, [i0, r0])
  output %1, %2, %3
)");
  emit_and_assemble(kernels, "argmax_any");
}

TEST_F(NvptxEmit, LayerNormAndFloat16Welford) {
  const auto kernels = gpu_kernels(R"(  buffer %in0: float32[32, 512]{512, 1} input 0 cuda
  buffer %in1: float16[8, 3000]{3000, 1} input 1 cuda
  buffer %1: float32[32]{1} computed cuda
  buffer %2: float32[32]{1} computed cuda
  buffer %3: float32[32]{1} computed cuda
  buffer %4: float32[32, 512]{512, 1} computed cuda
  buffer %5: float16[8]{1} computed cuda
  compute %1 (node 1) reduce sum[32] over [512] = load(%in0, [i0, r0])
  compute %2 (node 2) reduce welford_m2[32] over [512] = load(%in0, [i0, r0])
  compute %3 (node 3) pointwise[32] = rsqrt(add(div(load(%2, [i0]), 512.0:float32), 1e-05:float32))
  compute %4 (node 4) pointwise[32, 512] = mul(sub(load(%in0, [i0, i1]), div(load(%1, [i0]), 512.0:float32)), load(%3, [i0]))
  compute %5 (node 5) reduce welford_m2[8] over [3000] = load(%in1, [i0, r0])
  output %4, %3, %5
)");
  emit_and_assemble(kernels, "layernorm");
}

// convnext's layer norm: over the channels of an NCHW tensor [2, 8, 3, 5], written NHWC. The
// reads move along the flattened N, H*W positions only within runs of 15 (coefficient_of sees
// `xf % 15`); they, not the NHWC stores, pick the mapping: one thread per position (each warp
// load reads neighbouring positions), vector stores along the channels.
TEST_F(NvptxEmit, ChannelLayerNormOfNchwMapsPositionsToThreads) {
  const auto kernels = gpu_kernels(R"(  buffer %in0: float32[2, 8, 3, 5]{120, 15, 5, 1} input 0 cuda
  buffer %1: float32[2, 3, 5]{15, 5, 1} computed cuda
  buffer %2: float32[2, 3, 5]{15, 5, 1} computed cuda
  buffer %3: float32[2, 3, 5, 8]{120, 40, 8, 1} computed cuda
  compute %1 (node 1) reduce sum[2, 3, 5] over [8] = load(%in0, [i0, r0, i1, i2])
  compute %2 (node 2) reduce welford_m2[2, 3, 5] over [8] = load(%in0, [i0, r0, i1, i2])
  compute %3 (node 3) pointwise[2, 3, 5, 8] = mul(sub(load(%in0, [i0, i3, i1, i2]), div(load(%1, [i0, i1, i2]), 8.0:float32)), rsqrt(add(div(load(%2, [i0, i1, i2]), 8.0:float32), 1e-05:float32)))
  output %3
)");
  EXPECT_TRUE(schedule_has(kernels, "for xf in 0..30 parallel gpu(threads=1) {")) << kernels_text(kernels);
  EXPECT_TRUE(schedule_has(kernels, "for y0 in 0..8 vector(4) {")) << kernels_text(kernels);
  const PtxModule m = emit_and_assemble(kernels, "channel_layer_norm");
  EXPECT_NE(m.ptx.find("st.global.v4.f32"), std::string::npos) << m.ptx;
}

// The first stage of a few-column split over an NHWC tensor: per (image, channel) partial
// sums over the pixels, times a per-pixel value (a layer norm's mean). The per-pixel load is
// contiguous along the pixels but stays put across neighbouring channels: the channels, read
// 32 to a warp load, go to threads (thread rows over the pixels), not 256 threads per
// (image, channel) striding 16 floats per load; four channels to a thread when the runs of
// channels hold whole 128-bit vectors.
TEST_F(NvptxEmit, ChannelsLastPartSumsWithPerPixelFactorsWalkDownColumns) {
  const auto kernels = gpu_kernels(R"(  buffer %in0: float32[2, 16, 32, 32]{16384, 1, 512, 16} input 0 cuda
  buffer %in1: float32[2, 32, 32]{1024, 32, 1} input 1 cuda
  buffer %1: float32[2, 16]{16, 1} computed cuda
  compute %1 (node 1) reduce sum[2, 16] over [32, 32] = mul(load(%in0, [i0, i1, r0, r1]), load(%in1, [i0, r0, r1]))
  output %1
)");
  EXPECT_TRUE(schedule_has(kernels, "for xf in 0..32 parallel gpu(threads=32) {")) << kernels_text(kernels);
  EXPECT_TRUE(schedule_has(kernels, "for y1 in 0..1024 {")) << "thread rows, no vector chunks along the pixels";
  const PtxModule m = emit_and_assemble(kernels, "channels_last_part_sums");
  EXPECT_NE(m.ptx.find("kernel0_columns"), std::string::npos) << m.ptx;
  // Runs of 16 channels hold whole chunks of 4: 128-bit loads down the channels (the
  // per-pixel value, the same in every lane, is one scalar load).
  EXPECT_TRUE(has_vector_load(m.ptx, "v4.f32", "v4.b32")) << m.ptx;
  EXPECT_EQ(m.launches[0].block[0] % 32, 0);
}

TEST_F(NvptxEmit, SoftmaxIsOneMultiLoopKernel) {
  const auto kernels = gpu_kernels(R"(  buffer %in0: float32[64, 1000]{1000, 1} input 0 cuda
  buffer %1: float32[64]{1} computed cuda
  buffer %2: float32[64]{1} computed cuda
  buffer %3: float32[64, 1000]{1000, 1} computed cuda
  compute %1 (node 1) reduce max[64] over [1000] = load(%in0, [i0, r0])
  compute %2 (node 2) reduce sum[64] over [1000] = exp(sub(load(%in0, [i0, r0]), load(%1, [i0])))
  compute %3 (node 3) pointwise[64, 1000] = div(exp(sub(load(%in0, [i0, i1]), load(%1, [i0]))), load(%2, [i0]))
  output %3
)");
  const PtxModule m = emit_and_assemble(kernels, "softmax");
  EXPECT_NE(m.ptx.find("shfl.sync.down"), std::string::npos) << m.ptx;
}

TEST_F(NvptxEmit, FullReductionRunsOnOneBlock) {
  const auto kernels = gpu_kernels(R"(  buffer %in0: float32[3000]{1} input 0 cuda
  buffer %1: float32[]{} computed cuda
  compute %1 (node 1) reduce sum[] over [3000] = load(%in0, [r0])
  output %1
)");
  const PtxModule m = emit_and_assemble(kernels, "sum_all");
  ASSERT_FALSE(m.launches.empty());
  EXPECT_EQ(m.launches.back().grid[0], 1);
}

TEST_F(NvptxEmit, PersistentRowsAreLoadedOnce) {
  // Softmax over 768: 192 chunks of 4 split evenly over 64 threads (3 each), so the row stays
  // in registers across the max, sum and normalize loops (one version; the general one runs
  // when the row is misaligned).
  const auto kernels = gpu_kernels(R"(  buffer %in0: float32[64, 768]{768, 1} input 0 cuda
  buffer %1: float32[64]{1} computed cuda
  buffer %2: float32[64]{1} computed cuda
  buffer %3: float32[64, 768]{768, 1} computed cuda
  compute %1 (node 1) reduce max[64] over [768] = load(%in0, [i0, r0])
  compute %2 (node 2) reduce sum[64] over [768] = exp(sub(load(%in0, [i0, r0]), load(%1, [i0])))
  compute %3 (node 3) pointwise[64, 768] = div(exp(sub(load(%in0, [i0, i1]), load(%1, [i0]))), load(%2, [i0]))
  output %3
)");
  EXPECT_TRUE(schedule_has(kernels, "for x0 in 0..64 parallel gpu(threads=64) {"));
  const PtxModule m = emit_and_assemble(kernels, "softmax_persistent");
  ASSERT_NE(m.llvm_ir.find("row.persistent:"), std::string::npos) << m.llvm_ir;
  // The persistent version: the blocks reached from row.persistent before row.done.
  const std::string persistent_part = reachable_blocks(m.llvm_ir, "row.persistent", "row.done");
  // The row is stored back: its loads carry the L2 evict_last policy (inline PTX, one
  // 128-bit load per chunk) instead of plain loads.
  EXPECT_EQ(occurrences(persistent_part, "load float, ptr addrspace(1)"), 0u) << persistent_part;
  EXPECT_EQ(occurrences(persistent_part, "asm sideeffect \"ld.global.L2::cache_hint.v4.b32"), 3u)
      << "three chunks of 4 per thread, loaded once for the three loops";
  EXPECT_EQ(occurrences(m.ptx, "createpolicy.fractional.L2::evict_last.b64"), 1u) << m.ptx;
  // The general version (a misaligned row) keeps plain loads.
  const std::string general_part = reachable_blocks(m.llvm_ir, "row.general", "row.done");
  EXPECT_EQ(occurrences(general_part, "cache_hint"), 0u);
  EXPECT_GT(occurrences(general_part, "ptr addrspace(1)"), 0u);
  // Before sm_80 there are no L2 cache policies: plain loads (still assembled by ptxas).
  GpuTarget sm75;
  sm75.sm = 75;
  const PtxModule old = emit_ptx(kernels, sm75, default_libdevice_path());
  EXPECT_EQ(occurrences(old.ptx, "cache_hint"), 0u) << old.ptx;
  EXPECT_EQ(occurrences(old.ptx, "createpolicy"), 0u);
  if (!ptxas_path().empty()) {
    EXPECT_EQ(assemble(old.ptx, 75, "softmax_persistent_sm75"), "");
  }
}

}  // namespace
}  // namespace inductor_cpp::codegen::nvptx::emit_test
