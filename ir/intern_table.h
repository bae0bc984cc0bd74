/// \file
/// The hash-consing table behind Expr and Value: one node per structure, held weakly so the
/// table never keeps a node alive (swept as it grows). Private to ir/.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace inductor_cpp::ir {

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
