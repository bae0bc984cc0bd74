/// \file
/// Executable: binding each step by its type, and the step loop.
#include "runtime/executor.h"

#include <algorithm>

#include <ATen/record_function.h>
#include <c10/util/Exception.h>

#include <stdexcept>

#include "runtime/aten_call_step.h"
#include "runtime/kernel_step.h"
#include "runtime/library_step.h"

namespace inductor_cpp::runtime {

namespace {

std::string error_text(const std::exception& e) {
  if (auto* c10_error = dynamic_cast<const c10::Error*>(&e)) return c10_error->what_without_backtrace();
  return e.what();
}

/// The label of an ATen step: its graph node's, else its op.
std::string aten_label(const Step& step, const AtenCall& call, const std::vector<std::string>& labels) {
  return step.node >= 0 && step.node < static_cast<int32_t>(labels.size()) ? labels[step.node] : call.op;
}

}  // namespace

struct Executable::Bound {
  int32_t num_inputs = 0;
  int32_t num_slots = 0;
  std::vector<at::Tensor> constants;
  std::vector<int32_t> free_at_start;
  std::vector<std::unique_ptr<BoundStep>> steps;
  std::vector<BoundOutput> outputs;
  std::vector<std::string> labels;
  std::shared_ptr<KernelLibrary> library;
  std::vector<cuda::GpuKernel> gpu_kernels;     ///< GPU plans: every kernel step, in plan order
  bool gpu_checks_bounds = false;               ///< some GPU kernel may set its status word
  mutable cuda::SharedRunStatus shared_status;  ///< the never-written words when none can
  mutable cuda::DeferredStatusChecks deferred;  ///< earlier runs' words, read once they arrive
  bool check_each_run = false;                  ///< CUDA_LAUNCH_BLOCKING: read them at the run's end
};

Executable::Executable(const Plan& plan, std::vector<at::Tensor> constants, std::vector<std::string> labels,
                       std::shared_ptr<KernelLibrary> library, bool frozen_weights) {
  auto b = std::make_unique<Bound>();
  if (static_cast<int32_t>(constants.size()) != plan.num_constants)
    throw std::runtime_error("plan expects " + std::to_string(plan.num_constants) + " constants, got " +
                             std::to_string(constants.size()));
  b->num_inputs = plan.num_inputs;
  b->num_slots = plan.num_slots;
  b->constants = std::move(constants);
  b->free_at_start = plan.free_at_start;
  b->labels = std::move(labels);
  b->library = std::move(library);
  const bool launches = std::any_of(plan.steps.begin(), plan.steps.end(), [](const Step& s) { return s.kernel(); });
  if ((launches || !plan.kernel_library.empty()) && !b->library && !plan.is_gpu())
    throw std::runtime_error("inductor_cpp: the plan has generated kernels but no kernel library was loaded");
  std::vector<BoundKernelStep*> kernel_steps;  // GPU plans: their kernels' indices, below
  const LibraryBindContext library_ctx{b->library.get(), b->labels, frozen_weights};
  for (const Step& step : plan.steps) {
    try {
      std::unique_ptr<BoundStep> bound;
      if (const AtenCall* call = step.aten()) {
        bound = bind_aten_call(*call, aten_label(step, *call, b->labels));
      } else if (const KernelLaunch* launch = step.kernel()) {
        std::unique_ptr<BoundKernelStep> kernel = bind_kernel_launch(*launch, b->library.get(), b->labels);
        kernel_steps.push_back(kernel.get());
        bound = std::move(kernel);
      } else {
        bound = bind_library_call(*step.library(), library_ctx);
      }
      bound->free_after = step.free_after;
      b->steps.push_back(std::move(bound));
    } catch (const std::exception& e) {
      const AtenCall* call = step.aten();
      const std::string where = step.node >= 0 && step.node < static_cast<int32_t>(b->labels.size())
                                    ? b->labels[step.node]
                                    : (call ? call->op : std::string("step"));
      throw std::runtime_error("inductor_cpp: cannot bind " + where + ": " + error_text(e));
    }
  }
  if (plan.is_gpu()) {  // one CUDA module for the graph (runtime/gpu_step.h)
    std::vector<std::string> kernel_labels;
    for (BoundKernelStep* k : kernel_steps) {
      k->gpu_index = static_cast<int32_t>(kernel_labels.size());
      kernel_labels.push_back(k->label);
    }
    b->gpu_kernels = cuda::bind_gpu_kernels(plan, kernel_labels);
    for (const cuda::GpuKernel& k : b->gpu_kernels) b->gpu_checks_bounds |= k.checks_bounds;
    b->check_each_run = cuda::launch_blocking();
  }
  for (const PlanArg& out : plan.outputs) b->outputs.emplace_back(out);
  bound_ = std::move(b);
}

Executable::~Executable() = default;

WeightCacheCounts Executable::weight_cache_counts() const {
  WeightCacheCounts counts;
  for (const std::unique_ptr<BoundStep>& step : bound_->steps) {
    const WeightCacheCounts c = step->weight_cache_counts();
    counts.packs += c.packs;
    counts.adopted += c.adopted;
    counts.stale_drops += c.stale_drops;
  }
  return counts;
}

std::vector<c10::IValue> Executable::run(std::vector<c10::IValue> inputs) const {
  return run_steps(std::move(inputs), nullptr);
}

std::vector<c10::IValue> Executable::run_for_capture(std::vector<c10::IValue> inputs,
                                                     at::Tensor& status_words) const {
  status_words = at::Tensor();
  return run_steps(std::move(inputs), &status_words);
}

void Executable::check_earlier_runs() const {
  const Bound& b = *bound_;
  if (!b.gpu_checks_bounds) return;
  try {
    b.deferred.check(b.gpu_kernels);
  } catch (...) {
    std::throw_with_nested(StepError("inductor_cpp: while running the graph's GPU kernels"));
  }
}

void Executable::queue_status(const at::Tensor& status_words) const {
  const Bound& b = *bound_;
  if (b.gpu_checks_bounds && status_words.defined())
    b.deferred.queue(cuda::GpuRunStatus(status_words), status_words.device());
}

std::vector<c10::IValue> Executable::run_steps(std::vector<c10::IValue> inputs, at::Tensor* capture_status) const {
  const Bound& b = *bound_;
  if (static_cast<int32_t>(inputs.size()) != b.num_inputs)
    throw std::runtime_error("inductor_cpp: compiled graph takes " + std::to_string(b.num_inputs) + " inputs, got " +
                             std::to_string(inputs.size()));
  std::vector<c10::IValue> slots(b.num_slots);
  for (int32_t i = 0; i < b.num_inputs; ++i) slots[i] = std::move(inputs[i]);
  inputs.clear();
  for (size_t c = 0; c < b.constants.size(); ++c) slots[b.num_inputs + c] = b.constants[c];
  for (int32_t s : b.free_at_start) slots[s] = c10::IValue();

  if (!capture_status && !b.check_each_run) check_earlier_runs();  // those whose words arrived
  torch::jit::Stack stack;
  GpuRun gpu{b.gpu_kernels, std::nullopt, std::nullopt, b.gpu_checks_bounds ? nullptr : &b.shared_status};
  RunContext ctx{slots, stack, gpu};
  for (const std::unique_ptr<BoundStep>& step : b.steps) {
    try {
      if (step->profile_name.empty()) {
        step->run(ctx);  // an ATen call: the dispatcher records its own range
      } else {
        RECORD_FUNCTION(step->profile_name, std::vector<c10::IValue>());
        step->run(ctx);
      }
    } catch (...) {
      std::throw_with_nested(StepError("inductor_cpp: while running " + step->label));
    }
    for (int32_t s : step->free_after) slots[s] = c10::IValue();
  }

  if (capture_status) {  // read after each replay instead (queue_status)
    if (gpu.status && b.gpu_checks_bounds) *capture_status = gpu.status->words();
  } else if (gpu.status && b.gpu_checks_bounds && b.check_each_run) {  // a synchronizing read
    try {
      gpu.status->check(b.gpu_kernels);
    } catch (...) {
      std::throw_with_nested(StepError("inductor_cpp: while running the graph's GPU kernels"));
    }
  } else if (gpu.status && b.gpu_checks_bounds) {
    b.deferred.queue(*gpu.status, *gpu.device);  // read by a later run, without a sync now
  }
  std::vector<c10::IValue> outputs;
  outputs.reserve(b.outputs.size());
  for (const BoundOutput& o : b.outputs) outputs.push_back(o.value(slots));
  return outputs;
}

}  // namespace inductor_cpp::runtime
