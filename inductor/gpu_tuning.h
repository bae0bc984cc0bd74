/// \file
/// The "gpu_tuning" compile option (environment INDUCTOR_CPP_GPU_TUNING): "name=value,..."
/// overrides of the GPU schedule's launch-shape limits and of emitter choices, so that
/// alternatives can be measured on a GPU machine without a rebuild (docs/gpu.md, "Tuning").
/// It is a code generation option: it enters the cache key. Unknown names are an error that
/// lists the known ones.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ir/passes/pipeline.h"

namespace inductor_cpp::inductor {

/// Emitter settings (codegen::nvptx::GpuTarget's fields of the same names); 0: the default.
struct GpuEmitterTuning {
  int read_once_hints = 1;
  int row_unroll = 0;
  int column_unroll = 0;
  int max_column_block = 0;
  int64_t min_column_grid = 0;
  int programmatic_launch = 1;  ///< 0-3 (GpuTarget::programmatic_launch)
};

struct GpuTuning {
  std::vector<std::pair<std::string, int64_t>> settings;  ///< schedule fields, in the order given
  GpuEmitterTuning emitter;
};

/// Parses "name=value,..." (whitespace allowed around items; "" is no override). Names:
/// max_threads, min_threads, persistent_chunks, vector_bytes, column_threads,
/// max_column_rows, min_rows_per_thread (ir::ScheduleOptions::gpu_*); read_once_hints (0-4),
/// row_unroll, column_unroll, max_column_block (<= 1024), min_column_grid,
/// programmatic_launch (0-3) (the emitter's, codegen/nvptx/emit_ptx.h GpuTarget). Throws
/// std::invalid_argument naming the bad item.
GpuTuning parse_gpu_tuning(const std::string& text);

/// `options` with the schedule overrides of `tuning` applied.
ir::PipelineOptions apply_gpu_tuning(const GpuTuning& tuning, ir::PipelineOptions options);

}  // namespace inductor_cpp::inductor
