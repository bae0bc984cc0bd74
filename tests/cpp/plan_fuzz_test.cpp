/// \file
/// plan_from_json on mutated plans, as a tampered cache entry would hold them (its checksums
/// resealed): thousands of seeded mutations of a CPU and a GPU plan that hold every kind of
/// step — a value swapped for another type, a number out of range, a path trick, a key or a
/// list element deleted. Each must be rejected with std::runtime_error or give a plan that
/// validate_plan accepts (every slot in range, shapes and launch dims sane): never a crash, a
/// hang or another exception type.
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <typeinfo>

#include "runtime/plan.h"

namespace inductor_cpp::runtime {
namespace {

using nlohmann::json;

BufferAlloc alloc(int32_t slot, std::vector<int64_t> sizes) {
  std::vector<int64_t> strides(sizes.size(), 1);
  for (size_t d = sizes.size(); d-- > 1;) strides[d - 1] = strides[d] * sizes[d];
  return BufferAlloc{slot, sizes, strides, "float32", "cpu", -1};
}

/// inputs 0, 1; an ATen add into 2, a kernel writing 3 from 2, an addmm into 4, outputs 3, 4.
Plan sample_plan(bool gpu) {
  Plan p;
  p.num_inputs = 2;
  p.num_slots = 5;
  AtenCall add{"aten::add.Tensor", {PlanArg::of_slot(0), PlanArg::of_slot(1)},
               {{"alpha", PlanArg::of_literal(json{{"int", 1}})}}, {2}};
  p.steps.push_back(Step{0, add, {}});
  KernelLaunch k;
  k.name = "kernel0";
  k.args = {2, 3};
  k.layouts = {{{4, 8}, {8, 1}}, {{4, 8}, {8, 1}}};
  k.allocs = {alloc(3, {4, 8})};
  k.nodes = {1};
  if (gpu) k.gpu = GpuLaunchDims{{2, 1, 1}, {256, 1, 1}, 0, false, false, 0, ""};
  p.steps.push_back(Step{1, k, {2}});
  LibraryCall mm = LibraryCall::of("addmm");
  GemmCall& g = mm.as<GemmCall>();
  g.a = 0, g.b = 1, g.out = alloc(4, {4, 8});
  g.epilogue = {{"bias_col", 3, 0, 0}, {"relu", -1, 0, 0}};
  p.steps.push_back(Step{2, mm, {0, 1}});
  p.outputs = {PlanArg::of_slot(3), PlanArg::of_list({PlanArg::of_slot(4), PlanArg::of_literal(json())})};
  p.kernel_library = gpu ? "kernels.cubin" : "kernels.so";
  p.library_kind = gpu ? "cubin" : "so";
  return p;
}

/// Pointers to every value in `j` (objects' members and arrays' elements, recursively).
void collect(json& j, std::vector<json*>& out) {
  out.push_back(&j);
  if (j.is_object() || j.is_array()) {
    for (auto& v : j) collect(v, out);
  }
}

/// One random mutation of `j` in place.
void mutate(json& j, std::mt19937_64& rng) {
  std::vector<json*> values;
  collect(j, values);
  json& target = *values[rng() % values.size()];
  static const std::vector<json> replacements = {
      json(), json(true), json(0), json(-1), json(-2147483648LL), json(2147483647),
      json(int64_t{1} << 40), json(-(int64_t{1} << 62)), json(1.5), json(""), json("../../x.so"),
      json("kernels.so"), json("/etc/passwd"), json(std::string("a\0b", 3)), json::array(),
      json::object(), json::array({1, 2, 3}), json::array({-5}), json{{"slot", 99}},
      json{{"int", 1}}, json(9), json(4), json(1025), json(65536)};
  switch (rng() % 4) {
    case 0:  // another value, possibly of another type
      target = replacements[rng() % replacements.size()];
      break;
    case 1:  // a small number off by a little (slots, sizes, dims)
      if (target.is_number_integer()) target = target.get<int64_t>() + static_cast<int64_t>(rng() % 7) - 3;
      else target = replacements[rng() % replacements.size()];
      break;
    case 2:  // a member or an element deleted
      if (target.is_object() && !target.empty()) {
        auto it = target.begin();
        std::advance(it, static_cast<long>(rng() % target.size()));
        target.erase(it);
      } else if (target.is_array() && !target.empty()) {
        target.erase(target.begin() + static_cast<long>(rng() % target.size()));
      }
      break;
    default:  // an array truncated or doubled
      if (target.is_array() && !target.empty()) {
        if (rng() % 2) target.erase(target.begin() + static_cast<long>(target.size() / 2), target.end());
        else target.push_back(target.back());
      }
  }
}

void fuzz(bool gpu, int rounds) {
  const json base = plan_to_json(sample_plan(gpu));
  ASSERT_NO_THROW(plan_from_json(base));
  std::mt19937_64 rng(gpu ? 7 : 3);
  int accepted = 0, rejected = 0;
  for (int i = 0; i < rounds; ++i) {
    json j = base;
    const int mutations = 1 + static_cast<int>(rng() % 3);
    for (int m = 0; m < mutations; ++m) mutate(j, rng);
    try {
      const Plan p = plan_from_json(j);
      validate_plan(p);  // what it returns is in range (plan_from_json ran it already)
      ++accepted;
    } catch (const std::runtime_error&) {
      ++rejected;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "mutation " << i << " threw " << typeid(e).name() << ": " << e.what() << "\n" << j.dump();
    }
  }
  // Both outcomes happen: the mutations reach fields that matter and fields that do not.
  EXPECT_GT(rejected, rounds / 4);
  EXPECT_GT(accepted, 0);
}

TEST(PlanFuzz, MutatedCpuPlansAreRejectedOrInRange) { fuzz(false, 1500); }
TEST(PlanFuzz, MutatedGpuPlansAreRejectedOrInRange) { fuzz(true, 1500); }

// Fields the validator guards, one by one (the fuzz finds them only by chance).
TEST(PlanFuzz, OutOfRangeFieldsAreNamed) {
  auto rejects = [](const std::function<void(Plan&)>& edit, const std::string& field) {
    Plan p = sample_plan(true);
    edit(p);
    try {
      plan_from_json(plan_to_json(p));
      ADD_FAILURE() << field << " accepted";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  rejects([](Plan& p) { p.steps[0].aten()->args[1] = PlanArg::of_slot(5); }, "steps[0].aten.args[1]");
  rejects([](Plan& p) { p.steps[1].kernel()->allocs[0].slot = -1; }, "steps[1].kernel.allocs[0].slot");
  rejects([](Plan& p) { p.steps[1].kernel()->allocs[0].sizes = {1 << 30, 1 << 30}; }, "too many elements");
  rejects([](Plan& p) { p.steps[1].kernel()->updates = {2}; }, "steps[1].kernel.updates");
  rejects([](Plan& p) { p.steps[1].kernel()->gpu.block = {2048, 1, 1}; }, "steps[1].kernel.gpu.block");
  rejects([](Plan& p) { p.steps[1].kernel()->gpu.part = 1; }, "steps[1].kernel.gpu.part");
  rejects([](Plan& p) { p.steps[2].library()->as<GemmCall>().epilogue[0].slot = 7; }, "steps[2].library");
  rejects([](Plan& p) { p.steps[2].free_after = {5}; }, "steps[2].free_after");
  rejects([](Plan& p) { p.outputs[1].items[0].slot = 9; }, "outputs[1][0]");
  rejects([](Plan& p) { p.num_inputs = 6; }, "num_slots");
  rejects([](Plan& p) {
    p.steps[1].kernel()->args = {3, 3};  // the allocated buffer also where a [4, 7] input was
    p.steps[1].kernel()->layouts[0].sizes = {4, 7};
  }, "steps[1].kernel.allocs[0]: not in the layout of parameter 0");
  rejects([](Plan& p) { p.steps[1].kernel()->allocs[0].sizes = {4, 7}; }, "steps[1].kernel.allocs[0]: not in the layout");
  rejects([](Plan& p) { p.steps[1].kernel()->allocs[0].slot = 4; }, "allocates slot 4, which is no parameter");
  // In range, but empty when read: not yet written, or freed by an earlier step.
  rejects([](Plan& p) { p.steps[1].kernel()->args[0] = 4; }, "steps[1].kernel.args[0]: slot 4 holds nothing");
  rejects([](Plan& p) { p.steps[2].library()->as<GemmCall>().a = 2; }, "steps[2].library (an operand): slot 2");
  rejects([](Plan& p) { p.outputs[0].slot = 2; }, "outputs[0]: slot 2 holds nothing");
  rejects([](Plan& p) { p.free_at_start = {1}; }, "steps[0].aten.args[1]: slot 1 holds nothing");
}

}  // namespace
}  // namespace inductor_cpp::runtime
