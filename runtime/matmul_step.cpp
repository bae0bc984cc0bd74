/// \file
/// PackedBKey: a weight's identity key (the caching rule is PackedWeightCache, in the header).
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

}  // namespace inductor_cpp::runtime
