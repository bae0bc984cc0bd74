/// \file
/// Private to the scheduler (schedule*.cpp): the statement-tree tools it builds loop nests
/// with (schedule_stmts.cpp) and the two targets' nest builders (schedule_cpu.cpp,
/// schedule_gpu.cpp). schedule.cpp turns a kernel group into per-segment statements and
/// ordered loop dims; a nest builder then wraps them in loops for its target.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/kernel_ir.h"
#include "ir/passes/schedule.h"
#include "ir/passes/schedule_loops.h"
#include "ir/simplify.h"

namespace inductor_cpp::ir::schedule_detail {

/// The largest value of a loop variable over [0, e): e - 1, unbounded for a symbolic extent.
inline int64_t extent_hi(const Expr& e) {
  return e.is_const() ? e.value() - 1 : INT64_MAX;
}

/// Replaces every `where` whose condition folded to a constant by the branch it takes
/// (schedule_cpu.cpp).
void fold_selects_decided_by_constants(std::vector<Stmt>& stmts);

/// A CPU scan's nest (schedule_scan.cpp): `line` (its accumulator and the serial loop along
/// the scan that updates and stores it) wrapped in loops over `outer`, the dims other than
/// the scan's. The outer dim along which `store_index` is contiguous becomes the vector loop,
/// innermost (one lane per line: cumsum(0) of a row-major matrix); the outermost loop runs in
/// parallel (a lone vector dim is first split into parallel blocks).
std::vector<Stmt> scan_loop_nest(std::vector<Stmt> line, const std::vector<LoopDim>& outer,
                                 const Expr& store_index, const ScheduleOptions& options,
                                 const RangeMap& ranges);

// Statement trees (schedule_stmts.cpp).

/// Applies `subst` to every expression in a statement tree (simplified under `ranges`).
void substitute_all(std::vector<Stmt>& stmts, const std::map<std::string, Expr>& subst,
                    const RangeMap& ranges);

/// Every index expression a statement tree evaluates: store and accumulate indices, and the
/// index expressions of its values.
void collect_stmt_exprs(const std::vector<Stmt>& stmts, std::vector<Expr>& out);

/// Wraps `body` in loops over `dims` (outer to inner).
std::vector<Stmt> nest(const std::vector<LoopDim>& dims, std::vector<Stmt> body);

/// The For `depth` levels down a nest built by nest() (depth 1: the outermost).
Stmt* loop_at_depth(std::vector<Stmt>& nest_stmts, size_t depth);

/// The innermost For of a single-path nest (the one whose body holds the statements).
Stmt* innermost_loop(std::vector<Stmt>& nest_stmts);

/// Float sums accumulated in a long serial loop (the reduction loop of the "outer" strategy:
/// sum(0) runs down 1024 rows per column) lose accuracy as one running sum. Such a loop is
/// split into blocks of `block` iterations, each summed into its own accumulator that is then
/// added to the total, recursively while the block loop is still long: the error grows with
/// the block length times the depth rather than with the row count (vector reduction loops
/// get the same from the emitter). A loop with serial loops nested alone in it counts their
/// iterations too (blocks of whole iterations, each blocked inside in turn). `counter`
/// numbers the partial accumulators.
void block_long_float_sums(std::vector<Stmt>& stmts, const RangeMap& ranges, int64_t block_elements,
                           int& counter);

// Loop nests per target. `segment_bodies` hold each segment's statements, its inner loop a
// placeholder For over "@inner" (extent 0) whose body the inner dims wrap; `outer` and
// `inner` are the kernel's ordered, merged loop dims.

/// The CPU nest (schedule_cpu.cpp): vector loop chosen by contiguity, parallel outer loop
/// when the kernel does enough work, long float sums blocked.
std::vector<Stmt> cpu_loop_nest(std::vector<std::vector<Stmt>> segment_bodies,
                                const std::vector<LoopDim>& outer,
                                const std::vector<LoopDim>& inner, const ScheduleOptions& options,
                                const RangeMap& ranges);

/// GPU (schedule_gpu.cpp): outer dims into one loop "xf", inner dims into one loop "yf"
/// (`substitutions` receives the old variables, `ranges` learns the new ones).
void flatten_for_gpu(std::vector<LoopDim>& outer, std::vector<LoopDim>& inner,
                     std::map<std::string, Expr>& substitutions, RangeMap& ranges);

/// The GPU nest over flattened dims (schedule_gpu.cpp; see ScheduleOptions / Target::Gpu).
std::vector<Stmt> gpu_loop_nest(std::vector<std::vector<Stmt>> segment_bodies,
                                const std::vector<LoopDim>& outer,
                                const std::vector<LoopDim>& inner, const ScheduleOptions& options,
                                const RangeMap& ranges);

}  // namespace inductor_cpp::ir::schedule_detail
