/// \file
/// Generated-kernel steps: binding and one run (see the header).
#include "runtime/kernel_step.h"

#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#include <stdexcept>

#include "runtime/aten_literals.h"
#include "runtime/cpu_pool.h"

namespace inductor_cpp::runtime {

std::unique_ptr<BoundKernelStep> bind_kernel_launch(const KernelLaunch& launch, const KernelLibrary* library,
                                                    const std::vector<std::string>& labels) {
  auto k = std::make_unique<BoundKernelStep>();
  if (library) {  // GPU plans: set_gpu_kernel_index
    k->fn = library->kernel(launch.name);
    const int32_t takes = library->kernel_params(launch.name);
    if (takes != static_cast<int32_t>(launch.args.size()))
      throw std::runtime_error("kernel " + launch.name + " takes " + std::to_string(takes) + " buffers, the plan passes " +
                               std::to_string(launch.args.size()));
  }
  k->args = launch.args;
  k->layouts = launch.layouts;
  k->written.assign(k->args.size(), false);
  k->allocated.assign(k->args.size(), false);
  for (const BufferAlloc& a : launch.allocs) {
    const auto options = at::TensorOptions().dtype(scalar_type_from_name(a.dtype)).device(c10::Device(a.device));
    k->allocs.push_back({a.slot, a.sizes, a.strides, options, a.reuse_slot});
    for (size_t i = 0; i < k->args.size(); ++i) {
      if (k->args[i] == a.slot) k->written[i] = k->allocated[i] = true;
    }
  }
  for (int32_t u : launch.updates) k->written.at(static_cast<size_t>(u)) = true;
  k->label = computing_label("generated " + launch.name, launch.nodes, labels);
  k->profile_name = profile_name_of(launch.name, launch.nodes, labels);
  return k;
}

/// Allocates the kernel's outputs, checks its inputs' layouts, calls it.
void BoundKernelStep::run(RunContext& ctx) const {
  const BoundKernelStep& k = *this;
  std::vector<c10::IValue>& slots = ctx.slots;
  GpuRun& gpu = ctx.gpu;
  if (k.gpu_index >= 0 && !gpu.device && !k.allocs.empty()) gpu.device = k.allocs.front().options.device();
  for (const Alloc& a : k.allocs) {
    if (a.reuse_slot >= 0 && slots[a.reuse_slot].isTensor()) {
      const at::Tensor old = slots[a.reuse_slot].toTensor();
      slots[a.slot] = old.as_strided(a.sizes, a.strides, 0);
    } else {
      slots[a.slot] = empty_strided_pooled(a.sizes, a.strides, a.options);
    }
  }
  std::vector<char*> ptrs(k.args.size());
  std::vector<at::Tensor> relaid;  // inputs copied into the layout the kernel assumes
  // Tensors the kernel overwrites in place (graph inputs it updates), with the temporary it
  // writes instead when their layout is not the one it assumes.
  std::vector<std::pair<at::Tensor, at::Tensor>> updated;
  for (size_t i = 0; i < k.args.size(); ++i) {
    at::Tensor t = slots[k.args[i]].toTensor();
    if (k.gpu_index >= 0) {  // GPU kernel: a CPU operand (a 0-dim scalar) moves to the device
      if (!gpu.device) gpu.device = t.device();
      if (t.device() != *gpu.device) {
        t = t.to(*gpu.device);
        relaid.push_back(t);  // alive until the launch is queued (the allocator reuses freed blocks)
      }
    }
    const ExpectedLayout& want = k.layouts[i];
    const bool allocated = k.allocated[i];
    if (!allocated && (t.sizes() != c10::IntArrayRef(want.sizes) || t.strides() != c10::IntArrayRef(want.strides) ||
                       (k.written[i] && t.storage_offset() != 0))) {
      TORCH_CHECK(t.sizes() == c10::IntArrayRef(want.sizes), "inductor_cpp: a generated kernel expected sizes ",
                  c10::IntArrayRef(want.sizes), " for an argument, got ", t.sizes());
      at::Tensor copy = empty_strided_pooled(want.sizes, want.strides, t.options());
      copy.copy_(t);
      relaid.push_back(copy);
      if (k.written[i]) updated.emplace_back(t, copy);
      t = copy;
    } else if (k.written[i] && !allocated) {
      updated.emplace_back(t, at::Tensor());
    }
    ptrs[i] = static_cast<char*>(t.data_ptr());
  }
  if (k.gpu_index >= 0) {
    if (!gpu.status) {
      if (gpu.shared_status)
        gpu.status.emplace(gpu.shared_status->get(static_cast<int32_t>(gpu.kernels.size()), *gpu.device));
      else
        gpu.status.emplace(static_cast<int32_t>(gpu.kernels.size()), *gpu.device);
    }
    cuda::launch_gpu_kernel(gpu.kernels.at(k.gpu_index), ptrs, *gpu.device, *gpu.status);
  } else {
    const int32_t status = k.fn(ptrs.data(), nullptr, static_cast<int32_t>(at::get_num_threads()));
    TORCH_CHECK_INDEX(status == 0, "index out of bounds (index out of range in self) in ", label);
  }
  for (auto& [target, written] : updated) {
    if (written.defined()) target.copy_(written);  // bumps the version itself
    else target.unsafeGetTensorImpl()->bump_version();  // as the in-place ATen op would
  }
}

}  // namespace inductor_cpp::runtime
