/// \file
/// Splits reductions with few outputs and a long reduction into two stages, so both the work
/// and the memory bandwidth spread over threads:  x.sum() over 2^24 elements becomes
/// 64 partial sums (one parallel kernel) and a sum of those 64. On the CPU, large column
/// reductions (x.sum(0)) are split too, into chunks of a few rows (SplitOptions::column_chunk).
///
/// The partials are a fixed number of fixed-size chunks, independent of the thread count, and
/// are combined in index order: results are deterministic and the same for any number of
/// threads. Only associative reductions with a plain combine are split (sum, prod, max, min,
/// any, all); argmax/argmin and welford_m2 are left alone.
#pragma once

#include "ir/loop_ir.h"

namespace inductor_cpp::ir {

struct SplitOptions {
  int64_t max_outputs = 64;        ///< split only reductions producing at most this many values
  int64_t min_reduction = 65536;   ///< ... over at least this many elements each
  int64_t partials = 64;           ///< chunks per output value
  /// Column reductions (sum(0) of a row-major matrix: loads contiguous in the last output
  /// index, strided in the reduction) over at least column_min_elements elements: the
  /// reduction is cut into chunks of column_chunk rows, the partials laid out chunk-major
  /// ([chunk, outputs...]), so that the first stage walks column_chunk rows side by side
  /// instead of one column of every row (0: off; run_pipeline turns it off for the GPU).
  int64_t column_chunk = 16;
  int64_t column_min_elements = int64_t{1} << 21;
};

LoopProgram split_reductions(const LoopProgram& program, const SplitOptions& options = {});

}  // namespace inductor_cpp::ir
