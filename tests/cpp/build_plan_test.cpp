/// \file
/// Plan building: slots, output indices of multi-output ops, lifetimes (free after last use,
/// graph outputs never freed, unread inputs freed at start), JSON round trip.
#include <gtest/gtest.h>

#include "inductor/build_plan.h"
#include "inductor/graph_json.h"

namespace inductor_cpp::inductor {
namespace {

using nlohmann::json;

ir::TensorMeta m() {
  return ir::TensorMeta{{4}, {1}, 0, "float32", "cpu", false};
}

/// in0, in1 (unused), c0
/// %0 = relu(in0); %1 = max.dim(%0, 0) -> (values, indices); %2 = add(%1#1, c0)
/// return (%2, %0)
ir::Graph sample() {
  ir::Graph g;
  g.inputs = {m(), m()};
  g.constants = {m()};
  auto node = [](std::string op, std::vector<ir::Arg> args, int outs) {
    ir::Node n;
    n.op = std::move(op);
    n.args = std::move(args);
    n.outputs.assign(outs, ir::TensorMeta{{4}, {1}, 0, "float32", "cpu", false});
    return n;
  };
  g.nodes.push_back(node("aten::relu", {ir::Arg::input(0)}, 1));
  g.nodes.push_back(node("aten::max.dim", {ir::Arg::value(0), ir::Arg::of_int(0)}, 2));
  g.nodes.push_back(node("aten::add.Tensor", {ir::Arg::value(1, 1), ir::Arg::constant(0)}, 1));
  g.outputs = {ir::Arg::value(2), ir::Arg::value(0)};
  return g;
}

TEST(BuildPlan, SlotsAndLifetimes) {
  const runtime::Plan p = build_aten_plan(sample(), "test").plan;
  EXPECT_EQ(p.num_inputs, 2);
  EXPECT_EQ(p.num_constants, 1);
  // slots: 0 in0, 1 in1, 2 c0, 3 %0, 4 %1#1 (values of max.dim unread: no slot), 5 %2
  EXPECT_EQ(p.num_slots, 6);
  ASSERT_EQ(p.steps.size(), 3u);
  EXPECT_EQ(p.steps[0].aten()->outs, std::vector<int32_t>({3}));
  EXPECT_EQ(p.steps[1].aten()->outs, std::vector<int32_t>({-1, 4}));
  EXPECT_EQ(p.steps[2].aten()->outs, std::vector<int32_t>({5}));
  EXPECT_EQ(p.free_at_start, std::vector<int32_t>({1}));           // in1 is never read
  EXPECT_EQ(p.steps[0].free_after, std::vector<int32_t>({0}));     // in0 dies after relu
  EXPECT_TRUE(p.steps[1].free_after.empty());                      // %0 is a graph output
  EXPECT_EQ(p.steps[2].free_after, std::vector<int32_t>({2, 4}));  // c0 and %1#1
  EXPECT_EQ(p.ops_fallback, 3);
  EXPECT_EQ(p.ops_generated, 0);
}

TEST(BuildPlan, RoundTripsThroughJson) {
  const runtime::Plan p = build_aten_plan(sample(), "test").plan;
  const json j = runtime::plan_to_json(p);
  EXPECT_EQ(runtime::plan_to_json(runtime::plan_from_json(j)), j);
}

TEST(BuildPlan, LiteralsKeepTheirTags) {
  const runtime::Plan p = build_aten_plan(sample(), "test").plan;
  EXPECT_EQ(runtime::plan_to_json(p)["steps"][1]["aten"]["args"][1], json({{"lit", {{"int", 0}}}}));
}

TEST(BuildPlan, TextForm) {
  EXPECT_EQ(runtime::plan_to_text(build_aten_plan(sample(), "test").plan),
            "plan(inputs %s0..%s1, constants 1, 3 steps: 0 generated, 3 ATen) {\n"
            "  free %s1\n"
            "  %s3 = aten::relu(%s0)                         free %s0\n"
            "  _, %s4 = aten::max.dim(%s3, 0)\n"
            "  %s5 = aten::add.Tensor(%s4, %s2)              free %s2, %s4\n"
            "  return (%s5, %s3)\n"
            "}\n");
}

/// in0 [4]: %0 = relu(in0); %1 = cumsum(%0, 0) (no lowering: ATen); %2 = add(%1, %0); %3 = sin(%2)
ir::Graph mixed() {
  ir::Graph g;
  g.inputs = {m()};
  auto node = [](std::string op, std::vector<ir::Arg> args) {
    ir::Node n;
    n.op = std::move(op);
    n.args = std::move(args);
    n.outputs.assign(1, ir::TensorMeta{{4}, {1}, 0, "float32", "cpu", false});
    return n;
  };
  g.nodes.push_back(node("aten::relu", {ir::Arg::input(0)}));
  g.nodes.push_back(node("aten::cumsum", {ir::Arg::value(0), ir::Arg::of_int(0)}));
  g.nodes.push_back(node("aten::add.Tensor", {ir::Arg::value(1), ir::Arg::value(0)}));
  g.nodes.push_back(node("aten::sin", {ir::Arg::value(2)}));
  g.outputs = {ir::Arg::value(3)};
  return g;
}

TEST(BuildPlan, GeneratedKernelsAroundAnAtenCall) {
  const PlanBuild b = build_plan(mixed());
  EXPECT_EQ(runtime::plan_to_text(b.plan),
            "plan(inputs %s0..%s0, constants 0, 3 steps: 3 generated, 1 ATen) {\n"
            "  %s1 = kernel0(%s0, %s1)                       free %s0\n"
            "  %s2 = aten::cumsum(%s1, 0)\n"
            "  %s3 = kernel1(%s2, %s1, %s3)                  free %s1, %s2\n"
            "  return (%s3)\n"
            "}\n");
  EXPECT_EQ(b.plan.kernel_library, "kernels.so");
  EXPECT_NE(b.cpp_source.find("extern \"C\""), std::string::npos);
  ASSERT_EQ(b.decisions.size(), 4u);
  EXPECT_FALSE(b.decisions[1].generated);
  EXPECT_EQ(b.decisions[1].reason,
            "a float32 scan along the contiguous dim runs serially in float64, as eager's does: "
            "left to ATen");
  const json j = runtime::plan_to_json(b.plan);
  EXPECT_EQ(runtime::plan_to_json(runtime::plan_from_json(j)), j);
}

TEST(BuildPlan, RejectsMalformedPlans) {
  EXPECT_THROW(runtime::plan_from_json(json{{"format", 99}}), std::runtime_error);
  EXPECT_THROW(runtime::plan_from_json(json::object()), std::runtime_error);
}

}  // namespace
}  // namespace inductor_cpp::inductor
