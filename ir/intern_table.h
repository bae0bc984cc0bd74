/// \file
/// The hash-consing table behind Expr and Value: one node per structure, held weakly so the
/// table never keeps a node alive (swept as it grows), and the hash steps both node kinds
/// build their structural hashes from. Private to ir/.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace inductor_cpp::ir {

/// Combines `v` into `seed` (a splitmix64 finalizer over the combination): deterministic across
/// runs and platforms, as the structural hashes that feed cache keys must be.
inline size_t mix_hash(size_t seed, uint64_t v) {
  uint64_t x = seed ^ (v + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return static_cast<size_t>(x ^ (x >> 31));
}

/// FNV-1a of `s`: deterministic across runs (std::hash need not be).
inline uint64_t string_hash(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

template <class Node>
class InternTable {
 public:
  using NodePtr = std::shared_ptr<const Node>;

  /// The node with hash `hash` for which `same(node)` holds, or the one `make()` builds
  /// (which must carry that hash). Thread-safe.
  template <class Same, class Make>
  NodePtr intern(size_t hash, Same same, Make make) {
    std::lock_guard<std::mutex> guard(mutex_);
    auto range = table_.equal_range(hash);
    for (auto it = range.first; it != range.second;) {
      NodePtr existing = it->second.lock();
      if (!existing) {
        it = table_.erase(it);
        continue;
      }
      if (same(*existing)) return existing;
      ++it;
    }
    NodePtr fresh = make();
    table_.emplace(hash, fresh);
    if (table_.size() > sweep_threshold_) sweep();
    return fresh;
  }

 private:
  void sweep() {
    for (auto it = table_.begin(); it != table_.end();)
      it = it->second.expired() ? table_.erase(it) : std::next(it);
    sweep_threshold_ = std::max<size_t>(4096, 2 * table_.size());
  }

  std::mutex mutex_;
  std::unordered_multimap<size_t, std::weak_ptr<const Node>> table_;
  size_t sweep_threshold_ = 4096;
};

}  // namespace inductor_cpp::ir
