/// \file
/// The CUDA Driver API, loaded at run time: dlopen("libcuda.so.1") on first use.
///
/// Why not link -lcuda: the development and CI machines have no NVIDIA driver (only the
/// toolkit's link stub), and our extension must import there. So the few driver entry points
/// the GPU runtime needs are looked up with dlsym, and their types are declared here (the
/// ABI values are those of cuda.h, which this file deliberately does not include: nothing of
/// ours needs the CUDA toolkit to build).
///
/// Every failing call becomes a std::runtime_error whose text names what we were doing (the
/// kernel, the module) and the driver's error name and description.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace inductor_cpp::runtime::cuda {

// Opaque driver handles (same ABI as cuda.h's CUcontext, CUmodule, CUfunction, CUstream).
using CUresult = int;
using CUdevice = int;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;

constexpr CUresult kCudaSuccess = 0;
// cuda.h: CUdevice_attribute, CUfunction_attribute, CUjit_option values we use.
constexpr int kAttrComputeCapabilityMajor = 75;
constexpr int kAttrComputeCapabilityMinor = 76;
constexpr int kAttrMaxSharedPerBlockOptin = 97;
constexpr int kFuncAttrMaxDynamicSharedBytes = 8;
constexpr int kJitInfoLogBuffer = 3;
constexpr int kJitInfoLogBufferSizeBytes = 4;
constexpr int kJitErrorLogBuffer = 5;
constexpr int kJitErrorLogBufferSizeBytes = 6;

/// cuda.h's CUlaunchAttribute and CUlaunchConfig (cuLaunchKernelEx), same layout: the
/// attribute id padded to 8 bytes, then a 64-byte value union of which we use one int.
constexpr int kLaunchAttrProgrammaticStreamSerialization = 6;
struct LaunchAttribute {
  int id = 0;
  char pad[8 - sizeof(int)] = {};
  union {
    char bytes[64];
    int programmatic_stream_serialization_allowed;
  } value = {};
};
static_assert(sizeof(LaunchAttribute) == 72, "CUlaunchAttribute is 72 bytes");
struct LaunchConfig {
  unsigned grid_x = 1, grid_y = 1, grid_z = 1;
  unsigned block_x = 1, block_y = 1, block_z = 1;
  unsigned shared_bytes = 0;
  CUstream stream = nullptr;
  LaunchAttribute* attrs = nullptr;
  unsigned num_attrs = 0;
};

/// The driver entry points we use. Load with Driver::get().
struct Driver {
  CUresult (*cuInit)(unsigned int flags) = nullptr;
  CUresult (*cuDriverGetVersion)(int* version) = nullptr;
  CUresult (*cuGetErrorName)(CUresult error, const char** name) = nullptr;
  CUresult (*cuGetErrorString)(CUresult error, const char** text) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice* device, int ordinal) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int* value, int attribute, CUdevice device) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext* ctx, CUdevice device) = nullptr;
  CUresult (*cuCtxGetCurrent)(CUcontext* ctx) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext ctx) = nullptr;
  CUresult (*cuModuleLoadDataEx)(CUmodule* module, const void* image, unsigned int num_options,
                                 int* options, void** option_values) = nullptr;
  CUresult (*cuModuleUnload)(CUmodule module) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction* fn, CUmodule module, const char* name) = nullptr;
  CUresult (*cuFuncSetAttribute)(CUfunction fn, int attribute, int value) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction fn, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                             unsigned block_x, unsigned block_y, unsigned block_z,
                             unsigned shared_bytes, CUstream stream, void** params,
                             void** extra) = nullptr;
  /// CUDA 12.0 and later; null on older drivers (launches then use cuLaunchKernel).
  CUresult (*cuLaunchKernelEx)(const LaunchConfig* config, CUfunction fn, void** params,
                               void** extra) = nullptr;

  /// The process's driver, loaded and cuInit'ed once (thread-safe). Throws
  /// std::runtime_error ("no CUDA driver: libcuda.so.1: cannot open ...") when there is none.
  static const Driver& get();
  /// Whether a driver can be loaded in this process (never throws).
  static bool available();

  /// Throws std::runtime_error "inductor_cpp: <what>: CUDA_ERROR_X (description)" unless
  /// `result` is success.
  void check(CUresult result, const std::string& what) const;
  /// "CUDA_ERROR_X (description)".
  std::string error_text(CUresult result) const;
};

/// The driver's version as "13.0" (cuDriverGetVersion), or "none" without a driver.
std::string driver_version();

/// Compute capability of device `ordinal` as major*10+minor (90 for an H100/H200), or -1
/// without a driver or device.
int compute_capability(int ordinal);

}  // namespace inductor_cpp::runtime::cuda
