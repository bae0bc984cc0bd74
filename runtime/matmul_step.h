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
/// call, with no extra copy and no fingerprint. Memory: one packed copy of B (about B's size,
/// padded to whole column panels), freed when B changes or the last step holding it is
/// destroyed. Steps that pack the same weight the same way share one copy (SharedPackedCopies):
/// a graph with symbolic sizes compiles a static copy of itself per input shape
/// (python/inductor_cpp/specialize.py), and each copy's steps would otherwise pack every weight
/// again (eight shapes of a BERT-size model: eight copies of its weights).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/intrusive_ptr.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "matrix/matrix.h"
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

/// The packed copies held by the steps of every live graph, found by the weight's key and
/// contents: a step about to pack a weight first looks for a copy another step made of the
/// same weight state (same storage, data pointer, sizes, strides and version, and the same
/// fingerprint, or none under "freezing"). Entries hold the copies weakly: a copy lives while
/// a step holds it. One registry per `Packed` type, so per packing form; a caller whose
/// packing depends on more than the weight's own state must not share.
template <typename Packed>
class SharedPackedCopies {
 public:
  static std::shared_ptr<const Packed> find(const PackedBKey& key,
                                            const WeightFingerprint& contents) {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    prune(r);
    for (const Entry& e : r.entries) {
      if (e.contents != contents || !e.key.same_as(key)) continue;
      if (std::shared_ptr<const Packed> packed = e.packed.lock()) return packed;
    }
    return nullptr;
  }

  static void add(const PackedBKey& key, const WeightFingerprint& contents,
                  const std::shared_ptr<const Packed>& packed) {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    prune(r);
    r.entries.push_back(Entry{key, contents, packed});
  }

 private:
  struct Entry {
    PackedBKey key;
    WeightFingerprint contents;
    std::weak_ptr<const Packed> packed;
  };
  struct Registry {
    std::mutex mutex;
    std::vector<Entry> entries;
  };
  static Registry& registry() {
    static Registry* r = new Registry();  // never destroyed: steps may outlive static teardown
    return *r;
  }
  /// Drops entries whose copy no step holds any more (their keys would pin StorageImpl objects).
  static void prune(Registry& r) {
    r.entries.erase(std::remove_if(r.entries.begin(), r.entries.end(),
                                   [](const Entry& e) { return e.packed.expired(); }),
                    r.entries.end());
  }
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
  /// `shared`: take a copy another step made of the same weight state (SharedPackedCopies)
  /// instead of packing again; false where the packed form depends on more than the weight.
  explicit PackedWeightCache(bool check_contents = true, bool shared = false)
      : check_contents_(check_contents), shared_(shared) {}

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
      if (shared_) packed_ = SharedPackedCopies<Packed>::find(last_seen_, *contents);
      if (packed_) {
        ++adopted_;
      } else {
        packed_ = std::make_shared<const Packed>(pack());
        ++packs_;
        if (shared_) SharedPackedCopies<Packed>::add(last_seen_, *contents, packed_);
      }
      fingerprint_ = std::move(*contents);
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

  /// How many times a copy packed by another step was taken instead of packing.
  int64_t adopted() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return adopted_;
  }

  /// How many cached copies were dropped because the weight's contents changed while its
  /// version counter did not (for tests and diagnostics).
  int64_t stale_drops() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return stale_;
  }

 private:
  const bool check_contents_;
  const bool shared_;
  mutable std::mutex mutex_;
  PackedBKey last_seen_;  ///< the weight's key on the previous call
  std::shared_ptr<const Packed> packed_;
  WeightFingerprint fingerprint_;  ///< the packed copy's source contents
  int64_t packs_ = 0;
  int64_t adopted_ = 0;
  int64_t stale_ = 0;
};

/// mm/addmm's B (see the file comment).
using PackedBCache = PackedWeightCache<matrix::PackedB>;

}  // namespace inductor_cpp::runtime
