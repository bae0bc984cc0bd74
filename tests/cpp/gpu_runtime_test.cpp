/// \file
/// The GPU runtime pieces that need no GPU: the driver loader's behaviour without a driver,
/// launch-dimension checks, GPU plan JSON (round trip, backward compatibility), the GPU part
/// of the cache key, and which kernels need a status word. Loading and launching real modules
/// is tested on the GPU machine (tests/python/test_gpu.py, scripts/gpu.sh).
#include <gtest/gtest.h>

#include "ir/ir_text.h"

#include <filesystem>

#include "inductor/build_plan.h"
#include "inductor/build_plan_gpu.h"
#include "inductor/fingerprint.h"
#include "ir/kernel_ir.h"
#include "ir/value.h"
#include "runtime/cuda/driver.h"
#include "runtime/cuda/gpu_module.h"
#include "runtime/cuda/ptxas.h"
#include "runtime/plan.h"

namespace inductor_cpp {
namespace {

using runtime::cuda::LaunchDims;

TEST(CudaDriver, MissingDriverIsAnErrorNotACrash) {
  if (runtime::cuda::Driver::available()) GTEST_SKIP() << "this machine has a CUDA driver";
  EXPECT_EQ(runtime::cuda::driver_version(), "none");
  EXPECT_EQ(runtime::cuda::compute_capability(0), -1);
  try {
    runtime::cuda::Driver::get();
    FAIL() << "expected an exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA driver"), std::string::npos) << e.what();
  }
}

TEST(CudaDriver, ModuleLoadWithoutDriverNamesTheKernels) {
  if (runtime::cuda::Driver::available()) GTEST_SKIP() << "this machine has a CUDA driver";
  runtime::cuda::GpuModule module({".version 7.8\n.target sm_90\n.address_size 64\n"},
                                  runtime::cuda::GpuModule::ImageKind::Ptx, {"k0"});
  EXPECT_THROW(module.functions(0), std::runtime_error);
}

TEST(LaunchDims, RejectsUnlaunchableConfigurationsNamingTheKernel) {
  LaunchDims ok;
  ok.grid = {1 << 20, 1, 1};
  ok.block = {256, 1, 1};
  EXPECT_NO_THROW(runtime::cuda::check_launch_dims("k", ok));
  LaunchDims too_many_threads = ok;
  too_many_threads.block = {2048, 1, 1};
  LaunchDims zero_grid = ok;
  zero_grid.grid = {0, 1, 1};
  LaunchDims tall_grid = ok;
  tall_grid.grid = {1, 70000, 1};
  for (const LaunchDims& bad : {too_many_threads, zero_grid, tall_grid}) {
    try {
      runtime::cuda::check_launch_dims("kernel_7", bad);
      FAIL() << "expected an exception";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("kernel_7"), std::string::npos) << e.what();
    }
  }
}

runtime::Plan gpu_plan() {
  runtime::Plan p;
  p.num_inputs = 1;
  p.num_slots = 2;
  runtime::Step s;
  s.node = 0;
  runtime::KernelLaunch& k = s.action.emplace<runtime::KernelLaunch>();
  k.name = "k0";
  k.args = {0, 1};
  k.layouts = {{{4}, {1}}, {{4}, {1}}};
  k.allocs.push_back({1, {4}, {1}, "float32", "cuda:0", -1});
  k.nodes = {0};
  k.gpu.grid = {3, 1, 1};
  k.gpu.block = {128, 1, 1};
  k.gpu.shared_bytes = 64;
  k.gpu.checks_bounds = true;
  k.gpu.programmatic = true;
  p.steps.push_back(s);
  p.outputs.push_back(runtime::PlanArg::of_slot(1));
  p.kernel_library = "kernels.cubin";
  p.library_kind = "cubin";
  p.kernel_images = {"not serialized"};
  return p;
}

TEST(GpuPlan, JsonRoundTripKeepsLaunchDimsAndLibraryKind) {
  const runtime::Plan p = gpu_plan();
  const nlohmann::json j = runtime::plan_to_json(p);
  EXPECT_FALSE(j.dump().find("not serialized") != std::string::npos);
  const runtime::Plan back = runtime::plan_from_json(j);
  ASSERT_EQ(back.steps.size(), 1u);
  EXPECT_EQ(back.library_kind, "cubin");
  EXPECT_TRUE(back.is_gpu());
  const runtime::GpuLaunchDims& g = back.steps[0].kernel()->gpu;
  EXPECT_EQ(g.grid[0], 3);
  EXPECT_EQ(g.block[0], 128);
  EXPECT_EQ(g.shared_bytes, 64);
  EXPECT_TRUE(g.checks_bounds);
  EXPECT_TRUE(g.programmatic);
  EXPECT_EQ(runtime::plan_to_json(back), j);
  EXPECT_NE(runtime::plan_to_text(p).find("<<<(3,1,1), (128,1,1), 64>>> programmatic"),
            std::string::npos)
      << runtime::plan_to_text(p);
  // Plans cached before the key existed read back as plain launches.
  nlohmann::json old = j;
  old["steps"][0]["kernel"]["gpu"].erase("programmatic");
  EXPECT_FALSE(runtime::plan_from_json(old).steps[0].kernel()->gpu.programmatic);
}

TEST(GpuPlan, KernelsInSeveralPartsRoundTripAndNameTheirFiles) {
  runtime::Plan p = gpu_plan();
  EXPECT_FALSE(runtime::plan_to_json(p).contains("kernel_parts"));  // one part: as before
  EXPECT_FALSE(runtime::plan_to_json(p)["steps"][0]["kernel"]["gpu"].contains("part"));
  p.kernel_parts = 3;
  p.steps[0].kernel()->gpu.part = 2;
  const runtime::Plan back = runtime::plan_from_json(runtime::plan_to_json(p));
  EXPECT_EQ(back.kernel_parts, 3);
  EXPECT_EQ(back.steps[0].kernel()->gpu.part, 2);
  EXPECT_EQ(back.kernel_part_name(0), "kernels.cubin");
  EXPECT_EQ(back.kernel_part_name(2), "kernels.2.cubin");
  EXPECT_EQ(runtime::Plan::kernel_part_name("kernels.ptx", 1), "kernels.1.ptx");
}

TEST(GpuBuildPlan, KernelsSplitIntoBalancedPartsOfAtLeastEight) {
  std::vector<ir::Kernel> kernels(20);
  for (size_t i = 0; i < kernels.size(); ++i) {
    kernels[i].name = "k" + std::to_string(i);
    kernels[i].body.resize(i == 0 ? 40 : 1);  // one large kernel
  }
  EXPECT_EQ(inductor::partition_kernels(kernels, 1).size(), 1u);
  EXPECT_EQ(inductor::partition_kernels(kernels, 16).size(), 2u);  // 20 kernels: 2 parts of >= 8
  const auto groups = inductor::partition_kernels(kernels, 2);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0], std::vector<size_t>{0});  // the large one alone balances the rest
  EXPECT_EQ(groups[1].size(), 19u);
  EXPECT_EQ(inductor::partition_kernels({}, 8).size(), 1u);
}

// The same kernel over other buffers (a transformer's next layer) is emitted once; a kernel
// that differs in anything but names is not; the plan launches repeats through gpu.function.
TEST(GpuBuildPlan, IdenticalKernelsAreEmittedOnce) {
  const auto kernel = [](const std::string& name, const std::string& in, const std::string& out, const char* op) {
    return ir::parse_kernel("kernel " + name + "(" + in + ": float32 in, " + out + ": float32 out) {\n" +
                            "  for x0 in 0..64 parallel vector(4) gpu(threads=1) {\n" + "    let t0 = " + op +
                            "(load(" + in + ", [x0]))\n" + "    " + out + "[x0] = local(t0, float32)\n  }\n}\n");
  };
  const std::vector<ir::Kernel> kernels = {kernel("kernel0", "%in0", "%1", "exp"), kernel("kernel1", "%1", "%2", "exp"),
                                           kernel("kernel2", "%2", "%3", "tanh"), kernel("kernel3", "%in1", "%4", "tanh")};
  EXPECT_EQ(inductor::first_identical_kernels(kernels), (std::vector<size_t>{0, 0, 2, 2}));
  runtime::Plan p = gpu_plan();
  p.steps[0].kernel()->gpu.function = "kernel0";
  EXPECT_EQ(runtime::plan_from_json(runtime::plan_to_json(p)).steps[0].kernel()->gpu.function, "kernel0");
  EXPECT_FALSE(runtime::plan_to_json(gpu_plan())["steps"][0]["kernel"]["gpu"].contains("function"));
}

TEST(GpuPlan, CpuPlanJsonHasNoGpuFieldsAndReadsBackAsSharedLibrary) {
  runtime::Plan p = gpu_plan();
  p.library_kind = "so";
  p.kernel_library = "kernels.so";
  const nlohmann::json j = runtime::plan_to_json(p);
  EXPECT_FALSE(j.contains("library_kind"));
  EXPECT_FALSE(j["steps"][0]["kernel"].contains("gpu"));
  const runtime::Plan back = runtime::plan_from_json(j);
  EXPECT_EQ(back.library_kind, "so");
  EXPECT_FALSE(back.is_gpu());
}

TEST(GpuCacheKey, GpuGraphsAddTheGpuToolchain) {
  EXPECT_FALSE(inductor::toolchain_for("").contains("gpu"));
  const nlohmann::json gpu = inductor::toolchain_for("cuda:0");
  ASSERT_TRUE(gpu.contains("gpu"));
  for (const char* field : {"target_sm", "driver", "ptxas", "codegen"})
    EXPECT_TRUE(gpu["gpu"].contains(field)) << gpu.dump();
  EXPECT_EQ(inductor::gpu_ordinal("cuda:3"), 3);
  EXPECT_EQ(inductor::gpu_ordinal("cuda"), 0);
  EXPECT_FALSE(inductor::is_gpu_device("cpu"));
}

TEST(GpuKernels, OnlyIndirectLoadsNeedTheStatusWord) {
  ir::Kernel direct;
  direct.name = "direct";
  direct.body.push_back(
      ir::Stmt::store("out", ir::Expr(0), ir::load("in", ir::DType::Float32, {ir::Expr(0)})));
  EXPECT_FALSE(inductor::kernel_checks_bounds(direct));
  ir::Kernel gather = direct;
  const ir::Value index = ir::load("idx", ir::DType::Int64, {ir::Expr(0)});
  gather.body = {ir::Stmt::loop("i", ir::Expr(4),
                                {ir::Stmt::store("out", ir::Expr(0),
                                                 ir::load("in", ir::DType::Float32, {ir::Expr(0)},
                                                          ir::Expr(1), {index}, {ir::Expr(10)}))})};
  EXPECT_TRUE(inductor::kernel_checks_bounds(gather));
}

TEST(Ptxas, VersionIsKnownOrNone) {
  const std::string v = runtime::cuda::ptxas_version();
  EXPECT_FALSE(v.empty());
  if (runtime::cuda::find_ptxas().empty()) {
    EXPECT_EQ(v, "none");
  }
}

ir::TensorMeta cuda_meta(std::vector<int64_t> sizes, std::vector<int64_t> strides) {
  ir::TensorMeta m;
  m.sizes.assign(sizes.begin(), sizes.end());
  m.strides.assign(strides.begin(), strides.end());
  m.dtype = "float32";
  m.device = "cuda:0";
  return m;
}

/// relu(in0) * 2 and its row sums, on "cuda:0".
ir::Graph cuda_graph() {
  ir::Graph g;
  g.inputs = {cuda_meta({64, 300}, {300, 1})};
  auto node = [](std::string op, std::vector<ir::Arg> args, ir::TensorMeta out) {
    ir::Node n;
    n.op = std::move(op);
    n.args = std::move(args);
    n.outputs = {std::move(out)};
    return n;
  };
  g.nodes.push_back(node("aten::relu", {ir::Arg::input(0)}, cuda_meta({64, 300}, {300, 1})));
  g.nodes.push_back(node("aten::mul.Tensor", {ir::Arg::value(0), ir::Arg::of_float(2.0)},
                         cuda_meta({64, 300}, {300, 1})));
  g.nodes.push_back(node("aten::sum.dim_IntList",
                         {ir::Arg::value(1), ir::Arg::list({ir::Arg::of_int(-1)})},
                         cuda_meta({64}, {1})));
  g.outputs = {ir::Arg::value(1), ir::Arg::value(2)};
  return g;
}

/// gelu(x*1.5+.25)*sigmoid(x) - tanh(x) on "cuda:0" (libdevice math: erf, exp, tanh).
ir::Graph cuda_pointwise_chain() {
  ir::Graph g;
  const ir::TensorMeta flat = cuda_meta({1 << 20}, {1});
  g.inputs = {flat};
  auto node = [&](std::string op, std::vector<ir::Arg> args) {
    ir::Node n;
    n.op = std::move(op);
    n.args = std::move(args);
    n.outputs = {flat};
    g.nodes.push_back(std::move(n));
    return ir::Arg::value(static_cast<int64_t>(g.nodes.size() - 1));
  };
  const ir::Arg x = ir::Arg::input(0);
  const ir::Arg a = node("aten::mul.Tensor", {x, ir::Arg::of_float(1.5)});
  const ir::Arg b = node("aten::add.Tensor", {a, ir::Arg::of_float(0.25)});
  const ir::Arg c = node("aten::gelu", {b});
  const ir::Arg d = node("aten::sigmoid", {x});
  const ir::Arg e = node("aten::mul.Tensor", {c, d});
  const ir::Arg f = node("aten::tanh", {x});
  g.outputs = {node("aten::sub.Tensor", {e, f})};
  return g;
}

TEST(GpuBuildPlan, PointwiseChainWithLibdeviceMath) {
  if (!inductor::is_gpu_device("cuda:0")) GTEST_SKIP() << "built without the NVPTX emitter";
  const inductor::PlanBuild built = inductor::build_plan(cuda_pointwise_chain());
  ASSERT_TRUE(built.codegen_error.empty()) << built.codegen_error;
  EXPECT_EQ(built.plan.ops_fallback, 0);
  ASSERT_EQ(built.gpu_ptx.size(), 1u);
  EXPECT_NE(built.gpu_ptx[0].find(".entry"), std::string::npos);
}

TEST(GpuBuildPlan, CudaGraphBecomesOnePtxModuleWithLaunchDims) {
  if (!inductor::is_gpu_device("cuda:0")) GTEST_SKIP() << "built without the NVPTX emitter";
  const inductor::PlanBuild built = inductor::build_plan(cuda_graph());
  ASSERT_TRUE(built.codegen_error.empty()) << built.codegen_error;
  EXPECT_EQ(built.plan.library_kind, "ptx");
  EXPECT_EQ(built.plan.kernel_library, "kernels.ptx");
  EXPECT_TRUE(built.cpp_source.empty());
  int kernels = 0;
  for (const runtime::Step& s : built.plan.steps) {
    const runtime::KernelLaunch* k = s.kernel();
    if (!k) continue;
    ++kernels;
    EXPECT_NE(built.gpu_ptx.at(static_cast<size_t>(k->gpu.part)).find(".entry " + k->name), std::string::npos)
        << k->name;
    EXPECT_GE(k->gpu.grid[0] * k->gpu.block[0], 1);
    EXPECT_EQ(k->gpu.programmatic, built.gpu_sm >= 90) << k->name;
    for (const runtime::BufferAlloc& a : k->allocs) EXPECT_EQ(a.device, "cuda:0");
  }
  EXPECT_GE(kernels, 1);
  EXPECT_EQ(built.plan.ops_fallback, 0);
  EXPECT_NE(built.gpu_llvm_ir.find("nvptx"), std::string::npos);
  // The PTX assembles for its target (ptxas from the CUDA toolkit, when installed).
  if (runtime::cuda::find_ptxas().empty()) return;
  const std::string dir = testing::TempDir() + "/gpu_runtime_test_ptxas";
  std::filesystem::create_directories(dir);
  const runtime::cuda::PtxasResult r =
      runtime::cuda::assemble_cubin(dir, built.gpu_ptx.at(0), built.gpu_sm);
  EXPECT_TRUE(r.ok) << r.command << "\n" << r.output;
  EXPECT_FALSE(r.cubin.empty());
}

}  // namespace
}  // namespace inductor_cpp
