/// \file
/// Horizontal kernel fusion: consecutive scheduled kernels that do not depend on each other
/// become one kernel whose body runs their loop nests one after the other.
///
/// A compiled optimizer step updates every parameter with the same few pointwise ops, each
/// parameter its own shape: fuse_kernels cannot group them (different ranges), so they
/// schedule as one kernel per parameter (or per state tensor). Each kernel step costs a call,
/// argument binding and layout checks; fused, the whole step is a handful of calls. The same
/// holds for any graph with independent small kernels side by side.
///
/// Two kernels fuse when the second reads nothing the first writes and writes nothing the
/// first reads or writes (so running the nests in sequence inside one kernel is what running
/// the two kernels did), with no extern step between them. Locals of the second are renamed
/// apart; parameters are merged (a buffer both read is one parameter). CPU schedules only:
/// a GPU kernel is one grid, so its nests cannot simply be concatenated.
#pragma once

#include "ir/passes/schedule.h"

namespace inductor_cpp::ir {

struct HorizontalFusionOptions {
  /// Kernels whose loops run at most this many iterations in all (small kernels, where the
  /// per-call cost matters); 0 fuses kernels of any size.
  int64_t max_work = 0;
  /// At most this many nests in one fused kernel (compile time of one huge function).
  size_t max_kernels = 64;
};

ScheduledProgram fuse_horizontal(const ScheduledProgram& program, const HorizontalFusionOptions& options = {});

}  // namespace inductor_cpp::ir
