/// \file
/// The loop-level IR: what lowering produces and what the fusion passes transform.
///
/// A LoopProgram is a graph's computation as
///   * buffers: every tensor value, with element type and layout (sizes, strides, offset as
///     index expressions), and where it comes from;
///   * computes: `Pointwise` (one value per point of `ranges`) and `Reduction` (one value per
///     point of `ranges`, combining `body` over `reduce_ranges`) nodes, each defining the
///     buffer of the same name. A body is a Value DAG over the loop variables i0, i1, ...
///     (one per range) and r0, r1, ... (one per reduce range); loads index buffers with one
///     expression per dimension (logical indexing; layouts apply at scheduling);
///   * steps, in execution order: kernels (a group of computes run as one loop nest; before
///     fusion each group holds one compute) and extern calls (graph nodes that run as ATen
///     calls or as library calls, library_call.h, reading and writing whole buffers).
/// Computes listed in no kernel step are inlined into their readers (vertical fusion) and
/// never hold memory. Views are computes flagged `view`: readers index through them; if an
/// extern or the graph output needs one materialized, an extern step (the ATen view op on the
/// realized source) produces it instead, so aliasing stays exactly as in eager.
///
/// Everything is a value type: passes take a program and return a new one.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/index_expr.h"
#include "ir/library_call.h"
#include "ir/simplify.h"
#include "ir/value.h"

namespace inductor_cpp::ir {

enum class BufferOrigin : uint8_t {
  Input,     ///< graph input `index`
  Constant,  ///< graph constant `index`
  Extern,    ///< written by an extern step
  Computed,  ///< defined by a compute (materialized only if some kernel step stores it)
};
const char* buffer_origin_name(BufferOrigin o);

struct Buffer {
  std::string name;  ///< "%in0", "%c0", "%5" (graph node 5's output), "%5.1" (its 2nd output)
  DType dtype = DType::Float32;
  std::vector<Expr> sizes;
  std::vector<Expr> strides;  ///< in elements; the layout eager would give the tensor
  Expr offset;                ///< storage offset, in elements
  BufferOrigin origin = BufferOrigin::Computed;
  std::string device = "cpu";
  int64_t index = -1;  ///< Input/Constant: its position in the graph

  bool operator==(const Buffer& o) const;
};

/// Listed once: name, identity element description (for docs), output type rule.
#define INDUCTOR_CPP_REDUCE_OPS(X) \
  X(sum) X(prod) X(max) X(min) X(any) X(all) X(argmax) X(argmin) X(welford_m2)

enum class ReduceOp : uint8_t {
#define INDUCTOR_CPP_ENUM_ENTRY(k) k,
  INDUCTOR_CPP_REDUCE_OPS(INDUCTOR_CPP_ENUM_ENTRY)
#undef INDUCTOR_CPP_ENUM_ENTRY
};
const char* reduce_op_name(ReduceOp op);
std::optional<ReduceOp> reduce_op_from_name(const std::string& name);
/// argmax/argmin yield int64 (the row-major position within reduce_ranges, first one on
/// ties, NaN counting as the maximum as in torch); any/all yield bool; welford_m2 yields the
/// sum of squared deviations from the mean in the body's type; the others the body's type.
DType reduce_result_type(ReduceOp op, DType body_type);

struct Compute {
  std::string name;  ///< the buffer it defines
  std::vector<Expr> ranges;
  std::vector<Expr> reduce_ranges;  ///< empty for Pointwise
  ReduceOp reduce_op = ReduceOp::sum;
  Value body;
  bool view = false;       ///< an index rewrite of another buffer (never stored by itself)
  /// >= 0: a scan (cumulative reduction) along ranges[scan_dim]. It is a reduction with one
  /// reduce range, that dim's extent, whose body masks itself to positions r0 <= i<scan_dim>
  /// (`where(index(r0 <= ik), ..., identity)`), so it means the same to every pass that sees
  /// a reduction; the CPU schedule runs it as one running accumulator per line instead
  /// (schedule_scan.cpp). A float scan's buffer may be narrower than the body it accumulates
  /// (float32 summed in float64, as eager's CPU kernels do): each running value is rounded as
  /// it is stored. Text: `scan sum[4, 8] along 1`.
  int32_t scan_dim = -1;
  int32_t graph_node = -1;  ///< for messages and counters
  /// Graph nodes of producers inlined into this compute (for messages: a kernel's error
  /// names every op it computes). Metadata: not part of equality or the text form.
  std::vector<int32_t> inlined_nodes;

  bool is_reduction() const { return !reduce_ranges.empty(); }
  bool is_scan() const { return scan_dim >= 0; }
  DType dtype() const;  ///< the element type it produces
  bool operator==(const Compute& o) const;
};

/// Loop variable names: i<k> for ranges, r<k> for reduce ranges.
std::string range_var(size_t k);
std::string reduce_var(size_t k);

struct ExternCall {
  int32_t graph_node = -1;
  std::vector<std::string> inputs;   ///< buffers it reads (must be materialized before it)
  std::vector<std::string> outputs;  ///< buffers it writes ("" for an unused output)
  bool view = false;                 ///< an ATen view op (free; aliases its input)
  /// With `view`: no op runs at all, the output *is* the one input (a node whose work a
  /// library call's epilogue took over, its value the buffer that call wrote; lowering's
  /// library_activation.cpp). Text: `extern view alias node ...`.
  bool alias = false;
  /// Set when lowering chose a library kernel for the node (library_call.h): `inputs` then
  /// holds every buffer the call reads (operands, epilogue and tile loads).
  std::optional<LibraryCall> library;
  bool operator==(const ExternCall& o) const;
};

struct KernelGroup {
  std::vector<std::string> computes;  ///< in order; each stores its buffer
  bool operator==(const KernelGroup& o) const;
};

struct Step {
  enum class Kind : uint8_t { Kernel, Extern };
  Kind kind = Kind::Kernel;
  KernelGroup kernel;
  ExternCall call;
  bool operator==(const Step& o) const;
};

struct LoopProgram {
  std::vector<Buffer> buffers;           ///< every buffer, in definition order
  std::map<std::string, Compute> computes;  ///< by name
  std::vector<Step> steps;
  std::vector<std::string> outputs;  ///< buffers returned by the graph ("" for None outputs)
  /// Value ranges of symbols in sizes (dynamic shapes), for the simplifier.
  std::map<std::string, Interval> symbol_ranges;

  const Buffer& buffer(const std::string& name) const;  ///< throws std::out_of_range
  const Buffer* find_buffer(const std::string& name) const;
  bool operator==(const LoopProgram& o) const;
};

/// Loop ranges of a compute's variables (i<k> in [0, ranges[k]), r<k> likewise) plus the
/// program's symbol ranges: what simplify() needs for its bodies.
RangeMap ranges_of(const Compute& c, const LoopProgram& program);

/// The contiguous (row-major) strides for `sizes`.
std::vector<Expr> contiguous_strides(const std::vector<Expr>& sizes);

}  // namespace inductor_cpp::ir
