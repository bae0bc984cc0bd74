/// \file
/// The executor's GPU kernel step (libtorch side): launches a generated kernel of the plan's
/// GpuModule on PyTorch's current stream of the tensors' device, and the per-run status words
/// through which kernels report an out-of-range indirect index.
///
/// kernel_step.cpp allocates the kernel's buffers (PyTorch's caching allocator, as for CPU
/// kernels) and hands the data pointers here. Launches are asynchronous; the status words are
/// read once at the end of a run, and only when the plan has kernels that can set them.
#pragma once

#include <ATen/core/Tensor.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/cuda/gpu_module.h"
#include "runtime/plan.h"

namespace inductor_cpp::runtime::cuda {

/// A kernel step bound to the module of its plan.
struct GpuKernel {
  std::shared_ptr<const GpuModule> module;
  size_t index = 0;  ///< in module->kernel_names()
  LaunchDims dims;
  bool checks_bounds = false;  ///< may set its status word (indirect loads)
  std::string label;           ///< "generated k3 computing aten::gather (f.py:2 ...)"
};

/// Loads a GPU plan's module (plan.kernel_image) and binds every kernel step to it, in plan
/// order. Throws std::runtime_error when the plan has no image.
std::vector<GpuKernel> bind_gpu_kernels(const Plan& plan,
                                        const std::vector<std::string>& step_labels);

/// One int32 status word per kernel (index = GpuKernel::index), zeroed, on `device`
/// (allocated from PyTorch's caching allocator on the current stream at the start of a run).
/// Every kernel gets a valid word, even one we believe cannot fail.
class GpuRunStatus {
 public:
  GpuRunStatus(int32_t count, c10::Device device);
  /// Words allocated elsewhere (a CUDA graph's, rewritten by each replay).
  explicit GpuRunStatus(at::Tensor words) : words_(std::move(words)) {}
  int32_t* word(int32_t index) const;
  /// Reads the words (synchronizes with the stream); throws c10::IndexError naming the first
  /// kernel whose word is set.
  void check(const std::vector<GpuKernel>& kernels) const;
  const at::Tensor& words() const { return words_; }

 private:
  at::Tensor words_;
};

/// The status words of finished runs, checked without stopping the host: at the end of a run
/// its words are copied to pinned host memory behind an event on the run's stream; a later run
/// of the same plan (or check_all) reads the runs whose events have completed and throws
/// c10::IndexError naming the kernel, "in an earlier call". So the host can launch the next
/// graph (a training step's backward) while this one runs, as it does for eager's kernels,
/// whose device-side asserts also surface later. With CUDA_LAUNCH_BLOCKING=1 each run is
/// checked at its own end instead (the error at the call that caused it). Thread-safe.
class DeferredStatusChecks {
 public:
  /// Queues `status` (its run's kernels all launched on `device`'s current stream).
  void queue(const GpuRunStatus& status, c10::Device device);
  /// Checks every queued run whose copy has arrived (all of them when `wait`); throws for the
  /// first with a word set.
  void check(const std::vector<GpuKernel>& kernels, bool wait = false);

 private:
  struct Pending;
  std::mutex mutex_;
  std::vector<std::shared_ptr<Pending>> pending_;
};

/// Whether CUDA_LAUNCH_BLOCKING is set to a true value (then status words are read at the end of
/// each run).
bool launch_blocking();

/// Status words for plans whose kernels never write them (no bounds-checked loads): zeroed
/// once per device and shared by every run, so a run launches no fill kernel for them.
/// Thread-safe.
class SharedRunStatus {
 public:
  GpuRunStatus get(int32_t count, c10::Device device);

 private:
  std::mutex mutex_;
  std::map<c10::DeviceIndex, GpuRunStatus> by_device_;
};

/// Launches `k` with the kernel ABI (buffer pointers, then a pointer to its status word) on
/// the current CUDA stream of `device`. Errors name the kernel (k.label).
void launch_gpu_kernel(const GpuKernel& k, const std::vector<char*>& buffers, c10::Device device,
                       const GpuRunStatus& status);

}  // namespace inductor_cpp::runtime::cuda
