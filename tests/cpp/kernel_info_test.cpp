/// \file
/// Kernel metadata: the FLOP estimate on scheduled kernels (rows of a reduction, a split loop
/// whose tail counts its upper bound, welford's combine, shared subtrees counted once) and
/// the kernels.json round trip.
#include <gtest/gtest.h>

#include "inductor/kernel_info.h"
#include "ir/ir_text.h"

namespace inductor_cpp::inductor {
namespace {

int64_t flops(const std::string& text) {
  return estimate_flops(ir::parse_kernel(text));
}

TEST(KernelInfo, RowReductionCountsMathAndCombinePerElement) {
  EXPECT_EQ(flops(R"(kernel k(%in0: float32 in, %1: float32 out) {
  for x0 in 0..8 parallel {
    t0 = accumulator sum float32
    for y0 in 0..1024 vector(16) {
      t0 += exp(load(%in0, [x0*1024 + y0]))
    }
    %1[x0] = local(t0, float32)
  }
})"),
            8 * 1024 * 2);  // exp + the add of the accumulate; the store of a local is free
}

TEST(KernelInfo, SplitLoopTailCountsItsUpperBound) {
  EXPECT_EQ(flops(R"(kernel k(%in0: float32 in, %1: float32 out) {
  for x0_blk in 0..16 parallel {
    for x0_in in 0..min(x0_blk*-64 + 1000, 64) vector(16) {
      %1[x0_blk*64 + x0_in] = mul(add(load(%in0, [x0_blk*64 + x0_in]), 1.0:float32), 2.0:float32)
    }
  }
})"),
            16 * 64 * 2);  // 1024 >= the 1000 real iterations
}

TEST(KernelInfo, WelfordCombineAndSharedSubtrees) {
  EXPECT_EQ(flops(R"(kernel k(%in0: float32 in, %1: float32 out) {
  for x0 in 0..4 {
    t0 = accumulator welford_m2 float32
    for y0 in 0..10 {
      t0 += load(%in0, [x0*10 + y0])
    }
    let t1 = add(local(t0, float32), local(t0, float32))
    %1[x0] = mul(exp(load(%in0, [x0])), exp(load(%in0, [x0])))
  }
})"),
            4 * (10 * 4 + 1 + 2));  // welford 4 per element; add; mul over one interned exp
}

TEST(KernelInfo, JsonRoundTrip) {
  KernelInfo k;
  k.name = "kernel3";
  k.params = {{"%in0", "float32", {4, 8}, {8, 1}, false}, {"%6", "int64", {4}, {1}, true}};
  k.graph_nodes = {0, 2, 5};
  k.flops = 123;
  k.text = "kernel kernel3(...) {}";
  const nlohmann::json j = kernel_infos_to_json({k});
  const std::vector<KernelInfo> back = kernel_infos_from_json(j);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(kernel_infos_to_json(back), j);
  EXPECT_EQ(back[0].params[1].dtype, "int64");
  EXPECT_TRUE(back[0].params[1].written);
  EXPECT_EQ(j[0]["params"][0]["strides"], nlohmann::json({8, 1}));
}

}  // namespace
}  // namespace inductor_cpp::inductor
