/// \file
/// Running a tool as a child process (the C++ compiler, ptxas): posix_spawnp with an argument
/// vector (no shell, so no quoting problems or injection through paths), stdin from /dev/null,
/// stdout and stderr on one pipe drained until EOF, then the child reaped.
#pragma once

#include <string>
#include <vector>

namespace inductor_cpp::runtime {

struct ProcessResult {
  int exit_code = -1;  ///< -1 when the child did not exit normally (a signal)
  std::string output;  ///< stdout and stderr, interleaved
};

/// Runs args (args[0] a path or a name searched in PATH) and waits for it. Throws
/// std::runtime_error only when it cannot be started.
ProcessResult run_process(const std::vector<std::string>& args);

}  // namespace inductor_cpp::runtime
