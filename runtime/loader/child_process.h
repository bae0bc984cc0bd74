/// \file
/// Running a tool as a child process (the C++ compiler, ptxas): posix_spawnp with an argument
/// vector (no shell, so no quoting problems or injection through paths), stdin from /dev/null,
/// stdout and stderr on one pipe drained until EOF, then the child reaped. The child leads its
/// own process group; past its deadline (INDUCTOR_CPP_TOOL_TIMEOUT_S) the whole group (g++ and
/// the cc1plus / as it started) is killed, so a hung tool cannot hang the compile, nor, through
/// the cache's per-graph lock, every other process waiting for that graph. A SIGINT (Ctrl-C)
/// while tools run kills them at once and is then passed on to the handler it found (Python's
/// KeyboardInterrupt), so an interrupted compile stops within moments, as a failed one.
#pragma once

#include <string>
#include <vector>

namespace inductor_cpp::runtime {

struct ProcessResult {
  int exit_code = -1;     ///< -1 when the child did not exit normally (a signal, the deadline)
  bool timed_out = false;  ///< killed at its deadline (output then ends with a note saying so)
  bool interrupted = false;  ///< killed because the process got SIGINT (Ctrl-C) meanwhile
  std::string output;     ///< stdout and stderr, interleaved
};

/// Runs args (args[0] a path or a name searched in PATH) and waits for it, at most
/// `timeout_s` seconds (< 0: INDUCTOR_CPP_TOOL_TIMEOUT_S; 0: no limit). Throws
/// std::runtime_error only when it cannot be started.
ProcessResult run_process(const std::vector<std::string>& args, double timeout_s = -1);

}  // namespace inductor_cpp::runtime
