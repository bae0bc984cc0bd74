/// \file cpu_features.h
/// \brief Which matrix instruction sets this CPU (and OS) lets us use.
///
/// The micro-kernel generator picks AVX-512, AVX2 or AMX from this. AMX additionally needs the
/// kernel's permission to use the tile-data state (Linux arch_prctl ARCH_REQ_XCOMP_PERM); that is
/// requested once, lazily, by cpu_features() and is process-wide (the one global here).
#pragma once

#include <string>

namespace inductor_cpp::xbyak {

struct CpuFeatures {
  bool avx2 = false;         ///< AVX2 + FMA3.
  bool avx512 = false;       ///< AVX-512 F/BW/VL/DQ (the subset the float32 kernels use).
  bool avx512_bf16 = false;  ///< vdpbf16ps / vcvtne2ps2bf16.
  bool amx_bf16 = false;     ///< AMX-TILE + AMX-BF16 reported by CPUID.
  bool amx_usable = false;   ///< amx_bf16 and the OS granted XTILEDATA permission.
  std::string describe() const;
};

/// Detected once (thread-safe static); requests AMX permission on first call.
const CpuFeatures& cpu_features();

}  // namespace inductor_cpp::xbyak
