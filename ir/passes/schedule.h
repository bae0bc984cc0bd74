/// \file
/// Scheduling: each kernel group of a fused LoopProgram becomes one loop-nest Kernel.
///
/// Decisions, all made from the index expressions (no target code involved):
///   * layout: loads and stores become element offsets (sum of index * stride);
///   * loop order: the stored buffer's strides order the loops (innermost = smallest stride);
///   * loop merging: adjacent loops collapse into one when every access is affine in both with
///     coefficients that line up (so [64, 4096] contiguous is one loop of 262144);
///   * parallelism: the outermost loop, when the kernel does enough work; a single big loop is
///     split into blocks so threads get blocks and SIMD gets the block;
///   * vectorization: the innermost loop over which accesses are contiguous. For reductions
///     that is the reduction loop when the reduced dimension is contiguous ("inner" strategy:
///     vector accumulators combined per row), or the innermost outer loop when it is not
///     ("outer" strategy, e.g. sum(0): lanes are independent outputs, the reduction loop runs
///     inside the vector loop);
///   * registers: group members read by later members at the same point come from locals
///     (a reduction's result, an epilogue's value) and are stored only if something outside
///     the kernel reads them.
#pragma once

#include <string>
#include <vector>

#include "ir/kernel_ir.h"
#include "ir/loop_ir.h"

namespace inductor_cpp::ir {

/// Which emitter the loop nests are shaped for.
///   Cpu: parallel outer loops (OpenMP), SIMD vector loops, blocked serial float sums.
///   Gpu: outer dims flattened into one loop mapped to threads (For::gpu_threads): pointwise
///        one thread per iteration (vector chunks of 16 bytes of the widest contiguous access:
///        128-bit loads); inner-dim reductions T threads per output row (T from the row
///        length, or fewer that split it evenly for persistent rows), the reduction loop
///        (inner dims flattened) spread over them and combined by warp shuffles + shared
///        memory; outer-dim reductions (sum(0)) T thread rows per output column splitting the
///        reduced dim (the emitter lays them along the columns), or one thread per column.
enum class Target : uint8_t { Cpu, Gpu };

struct ScheduleOptions {
  Target target = Target::Cpu;
  int gpu_vector_bytes = 16;  ///< GPU: bytes per thread chunk of the widest contiguous access
  int gpu_max_threads = 512;  ///< GPU: most threads sharing one reduction row
  int gpu_min_threads = 8;    ///< GPU: fewest (short rows: 128 / T rows per block)
  /// GPU: most chunks per thread of an evenly split row (rows the emitter keeps in registers)
  int64_t gpu_persistent_chunks = 8;
  /// GPU outer-dim reductions (sum(0)): T thread rows split the reduced dim of each column
  /// (the emitter lays a block's threads along the columns), T a power of two doubled while
  /// columns * T < gpu_column_threads (columns counted in groups of 16 bytes when they split
  /// evenly: the emitter's 128-bit column lanes), T < gpu_max_column_rows and each thread keeps
  /// at least gpu_min_rows_per_thread rows. T = 1: one thread per column.
  /// H200, 16384 x 8192 sum(0), back to back (scripts/gpu.sh tune, 3 processes in each of two
  /// leases): T = 32 (128 blocks of 16 column groups x 32 = 512 threads) 0.1196 ms, T = 64
  /// (blocks of 1024) 0.1247, T = 16 0.1249, T = 128 0.1405; stock Inductor 0.1230.
  int64_t gpu_column_threads = 131072;
  int gpu_max_column_rows = 32;
  int64_t gpu_min_rows_per_thread = 32;
  int vector_width = 16;              ///< lanes asked of the emitter for vector loops
  int64_t parallel_min_work = 32768;  ///< elements below which a kernel runs on one thread
  int64_t block = 4096;               ///< iterations per parallel block of a split 1-D loop
  /// CPU pointwise kernels that read (or write) along another dim than the vector loop's (a
  /// transpose): both dims tiled by this many iterations, so a tile's gathered rows stay in L1
  /// and its pages in the TLB (0: no tiles).
  int64_t transpose_tile = 16;
};

struct ScheduledStep {
  enum class Kind : uint8_t { Kernel, Extern };
  Kind kind = Kind::Kernel;
  Kernel kernel;
  ExternCall call;
  /// Kernel steps: the buffers it stores (the ones the runtime must allocate), in param order.
  std::vector<std::string> writes;
  std::vector<std::string> reads;
  std::vector<int32_t> graph_nodes;  ///< kernel steps: graph nodes of the computes it stores
};

struct ScheduledProgram {
  std::vector<Buffer> buffers;
  std::vector<ScheduledStep> steps;
  std::vector<std::string> outputs;
  const Buffer& buffer(const std::string& name) const;
};

ScheduledProgram schedule(const LoopProgram& program, const ScheduleOptions& options = {});

/// The text form of a scheduled program: its kernels (kernel_to_text) and extern calls.
std::string scheduled_to_text(const ScheduledProgram& program);

}  // namespace inductor_cpp::ir
