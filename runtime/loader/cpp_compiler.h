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
  /// -fno-tree-loop-vectorize: our kernels are vectorized explicitly (ic::Vec), and GCC 12's
  /// loop vectorizer, re-vectorizing their outer loops, got them wrong on AVX2-only hosts
  /// (-march=znver3 and =haswell). In torch.cat of [1, 2, 3] and [1, 2, 3] on dim -2, the
  /// 4-row loop of masked 3-lane copies ran 4 rows wide and rows 2 and 3 read 0 instead of
  /// the second input; in a cat of [10, 5] and [5, 5] the same happened in the half-width
  /// remainder of an 8-wide loop (tests: RowsFromTwoInputsOfAConcatenation). Straight-line
  /// (SLP) vectorization stays on.
  std::vector<std::string> flags = {"-O3",
                                    "-march=native",
                                    "-fopenmp",
                                    "-shared",
                                    "-fPIC",
                                    "-fno-math-errno",
                                    "-fno-trapping-math",
                                    "-ffp-contract=off",
                                    "-fno-tree-loop-vectorize"};
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

/// "g++ 12.2.0" or similar: part of the cache key. Runs the compiler (`-dumpfullversion`);
/// throws std::runtime_error when it cannot be started (no compiler on PATH).
std::string compiler_identity(const CppCompileOptions& options = {});

/// The compiler proper of `options` (after launchers such as ccache) resolved through PATH and
/// symlinks, without running it; the bare name when it is not found.
std::string compiler_path(const CppCompileOptions& options = {});

}  // namespace inductor_cpp::runtime
