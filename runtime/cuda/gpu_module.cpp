/// \file
/// GpuModule: per-device module loading, function lookup and launches (see gpu_module.h).
#include "runtime/cuda/gpu_module.h"

#include <map>
#include <stdexcept>

namespace inductor_cpp::runtime::cuda {

namespace {

constexpr int64_t kMaxGridX = (int64_t{1} << 31) - 1;
constexpr int64_t kMaxGridYZ = 65535;
constexpr int64_t kMaxThreadsPerBlock = 1024;
constexpr int32_t kDefaultSharedLimit = 48 * 1024;

std::string dims_text(const LaunchDims& d) {
  return "grid (" + std::to_string(d.grid[0]) + ", " + std::to_string(d.grid[1]) + ", " +
         std::to_string(d.grid[2]) + "), block (" + std::to_string(d.block[0]) + ", " +
         std::to_string(d.block[1]) + ", " + std::to_string(d.block[2]) + "), " +
         std::to_string(d.shared_bytes) + " B shared";
}

/// Trims a NUL-terminated log buffer to its text.
std::string log_text(const std::vector<char>& buffer) {
  std::string s(buffer.data());
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

void check_launch_dims(const std::string& kernel, const LaunchDims& d) {
  const bool positive = d.grid[0] > 0 && d.grid[1] > 0 && d.grid[2] > 0 && d.block[0] > 0 &&
                        d.block[1] > 0 && d.block[2] > 0 && d.shared_bytes >= 0;
  const int64_t threads = int64_t{d.block[0]} * d.block[1] * d.block[2];
  if (!positive || d.grid[0] > kMaxGridX || d.grid[1] > kMaxGridYZ || d.grid[2] > kMaxGridYZ ||
      threads > kMaxThreadsPerBlock) {
    throw std::runtime_error("inductor_cpp: kernel " + kernel +
                             " has unlaunchable dims: " + dims_text(d));
  }
}

CUcontext make_primary_context_current(int ordinal) {
  const Driver& drv = Driver::get();
  static std::mutex mutex;
  static std::map<int, CUcontext> retained;  // primary contexts live for the process
  CUcontext ctx = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = retained.find(ordinal);
    if (it == retained.end()) {
      CUdevice device = 0;
      drv.check(drv.cuDeviceGet(&device, ordinal), "cuDeviceGet(" + std::to_string(ordinal) + ")");
      drv.check(drv.cuDevicePrimaryCtxRetain(&ctx, device),
                "cuDevicePrimaryCtxRetain(device " + std::to_string(ordinal) + ")");
      it = retained.emplace(ordinal, ctx).first;
    }
    ctx = it->second;
  }
  CUcontext current = nullptr;
  drv.check(drv.cuCtxGetCurrent(&current), "cuCtxGetCurrent");
  if (current != ctx) drv.check(drv.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  return ctx;
}

GpuModule::GpuModule(std::vector<std::string> images, ImageKind kind, std::vector<std::string> kernels,
                     std::vector<int32_t> parts)
    : images_(std::move(images)), kind_(kind), kernels_(std::move(kernels)), parts_(std::move(parts)) {
  if (parts_.empty()) parts_.assign(kernels_.size(), 0);
  if (parts_.size() != kernels_.size()) throw std::runtime_error("inductor_cpp: GpuModule: a part per kernel");
  for (int32_t p : parts_)
    if (p < 0 || static_cast<size_t>(p) >= images_.size())
      throw std::runtime_error("inductor_cpp: GpuModule: kernel in part " + std::to_string(p) + " of " +
                               std::to_string(images_.size()));
  // cuModuleLoadDataEx reads PTX as a NUL-terminated string.
  for (std::string& image : images_)
    if (kind_ == ImageKind::Ptx && (image.empty() || image.back() != '\0')) image.push_back('\0');
}

GpuModule::~GpuModule() {
  if (!Driver::available()) return;
  const Driver& drv = Driver::get();
  for (const auto& d : devices_) {
    if (!d || d->modules.empty()) continue;
    CUcontext current = nullptr;
    if (drv.cuCtxGetCurrent(&current) == kCudaSuccess && current != d->context)
      drv.cuCtxSetCurrent(d->context);
    for (CUmodule m : d->modules) drv.cuModuleUnload(m);  // best effort: nothing to report from a destructor
    if (current != d->context) drv.cuCtxSetCurrent(current);
  }
}

GpuModule::PerDevice& GpuModule::load(int ordinal) const {
  const Driver& drv = Driver::get();
  auto d = std::make_unique<PerDevice>();
  d->context = make_primary_context_current(ordinal);
  std::vector<char> info(16384, '\0'), error(16384, '\0');
  int options[] = {kJitInfoLogBuffer, kJitInfoLogBufferSizeBytes, kJitErrorLogBuffer,
                   kJitErrorLogBufferSizeBytes};
  void* values[] = {info.data(), reinterpret_cast<void*>(info.size() - 1), error.data(),
                    reinterpret_cast<void*>(error.size() - 1)};
  for (size_t part = 0; part < images_.size(); ++part) {
    CUmodule module = nullptr;
    const CUresult r = drv.cuModuleLoadDataEx(&module, images_[part].data(), 4, options, values);
    if (r != kCudaSuccess) {
      std::string names;
      for (size_t k = 0; k < kernels_.size(); ++k)
        if (parts_[k] == static_cast<int32_t>(part)) names += (names.empty() ? "" : ", ") + kernels_[k];
      for (CUmodule loaded : d->modules) drv.cuModuleUnload(loaded);
      throw std::runtime_error("inductor_cpp: cannot load the GPU module (" +
                               std::string(kind_ == ImageKind::Ptx ? "PTX" : "cubin") + " part " +
                               std::to_string(part) + ", kernels " + names + ") on device " +
                               std::to_string(ordinal) + ": " + drv.error_text(r) +
                               (log_text(error).empty() ? "" : "\nJIT log: " + log_text(error)));
    }
    d->modules.push_back(module);
  }
  for (size_t k = 0; k < kernels_.size(); ++k) {
    const std::string& name = kernels_[k];
    CUfunction fn = nullptr;
    drv.check(drv.cuModuleGetFunction(&fn, d->modules[static_cast<size_t>(parts_[k])], name.c_str()),
              "kernel " + name + ": cuModuleGetFunction");
    d->functions.push_back(fn);
    d->shared_opt_in.push_back(kDefaultSharedLimit);
  }
  devices_[ordinal] = std::move(d);
  return *devices_[ordinal];
}

const std::vector<CUfunction>& GpuModule::functions(int ordinal) const {
  if (ordinal < 0) throw std::runtime_error("inductor_cpp: GPU kernels need a CUDA device");
  std::lock_guard<std::mutex> lock(mutex_);
  if (static_cast<size_t>(ordinal) >= devices_.size()) devices_.resize(ordinal + 1);
  if (devices_[ordinal]) {
    make_primary_context_current(ordinal);
    return devices_[ordinal]->functions;
  }
  return load(ordinal).functions;
}

void GpuModule::launch(int ordinal, size_t index, const LaunchDims& dims, void** params,
                       CUstream stream) const {
  const std::string& name = kernels_.at(index);
  check_launch_dims(name, dims);
  const Driver& drv = Driver::get();
  const CUfunction fn = functions(ordinal).at(index);
  if (dims.shared_bytes > kDefaultSharedLimit) {
    std::lock_guard<std::mutex> lock(mutex_);
    int32_t& allowed = devices_[ordinal]->shared_opt_in[index];
    if (dims.shared_bytes > allowed) {
      drv.check(drv.cuFuncSetAttribute(fn, kFuncAttrMaxDynamicSharedBytes, dims.shared_bytes),
                "kernel " + name + ": allowing " + std::to_string(dims.shared_bytes) +
                    " B of dynamic shared memory");
      allowed = dims.shared_bytes;
    }
  }
  LaunchConfig config;
  config.grid_x = static_cast<unsigned>(dims.grid[0]);
  config.grid_y = static_cast<unsigned>(dims.grid[1]);
  config.grid_z = static_cast<unsigned>(dims.grid[2]);
  config.block_x = static_cast<unsigned>(dims.block[0]);
  config.block_y = static_cast<unsigned>(dims.block[1]);
  config.block_z = static_cast<unsigned>(dims.block[2]);
  config.shared_bytes = static_cast<unsigned>(dims.shared_bytes);
  config.stream = stream;
  CUresult r = kCudaSuccess;
  if (dims.programmatic && drv.cuLaunchKernelEx) {
    LaunchAttribute overlap;
    overlap.id = kLaunchAttrProgrammaticStreamSerialization;
    overlap.value.programmatic_stream_serialization_allowed = 1;
    config.attrs = &overlap;
    config.num_attrs = 1;
    r = drv.cuLaunchKernelEx(&config, fn, params, nullptr);
  } else {
    r = drv.cuLaunchKernel(fn, config.grid_x, config.grid_y, config.grid_z, config.block_x,
                           config.block_y, config.block_z, config.shared_bytes, stream, params,
                           nullptr);
  }
  drv.check(r, "launching kernel " + name + " with " + dims_text(dims) +
                   (dims.programmatic ? " (programmatic)" : ""));
}

}  // namespace inductor_cpp::runtime::cuda
