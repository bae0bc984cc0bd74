/// \file
/// A caching allocator for the large CPU tensors the runtime allocates (generated kernels' and
/// matrix steps' outputs, intermediates, relayout copies): a block of at least kMinPooledBytes,
/// once its tensor is freed, is kept by its exact (page-rounded) size and handed to the next
/// allocation of that size.
///
/// Why: a fresh block of many megabytes comes from mmap, and every page faults (and is zeroed
/// by the kernel) on first touch: on the 2-core dev machine ~175 ms per GiB, more than a
/// layernorm over that GiB takes once its output is in memory. glibc keeps freed blocks below
/// its mmap threshold (32 MiB at most) but returns larger ones to the system at every free, so
/// a compiled function called in a loop on large tensors faults its outputs in again each call.
///
/// Bounds: cached (free) bytes are capped by INDUCTOR_CPP_CPU_POOL_BYTES (default: a quarter of
/// physical memory, at most 4 GiB; 0 turns the pool off), a block that would exceed the cap is
/// freed at once, and everything cached is released when the last compiled graph is freed
/// (torch.compiler.reset(), then garbage collection). Tensors from the pool are ordinary
/// resizable CPU tensors.
#pragma once

#include <ATen/ATen.h>

#include <cstddef>

#include "matrix/matrix.h"

namespace inductor_cpp::runtime {

/// at::empty_strided, with large CPU tensors taken from the pool.
at::Tensor empty_strided_pooled(at::IntArrayRef sizes, at::IntArrayRef strides,
                                const at::TensorOptions& options);

/// Storage for packed matrix operands (matrix/gemm.h) from the pool: a weight that is
/// packed anew on every call (training) reuses its block of the previous call.
matrix::PackedStorage pooled_packed_storage();

struct CpuPoolStats {
  size_t cached_bytes = 0;  ///< held in free blocks now
  size_t reused = 0;        ///< allocations served from a cached block
  size_t fresh = 0;         ///< pooled-size allocations that needed a new block
};
CpuPoolStats cpu_pool_stats();

/// Frees every cached block; returns the bytes released.
size_t release_cpu_pool();

}  // namespace inductor_cpp::runtime
