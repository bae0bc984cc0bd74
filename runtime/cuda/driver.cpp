/// \file
/// Loading libcuda.so.1 with dlopen and resolving the entry points (see driver.h).
#include "runtime/cuda/driver.h"

#include <dlfcn.h>

#include <mutex>
#include <stdexcept>

namespace inductor_cpp::runtime::cuda {

namespace {

/// The symbols, or the reason there are none. Loaded once; the library stays loaded for the
/// life of the process (the driver must not be unloaded under live modules).
struct Loaded {
  Driver driver;
  std::string error;  ///< empty when the driver loaded
};

template <typename Fn>
void resolve(void* handle, const char* name, Fn& slot, std::string& error) {
  slot = reinterpret_cast<Fn>(dlsym(handle, name));
  if (!slot && error.empty()) error = std::string("libcuda.so.1 has no ") + name;
}

Loaded load_symbols() {
  Loaded out;
  void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (!handle) {
    const char* why = dlerror();
    out.error = std::string("no CUDA driver: ") + (why ? why : "libcuda.so.1 not found");
    return out;
  }
  Driver& d = out.driver;
  std::string& e = out.error;
  resolve(handle, "cuInit", d.cuInit, e);
  resolve(handle, "cuDriverGetVersion", d.cuDriverGetVersion, e);
  resolve(handle, "cuGetErrorName", d.cuGetErrorName, e);
  resolve(handle, "cuGetErrorString", d.cuGetErrorString, e);
  resolve(handle, "cuDeviceGet", d.cuDeviceGet, e);
  resolve(handle, "cuDeviceGetAttribute", d.cuDeviceGetAttribute, e);
  resolve(handle, "cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRetain, e);
  resolve(handle, "cuCtxGetCurrent", d.cuCtxGetCurrent, e);
  resolve(handle, "cuCtxSetCurrent", d.cuCtxSetCurrent, e);
  resolve(handle, "cuModuleLoadDataEx", d.cuModuleLoadDataEx, e);
  resolve(handle, "cuModuleUnload", d.cuModuleUnload, e);
  resolve(handle, "cuModuleGetFunction", d.cuModuleGetFunction, e);
  resolve(handle, "cuFuncSetAttribute", d.cuFuncSetAttribute, e);
  resolve(handle, "cuLaunchKernel", d.cuLaunchKernel, e);
  d.cuLaunchKernelEx = reinterpret_cast<decltype(d.cuLaunchKernelEx)>(dlsym(handle, "cuLaunchKernelEx"));
  return out;
}

const Loaded& loaded_symbols() {
  static const Loaded loaded = load_symbols();
  return loaded;
}

/// The driver after cuInit(0), or the reason it cannot be used.
const Loaded& initialized() {
  static const Loaded ready = [] {
    Loaded out = loaded_symbols();
    if (!out.error.empty()) return out;
    const CUresult r = out.driver.cuInit(0);
    if (r != kCudaSuccess) out.error = "cuInit failed: " + out.driver.error_text(r);
    return out;
  }();
  return ready;
}

}  // namespace

const Driver& Driver::get() {
  const Loaded& l = initialized();
  if (!l.error.empty()) throw std::runtime_error("inductor_cpp: " + l.error);
  return l.driver;
}

bool Driver::available() {
  return initialized().error.empty();
}

std::string Driver::error_text(CUresult result) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (cuGetErrorName) cuGetErrorName(result, &name);
  if (cuGetErrorString) cuGetErrorString(result, &text);
  std::string out = name ? name : "CUDA error " + std::to_string(result);
  if (text) out += std::string(" (") + text + ")";
  return out;
}

void Driver::check(CUresult result, const std::string& what) const {
  if (result == kCudaSuccess) return;
  throw std::runtime_error("inductor_cpp: " + what + ": " + error_text(result));
}

std::string driver_version() {
  const Loaded& l = loaded_symbols();
  int version = 0;
  if (!l.error.empty() || l.driver.cuDriverGetVersion(&version) != kCudaSuccess) return "none";
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

int compute_capability(int ordinal) {
  if (!Driver::available()) return -1;
  const Driver& d = Driver::get();
  CUdevice device = 0;
  int major = 0, minor = 0;
  if (d.cuDeviceGet(&device, ordinal) != kCudaSuccess) return -1;
  if (d.cuDeviceGetAttribute(&major, kAttrComputeCapabilityMajor, device) != kCudaSuccess ||
      d.cuDeviceGetAttribute(&minor, kAttrComputeCapabilityMinor, device) != kCudaSuccess)
    return -1;
  return major * 10 + minor;
}

}  // namespace inductor_cpp::runtime::cuda
