/// \file
/// One graph's GPU kernels as a loaded CUDA module: the PTX (or cubin) image of the graph,
/// loaded into each device's primary context on first use (cuModuleLoadDataEx), its
/// functions looked up once, and launches on a caller-given stream.
///
/// Pure C++ over the dlopen'ed driver (driver.h): it knows nothing of libtorch. The executor
/// (kernel_step.cpp) supplies the stream (PyTorch's current one) and the buffers (from
/// PyTorch's caching allocator). Every error names the kernel it concerns.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/cuda/driver.h"

namespace inductor_cpp::runtime::cuda {

/// How one kernel is launched (from the plan's KernelLaunch).
struct LaunchDims {
  std::array<int64_t, 3> grid = {1, 1, 1};
  std::array<int32_t, 3> block = {128, 1, 1};
  int32_t shared_bytes = 0;  ///< dynamic shared memory
  /// cuLaunchKernelEx with programmatic stream serialization (the kernel begins with
  /// griddepcontrol.wait); plain cuLaunchKernel when false or when the driver lacks it.
  bool programmatic = false;
};

/// Throws std::runtime_error naming the kernel when the dims are not launchable (a zero or
/// negative extent, grid.y/z above 65535, grid.x above 2^31-1, more than 1024 threads).
void check_launch_dims(const std::string& kernel, const LaunchDims& dims);

class GpuModule {
 public:
  enum class ImageKind { Ptx, Cubin };
  /// `images`: PTX texts or cubins (a graph's kernels compiled as several modules, in
  /// parallel); `kernels`: the entry names, kernel i in images[parts[i]] (no `parts`: all in
  /// the first).
  GpuModule(std::vector<std::string> images, ImageKind kind, std::vector<std::string> kernels,
            std::vector<int32_t> parts = {});
  ~GpuModule();
  GpuModule(const GpuModule&) = delete;
  GpuModule& operator=(const GpuModule&) = delete;

  /// Makes device `ordinal`'s primary context current on this thread and returns the
  /// function handles of the kernels (in constructor order) there, loading the module into
  /// that context the first time. Thread-safe. Throws std::runtime_error with the JIT log
  /// when the image does not load, naming the kernel whose lookup failed.
  const std::vector<CUfunction>& functions(int ordinal) const;

  /// cuLaunchKernel(Ex) of kernel `index` (its handle from functions(ordinal)); `params` holds a
  /// pointer to each parameter value, in the kernel ABI's order.
  void launch(int ordinal, size_t index, const LaunchDims& dims, void** params,
              CUstream stream) const;

  const std::vector<std::string>& kernel_names() const { return kernels_; }

 private:
  struct PerDevice {
    CUcontext context = nullptr;
    std::vector<CUmodule> modules;  ///< one per image
    std::vector<CUfunction> functions;
    std::vector<int32_t> shared_opt_in;  ///< dynamic shared bytes each function allows
  };
  PerDevice& load(int ordinal) const;

  std::vector<std::string> images_;
  ImageKind kind_;
  std::vector<std::string> kernels_;
  std::vector<int32_t> parts_;  ///< image of each kernel
  mutable std::mutex mutex_;
  mutable std::vector<std::unique_ptr<PerDevice>> devices_;  ///< by ordinal, null until loaded
};

/// Makes `ordinal`'s primary context (the one PyTorch's runtime uses) current on this
/// thread, retaining it once per process; returns it.
CUcontext make_primary_context_current(int ordinal);

}  // namespace inductor_cpp::runtime::cuda
