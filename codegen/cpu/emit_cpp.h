/// \file
/// The CPU emitter: scheduled kernels -> one C++ translation unit with OpenMP and explicit SIMD.
///
/// The source includes only "ic_runtime.h" (our SIMD wrappers and vector math; its text is
/// runtime_header_text()), never ATen/torch headers, so it compiles in a fraction of a
/// second. Vector code is chosen for the target ISA (AVX-512, AVX2, or scalar only); math that
/// has no instruction goes through Sleef's vector functions.
#pragma once

#include <string>
#include <vector>

#include "ir/kernel_ir.h"

namespace inductor_cpp::codegen {

enum class CpuIsa { Scalar, Avx2, Avx512 };
const char* cpu_isa_name(CpuIsa isa);
/// What this machine's CPU supports best (cpuid).
CpuIsa detect_host_isa();

struct CppTarget {
  CpuIsa isa = CpuIsa::Avx512;
  bool use_sleef = true;  ///< vector transcendentals from Sleef; else own approximations
};

/// One translation unit holding every kernel, each as
///   extern "C" int32_t <name>(char* const* bufs, const int64_t* symbols, int32_t num_threads)
/// (see ir/kernel_ir.h for the contract), followed by
///   extern "C" const int32_t <name>__params = <how many bufs it reads>;
/// which the runtime checks a plan's argument count against (a cache entry's plan.json is
/// untrusted input: a kernel handed fewer buffers would read past them).
std::string emit_cpp(const std::vector<ir::Kernel>& kernels, const CppTarget& target);

/// The text of ic_runtime.h, embedded at build time; write it next to the source to compile.
const char* runtime_header_text();

}  // namespace inductor_cpp::codegen
