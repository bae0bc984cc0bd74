/// \file
/// A matrix plan step's packed-weight cache: keeps mm/addmm's B (usually a Linear weight, a
/// graph input) or a convolution's weight (runtime/conv_step.h) packed in the GEMM's blocked layout
/// across calls while B does not change, so a compiled graph does not repack its weights on every
/// call (the cost that made matrix_kernels slower than MKL at small M).
///
/// B is identified by its storage (a weak reference: the StorageImpl object cannot be reused by
/// another tensor while we hold it), data pointer, sizes, strides and autograd version counter.
/// In-place updates (optimizer steps, `w.add_(1)` under no_grad) bump the version, so the next
/// call repacks. Writes that bypass the version counter (`w.data.add_(1)`, an EMA through
/// `.data`, writes through numpy or data_ptr) are caught by the weight's content fingerprint
/// (runtime/weight_fingerprint.h), checked on every call that would reuse the packed copy: one
/// read of the weight, at memory speed, instead of a pack.
///
/// Caching starts only after the same B (same identity and version) was seen on two consecutive
/// calls: an intermediate produced in the same run changes every call and keeps being packed per
/// call, with no extra copy and no fingerprint. Memory: one packed copy of B per matmul step
/// (about B's size, padded to whole column panels), freed when B changes or the executable is
/// destroyed.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/intrusive_ptr.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "runtime/matrix/gemm.h"
#include "runtime/weight_fingerprint.h"

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
  /// `check_contents` false: trust the version counter alone (the "freezing" option: weights
  /// are constants, as in stock Inductor's freezing), skipping the per-call fingerprint.
  explicit PackedWeightCache(bool check_contents = true) : check_contents_(check_contents) {}

  /// The packed copy of `w` to use (made by `pack()` when not yet cached, or when w's contents
  /// changed behind its version counter), or nullptr when the caller should pack per call (w
  /// not yet seen unchanged on two consecutive calls, or not cacheable). `threads`: the team
  /// that reads w for its fingerprint. `pack` is called with the cache's mutex held.
  template <typename PackFn>
  std::shared_ptr<const Packed> lookup(const at::Tensor& w, int threads, PackFn&& pack) {
    PackedBKey key = PackedBKey::of(w);
    std::lock_guard<std::mutex> lock(mutex_);
    const bool unchanged = key.same_as(last_seen_);
    last_seen_ = std::move(key);
    std::optional<WeightFingerprint> contents;
    if (unchanged) contents = check_contents_ ? weight_fingerprint(w, threads) : WeightFingerprint();
    if (!contents) {
      packed_.reset();  // w changed (or is an intermediate, or not one span): pack per call
      return nullptr;
    }
    if (packed_ && *contents != fingerprint_) {
      packed_.reset();  // written behind the version counter (w.data, numpy): repack
      ++stale_;
    }
    if (!packed_) {
      packed_ = std::make_shared<const Packed>(pack());
      fingerprint_ = std::move(*contents);
      ++packs_;
    }
    return packed_;
  }

  /// False under the "freezing" option (the version counter alone is trusted).
  bool checks_contents() const { return check_contents_; }

  /// How many times the weight was packed into the cache (for tests and diagnostics).
  int64_t packs() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return packs_;
  }

  /// How many cached copies were dropped because the weight's contents changed while its
  /// version counter did not (for tests and diagnostics).
  int64_t stale_drops() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return stale_;
  }

 private:
  const bool check_contents_;
  mutable std::mutex mutex_;
  PackedBKey last_seen_;  ///< the weight's key on the previous call
  std::shared_ptr<const Packed> packed_;
  WeightFingerprint fingerprint_;  ///< the packed copy's source contents
  int64_t packs_ = 0;
  int64_t stale_ = 0;
};

/// mm/addmm's B (see the file comment).
using PackedBCache = PackedWeightCache<matrix::PackedB>;

}  // namespace inductor_cpp::runtime
