/// \file scratch.cpp
/// \brief The per-thread scratch registry (see scratch.h).
#include "matrix/scratch.h"

#include <omp.h>

#include <algorithm>
#include <utility>

namespace inductor_cpp::matrix {
namespace {

using Release = size_t (*)(void*);

/// The calling thread's owners. Constructed before any owner that registers (an owner's
/// constructor is what first calls it), so destroyed after them at thread exit.
std::vector<std::pair<void*, Release>>& registry() {
  thread_local std::vector<std::pair<void*, Release>> owners;
  return owners;
}

}  // namespace

void register_scratch(void* owner, Release release) {
  registry().emplace_back(owner, release);
}

void unregister_scratch(void* owner) {
  auto& owners = registry();
  owners.erase(std::remove_if(owners.begin(), owners.end(),
                              [&](const std::pair<void*, Release>& o) { return o.first == owner; }),
               owners.end());
}

size_t release_thread_scratch() {
  size_t bytes = 0;
  for (const auto& [owner, release] : registry()) bytes += release(owner);
  return bytes;
}

size_t release_scratch(int threads) {
  size_t bytes = release_thread_scratch();
  if (threads <= 1) return bytes;
  size_t workers = 0;
#pragma omp parallel num_threads(threads) reduction(+ : workers)
  if (omp_get_thread_num() != 0) workers += release_thread_scratch();
  return bytes + workers;
}

}  // namespace inductor_cpp::matrix
