/// \file scratch.h
/// \brief Per-thread scratch memory of the matrix library: packed A blocks, the shared B ring,
/// split-K partials, padded convolution rows, bf16 strips, ... kept across calls so that a
/// layer called in a loop does not fault fresh pages in on every call, and freed by
/// release_scratch(): compiled graphs call it when the last one is freed
/// (torch.compiler.reset(), then garbage collection), as they release the CPU block pool
/// (runtime/cpu_pool.h).
///
/// Each owner (a thread_local object) registers a release function with its thread on
/// construction and unregisters on destruction; release_scratch runs every registered function
/// of every thread of an OpenMP team, each thread freeing only its own memory, so nothing is
/// freed under a thread that is using it.
#pragma once

#include <cstddef>
#include <vector>

namespace inductor_cpp::matrix {

/// Registers `release(owner)` (frees the owner's memory, returns the bytes freed) with the
/// calling thread; unregister_scratch(owner) before the owner goes away.
void register_scratch(void* owner, size_t (*release)(void* owner));
void unregister_scratch(void* owner);

/// Frees the calling thread's registered scratch; returns the bytes freed.
size_t release_thread_scratch();

/// Frees the scratch of the calling thread and of the OpenMP workers of a team of `threads`
/// (ask for at least the largest team the library ran on); returns the bytes freed. Call it
/// while no matrix call runs.
size_t release_scratch(int threads);

/// A std::vector kept per thread as scratch (declare it thread_local), freed by
/// release_scratch.
template <class T>
class ScratchVector {
 public:
  ScratchVector() { register_scratch(this, &ScratchVector::release); }
  ~ScratchVector() { unregister_scratch(this); }
  ScratchVector(const ScratchVector&) = delete;
  ScratchVector& operator=(const ScratchVector&) = delete;

  /// At least n elements (grown, never shrunk; contents kept, new elements value-initialised).
  T* get(size_t n) {
    if (v_.size() < n) v_.resize(n);
    return v_.data();
  }
  std::vector<T>& vector() { return v_; }

 private:
  static size_t release(void* owner) {
    auto& v = static_cast<ScratchVector*>(owner)->v_;
    const size_t bytes = v.capacity() * sizeof(T);
    std::vector<T>().swap(v);
    return bytes;
  }
  std::vector<T> v_;
};

}  // namespace inductor_cpp::matrix
