/// \file
/// ptxas as a child process: PTX text ─► cubin for one sm architecture, so a cached graph
/// loads machine code (no driver JIT on every process start). Optional: without ptxas the
/// runtime loads the PTX and the driver compiles it.
#pragma once

#include <string>

namespace inductor_cpp::runtime::cuda {

/// $INDUCTOR_CPP_PTXAS, else $CUDA_HOME/bin/ptxas, else /usr/local/cuda/bin/ptxas, else
/// "ptxas" on PATH; "" when none is executable.
std::string find_ptxas();

/// The version line of `ptxas --version` ("Cuda compilation tools, release 13.0, V13.0.48"),
/// "none" without ptxas. Computed once per process.
const std::string& ptxas_version();

struct PtxasResult {
  bool ok = false;
  std::string cubin;    ///< the machine code, when ok
  std::string command;  ///< for logs
  std::string output;   ///< ptxas stdout+stderr
  double seconds = 0;
};

/// Writes `ptx` to <dir>/kernels.ptx and assembles it for sm_<sm> into <dir>/kernels.cubin.
/// Never throws on assembler errors (ok == false, output says why); throws
/// std::runtime_error only when ptxas cannot be started.
PtxasResult assemble_cubin(const std::string& dir, const std::string& ptx, int sm);

}  // namespace inductor_cpp::runtime::cuda
