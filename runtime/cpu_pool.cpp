/// \file
/// The CPU block pool (see cpu_pool.h).
#include "runtime/cpu_pool.h"

#include <ATen/EmptyTensor.h>
#include <c10/core/Allocator.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>

#include "knobs/knobs.h"

namespace inductor_cpp::runtime {
namespace {

constexpr size_t kMinPooledBytes = size_t(4) << 20;
constexpr size_t kPage = 4096;
constexpr size_t kAlignment = 64;
/// Where a block's data starts within its allocation (one of kColors, in turn per new block):
/// 512 + 1024 k bytes past a 64-aligned address. A large tensor from torch's allocator (glibc
/// mmap) starts 64 bytes into a page, and so would ours: a kernel that loads one and stores the
/// other in step then hits 4K aliasing (a load whose address matches an older in-flight
/// store's low 12 bits waits for it). `x.t() + y` at 4096 x 1024, 2 threads, the kernel alone
/// with its output 0 / 64 / 512 / 1024 / 2048 bytes past a page: 1.02 / 1.02 / 0.83 / 0.81 /
/// 0.81 ms. Colours 1 KiB apart keep two of our own blocks apart too, most of the time.
constexpr size_t kColors = 4, kColorStride = 1024, kFirstColor = 512;

size_t default_cap() {
  using knobs::Knob;
  if (knobs::malformed(Knob::CpuPoolBytes))
    throw std::invalid_argument("INDUCTOR_CPP_CPU_POOL_BYTES must be a byte count, got '" +
                                *knobs::raw(Knob::CpuPoolBytes) + "'");
  if (const auto bytes = knobs::get_count(Knob::CpuPoolBytes)) return *bytes;
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  const size_t quarter = pages > 0 && page > 0 ? size_t(pages) * size_t(page) / 4 : 0;
  return std::min(quarter, size_t(4) << 30);
}

/// One block; the DataPtr's context, so that the deleter knows its size.
struct Block {
  void* raw = nullptr;   ///< what posix_memalign returned (bytes + kPage of it)
  void* data = nullptr;  ///< raw + the block's colour offset
  size_t bytes = 0;
};

class PoolAllocator final : public c10::Allocator {
 public:
  size_t cap() const { return cap_; }

  c10::DataPtr allocate(size_t n) override {
    const size_t bytes = std::max(kPage, (n + kPage - 1) / kPage * kPage);
    Block* block = take(bytes);
    if (block == nullptr) {
      void* raw = nullptr;
      if (posix_memalign(&raw, kAlignment, bytes + kPage) != 0) throw std::bad_alloc();
      const size_t color = next_color_.fetch_add(1, std::memory_order_relaxed) % kColors;
      block = new Block{raw, static_cast<char*>(raw) + kFirstColor + color * kColorStride, bytes};
    }
    return {block->data, block, &PoolAllocator::give_back, c10::Device(c10::DeviceType::CPU)};
  }

  void copy_data(void* dest, const void* src, size_t count) const override {
    default_copy_data(dest, src, count);
  }

  CpuPoolStats stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

  size_t release() {
    std::multimap<size_t, Block*> blocks;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      blocks.swap(free_);
      stats_.cached_bytes = 0;
    }
    size_t released = 0;
    for (auto& [bytes, block] : blocks) {
      released += bytes;
      std::free(block->raw);
      delete block;
    }
    return released;
  }

  static PoolAllocator& instance() {
    static PoolAllocator* pool = new PoolAllocator();  // never destroyed: tensors may outlive exit
    return *pool;
  }

 private:
  Block* take(size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = free_.find(bytes);
    if (it == free_.end()) {
      ++stats_.fresh;
      return nullptr;
    }
    Block* block = it->second;
    free_.erase(it);
    stats_.cached_bytes -= bytes;
    ++stats_.reused;
    return block;
  }

  static void give_back(void* context) {
    Block* block = static_cast<Block*>(context);
    PoolAllocator& pool = instance();
    {
      std::lock_guard<std::mutex> lock(pool.mutex_);
      if (pool.stats_.cached_bytes + block->bytes <= pool.cap_) {
        pool.free_.emplace(block->bytes, block);
        pool.stats_.cached_bytes += block->bytes;
        return;
      }
    }
    std::free(block->raw);
    delete block;
  }

  std::mutex mutex_;
  std::multimap<size_t, Block*> free_;
  std::atomic<size_t> next_color_{0};
  CpuPoolStats stats_;
  const size_t cap_ = default_cap();
};

}  // namespace

at::Tensor empty_strided_pooled(at::IntArrayRef sizes, at::IntArrayRef strides,
                                const at::TensorOptions& options) {
  if (!options.device().is_cpu() || options.pinned_memory() || options.layout() != c10::kStrided)
    return at::empty_strided(sizes, strides, options);
  const auto dtype = c10::typeMetaToScalarType(options.dtype());
  const size_t bytes = at::detail::computeStorageNbytes(sizes, strides, c10::elementSize(dtype));
  PoolAllocator& pool = PoolAllocator::instance();
  if (bytes < kMinPooledBytes || pool.cap() < bytes)
    return at::empty_strided(sizes, strides, options);
  return at::detail::empty_strided_generic(sizes, strides, &pool,
                                           c10::DispatchKeySet(c10::DispatchKey::CPU), dtype);
}

matrix::PackedStorage pooled_packed_storage() {
  return [](size_t floats) {
    at::Tensor block = empty_strided_pooled({static_cast<int64_t>(floats)}, {1},
                                            at::TensorOptions().dtype(at::kFloat));
    float* data = block.data_ptr<float>();
    return std::shared_ptr<float>(data,
                                  [block = std::move(block)](float*) mutable { block.reset(); });
  };
}

CpuPoolStats cpu_pool_stats() {
  return PoolAllocator::instance().stats();
}

size_t release_cpu_pool() {
  return PoolAllocator::instance().release();
}

}  // namespace inductor_cpp::runtime
