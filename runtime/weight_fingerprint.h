/// \file
/// A content fingerprint of a weight, so that a packed copy kept across calls
/// (PackedWeightCache, runtime/matmul_step.h) also sees writes that bypass the autograd version
/// counter: `w.data.add_(1)`, `w.data.copy_(ema)`, writes through numpy or `data_ptr()`.
///
/// The fingerprint is, per 64 KiB chunk of the bytes the tensor covers, four 64-bit sums of a
/// keyed multiply-accumulate over its 8-byte words (xxHash3's inner loop, AVX2; 15-20 GB/s a
/// thread from cache, memory speed from DRAM), chunks split over the OpenMP team; 32 bytes per
/// 64 KiB. A change confined to one aligned 8-byte word (one float, or two neighbours) is always
/// seen; any other change goes unseen only if all four 64-bit sums of its chunk come out as
/// they were (no realistic write does that without knowing the keys). Reading the weight once per call costs far less than
/// packing it (a read, a write, then the kernel's read of the copy). The matrix kernels need
/// AVX2, so every host that packs weights can run it.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace inductor_cpp::runtime {

/// Four lane sums per chunk, in address order, then the byte count. Equal fingerprints: the
/// same bytes (up to the odds above).
using WeightFingerprint = std::vector<uint64_t>;

/// The fingerprint of the bytes `w` covers, or nullopt when `w` does not cover one dense span
/// (overlapping or gapped strides; then the caller must not cache a copy of it).
/// `threads`: the OpenMP team to split the chunks over (one thread under 256 KiB).
std::optional<WeightFingerprint> weight_fingerprint(const at::Tensor& w, int threads);

}  // namespace inductor_cpp::runtime
