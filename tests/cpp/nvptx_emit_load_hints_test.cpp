/// \file
/// NVPTX emitter, load hints: which loads read their data once (L1::no_allocate), rows kept in
/// L2 (evict_last), on the GPU micro benchmark's kernels and small cases.
#include <set>

#include "tests/cpp/nvptx_emit_test_util.h"

namespace inductor_cpp::codegen::nvptx::emit_test {
namespace {

// The GPU micro benchmark's kernels (python -m inductor_cpp.bench gpu: 16384 x 8192 float32), as
// its decomposed graphs lower them; too big for the reference interpreter, so emitted only.
TEST_F(NvptxEmit, BenchmarkKernelsAssemble) {
  const std::string x = "  buffer %in0: float32[16384, 8192]{8192, 1} input 0 cuda\n";
  const auto pointwise = gpu_kernels(x + R"(  buffer %1: float32[16384, 8192]{8192, 1} computed cuda
  compute %1 (node 1) pointwise[16384, 8192] = sub(mul(mul(mul(add(mul(load(%in0, [i0, i1]), 1.5:float32), 0.25:float32), 0.5:float32), add(erf(mul(add(mul(load(%in0, [i0, i1]), 1.5:float32), 0.25:float32), 0.7071067811865476:float32)), 1.0:float32)), sigmoid(load(%in0, [i0, i1]))), tanh(load(%in0, [i0, i1])))
  output %1
)",
                                     {}, false);
  const PtxModule pointwise_module = emit_and_assemble(pointwise, "bench_pointwise");
  // One vector loop (the alignment test hoisted before it), sigmoid's reciprocal without
  // div.full, erf/tanh tails signed by bit operations (emit_special_nvptx.cpp).
  EXPECT_EQ(occurrences(pointwise_module.ptx, "ld.global.v4.f32"), 1u) << pointwise_module.ptx;
  EXPECT_EQ(occurrences(pointwise_module.ptx, "div.full.f32"), 0u) << pointwise_module.ptx;
  EXPECT_EQ(occurrences(pointwise_module.llvm_ir, "llvm.copysign"), 0u);
  const auto softmax = gpu_kernels(x + R"(  buffer %1: float32[16384]{1} computed cuda
  buffer %2: float32[16384]{1} computed cuda
  buffer %3: float32[16384, 8192]{8192, 1} computed cuda
  compute %1 (node 1) reduce max[16384] over [8192] = load(%in0, [i0, r0])
  compute %2 (node 2) reduce sum[16384] over [8192] = exp(sub(load(%in0, [i0, r0]), load(%1, [i0])))
  compute %3 (node 3) pointwise[16384, 8192] = div(exp(sub(load(%in0, [i0, i1]), load(%1, [i0]))), load(%2, [i0]))
  output %3
)",
                                   {}, false);
  const PtxModule softmax_module = emit_and_assemble(softmax, "bench_softmax");
  ASSERT_EQ(softmax_module.launches.size(), 1u);
  EXPECT_EQ(softmax_module.launches[0].block[0], 512) << "softmax keeps the schedule's 512 x 4";
  // layer_norm's row statistics (sum, M2, rstd), then the normalized rows (%4).
  const std::string stats = R"(  buffer %1: float32[16384]{1} computed cuda
  buffer %2: float32[16384]{1} computed cuda
  buffer %3: float32[16384]{1} computed cuda
  buffer %4: float32[16384, 8192]{8192, 1} computed cuda
  compute %1 (node 1) reduce sum[16384] over [8192] = load(%in0, [i0, r0])
  compute %2 (node 2) reduce welford_m2[16384] over [8192] = load(%in0, [i0, r0])
  compute %3 (node 3) pointwise[16384] = rsqrt(add(div(load(%2, [i0]), 8192.0:float32), 1e-05:float32))
)";
  const auto layernorm = gpu_kernels(
      x + stats +
          R"(  compute %4 (node 4) pointwise[16384, 8192] = mul(sub(load(%in0, [i0, i1]), div(load(%1, [i0]), 8192.0:float32)), load(%3, [i0]))
  output %4
)",
      {}, false);
  const PtxModule layernorm_module = emit_and_assemble(layernorm, "bench_layernorm");
  // layer_norm(x, (C,), w, b) as the benchmark calls it: the weight and bias per column.
  const auto affine = gpu_kernels(
      x + R"(  buffer %w: float32[8192]{1} input 1 cuda
  buffer %b: float32[8192]{1} input 2 cuda
)" + stats +
          R"(  compute %4 (node 4) pointwise[16384, 8192] = add(mul(mul(sub(load(%in0, [i0, i1]), div(load(%1, [i0]), 8192.0:float32)), load(%3, [i0])), load(%w, [i1])), load(%b, [i1]))
  output %4
)",
      {}, false);
  const PtxModule affine_module = emit_and_assemble(affine, "bench_layernorm_affine");
  EXPECT_EQ(affine_module.launches.at(0).block[0], 256);
  // The row's 8 chunks per thread with the L2 evict_last policy; weight and bias (the same
  // for every row) stay plain 128-bit loads.
  EXPECT_EQ(occurrences(affine_module.ptx, "ld.global.L2::cache_hint.v4.b32"), 8u)
      << affine_module.ptx;
  EXPECT_GE(occurrences(affine_module.ptx, "ld.global.v4.f32"), 16u) << affine_module.ptx;
  ASSERT_EQ(layernorm_module.launches.size(), 1u);
  EXPECT_EQ(layernorm_module.launches[0].block[0], 256) << "a Welford row: 256 threads x 8 chunks";
  EXPECT_EQ(layernorm_module.launches[0].grid[0], 16384);
  const auto sums = gpu_kernels(x + R"(  buffer %1: float32[16384]{1} computed cuda
  buffer %2: float32[8192]{1} computed cuda
  compute %1 (node 1) reduce sum[16384] over [8192] = load(%in0, [i0, r0])
  compute %2 (node 2) reduce sum[8192] over [16384] = load(%in0, [r0, i0])
  output %1, %2
)",
                                {}, false);
  EXPECT_TRUE(schedule_has(sums, "for x0 in 0..8192 parallel gpu(threads=32) {"));
  const PtxModule sums_module = emit_and_assemble(sums, "bench_sums");
  // sum(0): 2048 groups of 4 columns (128-bit loads), 32 thread rows (T counts groups) x 16
  // groups per block (256 bytes of each row), 128 blocks of 512.
  ASSERT_EQ(sums_module.launches.size(), 2u);
  EXPECT_EQ(sums_module.launches[0].block[0], 512) << "sum(-1) rows keep 512 threads";
  EXPECT_EQ(sums_module.launches[1].block[0], 512);
  EXPECT_EQ(sums_module.launches[1].grid[0], 8192 / 64);
  // Both sums read each element once: 128-bit loads that skip L1 (inline PTX), unrolled 16
  // in sum(0), none plain.
  EXPECT_GE(occurrences(sums_module.ptx, "ld.global.L1::no_allocate.v4.b32"), 16u + 1u)
      << sums_module.ptx;
  EXPECT_EQ(occurrences(sums_module.ptx, "ld.global.v4.f32"), 0u) << sums_module.ptx;
  EXPECT_EQ(occurrences(sums_module.ptx, "cache_hint"), 0u) << "rows only reduced: no policy";
  GpuTarget plain;
  plain.read_once_hints = 0;
  const PtxModule plain_sums = emit_ptx(sums, plain, default_libdevice_path());
  EXPECT_EQ(occurrences(plain_sums.ptx, "no_allocate"), 0u);
  EXPECT_GE(occurrences(plain_sums.ptx, "ld.global.v4.f32"), 16u + 1u) << plain_sums.ptx;
  // The other qualifier sets assemble too (sm_90).
  for (int level = 2; level <= 4; ++level) {
    GpuTarget hinted;
    hinted.read_once_hints = level;
    const PtxModule m = emit_ptx(sums, hinted, default_libdevice_path());
    EXPECT_GE(occurrences(m.ptx, "L1::no_allocate"), 16u + 1u) << m.ptx;
    if (!ptxas_path().empty()) {
      EXPECT_EQ(assemble(m.ptx, 90, "bench_sums_hints" + std::to_string(level)), "") << m.ptx;
    }
  }
  // Rows read by several loops (layer_norm's) keep L1.
  EXPECT_EQ(occurrences(layernorm_module.ptx, "no_allocate"), 0u);
  EXPECT_EQ(occurrences(affine_module.ptx, "no_allocate"), 0u);
}

// Which loads read their data exactly once (L1::no_allocate): every load of the buffer in one
// innermost loop with one index that uses every enclosing loop's variable, never stored.
TEST_F(NvptxEmit, ReadOnceLoads) {
  const std::string inputs = R"(  buffer %in0: float32[64, 1000]{1000, 1} input 0 cuda
  buffer %in1: float32[1000]{1} input 1 cuda
  buffer %in2: float32[64]{1} input 2 cuda
  buffer %1: float32[64]{1} computed cuda
)";
  auto read_once_buffers = [](const std::vector<ir::Kernel>& kernels) {
    std::set<std::string> out;
    for (const ir::Kernel& k : kernels) {
      for (const ir::ValueNode* n : loads_read_once(k)) out.insert(n->name);
    }
    return out;
  };
  // A row sum: %in0 is read once; %in1 (the same for every row) is not.
  const auto dot = gpu_kernels(
      inputs +
      R"(  compute %1 (node 1) reduce sum[64] over [1000] = mul(load(%in0, [i0, r0]), load(%in1, [r0]))
  output %1
)");
  EXPECT_EQ(read_once_buffers(dot), std::set<std::string>{"%in0"}) << kernels_text(dot);
  const PtxModule dot_module = emit_and_assemble(dot, "read_once_dot");
  EXPECT_GE(occurrences(dot_module.ptx, "ld.global.L1::no_allocate.v4.b32"), 1u) << dot_module.ptx;
  EXPECT_GE(occurrences(dot_module.ptx, "ld.global.v4.f32"), 1u) << "%in1 keeps L1";
  // Softmax-like: the row is read by the reduction loop and by the loop that stores (the
  // general version reads it twice); %in2 is read for every chunk of its row: neither is read once.
  const auto reread = gpu_kernels(inputs + R"(  buffer %2: float32[64, 1000]{1000, 1} computed cuda
  compute %1 (node 1) reduce sum[64] over [1000] = mul(load(%in0, [i0, r0]), load(%in2, [i0]))
  compute %2 (node 2) pointwise[64, 1000] = div(load(%in0, [i0, i1]), load(%1, [i0]))
  output %2
)");
  ASSERT_EQ(reread.size(), 1u) << kernels_text(reread);
  EXPECT_EQ(read_once_buffers(reread), std::set<std::string>{}) << kernels_text(reread);
  // Hinted loads stay where the emitter put them, behind the row's alignment check: rows of
  // 10 floats start 16-byte aligned only every other row. (Inline asm without side effects
  // was hoisted by LLVM's machine passes above the check: misaligned 128-bit loads on the
  // GPU, seen in OpInfo's triplet_margin_loss on 5 x 10.)
  const auto short_rows = gpu_kernels(R"(  buffer %in0: float32[5, 10]{10, 1} input 0 cuda
  buffer %in1: float32[5, 10]{10, 1} input 1 cuda
  buffer %1: float32[5]{1} computed cuda
  compute %1 (node 1) reduce sum[5] over [10] = mul(load(%in0, [i0, r0]), load(%in1, [i0, r0]))
  output %1
)");
  EXPECT_EQ(read_once_buffers(short_rows), (std::set<std::string>{"%in0", "%in1"}));
  const PtxModule short_module = emit_and_assemble(short_rows, "read_once_short_rows");
  const size_t first_hinted = short_module.ptx.find("ld.global.L1::no_allocate");
  const size_t alignment_mask = short_module.ptx.find(", 15;");  // address & 15
  ASSERT_NE(short_module.ptx.find("ld.global.L1::no_allocate.v4"), std::string::npos)
      << short_module.ptx;
  ASSERT_NE(alignment_mask, std::string::npos) << short_module.ptx;
  EXPECT_LT(short_module.ptx.find("bra", alignment_mask), first_hinted)
      << "a hinted load hoisted above the branches that guard it" << short_module.ptx;
  EXPECT_NE(short_module.llvm_ir.find("asm sideeffect \"ld.global.L1::no_allocate"),
            std::string::npos);
  // A pointwise kernel has no loop under its top loop: nothing is marked.
  const auto pointwise = gpu_kernels(R"(  buffer %in0: float32[64, 1000]{1000, 1} input 0 cuda
  buffer %1: float32[64, 1000]{1000, 1} computed cuda
  compute %1 (node 1) pointwise[64, 1000] = exp(load(%in0, [i0, i1]))
  output %1
)");
  EXPECT_EQ(read_once_buffers(pointwise), std::set<std::string>{}) << kernels_text(pointwise);
}

}  // namespace
}  // namespace inductor_cpp::codegen::nvptx::emit_test
