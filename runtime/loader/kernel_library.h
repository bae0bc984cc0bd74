/// \file
/// A loaded library of generated kernels (dlopen), closed when the last user lets go.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace inductor_cpp::runtime {

/// The C signature of every generated kernel (ir/kernel_ir.h).
using KernelFn = int32_t (*)(char* const* bufs, const int64_t* symbols, int32_t num_threads);

class KernelLibrary {
 public:
  /// dlopen(RTLD_NOW | RTLD_LOCAL); throws std::runtime_error with dlerror() text. `shown`:
  /// the path() to report when `path` is only a way to it (/proc/self/fd/N).
  static std::shared_ptr<KernelLibrary> open(const std::string& path, const std::string& shown = "");
  /// dlopen("/proc/self/fd/<fd>"): the file behind an open descriptor, which the library owns
  /// from then on. It stays open while the library is loaded: the loader knows a library by
  /// its name, and a reused descriptor number would make the next such dlopen return this
  /// library. Closed once dlclose really unloads it (never, if the library cannot be unloaded).
  static std::shared_ptr<KernelLibrary> open_descriptor(int fd, const std::string& shown);
  ~KernelLibrary();
  KernelLibrary(const KernelLibrary&) = delete;
  KernelLibrary& operator=(const KernelLibrary&) = delete;

  /// Throws std::runtime_error naming the symbol when it is missing.
  KernelFn kernel(const std::string& name) const;
  /// How many buffers kernel `name` takes (its `<name>__params` symbol, codegen/cpu/emit_cpp.h);
  /// throws std::runtime_error when the library does not say.
  int32_t kernel_params(const std::string& name) const;
  const std::string& path() const { return path_; }

 private:
  KernelLibrary(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}
  void* handle_;
  std::string path_;
  int fd_ = -1;                ///< open_descriptor: the descriptor, while loaded
  std::string loaded_name_;    ///< open_descriptor: the name dlopen knows it by
};

}  // namespace inductor_cpp::runtime
