/// \file
/// The GPU emitter: scheduled kernels (ir/kernel_ir.h, shaped by schedule() with
/// ScheduleOptions::target = Target::Gpu) -> one LLVM module -> PTX for one sm_XX.
///
/// Each ir::Kernel becomes one `.entry` named like the kernel. It walks the same loop nests as
/// the CPU emitter and maps For::gpu_threads / vector_width to the hardware (see
/// docs/codegen/nvptx.md): one thread per iteration (grid-stride loop, vector chunks with
/// 128-bit loads/stores when aligned), or T threads per iteration with the inner loops spread
/// over them and accumulators combined by warp shuffles and shared memory. Math comes from
/// libdevice bitcode linked into the module; the module is optimized at O3 with everything
/// but the kernels internalized.
///
/// Kernel ABI (PTX .entry <kernel.name>), parameters in order: one `ptr addrspace(1)` per
/// ir::Kernel::params entry (element type = param dtype), one i64 per ir::Kernel::symbols
/// entry, then one `ptr addrspace(1)` to an int32 status word: an out-of-range indirect index
/// stores ir::kKernelIndexOutOfBounds there (and the load reads 0).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "ir/kernel_ir.h"

namespace inductor_cpp::codegen::nvptx {

struct GpuTarget {
  int sm = 90;           ///< sm_80 / sm_90
  int ptx_version = 78;  ///< PTX ISA version (78 = 7.8, what LLVM 16 emits for sm_90)
  /// The cache qualifiers of loads of data read exactly once in a kernel (sm_70 and later;
  /// emit_cache_hints_nvptx.cpp): 0 none, 1 `.L1::no_allocate`, 2 `.L1::no_allocate.L2::256B`,
  /// 3 `.nc.L1::no_allocate.L2::256B`, 4 `.L1::no_allocate.L2::128B`. The option "gpu_tuning"
  /// can choose another.
  int read_once_hints = 1;
  /// Launch-shape constants of the emitter (nvptx_internal.h has what was measured for each);
  /// the option "gpu_tuning" can override them.
  int row_unroll = 2;              ///< rows: vector chunks in flight per thread
  int column_unroll = 16;          ///< column groups: loads in flight per thread
  int max_column_block = 1024;     ///< most threads per block of the column mapping
  int64_t min_column_grid = 128;   ///< fewest blocks the column mapping narrows blocks for
  /// Programmatic dependent launch (sm_90 and later; ignored below), docs/gpu.md. 3: every
  /// kernel starts with `griddepcontrol.launch_dependents; griddepcontrol.wait;` and is
  /// launched with the driver's programmatic stream serialization, so the next kernel in the
  /// stream is launched and its blocks are placed while this one drains, each waiting, before
  /// any memory access, until its predecessor has completed; 2: the wait only (the next kernel
  /// is launched as this one's blocks exit); 1: 3, but 2 for column-group kernels (measured);
  /// 0: plain launches.
  int programmatic_launch = 1;
};

/// The loads of `kernel` that read their data exactly once, which skip L1 when
/// GpuTarget::read_once_hints: the buffer is never stored by the kernel, all its loads sit in
/// one innermost loop under the top loop with one index, and that index uses every enclosing
/// loop's variable (emit_cache_hints_nvptx.cpp).
std::set<const ir::ValueNode*> loads_read_once(const ir::Kernel& kernel);

/// How to launch one kernel (static sizes; symbols, if any, are passed as i64 params).
struct GpuLaunch {
  std::string name;
  int64_t grid[3] = {1, 1, 1};
  int32_t block[3] = {128, 1, 1};
  int32_t shared_bytes = 0;  ///< dynamic shared memory (the emitter uses static shared only)
  /// Launch with programmatic stream serialization: the kernel waits for its predecessor
  /// itself (GpuTarget::programmatic_launch). Launching a kernel without the wait this way
  /// would race with the kernel before it.
  bool programmatic = false;
};

struct PtxModule {
  std::string llvm_ir;              ///< textual LLVM IR after linking libdevice + optimization
  std::string ptx;                  ///< the PTX for target.sm
  std::vector<GpuLaunch> launches;  ///< one per input kernel, same order
};

/// Emits all kernels of one graph into one module. Throws std::runtime_error (naming the
/// kernel and the construct) for anything it cannot emit; the caller falls back to ATen.
PtxModule emit_ptx(const std::vector<ir::Kernel>& kernels, const GpuTarget& target,
                   const std::string& libdevice_path);

std::string llvm_version();  ///< "16.0.6"
/// $CUDA_HOME/nvvm/libdevice/libdevice.10.bc, else /usr/local/cuda/nvvm/libdevice/libdevice.10.bc.
std::string default_libdevice_path();

}  // namespace inductor_cpp::codegen::nvptx
