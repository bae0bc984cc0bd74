/// \file
/// A reference interpreter for the loop-level IR (LoopProgram) and the scheduled kernel IR
/// (ScheduledProgram), for tests: it runs a program on given inputs so that every pass can be
/// checked by what it computes, not only by what it prints.
///
/// Semantics (what the emitters implement, computed slowly and plainly):
///   * floating values are computed in double (float32/float16 are never rounded, so inlining
///     a store away changes nothing); integers and bool in int64, wrapped to their width by
///     casts and integer arithmetic; bool is 0/1;
///   * integer floordiv/remainder are Python-style, truncdiv/fmod C-style, division by zero
///     throws; maximum/minimum propagate NaN; casts truncate float -> int toward zero;
///   * max/min reductions propagate NaN, argmax/argmin pick the first position (NaN wins),
///     welford_m2 is the sum of squared deviations from the mean;
///   * a masked load yields 0 where its mask is 0 (and reads nothing, checks nothing); an
///     indirect index outside [0, bound) throws IndexOutOfBounds; a logical index outside a
///     buffer's sizes, or a flat offset outside its storage, throws std::out_of_range.
///
/// Memory: every buffer lives in flat storage laid out by its layout (offset + strides), so
/// inputs are given as storage and kernels address it by element offset exactly as generated
/// code does. Fresh storage is filled with NaN (floats) or a sentinel (ints), so reading
/// something nobody wrote shows up as a wrong result.
///
/// Loop level: steps run in order; a kernel step materializes its computes one after the
/// other, each over all its points; a compute in no kernel step (a view, or a producer not yet
/// inlined) is evaluated at the point where a reader loads it. Scheduled level: loops run
/// sequentially (parallel and vector attributes ignored: vector code must mean the same).
/// Extern steps call an ExternHandler; a view extern without one aliases its input's storage.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/loop_ir.h"
#include "ir/passes/plan_memory.h"
#include "ir/passes/schedule.h"

namespace inductor_cpp::ir::interp {

/// One element: `f` for floating types, `i` for integral types and bool (0/1).
struct Scalar {
  double f = 0;
  int64_t i = 0;
};

/// Flat elements of one type.
struct Elements {
  DType dtype = DType::Float32;
  std::vector<double> floats;  ///< floating types
  std::vector<int64_t> ints;   ///< integral types and bool

  Elements() = default;
  /// `count` elements, all NaN (floats) or kUnwrittenInt (ints).
  Elements(DType type, size_t count);
  size_t size() const;
  Scalar get(size_t k) const;
  void set(size_t k, Scalar v);
};

/// What fresh integer storage holds until something writes it.
constexpr int64_t kUnwrittenInt = -7777777777777;

/// A tensor's values in row-major logical order.
struct Tensor {
  std::vector<int64_t> sizes;
  Elements elements;
};

/// Thrown when an indirect index (gather, index_select, ...) is outside its bound: what
/// generated kernels report as kKernelIndexOutOfBounds.
struct IndexOutOfBounds : std::out_of_range {
  using std::out_of_range::out_of_range;
};

/// Runs an extern step: the call, and its inputs' values (in call.inputs order). Returns one
/// tensor per output (entries for "" outputs are ignored), or nullopt if it does not handle the
/// call: then a view extern aliases its input's storage and any other extern throws.
using ExternHandler = std::function<std::optional<std::vector<Tensor>>(
    const ExternCall& call, const std::vector<Tensor>& inputs)>;

struct InterpreterOptions {
  std::map<std::string, int64_t> symbols;  ///< values of size symbols (dynamic shapes)
  ExternHandler run_extern;
  /// Scheduled programs only: run with this memory plan, as the runtime does (buffers freed
  /// after their last use, storage handed over to the buffers that reuse it).
  const MemoryPlan* memory_plan = nullptr;
};

/// Storage of the program's inputs and constants, by buffer name, laid out by each buffer's
/// layout (at least storage_size(buffer) elements).
using BufferStorage = std::map<std::string, Elements>;

/// The graph outputs, in program order (nullopt for a None output).
using Outputs = std::vector<std::optional<Tensor>>;

Outputs run_loop_program(const LoopProgram& program, const BufferStorage& inputs,
                         const InterpreterOptions& options = {});
Outputs run_scheduled_program(const ScheduledProgram& program, const BufferStorage& inputs,
                              const InterpreterOptions& options = {});

/// An ExternHandler for the extern view steps inline_producers inserts: it evaluates the view
/// compute of the same name in `defining` (the program before inlining, which still has it)
/// on the step's inputs, as the ATen view op would (a reshape that must copy included).
/// Other calls go to `other` (if set).
ExternHandler view_externs_of(const LoopProgram& defining, ExternHandler other = {});

/// Elements a buffer's storage must hold: offset + 1 + sum((size - 1) * stride).
int64_t storage_size(const Buffer& b, const std::map<std::string, int64_t>& symbols = {});

/// How random inputs are drawn.
struct RandomFill {
  double lo = -2.0, hi = 2.0;       ///< floating types: uniform in [lo, hi)
  int64_t int_lo = -5, int_hi = 5;  ///< integral types: uniform in [int_lo, int_hi]
  /// Per-buffer integer ranges (index tensors: [0, size of the indexed dim - 1]).
  std::map<std::string, std::pair<int64_t, int64_t>> int_ranges;
};

/// Random storage for every input and constant buffer of `buffers`.
BufferStorage random_inputs(const std::vector<Buffer>& buffers, uint64_t seed,
                            const RandomFill& fill = {},
                            const std::map<std::string, int64_t>& symbols = {});

/// "" when `got` matches `want` (same dtype and sizes; floats within
/// |a - b| <= rtol * max(|a|, |b|) + atol, NaN matching NaN; ints exactly), else a message
/// naming the first differing element.
std::string compare(const Tensor& got, const Tensor& want, double rtol = 1e-9, double atol = 1e-12);
std::string compare(const Outputs& got, const Outputs& want, double rtol = 1e-9,
                    double atol = 1e-12);

}  // namespace inductor_cpp::ir::interp
