/// \file
/// Splits reductions with few outputs and a long reduction into two stages, so both the work
/// and the memory bandwidth spread over threads:  x.sum() over 2^24 elements becomes
/// 64 partial sums (one parallel kernel) and a sum of those 64. On the CPU, large column
/// reductions (x.sum(0)) are split too, into chunks of a few rows (SplitOptions::column_chunk),
/// and so are column reductions with few columns, whatever their size (a batch norm's
/// per-channel sums: SplitOptions::few_columns_parts), which one vector of columns per thread
/// would leave on a single thread.
///
/// The partials are a fixed number of fixed-size chunks, independent of the thread count, and
/// are combined in index order: results are deterministic and the same for any number of
/// threads. Only associative reductions with a plain combine are split (sum, prod, max, min,
/// any, all); argmax/argmin are left alone, and so is welford_m2, unless it can run as the
/// two-pass variance (SplitOptions::two_pass_variance).
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
  /// Column reductions (some load contiguous in the last output index, strided in a reduce
  /// index) with at most few_columns_max_outputs outputs and at least few_columns_min_elements
  /// elements in all: the leading reduce ranges are cut into about few_columns_parts runs
  /// (an exact divisor between a quarter of that and that), partials laid out [part,
  /// outputs...]. The scheduler parallelizes a column reduction over blocks of whole vectors
  /// of outputs; 64 channels are too few blocks for more than one thread, and the GPU's column
  /// kernels give them one block (0: off; split_options_for raises the limits for the GPU).
  /// Where two_pass_variance is off, a welford_m2 beside its sum splits the same way and
  /// combines its parts with Chan's formula.
  int64_t few_columns_parts = 64;
  int64_t few_columns_max_outputs = 512;
  int64_t few_columns_min_elements = int64_t{1} << 18;
  /// A welford_m2 (variance) reduction that one of the paths above would split, with var_mean's
  /// sum of the same values beside it, becomes the sum of squared deviations from that sum's
  /// mean (the two-pass algorithm), split like any sum. Off on the GPU (its Welford kernels
  /// split rows themselves).
  bool two_pass_variance = true;
  /// Reductions whose reduce ranges are a strided head ahead of a block that is contiguous in
  /// memory (a batch norm's per-channel statistics of an NCHW tensor: [N] strided, [H, W]
  /// contiguous), with at most strided_head_max_outputs outputs and a block of at least
  /// strided_head_min_block elements: each head position becomes a part (up to
  /// strided_head_max_parts; more are grouped by an exact divisor), so the first stage's rows are
  /// the contiguous blocks ([N, C] rows of H*W) read with vector loads by many thread blocks;
  /// the second stage sums the parts, and a welford_m2 beside its sum combines the parts'
  /// (count, mean, M2) with Chan's formula. 0: off (the CPU's column paths cover these);
  /// split_options_for turns it on for the GPU.
  int64_t strided_head_max_parts = 0;
  /// The second stage of a split floating sum adds its parts in float64 and rounds the total
  /// once (a mean that dwarfs the spread keeps eager's accuracy); split_options_for turns it on
  /// for the GPU, where the extra stage is one small kernel.
  bool float64_totals = false;
  int64_t strided_head_max_outputs = 4096;
  int64_t strided_head_min_block = 256;
};

LoopProgram split_reductions(const LoopProgram& program, const SplitOptions& options = {});

}  // namespace inductor_cpp::ir
