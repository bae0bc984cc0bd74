/// \file
/// Memory planning: which buffers a kernel writes may take over the storage of a buffer that
/// is dead by then (reuse), including the buffer the kernel itself reads for the last time at
/// the same points it writes (in place).
///
/// Only storage our kernels allocated is reused: never inputs, constants or graph outputs,
/// and never a buffer an extern step read (an ATen op may have returned a view of it). The
/// runtime frees every other buffer right after its last use.
#pragma once

#include <map>
#include <string>

#include "ir/passes/schedule.h"

namespace inductor_cpp::ir {

struct MemoryPlan {
  /// buffer -> the dead buffer whose storage it takes (same device and element type, at
  /// least as many bytes).
  std::map<std::string, std::string> reuse;
  /// buffer -> index of the last step that reads or writes it (graph outputs: none).
  std::map<std::string, size_t> last_use;
};

MemoryPlan plan_memory(const ScheduledProgram& program);

/// Whether `kernel` reads `src` only at exactly the offsets it writes `dst` (plain loads), and
/// never after it has written `dst` in statement order: then `dst` may share `src`'s storage.
/// Offsets compare as expressions, equal when provably so given `ranges` (of symbols).
bool reads_only_where_written(const Kernel& kernel, const std::string& src, const std::string& dst,
                              const RangeMap& ranges = {});

/// "reuse %7 <- %3 (in place)" lines, for logs and tests.
std::string memory_plan_to_text(const MemoryPlan& plan);

}  // namespace inductor_cpp::ir
