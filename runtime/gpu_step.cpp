/// \file
/// GPU kernel steps: module binding, status words, launches on the current stream.
#include "runtime/gpu_step.h"

#include "knobs/knobs.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <c10/core/Event.h>
#include <c10/core/Stream.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>

#include <stdexcept>

namespace inductor_cpp::runtime::cuda {

std::vector<GpuKernel> bind_gpu_kernels(const Plan& plan,
                                        const std::vector<std::string>& step_labels) {
  if (plan.kernel_images.size() != static_cast<size_t>(plan.kernel_parts))
    throw std::runtime_error("inductor_cpp: the GPU plan's module (" + plan.kernel_library + ", " +
                             std::to_string(plan.kernel_parts) + " part(s)) was not loaded");
  std::vector<std::string> names;
  std::vector<int32_t> parts;
  for (const Step& s : plan.steps) {
    if (const KernelLaunch* k = s.kernel()) {
      if (k->gpu.part < 0 || k->gpu.part >= plan.kernel_parts)
        throw std::runtime_error("inductor_cpp: kernel " + k->name + " is in part " + std::to_string(k->gpu.part) +
                                 " of a module of " + std::to_string(plan.kernel_parts));
      names.push_back(k->gpu.function.empty() ? k->name : k->gpu.function);
      parts.push_back(k->gpu.part);
    }
  }
  const auto kind =
      plan.library_kind == "cubin" ? GpuModule::ImageKind::Cubin : GpuModule::ImageKind::Ptx;
  auto module = std::make_shared<const GpuModule>(plan.kernel_images, kind, names, parts);
  std::vector<GpuKernel> out;
  for (const Step& s : plan.steps) {
    const KernelLaunch* launch = s.kernel();
    if (!launch) continue;
    GpuKernel k;
    k.module = module;
    k.index = out.size();
    k.dims.grid = launch->gpu.grid;
    k.dims.block = launch->gpu.block;
    k.dims.shared_bytes = launch->gpu.shared_bytes;
    k.dims.programmatic = launch->gpu.programmatic;
    check_launch_dims(launch->name, k.dims);
    k.checks_bounds = launch->gpu.checks_bounds;
    k.label = k.index < step_labels.size() ? step_labels[k.index] : "generated " + launch->name;
    out.push_back(std::move(k));
  }
  return out;
}

GpuRunStatus::GpuRunStatus(int32_t count, c10::Device device)
    : words_(at::zeros({count}, at::TensorOptions().dtype(at::kInt).device(device))) {}

GpuRunStatus SharedRunStatus::get(int32_t count, c10::Device device) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = by_device_.find(device.index());
  if (it == by_device_.end()) it = by_device_.emplace(device.index(), GpuRunStatus(count, device)).first;
  return it->second;
}

int32_t* GpuRunStatus::word(int32_t index) const {
  return words_.data_ptr<int32_t>() + index;
}

namespace {

void throw_first_set(const at::Tensor& host, const std::vector<GpuKernel>& kernels, const char* when) {
  const int32_t* w = host.data_ptr<int32_t>();
  for (int64_t i = 0; i < host.numel(); ++i) {
    if (w[i] == 0) continue;
    const std::string label =
        static_cast<size_t>(i) < kernels.size() ? kernels[i].label : "a generated GPU kernel";
    TORCH_CHECK_INDEX(false, "index out of bounds (index out of range in self) in ", label, when);
  }
}

}  // namespace

bool launch_blocking() {
  const std::optional<std::string> v = knobs::host_env("CUDA_LAUNCH_BLOCKING");
  return v && !v->empty() && *v != "0";
}

struct DeferredStatusChecks::Pending {
  at::Tensor host;  ///< pinned copy of the run's words
  c10::Event done{c10::DeviceType::CUDA};
};

void DeferredStatusChecks::queue(const GpuRunStatus& status, c10::Device device) {
  auto p = std::make_shared<Pending>();
  p->host = at::empty(status.words().sizes(), status.words().options().device(at::kCPU).pinned_memory(true));
  p->host.copy_(status.words(), /*non_blocking=*/true);
  const c10::Stream stream = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->getStream(device);
  p->done.record(stream);
  std::lock_guard<std::mutex> lock(mutex_);
  pending_.push_back(std::move(p));
}

void DeferredStatusChecks::check(const std::vector<GpuKernel>& kernels, bool wait) {
  std::vector<std::shared_ptr<Pending>> arrived;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::shared_ptr<Pending>> still;
    // Keep at most 16 runs in flight: past that, wait for the oldest (memory stays bounded).
    for (size_t i = 0; i < pending_.size(); ++i) {
      const bool must = wait || pending_.size() - i > 16;
      if (must || pending_[i]->done.query()) {
        arrived.push_back(pending_[i]);
      } else {
        still.push_back(pending_[i]);
      }
    }
    pending_ = std::move(still);
  }
  for (const auto& p : arrived) {
    p->done.synchronize();
    throw_first_set(p->host, kernels, " (in an earlier call of this graph; CUDA_LAUNCH_BLOCKING=1 reports it at the call)");
  }
}

void GpuRunStatus::check(const std::vector<GpuKernel>& kernels) const {
  const at::Tensor host = words_.cpu();  // waits for the stream
  throw_first_set(host, kernels, "");
}

void launch_gpu_kernel(const GpuKernel& k, const std::vector<char*>& buffers, c10::Device device,
                       const GpuRunStatus& status) {
  TORCH_CHECK(device.is_cuda(), "inductor_cpp: ", k.label, " runs on the GPU but got tensors on ",
              device.str());
  const c10::Stream stream =
      c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->getStream(device);
  std::vector<void*> values(buffers.begin(), buffers.end());
  values.push_back(status.word(static_cast<int32_t>(k.index)));
  std::vector<void*> params(values.size());
  for (size_t i = 0; i < values.size(); ++i) params[i] = &values[i];
  try {
    k.module->launch(device.index() < 0 ? 0 : device.index(), k.index, k.dims, params.data(),
                     static_cast<CUstream>(stream.native_handle()));
  } catch (const std::exception& e) {
    TORCH_CHECK(false, e.what(), " (", k.label, ")");
  }
}

}  // namespace inductor_cpp::runtime::cuda
