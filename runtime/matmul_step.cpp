/// \file
/// PackedBCache: B's identity key and the two-consecutive-calls caching rule (see the header).
#include "runtime/matmul_step.h"

namespace inductor_cpp::runtime {

PackedBKey PackedBKey::of(const at::Tensor& b) {
  PackedBKey key;
  if (b.is_inference() || !b.has_storage()) return key;
  const auto& counter = b.unsafeGetTensorImpl()->version_counter();
  if (!counter.enabled()) return key;
  key.storage = b.storage().getWeakStorageImpl();
  key.data = b.data_ptr();
  key.sizes = b.sizes().vec();
  key.strides = b.strides().vec();
  key.version = counter.current_version();
  key.valid = true;
  return key;
}

bool PackedBKey::same_as(const PackedBKey& other) const {
  if (!valid || !other.valid) return false;
  // The weak references pin the StorageImpl objects, so equal targets mean the same storage.
  if (storage.expired() || other.storage.expired()) return false;
  return storage._unsafe_get_target() == other.storage._unsafe_get_target() && data == other.data &&
         version == other.version && sizes == other.sizes && strides == other.strides;
}

std::shared_ptr<const matrix::PackedB> PackedBCache::lookup(const at::Tensor& b, const float* data,
                                                            int64_t k, int64_t n, int64_t ldb,
                                                            bool trans_b) {
  PackedBKey key = PackedBKey::of(b);
  std::lock_guard<std::mutex> lock(mutex_);
  const bool unchanged = key.same_as(last_seen_);
  last_seen_ = std::move(key);
  if (!unchanged) {
    packed_.reset();  // B changed (or is an intermediate): drop the stale copy, pack per call
    return nullptr;
  }
  if (!packed_) {
    packed_ = std::make_shared<const matrix::PackedB>(matrix::pack_b_f32(data, k, n, ldb, trans_b));
    ++packs_;
  }
  return packed_;
}

int64_t PackedBCache::packs() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return packs_;
}

}  // namespace inductor_cpp::runtime
