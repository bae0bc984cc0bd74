/// \file
/// ic_runtime.h: the one header that generated CPU kernels include (codegen/cpu/emit_cpp.h).
///
/// Its text is embedded into the compiler library (runtime_header_text()) and written next to
/// each generated source, so a kernel build needs nothing from the source tree. It must stay
/// small and torch-free: a kernel compile is a fraction of a second.
///
/// Contents, in order (one file each, inlined into the embedded copy):
///   ic_runtime_scalar.h  half / bfloat16 storage types (round-to-nearest-even, NaN stays NaN);
///                        scalar ops with torch semantics (Python floordiv/remainder for ints,
///                        NaN-propagating maximum/minimum, wrapping integer arithmetic,
///                        guarded integer division, ...);
///   ic_runtime_vec.h     Vec<T, N>: N lanes of T over a GCC vector extension type (N is the
///                        vector loop's width; the emitter keeps each vector within one
///                        register); arithmetic, comparisons, logic;
///   ic_runtime_erf.h     the float erf as a macro over SIMD operations (shared with the
///                        matrix epilogue, matrix/epilogue.cpp);
///   ic_runtime_math.h    vector math: Sleef on register-sized chunks (transcendentals),
///                        single instructions (sqrt, rounding), or a lane-by-lane loop over
///                        the scalar op (correct for any type: integer division, ...); casts;
///   ic_runtime_memory.h  loads/stores: contiguous, partial (the first n lanes, for loop
///                        tails; AVX-512 masked moves that never touch memory past lane n),
///                        masked, strided and indexed (gather / scatter in lane order);
///                        indirect index checks;
///   ic_runtime_reduce.h  identities, argmax/argmin and Welford updates, and horizontal
///                        combines in a fixed tree order (deterministic results).
/// Bool lanes hold 0/1 (uint8), half/bfloat16 lanes hold their bits (uint16). Whole vectors
/// move only as vector types, never by memcpy or lane-copy loops: GCC 12 miscompiles constant
/// vectors moved as 256/512-bit integers ("Moving vectors" in ic_runtime_vec.h).
///
/// The generated source defines IC_TARGET_ISA (0 scalar, 1 AVX2, 2 AVX-512) and
/// IC_USE_SLEEF before including this header; ISA-specific code is also guarded by the
/// compiler's own macros, so the header compiles for any x86-64 target.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

#ifndef IC_TARGET_ISA
#define IC_TARGET_ISA 0
#endif
#ifndef IC_USE_SLEEF
#define IC_USE_SLEEF 0
#endif
#if IC_TARGET_ISA >= 2 && defined(__AVX512F__) && defined(__AVX512BW__) && \
    defined(__AVX512DQ__) && defined(__AVX512VL__)
#define IC_AVX512 1
#endif
#if IC_TARGET_ISA >= 1 && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define IC_AVX2 1
#endif
#if defined(IC_AVX512) || defined(IC_AVX2)
#include <immintrin.h>
#if IC_USE_SLEEF
#include <sleef.h>
#define IC_SLEEF 1
#endif
#endif

#pragma GCC diagnostic ignored "-Wpsabi"

#define IC_INLINE inline __attribute__((always_inline))

// The parts, in order. (The embedded copy, runtime_header_text(), has them inlined here.)
// clang-format off
#include "ic_runtime_scalar.h"
#include "ic_runtime_vec.h"
#include "ic_runtime_erf.h"
#include "ic_runtime_math.h"
#include "ic_runtime_memory.h"
#include "ic_runtime_reduce.h"
// clang-format on
