/// \file
/// The scheduled kernel IR: loop nests over statements, what every emitter consumes.
///
/// The scheduler (ir/passes/schedule.h) turns each kernel group of a LoopProgram into one
/// Kernel: loops are explicit, with their attributes (parallel, vectorized), and indexing is
/// by element offset from each buffer's data pointer (layouts are applied). CPU and GPU
/// emitters walk the same Kernels; each maps the attributes to its hardware.
///
/// Statements:
///   For        for var in [0, extent): body.  `extent` may depend on enclosing loop vars
///              (tails of split loops: min(64, n - 64*i0)).
///              parallel:  iterations run on threads (OpenMP; only outermost-level loops,
///                         at most one per nest path), statically chunked by `chunk`.
///              gpu_threads > 0 (GPU schedules only; 0, unprinted, everywhere else):
///                         the loop's iterations are spread over GPU threads. 1: one thread
///                         per iteration (grid-stride). T > 1: T threads (a power of two)
///                         share each iteration; the For loops directly in its body are then
///                         spread over those T threads, and accumulators defined in the body
///                         but accumulated in such a loop are combined across the T threads
///                         (warp shuffles, shared memory) right after it.
///              vector_width > 0: the body runs for vector_width consecutive values of var at
///                         once (SIMD lanes); the emitter handles the tail. Everything in the
///                         body that depends on var is a vector; the rest is broadcast.
///   Let        name := value (a scalar, or a vector inside a vector loop); read by local().
///   DefineAccumulator  name := identity of `reduce_op` in `dtype`; declared in the scope where
///              it is read back. Inside a vector loop it has one lane per iteration; declared
///              outside the vector loop it is accumulated across lanes and a read after the
///              loop combines the lanes in a fixed order (deterministic).
///   Accumulate name := combine(name, value) (argmax/argmin also take `index`, the linear
///              position within the reduction).
///   Store      buffer[index] = value.
/// A local's value is read with ir::local(name, dtype); reading a welford_m2 accumulator
/// gives the sum of squared deviations.
///
/// Text form (kernel_to_text), used in tests and INDUCTOR_CPP_LOGS=schedule:
///   kernel k0(%in0: float32 in, %3: float32 out) {
///     for i0 in 0..8 parallel(chunk=1) {
///       acc0 = accumulator sum float32
///       for r0 in 0..1024 vector(16) {
///         acc0 += load(%in0, [i0*1024 + r0])
///       }
///       %3[i0] = local(acc0, float32)
///     }
///   }
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/index_expr.h"
#include "ir/loop_ir.h"
#include "ir/value.h"

namespace inductor_cpp::ir {

#define INDUCTOR_CPP_STMT_KINDS(X) X(For) X(Let) X(DefineAccumulator) X(Accumulate) X(Store)

enum class StmtKind : uint8_t {
#define INDUCTOR_CPP_ENUM_ENTRY(k) k,
  INDUCTOR_CPP_STMT_KINDS(INDUCTOR_CPP_ENUM_ENTRY)
#undef INDUCTOR_CPP_ENUM_ENTRY
};
const char* stmt_kind_name(StmtKind k);

struct Stmt {
  StmtKind kind = StmtKind::Store;
  // For
  std::string var;
  Expr extent;
  bool parallel = false;
  int64_t chunk = 0;  ///< parallel: iterations per thread chunk (0: even split)
  int vector_width = 0;
  int32_t gpu_threads = 0;  ///< GPU thread mapping (see above); text ` gpu(threads=T)`
  std::vector<Stmt> body;
  // Let / DefineAccumulator / Accumulate: `name`; Store: `buffer`
  std::string name;
  std::string buffer;
  ReduceOp reduce_op = ReduceOp::sum;
  DType dtype = DType::Float32;
  Value value;  ///< Let, Accumulate, Store
  Expr index;   ///< Store: element offset; Accumulate (argmax/argmin): reduction position

  static Stmt loop(std::string var, Expr extent, std::vector<Stmt> body);
  static Stmt let(std::string name, Value value);
  static Stmt define_accumulator(std::string name, ReduceOp op, DType dtype);
  static Stmt accumulate(std::string name, Value value, Expr index = Expr(0));
  static Stmt store(std::string buffer, Expr index, Value value);
  bool operator==(const Stmt& o) const;
};

struct KernelParam {
  std::string buffer;
  DType dtype = DType::Float32;
  bool written = false;  ///< the kernel stores to it
  bool operator==(const KernelParam& o) const;
};

/// One generated function. Its C signature (CPU):
///   extern "C" int32_t <name>(char* const* bufs, const int64_t* symbols, int32_t num_threads)
/// `bufs[k]` is the data pointer of params[k]; `symbols[k]` the value of symbols[k] (dynamic
/// sizes); the result is 0, or a nonzero error code (an indirect index out of bounds).
struct Kernel {
  std::string name;
  std::vector<KernelParam> params;
  std::vector<std::string> symbols;
  std::vector<Stmt> body;
  bool operator==(const Kernel& o) const;
};

std::string kernel_to_text(const Kernel& k);

/// Kernel status codes.
constexpr int32_t kKernelOk = 0;
constexpr int32_t kKernelIndexOutOfBounds = 1;

}  // namespace inductor_cpp::ir
