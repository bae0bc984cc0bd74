/// \file
/// Private to the CPU emitter (codegen/cpu/emit_*.cpp): the state of emitting one kernel.
///
/// emit_cpp.cpp drives it (kernel prologue, statements, loops, accumulators), emit_value.cpp
/// spells values, loads and index expressions, loop_plan.cpp decides loop widths and tracks
/// what stays valid across loops, cpp_op_table.cpp holds the spellings.
///
/// Vector model: a vector loop of width W runs W consecutive iterations at once. While its
/// body is emitted, every value is either scalar (the same in all lanes) or a vector
/// (ic::Vec<T, W>); scalars are broadcast where they meet vectors. The loop variable itself
/// holds lane 0's value, so an index with coefficient 1 in it is a contiguous access at the
/// scalar address. The body is emitted twice: for full iterations, and for the one tail
/// iteration with n < W active lanes (partial loads/stores, masked accumulation).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "codegen/cpu/emit_cpp.h"
#include "ir/kernel_ir.h"

namespace inductor_cpp::codegen::cpu_detail {

/// How a value is spelled in the generated code: a name or literal of its C++ type, holding
/// one value (scalar) or the current vector loop's lanes.
struct Emitted {
  std::string text;
  bool vector = false;
};

struct VectorContext {
  std::string var;    ///< IR name of the vector loop variable
  std::string cvar;   ///< its C name (lane 0's value)
  int width = 0;      ///< 0: not in a vector loop
  bool tail = false;  ///< emitting the tail iteration
  std::string count;  ///< tail: C name of the number of active lanes
};

/// A name bound by Let or DefineAccumulator.
struct LocalInfo {
  bool accumulator = false;
  /// The variable. Accumulators add parts: <cname>_idx (argmax/argmin), <cname>_mean,
  /// <cname>_m2, <cname>_n (welford_m2, whose <cname> itself is not declared).
  std::string cname;
  ir::DType dtype = ir::DType::Float32;  ///< Let: value type; accumulator: state type
  ir::ReduceOp op = ir::ReduceOp::sum;
  int lanes = 0;            ///< 0: scalar; else a vector of this many lanes
  bool horizontal = false;  ///< lanes are partial results, combined when read
};

struct Scope {
  std::unordered_map<const ir::ValueNode*, Emitted> values;  ///< emitted values (CSE)
  std::map<std::string, LocalInfo> locals;
  std::map<std::string, std::string> vars;  ///< loop variables: IR name -> C name
};

// The spellings (cpp_op_table.cpp).
/// The identity of `op` as C++ text for an accumulator of `dtype` (its value part).
std::string reduce_identity(ir::ReduceOp op, ir::DType dtype);
/// The C++ function combining value parts (ic::add, ic::maximum, ...); empty for argmax,
/// argmin and welford_m2, which have update functions.
std::string reduce_combine_function(ir::ReduceOp op);
/// The horizontal lane combine (ic::reduce_sum, ...).
std::string reduce_horizontal_function(ir::ReduceOp op);
/// A constant of `dtype` as a typed C++ literal ("0x1.8p+0f", "int64_t(3)", "true").
std::string constant_literal(const ir::ValueNode& constant);
std::string int64_literal(int64_t v);
/// The C++ element type of `dtype` (float, ic::half, ...).
std::string cpp_type(ir::DType dtype);
/// A C identifier for an IR name that cannot clash with the emitter's own names.
std::string c_identifier(const std::string& ir_name);

/// Conditions with an affine difference, for ic::affine_lt & co. (int32 lane arithmetic).
constexpr int64_t kMaxAffineConditionCoefficient = int64_t(1) << 20;
bool is_comparison(const ir::Expr& e);
/// Whether a vector loop over `var` evaluates the 0/1 condition `e` without int64 index
/// vectors: var-free, a comparison whose sides differ by an affine function of var with a
/// small coefficient, or a product (conjunction) of two such comparisons.
bool is_affine_condition(const ir::Expr& e, const std::string& var);

/// For a comparison between an index value affine in `var` (int32/int64) and another operand:
/// which operand (0 or 1) is that index value, else -1. A vector loop compares lane-wise with
/// ic::affine_* when the other operand is a scalar (e.g. cat's `index(x) < 4`).
int affine_index_operand(const ir::ValueNode& n, const std::string& var);

/// Calls f on every statement of the subtree, loops included.
template <class F>
void for_each_stmt(const std::vector<ir::Stmt>& stmts, const F& f) {
  for (const ir::Stmt& s : stmts) {
    f(s);
    if (s.kind == ir::StmtKind::For) for_each_stmt(s.body, f);
  }
}

class KernelEmitter {
 public:
  KernelEmitter(const ir::Kernel& kernel, const CppTarget& target);
  /// The kernel's function definition.
  std::string emit();

 private:
  // --- values (emit_value.cpp)
  /// Emits what `v` needs and returns its spelling in the current context.
  Emitted value(const ir::Value& v);
  /// `e` as a vector of W lanes (broadcast when scalar).
  std::string as_vector(const Emitted& e, ir::DType dtype);
  /// An index expression: scalar (vector var = lane 0) unless it depends on the vector var
  /// or a vector indirect value, then Vec<int64_t, W>.
  Emitted expr(const ir::Expr& e);
  /// Scalar spelling; the vector var stands for lane 0. Throws on vector indirect values.
  std::string scalar_expr(const ir::Expr& e);
  bool expr_is_vector(const ir::Expr& e) const;

  // --- text and names (emit_cpp.cpp)
  void line(const std::string& text);
  std::string fresh(const std::string& prefix);
  const ir::KernelParam& param(const std::string& buffer, int* index) const;
  const LocalInfo* find_local(const std::string& name) const;
  /// The C name of a loop var, symbol or substituted placeholder; throws if unknown.
  std::string var_name(const std::string& ir_name) const;
  /// ic::Vec<T, width> (width 0: the current vector loop's).
  std::string vector_type(ir::DType dtype, int width = 0) const;
  /// A fresh temporary of `dtype` (vector: of the current width) initialized with `init`.
  Emitted declare(ir::DType dtype, bool vector, const std::string& init);
  /// ic::first_n<W>(count) in a tail, "" otherwise.
  std::string tail_mask() const;

  /// Placeholders (%ind0, ...) of the load being emitted: IR name -> emitted value.
  std::map<std::string, Emitted> placeholders;

  // --- statements (emit_cpp.cpp)
  void block(const std::vector<ir::Stmt>& stmts);
  void statement(const std::vector<ir::Stmt>& stmts, size_t i);
  void loop(const ir::Stmt& s);
  void scalar_loop(const ir::Stmt& s, bool parallel);
  // --- reduction loops (emit_reduction_loop.cpp)
  /// `for (v = 0; v < end; v += step) body()`, two-level when float sums accumulate in it.
  void counted_loop(const ir::Stmt& s, const std::string& v, const std::string& end, int step,
                    bool parallel, const std::function<void()>& body);
  /// How many independent copies of its accumulators the full-vector part of vector loop `s`
  /// (of `width` lanes) keeps: kReductionUnroll when its body updates accumulators declared
  /// outside it and nothing else stands in the way (reduction_unroll's comment), else 1.
  int reduction_unroll(const ir::Stmt& s, int width);
  /// The full vectors of `s` as an unrolled loop over [0, main_end): iteration k of each
  /// group updates copy k of every accumulator; the copies are combined in a fixed order.
  /// body(first) emits one iteration whose loop variable is `first`.
  void unrolled_reduction_loop(const ir::Stmt& s, int width, const std::string& main_end,
                               const std::function<void(const std::string&)>& body);
  /// Declares an accumulator's state variables (cname, plus _idx or _mean/_m2/_n) holding
  /// `identity` (the scalar value of each part; broadcast when info.lanes > 0).
  void declare_accumulator_state(const LocalInfo& info, const std::string& cname,
                                 const std::string& identity);
  /// into := combine(into, from) for two states of one accumulator (C base names).
  void combine_accumulator_state(const LocalInfo& info, const std::string& into,
                                 const std::string& from);
  void vector_loop(const ir::Stmt& s, int width, bool parallel);
  std::string omp_pragma(const ir::Stmt& s, int width) const;
  void let(const ir::Stmt& s);
  void define_accumulator(const std::vector<ir::Stmt>& stmts, size_t i);
  void accumulate(const ir::Stmt& s);
  void store(const ir::Stmt& s);
  // --- values, continued (emit_value.cpp)
  Emitted read_local(const ir::ValueNode& n);
  Emitted load(const ir::ValueNode& n);
  Emitted compute(const ir::ValueNode& n);
  /// A comparison of an affine index value with a scalar, as ic::affine_* (see
  /// affine_index_operand); nullopt when it does not apply.
  std::optional<Emitted> affine_compare(const ir::ValueNode& n);
  std::string vector_expr(const ir::Expr& e);
  std::string load_guard(const ir::ValueNode& n, bool* vector);
  /// A 0/1 index expression as a bool (scalar) or Vec<bool, W> spelling.
  Emitted condition(const ir::Expr& e);
  std::string unique_name(const std::string& base);

  // --- kept values (kept_values.cpp)
  /// A vector value computed in one loop and reloaded in a later sibling loop.
  struct KeptValue {
    const ir::ValueNode* node = nullptr;
    std::string array;   ///< C name of the stack array holding it per element
    int64_t extent = 0;  ///< elements (the loops' constant extent)
  };
  /// Finds the kept values of every block (kept_values.cpp's file comment has the rules).
  void plan_kept_values(const std::vector<ir::Stmt>& stmts);
  bool keepable_loop(const ir::Stmt& s) const;
  /// Before emitting `loop`: declares the arrays it fills; activates its stores and loads.
  void begin_kept_values(const ir::Stmt& loop);
  void end_kept_values();
  /// The kept value's load, when `n` is one the current loop reloads.
  std::optional<Emitted> load_kept(const ir::ValueNode* n);
  /// Stores `e`, when `n` is a value the current loop keeps for a later one.
  void store_kept(const ir::ValueNode* n, const Emitted& e);

  // --- transposed tiles (transposed_tiles.cpp)
  /// A tiled transpose's read (copied transposed into a stack array before its tile's loops)
  /// or write (kept in the array, transposed out after them).
  struct TileAccess {
    std::string array;    ///< C name of the array: rows of the serial loop, `columns` apart
    std::string row_var;  ///< IR name of the serial (row) loop variable
    int64_t columns = 0;
  };
  /// Before emitting the serial loop `u_loop`: copies the tile reads of its vector loop into
  /// arrays (transposed_tiles.cpp's file comment has the rules). Always paired with end_.
  void begin_transposed_tiles(const ir::Stmt& u_loop);
  void end_transposed_tiles();
  /// A plain vector load from the tile array, when `n` is a tile read of an enclosing loop.
  std::optional<Emitted> load_tile_read(const ir::ValueNode& n);
  /// Where a tile write stores its vector (in the tile array), or "" when `store` is none.
  std::string tile_write_address(const ir::Stmt& store);

  // --- loop plan and bookkeeping (loop_plan.cpp)
  void plan_loops(const std::vector<ir::Stmt>& stmts, bool in_vector, bool in_parallel);
  /// Finds the argmax/argmin updates whose lanes see increasing indices (before plan_loops).
  void plan_ordered_arg_updates(const std::vector<ir::Stmt>& body);
  /// The vector widths of loops enclosing Accumulates of `name` in stmts[from..] (0: not in a
  /// vector loop).
  std::set<int> accumulate_widths(const std::vector<ir::Stmt>& stmts, size_t from,
                                  const std::string& name) const;
  /// Forgets emitted values that read any of these buffers or locals.
  void invalidate(const std::set<std::string>& buffers, const std::set<std::string>& locals);
  void invalidate_for_loop(const ir::Stmt& loop);
  /// Emits, before `loop`, the values in its body that are the same in every iteration and
  /// read no memory (e.g. a horizontal accumulator read and arithmetic on it).
  void hoist_invariants(const ir::Stmt& loop);
  /// The loop variables and symbols the value's index expressions use.
  const std::set<std::string>& index_vars_of(const ir::ValueNode* n);
  const std::pair<std::set<std::string>, std::set<std::string>>& reads_of(const ir::ValueNode* n);

  const ir::Kernel& kernel_;
  CppTarget target_;
  std::string out_;
  int indent_ = 1;
  int next_temp_ = 0;
  bool uses_error_flag_ = false;
  VectorContext vec_;
  std::vector<Scope> scopes_;
  std::map<std::string, std::string> symbols_;   ///< IR symbol -> C name
  std::set<std::string> used_names_;             ///< C names declared so far
  std::map<const ir::Stmt*, int> vector_width_;  ///< effective width of each For (0: serial)
  std::map<const ir::Stmt*, bool> parallel_;     ///< each For: emitted as omp parallel for
  std::set<const ir::Stmt*> ordered_arg_updates_;  ///< Accumulates using ic::arg*_update_ordered
  std::set<std::string> ordered_float_args_;  ///< their accumulators of float32 values
  std::map<std::string, ir::ReduceOp> accumulator_ops_;  ///< every accumulator's op, by name
  /// While emitting a loop body: accumulator -> the C state its updates go to instead of its
  /// own (a two-level float sum's partial, or an unrolled loop's copy).
  std::map<std::string, std::string> accumulate_into_;
  /// Vector iterations per block of a two-level float sum (per copy when unrolled).
  static constexpr int64_t kSumBlock = 64;
  /// Independent accumulator copies of an unrolled reduction loop (hides the latency of the
  /// combine: each vector update waits only on the one kReductionUnroll steps before).
  static constexpr int kReductionUnroll = 4;
  /// Unrolled loops only for bodies of at most this many statements and value nodes (code
  /// size: a body that large has independent work enough without copies, and each copy is
  /// compiled again).
  static constexpr size_t kMaxUnrolledStatements = 16;
  static constexpr int64_t kMaxUnrolledNodes = 64;
  std::unordered_map<const ir::ValueNode*, std::pair<std::set<std::string>, std::set<std::string>>>
      reads_;  ///< buffers and locals each value reads
  std::unordered_map<const ir::ValueNode*, std::set<std::string>> index_vars_;
  std::map<const ir::Stmt*, std::vector<KeptValue>> kept_by_producer_;  ///< loop -> it stores
  std::map<const ir::Stmt*, std::vector<KeptValue>> kept_by_consumer_;  ///< loop -> it loads
  /// While emitting a loop with kept values: value -> array.
  std::unordered_map<const ir::ValueNode*, std::string> storing_, loading_;
  int64_t kept_bytes_ = 0;  ///< the kept arrays' total size
  /// Per enclosing serial loop being emitted: its tile reads, by load node.
  std::vector<std::unordered_map<const ir::ValueNode*, TileAccess>> tile_reads_;
  std::vector<std::unordered_map<const ir::Stmt*, TileAccess>> tile_writes_;
  std::vector<std::vector<std::string>> pending_tile_stores_;  ///< emitted after each loop
};

}  // namespace inductor_cpp::codegen::cpu_detail
