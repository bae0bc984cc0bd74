/// \file
/// A matrix plan step's packed-weight cache: keeps mm/addmm's B (usually a Linear weight, a
/// graph input) or a convolution's weight (runtime/conv_step.h) packed in the GEMM's blocked layout
/// across calls while B does not change, so a compiled graph does not repack its weights on every
/// call (the cost that made matrix_kernels slower than MKL at small M).
///
/// B is identified by its storage (a weak reference: the StorageImpl object cannot be reused by
/// another tensor while we hold it), data pointer, sizes, strides and autograd version counter.
/// In-place updates (optimizer steps, `w.add_(1)` under no_grad) bump the version, so the next
/// call repacks. Not seen: writes that bypass the version counter (`w.data.add_(1)`,
/// writes through numpy or data_ptr) — the same hazard autograd's saved tensors have.
///
/// Caching starts only after the same B (same identity and version) was seen on two consecutive
/// calls: an intermediate produced in the same run changes every call and keeps being packed per
/// call, with no extra copy. Memory: one packed copy of B per matmul step (about B's size,
/// padded to whole column panels), freed when B changes or the executable is destroyed.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/intrusive_ptr.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/matrix/gemm.h"

namespace inductor_cpp::runtime {

/// What identifies one state of a B operand. Holding it keeps no data alive.
struct PackedBKey {
  c10::weak_intrusive_ptr<c10::StorageImpl> storage{c10::intrusive_ptr<c10::StorageImpl>()};
  const void* data = nullptr;
  std::vector<int64_t> sizes, strides;
  uint32_t version = 0;
  bool valid = false;  ///< false: B has no version counter (inference tensors); never cached.

  /// The key of `b` now.
  static PackedBKey of(const at::Tensor& b);
  bool same_as(const PackedBKey& other) const;
};

/// One matrix step's packed weight (`Packed`: matrix::PackedB for mm/addmm's B,
/// matrix::PackedConvWeight for a convolution's weight). Thread-safe: concurrent runs share it
/// under a mutex; a packed copy handed out stays valid for its caller even if another call
/// repacks meanwhile.
template <typename Packed>
class PackedWeightCache {
 public:
  /// The packed copy of `w` to use (made by `pack()` when not yet cached), or nullptr when the
  /// caller should pack per call (w not yet seen unchanged on two consecutive calls, or not
  /// cacheable). `pack` is called with the cache's mutex held.
  template <typename PackFn>
  std::shared_ptr<const Packed> lookup(const at::Tensor& w, PackFn&& pack) {
    PackedBKey key = PackedBKey::of(w);
    std::lock_guard<std::mutex> lock(mutex_);
    const bool unchanged = key.same_as(last_seen_);
    last_seen_ = std::move(key);
    if (!unchanged) {
      packed_.reset();  // w changed (or is an intermediate): drop the stale copy, pack per call
      return nullptr;
    }
    if (!packed_) {
      packed_ = std::make_shared<const Packed>(pack());
      ++packs_;
    }
    return packed_;
  }

  /// How many times the weight was packed into the cache (for tests and diagnostics).
  int64_t packs() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return packs_;
  }

 private:
  mutable std::mutex mutex_;
  PackedBKey last_seen_;  ///< the weight's key on the previous call
  std::shared_ptr<const Packed> packed_;
  int64_t packs_ = 0;
};

/// mm/addmm's B (see the file comment).
using PackedBCache = PackedWeightCache<matrix::PackedB>;

}  // namespace inductor_cpp::runtime
