/// \file
/// A loaded library of generated kernels: dlopen / dlsym / dlclose.
#include "runtime/loader/kernel_library.h"

#include <dlfcn.h>
#include <unistd.h>

#include <stdexcept>

namespace inductor_cpp::runtime {

std::shared_ptr<KernelLibrary> KernelLibrary::open(const std::string& path, const std::string& shown) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* error = dlerror();
    throw std::runtime_error("cannot load kernel library " + (shown.empty() ? path : shown) + ": " +
                             (error ? error : "unknown error"));
  }
  // Kernels use OpenMP. If this library is what brought libgomp in (a process without torch,
  // e.g. a test), its last dlclose would unmap libgomp under its still-parked pool threads:
  // pin libgomp for the life of the process (a no-op when torch already holds it).
  dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
  return std::shared_ptr<KernelLibrary>(new KernelLibrary(handle, shown.empty() ? path : shown));
}

std::shared_ptr<KernelLibrary> KernelLibrary::open_descriptor(int fd, const std::string& shown) {
  const std::string name = "/proc/self/fd/" + std::to_string(fd);
  std::shared_ptr<KernelLibrary> library;
  try {
    library = open(name, shown);
  } catch (...) {
    ::close(fd);
    throw;
  }
  library->fd_ = fd;
  library->loaded_name_ = name;
  return library;
}

KernelLibrary::~KernelLibrary() {
  if (handle_) dlclose(handle_);
  if (fd_ < 0) return;
  // Still loaded (a library with unique symbols cannot be unloaded): keep the descriptor, so
  // its number, hence the library's name, is never reused by another load.
  if (void* still = dlopen(loaded_name_.c_str(), RTLD_NOW | RTLD_NOLOAD)) {
    dlclose(still);
    return;
  }
  ::close(fd_);
}

KernelFn KernelLibrary::kernel(const std::string& name) const {
  dlerror();
  void* symbol = dlsym(handle_, name.c_str());
  if (!symbol) {
    const char* error = dlerror();
    throw std::runtime_error("kernel " + name + " not found in " + path_ +
                             (error ? std::string(": ") + error : std::string()));
  }
  return reinterpret_cast<KernelFn>(symbol);
}

int32_t KernelLibrary::kernel_params(const std::string& name) const {
  dlerror();
  const void* symbol = dlsym(handle_, (name + "__params").c_str());
  if (!symbol) throw std::runtime_error("kernel " + name + ": " + path_ + " does not say how many buffers it takes");
  return *static_cast<const int32_t*>(symbol);
}

}  // namespace inductor_cpp::runtime
