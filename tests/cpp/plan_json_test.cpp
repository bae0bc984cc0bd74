/// \file
/// Plans' typed steps through their JSON and text forms: every library op of
/// INDUCTOR_CPP_LIBRARY_OPS round-trips with its argument struct, the slots it reads and writes
/// are the ones its struct names, and malformed library steps are rejected with the path.
#include <gtest/gtest.h>

#include "runtime/plan.h"

namespace inductor_cpp::runtime {
namespace {

BufferAlloc alloc(int32_t slot, std::vector<int64_t> sizes) {
  std::vector<int64_t> strides(sizes.size(), 1);
  for (size_t d = sizes.size(); d-- > 1;) strides[d - 1] = strides[d] * sizes[d];
  return BufferAlloc{slot, sizes, strides, "float32", "cpu", -1};
}

/// One call of each op, with every field away from its default.
std::vector<LibraryCall> one_of_each() {
  std::vector<LibraryCall> out;
  for (const char* op : {"mm", "addmm", "bmm"}) {
    LibraryCall c = LibraryCall::of(op);
    GemmCall& g = c.as<GemmCall>();
    g.a = 0, g.b = 1, g.out = alloc(3, {4, 8}), g.alpha = 0.5f;
    g.epilogue = {{"bias_col", 2, 0, 0}, {"clamp", -1, -1.5f, 2.f}};
    c.nodes = {0, 1};
    out.push_back(c);
  }
  LibraryCall conv = LibraryCall::of("conv2d");
  Conv2dCall& cv = conv.as<Conv2dCall>();
  cv.input = 0, cv.weight = 1, cv.geometry = {{2, 2}, {1, 1}, {1, 1}}, cv.out = alloc(4, {1, 8, 4, 4});
  cv.epilogue = {{"scale_col", 5, 0, 0}, {"bias_col", 6, 0, 0}, {"relu", -1, 0, 0}};
  out.push_back(conv);
  LibraryCall conv_bwd = LibraryCall::of("conv2d_backward");
  Conv2dBackwardCall& cb = conv_bwd.as<Conv2dBackwardCall>();
  cb.grad_output = 0, cb.input = 1, cb.weight = 2, cb.grad_input = alloc(3, {1, 4, 8, 8});
  cb.grad_weight = alloc(4, {8, 4, 3, 3});
  out.push_back(conv_bwd);
  LibraryCall attention = LibraryCall::of("attention");
  AttentionCall& at = attention.as<AttentionCall>();
  at.in = {0, 1, 2, 3, 0.125f, true}, at.out = alloc(4, {1, 2, 16, 8}), at.logsumexp = alloc(5, {1, 2, 16});
  out.push_back(attention);
  LibraryCall attention_bwd = LibraryCall::of("attention_backward");
  AttentionBackwardCall& ab = attention_bwd.as<AttentionBackwardCall>();
  ab.in = {0, 1, 2, -1, 0.25f, false}, ab.grad_output = 3, ab.forward_output = 4, ab.forward_logsumexp = 5;
  ab.grad_query = alloc(6, {1, 2, 16, 8}), ab.grad_key = alloc(7, {1, 2, 16, 8}), ab.grad_value = alloc(8, {1, 2, 16, 8});
  out.push_back(attention_bwd);
  return out;
}

Plan plan_of(std::vector<LibraryCall> calls) {
  // Every slot an input, so each step's operands hold values (validate_plan's liveness);
  // the last step frees one.
  Plan p;
  p.num_inputs = 9;
  p.num_slots = 9;
  for (LibraryCall& c : calls) {
    Step s;
    s.node = 0;
    s.action = std::move(c);
    if (p.steps.size() + 1 == calls.size()) s.free_after = {0};
    p.steps.push_back(std::move(s));
  }
  return p;
}

TEST(PlanJson, EveryLibraryOpRoundTrips) {
  const Plan p = plan_of(one_of_each());
  const nlohmann::json j = plan_to_json(p);
  const Plan back = plan_from_json(j);
  ASSERT_EQ(back.steps.size(), p.steps.size());
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const LibraryCall* call = back.steps[i].library();
    ASSERT_NE(call, nullptr) << i;
    EXPECT_EQ(call->op, p.steps[i].library()->op);
    EXPECT_EQ(call->args.index(), p.steps[i].library()->args.index()) << call->op;
    EXPECT_EQ(call->reads(), p.steps[i].library()->reads()) << call->op;
  }
  EXPECT_EQ(plan_to_json(back), j);
  EXPECT_EQ(plan_to_text(back), plan_to_text(p));
}

TEST(PlanJson, UnknownLibraryOpIsRejected) {
  nlohmann::json j = plan_to_json(plan_of({LibraryCall::of("mm")}));
  j["steps"][0]["library"]["op"] = "conv3d";
  EXPECT_THROW(plan_from_json(j), std::runtime_error);
  EXPECT_THROW(LibraryCall::of("conv3d"), std::runtime_error);
  j["steps"][0].erase("library");
  try {
    plan_from_json(j);
    FAIL() << "a step with no action was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("steps[0]"), std::string::npos) << e.what();
  }
}

// The kernel library is opened from the cache entry by name (a shared library's constructors
// run when it is loaded): only the names a build writes are accepted, never a path.
TEST(PlanJson, KernelLibraryIsAFileNameOfTheEntry) {
  nlohmann::json j = plan_to_json(plan_of({LibraryCall::of("mm")}));
  for (const char* ok : {"", "kernels.so", "kernels.ptx", "kernels.cubin"}) {
    j["kernel_library"] = ok;
    EXPECT_EQ(plan_from_json(j).kernel_library, ok);
  }
  for (const char* bad : {"../../evil.so", "/tmp/evil.so", "sub/kernels.so", "kernels.so/..", "libc.so.6"}) {
    j["kernel_library"] = bad;
    EXPECT_THROW(plan_from_json(j), std::runtime_error) << bad;
  }
  j["kernel_library"] = "kernels.so";
  j["kernel_parts"] = 1 << 30;
  EXPECT_THROW(plan_from_json(j), std::runtime_error);
}

TEST(PlanJson, LibraryCallsNameTheirSlots) {
  const std::vector<LibraryCall> calls = one_of_each();
  // addmm: a, b, the bias; writes its output.
  EXPECT_EQ(calls[1].reads(), std::vector<int32_t>({0, 1, 2}));
  ASSERT_EQ(calls[1].writes().size(), 1u);
  EXPECT_EQ(calls[1].writes()[0]->slot, 3);
  // conv2d with a batch norm folded to a scale and a shift: input, weight, scale, shift.
  EXPECT_EQ(calls[3].reads(), std::vector<int32_t>({0, 1, 5, 6}));
  // conv2d_backward without the bias gradient writes two tensors.
  EXPECT_EQ(calls[4].writes().size(), 2u);
  // attention without a mask, backward: q, k, v, grad out, out, logsumexp.
  EXPECT_EQ(calls[6].reads(), std::vector<int32_t>({0, 1, 2, 3, 4, 5}));
}

TEST(PlanText, LibraryCallsReadAsCalls) {
  const std::string text = plan_to_text(plan_of(one_of_each()));
  EXPECT_NE(text.find("%s3 = matrix::addmm(%s0, %s1, alpha=0.500000) -> bias_col(%s2) -> clamp(-1.5, 2)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("%s4 = matrix::conv2d(%s0, %s1, stride=[2,2], padding=[1,1], dilation=[1,1]) -> "
                      "scale_col(%s5) -> bias_col(%s6) -> relu"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("%s3, %s4, _ = matrix::conv2d_backward(%s0, %s1, %s2"), std::string::npos) << text;
  EXPECT_NE(text.find("%s4, %s5 = matrix::attention(%s0, %s1, %s2, mask=%s3, scale=0.125, causal)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("%s6, %s7, %s8 = matrix::attention_backward(%s3, %s0, %s1, %s2, %s4, %s5, scale=0.25)"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace inductor_cpp::runtime
