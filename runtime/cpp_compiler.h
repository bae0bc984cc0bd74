/// \file
/// Builds generated C++ into a shared library with the system compiler.
///
/// Pure C++ (no libtorch): the compiler runs as a child process (posix_spawn, no shell), with
/// its output captured for error messages. OpenMP comes from the libgomp torch already loaded
/// (same soname), so kernels and ATen share one thread pool.
#pragma once

#include <string>
#include <vector>

namespace inductor_cpp::runtime {

struct CppCompileOptions {
  std::string compiler = "";  ///< empty: $CXX, else "g++"
  /// -ffp-contract=off: no a*b+c fused into one rounding, so arithmetic chains round like
  /// eager's one-op-at-a-time kernels (g++ contracts by default in GNU C++ mode).
  /// --param=vect-epilogues-nomask=0: GCC 12 vectorized the remainder of a loop it had
  /// vectorized with half-width vectors and got that part wrong. Seen on AVX2-only hosts
  /// (-march=znver3 and =haswell): in torch.cat of [10, 5] and [5, 5] on dim 0, the outer row
  /// loop (15 rows, each a masked 8-lane copy) ran 8 rows wide, then rows 8-11 four wide, and
  /// rows 10 and 11 read 0 instead of the second input (test: RowsFromTwoInputsOfAConcatenation).
  /// Our kernels are vectorized explicitly, so a scalar remainder of GCC's own loop
  /// vectorization costs little.
  std::vector<std::string> flags = {"-O3",
                                    "-march=native",
                                    "-fopenmp",
                                    "-shared",
                                    "-fPIC",
                                    "-fno-math-errno",
                                    "-fno-trapping-math",
                                    "-ffp-contract=off",
                                    "--param=vect-epilogues-nomask=0"};
  std::vector<std::string> libraries = {"-lsleef"};
};

struct CppCompileResult {
  bool ok = false;
  std::string command;  ///< the full command line, for logs and debug dumps
  std::string output;   ///< compiler stdout+stderr
  double seconds = 0;
};

/// Writes `source` as <dir>/kernels.cpp and `header_text` as <dir>/ic_runtime.h, compiles to
/// <dir>/kernels.so. Never throws on compiler errors (result.ok == false); throws
/// std::runtime_error only when the compiler cannot be started at all.
CppCompileResult compile_shared_library(const std::string& dir, const std::string& source,
                                        const std::string& header_text,
                                        const CppCompileOptions& options = {});

/// "g++ 12.2.0" or similar: part of the cache key.
std::string compiler_identity(const CppCompileOptions& options = {});

}  // namespace inductor_cpp::runtime
