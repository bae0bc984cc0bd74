/// \file
/// The GPU loop nests of the scheduler (see ScheduleOptions / Target::Gpu in schedule.h):
/// flattened outer dims mapped to threads, T threads per reduction row or per column group,
/// vector chunks of 16 bytes. Apart from schedule.cpp because none of it applies to the CPU.
#include <algorithm>
#include <functional>
#include <iterator>
#include <optional>

#include "ir/passes/schedule_internal.h"

namespace inductor_cpp::ir::schedule_detail {
namespace {

/// GPU: lanes per thread of a loop over `var`, so that the widest element accessed contiguously
/// in it (coefficient 1) takes `vector_bytes` per chunk (float32: 4 lanes = 128 bits; float16:
/// 8), between 2 and 16 lanes; 0 when no access is contiguous in it.
int gpu_lanes(const std::vector<Stmt>& stmts, const std::string& var, int vector_bytes) {
  int widest = 0;
  auto note = [&](const Expr& index, DType t) {
    if (coefficient_of(index, var) == std::optional<int64_t>(1))
      widest = std::max(widest, dtype_size(t));
  };
  std::function<void(const std::vector<Stmt>&)> walk = [&](const std::vector<Stmt>& level) {
    for (const Stmt& s : level) {
      if (s.kind == StmtKind::Store) note(s.index, s.value->dtype);
      if (s.value) {
        for (const Value& l : loads_in(s.value)) note(l->index.at(0), l->dtype);
      }
      walk(s.body);
    }
  };
  walk(stmts);
  if (widest == 0) return 0;
  return std::clamp(vector_bytes / widest, 2, 16);
}

/// The nest over `segment_bodies` given which loops memory is accessed contiguously along and
/// whether the kernel reduces along its outer loop (sum(0)-like). `transposing`: the kernel
/// reads along its outer loop and writes along its inner one (convnext's layer norm over the
/// channels of an NCHW tensor, written NHWC): one thread per row, so that each load of a warp
/// reads 32 neighbouring elements, and vector stores along the row.
std::vector<Stmt> gpu_nest(std::vector<std::vector<Stmt>> segment_bodies,
                           const std::vector<LoopDim>& outer, const std::vector<LoopDim>& inner,
                           bool outer_contiguous, bool inner_contiguous, bool outer_reduction,
                           bool transposing, const ScheduleOptions& options,
                           const RangeMap& ranges) {
  // Inner (reduction) loops: contiguous ones give each thread vector chunks.
  std::vector<Stmt> all_statements;
  for (const auto& seg : segment_bodies)
    all_statements.insert(all_statements.end(), seg.begin(), seg.end());
  const int inner_lanes = inner_contiguous && (transposing || !outer_reduction)
                              ? gpu_lanes(all_statements, inner.at(0).var, options.gpu_vector_bytes)
                              : 0;
  std::vector<Stmt> body;
  for (auto& seg : segment_bodies) {
    for (Stmt& s : seg) {
      if (s.kind == StmtKind::For && s.var == "@inner") {
        Stmt loop = Stmt::loop(inner.at(0).var, inner[0].extent, std::move(s.body));
        loop.vector_width = inner_lanes;
        body.push_back(std::move(loop));
        continue;
      }
      body.push_back(std::move(s));
    }
  }
  if (outer.empty()) return body;  // one row: the emitter runs it on one block
  Stmt loop = Stmt::loop(outer[0].var, outer[0].extent, std::move(body));
  loop.parallel = true;
  if (outer_reduction && !transposing && !inner.empty() && outer[0].extent.is_const() &&
      inner[0].extent.is_const()) {
    // sum(0)-like: T thread rows per column split the reduced dim (few columns alone would
    // leave most of the GPU idle); combined in a fixed order by the emitter.
    // The emitter gives a group of thread rows 16 bytes of columns (4 float32: 128-bit loads)
    // when they split evenly (codegen/nvptx/emit_columns_nvptx.cpp): count those groups.
    const int64_t rows = inner[0].extent.value(), extent = outer[0].extent.value();
    const int64_t lanes = gpu_lanes(loop.body, loop.var, options.gpu_vector_bytes);
    const int64_t columns = lanes > 1 && extent % lanes == 0 ? extent / lanes : extent;
    int64_t threads = 1;
    while (threads < options.gpu_max_column_rows &&
           columns * threads < options.gpu_column_threads &&
           rows / (threads * 2) >= options.gpu_min_rows_per_thread) {
      threads *= 2;
    }
    if (threads > 1) {
      loop.gpu_threads = static_cast<int32_t>(threads);
      return {std::move(loop)};
    }
  }
  if (inner.empty() || outer_reduction) {
    loop.gpu_threads = 1;  // pointwise, or sum(0)-like: one thread per output
    if (inner.empty() && outer_contiguous)
      loop.vector_width = gpu_lanes(loop.body, loop.var, options.gpu_vector_bytes);
    std::vector<Stmt> nest_stmts{std::move(loop)};
    int partial_counter = 0;  // long serial per-thread sums, as on the CPU
    block_long_float_sums(nest_stmts, ranges, 64, partial_counter);
    return nest_stmts;
  }
  // T threads per row: enough for one chunk each, a power of two in [gpu_min_threads,
  // gpu_max_threads] (short rows share a warp: the emitter puts 128 / T rows in a block).
  const Expr& n = inner.at(0).extent;
  const int64_t lanes = std::max(inner_lanes, 1);
  int64_t threads = 1;
  while (threads < options.gpu_min_threads) threads *= 2;
  const int64_t chunks = n.is_const() ? (n.value() + lanes - 1) / lanes : INT64_MAX;
  while (threads < options.gpu_max_threads && threads < chunks) threads *= 2;
  // Fewer threads that split the row evenly, a few chunks each, let the emitter keep the row
  // in registers across the loops (persistent rows: 768 floats = 192 chunks -> 64 x 3).
  if (n.is_const() && n.value() % lanes == 0 && chunks % threads != 0) {
    for (int64_t t = threads / 2; t >= 32; t /= 2) {
      if (chunks % t == 0 && chunks / t <= options.gpu_persistent_chunks) {
        threads = t;
        break;
      }
    }
  }
  loop.gpu_threads = static_cast<int32_t>(threads);
  return {std::move(loop)};
}

}  // namespace

void flatten_for_gpu(std::vector<LoopDim>& outer, std::vector<LoopDim>& inner,
                     std::map<std::string, Expr>& substitutions, RangeMap& ranges) {
  if (outer.size() > 1) outer = {flatten_dims(outer, "xf", substitutions)};
  if (inner.size() > 1) inner = {flatten_dims(inner, "yf", substitutions)};
  for (const std::vector<LoopDim>* dims : {&outer, &inner}) {
    for (const LoopDim& d : *dims) ranges[d.var] = {0, extent_hi(d.extent)};
  }
}

std::vector<Stmt> gpu_loop_nest(std::vector<std::vector<Stmt>> segment_bodies,
                                const std::vector<LoopDim>& outer,
                                const std::vector<LoopDim>& inner, const ScheduleOptions& options,
                                const RangeMap& ranges) {
  // Memory accesses only: an argmax position (`at y0`) is no load.
  std::vector<Expr> stores, loads;
  std::function<void(const std::vector<Stmt>&)> collect = [&](const std::vector<Stmt>& stmts) {
    for (const Stmt& s : stmts) {
      if (s.kind == StmtKind::Store) stores.push_back(s.index);
      if (s.value) collect_index_exprs(s.value, loads);
      collect(s.body);
    }
  };
  for (const auto& seg : segment_bodies) collect(seg);
  auto contiguous_in = [](const std::vector<Expr>& accesses, const std::string& var) {
    return std::any_of(accesses.begin(), accesses.end(), [&](const Expr& e) {
      return coefficient_of(e, var) == std::optional<int64_t>(1);
    });
  };
  // A reduction's stores are contiguous in its outputs whatever it reads: whether it walks down
  // columns (sum(0)-like) is for its loads to say (a per-channel sum over an NCHW tensor reads
  // rows of H*W, not columns).
  const bool outer_contiguous = !outer.empty() && (contiguous_in(loads, outer[0].var) ||
                                                   (inner.empty() && contiguous_in(stores, outer[0].var)));
  const bool inner_contiguous = !inner.empty() && (contiguous_in(loads, inner[0].var) || contiguous_in(stores, inner[0].var));
  // Reads along the outer loop only within the runs of its flattened dims (an NCHW tensor read
  // over flattened N, H*W: coefficient_of sees no stride there) and not along the inner one:
  // the outer loop goes to threads as for sum(0) (a layer norm over the channels of an NCHW
  // tensor: each warp load reads 32 neighbouring positions, where 32 threads per row read 32
  // channels H*W apart). `transposing` when the kernel also writes along the inner loop
  // (convnext's layer norm written NHWC): vector stores along the row. Loads the outer loop
  // does not move (a layer norm's weight, read along the row by every thread) stay in cache
  // and do not count; nor do loads that stay put within the runs (a per-pixel mean read by
  // each channel of a per-(image, channel) partial sum over an NHWC tensor: neighbouring
  // threads share the element). Counting them sent convnext's layer-norm backward partial sums
  // to 512 threads per row striding 96 floats per load (~570 GB/s on the H200).
  std::vector<Expr> row_loads;
  if (!outer.empty())
    std::copy_if(loads.begin(), loads.end(), std::back_inserter(row_loads), [&](const Expr& e) {
      return depends_on(e, outer[0].var) &&
             coefficient_within_runs(e, outer[0].var) != std::optional<int64_t>(0);
    });
  const bool reads_down_runs =
      !outer.empty() && !inner.empty() && !outer_contiguous &&
      !contiguous_in(row_loads, inner[0].var) &&
      std::any_of(row_loads.begin(), row_loads.end(), [&](const Expr& e) {
        return coefficient_within_runs(e, outer[0].var) == std::optional<int64_t>(1);
      });
  const bool transposing = reads_down_runs && contiguous_in(stores, inner[0].var);
  const bool outer_reduction =
      inner.empty() || reads_down_runs || (!inner_contiguous && outer_contiguous);
  return gpu_nest(std::move(segment_bodies), outer, inner, outer_contiguous, inner_contiguous,
                  outer_reduction, transposing, options, ranges);
}

}  // namespace inductor_cpp::ir::schedule_detail
