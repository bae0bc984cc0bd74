/// \file
/// Private to codegen/nvptx: the per-kernel LLVM IR builder shared by emit_kernel.cpp (loop
/// nests, thread mapping), emit_value_nvptx.cpp (values, index math, loads/stores, libdevice
/// math) and emit_reduction_nvptx.cpp (accumulators, warp/block combines).
///
/// Values are emitted as scalars, one per vector lane: a vector loop of width W runs a chunk
/// of W consecutive iterations per thread, statement by statement for all lanes; contiguous
/// loads and stores of a full, 16-byte (or 8-byte) aligned chunk become one vector access.
/// Reduced floats (float16/bfloat16) live as i16 bits and are computed in float32.
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "codegen/nvptx/emit_ptx.h"
#include "ir/kernel_ir.h"

namespace inductor_cpp::codegen::nvptx_detail {

/// Threads per block of one-thread-per-iteration kernels and of kernels without a top loop.
constexpr int kPointwiseBlock = 256;
constexpr int kSingleRowBlock = 256;
/// Threads per block when a row takes <= 32 threads (several rows per block).
constexpr int kSmallRowBlock = 128;
/// Threads per block when the threads of a group lie along the columns (outer-dim reductions:
/// block = C columns x T thread rows, see KernelEmitter::column_groups_): up to
/// GpuTarget::max_column_block (1024), halved (down to kColumnBlock) while the grid would have
/// fewer than GpuTarget::min_column_grid (128) blocks. Wide blocks read wide strips of each row
/// (16384 x 8192 sum(0): 64 columns = 256 bytes per row and block instead of 64), fewer DRAM
/// pages opened per byte.
constexpr int kColumnBlock = 256;
/// The unroll counts of the loops spread over a group's threads (independent loads in flight
/// per thread) are GpuTarget::column_unroll (16; column groups: one load per iteration) and
/// GpuTarget::row_unroll (2; rows: one vector chunk). H200, 16384 x 8192 sum(-1), 512 threads
/// x 4 chunks per row, back to back, 3 processes (scripts/gpu.sh tune): unroll 1 0.1188-0.1214
/// ms, 2 0.1172-0.1173, 4 0.1177; stock Inductor 0.1169-0.1172.
/// Most vector chunks per thread of a row kept in registers (emit_persistent_nvptx.cpp).
constexpr int kMaxPersistentChunks = 8;
/// Fewest threads per persistent row with a Welford state (layer_norm, var_mean) the emitter
/// narrows a wider schedule to (more chunks per thread, up to kMaxPersistentChunks): half the
/// warps to combine the states of (each combine step divides), and 4 blocks of 256 per SM
/// instead of 2 of 512 (64 vs 51 registers). H200, 16384 x 8192 layer_norm (rows of 2048
/// chunks): 512 x 4 0.274 ms, 256 x 8 0.263 ms. Other rows keep the schedule's T: softmax
/// (already at copy bandwidth) would go from 3 blocks of 512 (40 registers) to 4 of 256 (61),
/// sum(-1) (not persistent) was slower with 256.
constexpr int kPersistentRowThreads = 256;
/// Rows of the per-warp combine scratch (`<kernel>_scratch`: rows of 33 i64 slots, one per
/// warp): the components (value, index, m2, count) combined across warps at once.
constexpr int kScratchComponents = 4;
/// Most blocks launched for a grid-stride loop.
constexpr int64_t kMaxGrid = 65536;
/// Most blocks of a pointwise grid-stride loop: about 16 waves of 256-thread blocks on a
/// 132-SM H100/H200, so each thread runs several chunks. Measured on the H200 (bench gpu, the
/// gelu·sigmoid−tanh chain over 2^27 floats, back to back): 65536 blocks 0.390 ms, 16384
/// 0.373, 8192 and 4224 0.375, 2112 0.383, 1056 0.400, 2^18 and more 0.427.
constexpr int64_t kMaxPointwiseGrid = 16384;
/// Blocks launched when the loop extent is symbolic.
constexpr int64_t kSymbolicGrid = 1024;

/// An accumulator's state: allocas (in the entry block) for its components.
struct Accumulator {
  ir::ReduceOp op = ir::ReduceOp::sum;
  ir::DType dtype = ir::DType::Float32;  ///< the accumulated values' type
  llvm::Value* value = nullptr;          ///< value, or the Welford mean
  llvm::Value* index = nullptr;          ///< argmax/argmin: i64 position
  llvm::Value* m2 = nullptr;             ///< Welford
  llvm::Value* count = nullptr;          ///< Welford
  bool group_level = false;              ///< defined where loops are spread over threads
  bool combined = false;                 ///< group-level and already combined across threads
};

/// The same state as SSA values.
struct AccState {
  llvm::Value* value = nullptr;
  llvm::Value* index = nullptr;
  llvm::Value* m2 = nullptr;
  llvm::Value* count = nullptr;
};

class KernelEmitter {
 public:
  /// `target.sm`: sm_80 and later have L2 cache policies (row_load_with_policy), sm_70 and
  /// later L1::no_allocate (read_once_load, when target.read_once_hints).
  KernelEmitter(llvm::Module& module, const ir::Kernel& kernel,
                const codegen::nvptx::GpuTarget& target);
  /// Emits the kernel's function and returns how to launch it.
  codegen::nvptx::GpuLaunch emit();

  // ---- emit_kernel.cpp: statements and loops ------------------------------------------------
 private:
  /// The programmatic-dependent-launch prologue (GpuTarget::programmatic_launch), before the
  /// kernel's first memory access: allow the next kernel's launch (not for `column_groups`
  /// kernels in mode 1), then wait for the previous kernel's completion.
  void wait_for_predecessor(bool column_groups);
  void statements(const std::vector<ir::Stmt>& body);
  void statement(const ir::Stmt& s);
  /// A For run by the current thread alone (serially, vector chunks with a tail).
  void serial_loop(const ir::Stmt& s);
  /// A For in a group context: iterations spread over the group's T threads, then the
  /// group-level accumulators it fed are combined.
  void group_loop(const ir::Stmt& s);
  /// Chunks [first, end) step `step` of loop `s` (chunk c covers iterations c*W .. c*W+W-1);
  /// `unroll` > 1 asks LLVM to unroll the chunk loop that many times (loads in flight).
  void chunk_loop(const ir::Stmt& s, llvm::Value* first, llvm::Value* step, int unroll = 0);
  /// The body for the iterations base .. base + lanes - 1: lanes 0 is one scalar iteration;
  /// otherwise statement by statement for all lanes (vector accesses), or lane after lane when
  /// the body has nested loops or accumulators.
  void chunk_body(const ir::Stmt& s, llvm::Value* base, int lanes);
  /// A counted loop: for (iv = start; iv < end; iv += step) body(iv), all of one integer type
  /// (i64, or i32 where the caller knows the values fit); `unroll` > 1 puts
  /// llvm.loop.unroll.count on it. Returns iv's value after the loop (the first one >= end).
  llvm::Value* counted_loop(llvm::Value* start, llvm::Value* end, llvm::Value* step,
                            const std::function<void(llvm::Value*)>& body, int unroll = 0);
  // ---- emit_columns_nvptx.cpp: column groups with vector lanes -------------------------------
  /// Columns per group of the column mapping of `top`: 16 bytes of its contiguous element when
  /// every such plain access allows 128-bit vectors and the extent splits evenly, else 1.
  int column_lanes(const ir::Stmt& top) const;
  /// i1: every vector access of the row body at column 0 and loop variables 0 is aligned (then
  /// all are: the other coefficients are multiples of 16 bytes).
  llvm::Value* column_vectors_aligned(const ir::Stmt& top, int lanes);
  /// The row body for columns group * lanes ..: vector lanes when `aligned`, else lane by lane.
  void column_vector_row(const ir::Stmt& top, llvm::Value* group, int lanes, llvm::Value* aligned);
  /// The accumulator's key: per column lane ("name#lane", vec_.lane when lane < 0) while the
  /// row body runs with column vector lanes, else the name.
  std::string accumulator_key(const std::string& name, int lane = -1) const;

  // ---- emit_persistent_nvptx.cpp: rows read once, kept in registers ------------------------
  /// Chunks per thread when the row body of `top` can run persistently on `threads` threads
  /// per row, else 0.
  int persistent_chunks(const ir::Stmt& top, int threads) const;
  /// Threads per row for the row mapping of `top` scheduled with T = `threads`: for a row with
  /// a Welford state, fewer (down to kPersistentRowThreads) when the row still runs
  /// persistently with them; else T.
  int persistent_row_threads(const ir::Stmt& top, int threads) const;
  /// The body of one row (group iteration): persistent and general versions, or general only.
  void row_body(const ir::Stmt& top);
  /// The persistent version of the row: `chunks` chunks a thread, kept in registers.
  void persistent_row(const ir::Stmt& top, int chunks);
  /// A group loop of the persistent version: the thread's chunks unrolled, all full.
  void persistent_group_loop(const ir::Stmt& s);
  /// Persistent version: lanes of a contiguous load already loaded at this chunk (true), or
  /// remembers the lanes just loaded.
  bool cached_row_chunk(const ir::ValueNode& n);
  void remember_row_chunk(const ir::ValueNode& n);
  /// Persistent version of a row that is stored back: the `bytes` (4, 8 or 16) at `address`
  /// as `type`, loaded with the L2 evict_last policy when the load reads the row itself (its
  /// index uses the row variable); nullptr for any other load (a plain load is emitted).
  llvm::Value* row_load_with_policy(const ir::ValueNode& n, llvm::Type* type, llvm::Value* address,
                                    int64_t bytes);

  // ---- emit_cache_hints_nvptx.cpp: global loads with cache qualifiers ------------------------
  /// The `bytes` (4, 8 or 16) at `address` as `type`, loaded by inline PTX
  /// `ld.global<qualifiers>[.vN].b32`, with an L2 cache `policy` operand when given (then
  /// qualifiers include `.L2::cache_hint`); nullptr for other sizes.
  llvm::Value* inline_ptx_load(llvm::Type* type, llvm::Value* address, int64_t bytes,
                               const std::string& qualifiers, llvm::Value* policy);
  /// The load `n` with L1::no_allocate when it reads data once (loads_read_once), else nullptr.
  llvm::Value* read_once_load(const ir::ValueNode& n, llvm::Type* type, llvm::Value* address,
                              int64_t bytes);
  /// Runs `then` under `cond` (no values flow out).
  void if_then(llvm::Value* cond, const std::function<void()>& then);
  /// Runs `then` (in a block named `label`) under `cond`, else `otherwise` (in `else_label`),
  /// each in a scope of its own, joining in `done_label` (no values flow out).
  void if_else(llvm::Value* cond, const std::function<void()>& then,
               const std::function<void()>& otherwise, const std::string& label = "then",
               const std::string& else_label = "else", const std::string& done_label = "endif");
  void push_scope();
  void pop_scope();
  [[noreturn]] void unsupported(const std::string& what) const;

  // ---- emit_value_nvptx.cpp: values, index math, memory -------------------------------------
 public:
  llvm::Type* register_type(ir::DType t);  ///< SSA type (i1 for bool, i16 for reduced floats)
  llvm::Type* memory_type(ir::DType t);    ///< element type in memory (i8 for bool)

 private:
  llvm::Value* value(const ir::Value& v);
  llvm::Value* compute(const ir::ValueNode& n);
  llvm::Value* expr(const ir::Expr& e);       ///< i64
  llvm::Value* condition(const ir::Expr& e);  ///< i1
  llvm::Value* load(const ir::ValueNode& n);
  /// Loads every lane of a contiguous full chunk at once (cached per lane); false if the load
  /// is not of that form.
  bool load_contiguous_chunk(const ir::ValueNode& n);
  /// Bytes of the vector access of a full chunk at `index` (coefficient 1 in the vector
  /// variable, 4/8/16 bytes, `plain`: unmasked and direct), 0 if the access is per lane.
  int64_t vector_bytes(const ir::Expr& index, ir::DType t, bool plain) const;
  /// i1: every vector access of the chunk of `loop` at `base` is aligned to its size.
  llvm::Value* chunk_aligned(const ir::Stmt& loop, llvm::Value* base, int lanes);
  void store(const ir::Stmt& s);
  llvm::Value* element_address(int param, llvm::Value* offset);
  llvm::Value* from_memory(llvm::Value* raw, ir::DType t);
  llvm::Value* to_memory(llvm::Value* v, ir::DType t);
  llvm::Value* convert(llvm::Value* v, ir::DType from, ir::DType to);
  llvm::Value* to_float32(llvm::Value* v, ir::DType from);  ///< reduced float bits -> float
  llvm::Value* from_float32(llvm::Value* v, ir::DType to);  ///< float -> reduced float bits
  llvm::Value* unary_math(ir::UnaryOp op, llvm::Value* x, ir::DType t);
  llvm::Value* binary_math(ir::BinaryOp op, llvm::Value* a, llvm::Value* b, ir::DType t);
  /// a / b: float32 as `div.full.f32` (<= 2 ulp; exact multiplication for a power-of-two
  /// constant divisor), other types IEEE.
  llvm::Value* fast_divide(llvm::Value* a, llvm::Value* b, ir::DType t);
  /// float32 a / b for a divisor invariant in the innermost loop: a * (1 / b), range-scaled
  /// (emit_division_nvptx.cpp; <= 1.5 ulp, the reciprocal hoisted by LLVM).
  llvm::Value* divide_by_invariant(llvm::Value* a, llvm::Value* b);
  /// Whether `v` cannot change inside the innermost loop being emitted: constants, lets from
  /// outside it, accumulators it does not feed, and math of those (no loads).
  bool invariant_in_loop(const ir::Value& v) const;
  llvm::Value* libdevice(const std::string& name, ir::DType t, std::vector<llvm::Value*> args);
  // ---- emit_special_nvptx.cpp: float32 erf/tanh/sigmoid, libdevice's algorithms, cheaper ----
  llvm::Value* erf_f32(llvm::Value* x);
  llvm::Value* tanh_f32(llvm::Value* x);
  /// 1 / d for d >= 1 (or NaN): div.full.f32's result without its subnormal-divisor scaling.
  llvm::Value* reciprocal_of_at_least_one(llvm::Value* d);
  /// `magnitude` (>= +0) with the sign of `sign` (float32): one bitwise or.
  llvm::Value* with_sign_of(llvm::Value* magnitude, llvm::Value* sign);
  /// Horner: ((c0 y + c1) y + c2) ... with fma, coefficients as float32 bit patterns.
  llvm::Value* horner(const uint32_t* coefficients, size_t count, llvm::Value* y);
  llvm::Value* constant(const ir::ValueNode& n);
  int param_index(const std::string& buffer) const;

  // ---- emit_reduction_nvptx.cpp: accumulators and combines ----------------------------------
  void define_accumulator(const ir::Stmt& s);
  void define_accumulator_as(const ir::Stmt& s, const std::string& key);
  void accumulate(const ir::Stmt& s);
  /// welford_m2 fed by a vector chunk: the chunk's mean and m2, merged into the state (Chan);
  /// one division per chunk.
  void accumulate_welford_chunk(const Accumulator& a, const ir::Stmt& s);
  llvm::Value* read_accumulator(const std::string& name, ir::DType result_type);
  AccState load_state(const Accumulator& a);
  void store_state(const Accumulator& a, const AccState& s);
  AccState identity(const Accumulator& a);
  AccState update(const Accumulator& a, AccState s, llvm::Value* x, llvm::Value* index);
  AccState combine(const Accumulator& a, const AccState& x, const AccState& y);
  /// Whether (v, i) beats (best, best_i) for argmax (is_max) / argmin.
  llvm::Value* arg_takes(bool is_max, ir::DType t, llvm::Value* v, llvm::Value* i,
                         llvm::Value* best, llvm::Value* best_i);
  /// Combines accumulators `names` over the T threads of the current group; all get the
  /// results. Their warp shuffles interleave, and for T > 32 their per-warp states share one
  /// pair of barriers as long as they fit the scratch (4 components: layer_norm's sum and
  /// Welford state).
  void combine_across_group(const std::vector<std::string>& names);
  /// The same for column groups (threads of a group strided by column_groups_ in the block):
  /// every thread stores its state in shared memory, then each combines the T slots of its
  /// column in thread-row order (fixed order: deterministic).
  void combine_across_column_group(const std::string& name);
  AccState shuffle_state(const AccState& s, llvm::Value* lane_or_offset, bool down);
  llvm::Value* shuffle(llvm::Value* v, llvm::Value* lane_or_offset, bool down);
  llvm::Value* maximum(llvm::Value* a, llvm::Value* b, ir::DType t, bool is_max);

  // ---- state --------------------------------------------------------------------------------
  llvm::Module& module_;
  llvm::LLVMContext& ctx_;
  const ir::Kernel& kernel_;
  llvm::IRBuilder<> b_;
  llvm::Function* function_ = nullptr;
  llvm::BasicBlock* entry_ = nullptr;  ///< allocas go here
  std::vector<llvm::Value*> buffers_;  ///< param data pointers (addrspace 1)
  llvm::Value* status_ = nullptr;
  std::map<std::string, llvm::Value*> vars_;  ///< loop vars, symbols, %ind placeholders (i64)
  struct Scope {
    std::map<std::pair<const ir::ValueNode*, int>, llvm::Value*> values;
    std::map<std::string, std::vector<llvm::Value*>> lets;  ///< one entry, or one per lane
  };
  std::vector<Scope> scopes_;
  std::map<std::string, Accumulator> accumulators_;
  /// The loops whose bodies are being emitted, innermost last; first_scope: the first scope
  /// index that belongs to the loop (lets in scopes before it are defined outside).
  struct LoopContext {
    const ir::Stmt* loop = nullptr;
    size_t first_scope = 0;
  };
  std::vector<LoopContext> loops_;
  /// The vector chunk being emitted statement by statement (lanes 0: none).
  struct VectorChunk {
    std::string var;
    llvm::Value* base = nullptr;
    int lanes = 0;
    int lane = 0;
    /// Column groups: `var` may be a flattened variable whose runs hold whole chunks (an NHWC
    /// tensor's channels per image): vector accesses are those ir::chunk_step makes
    /// contiguous, not only those of coefficient 1.
    bool within_runs = false;
  } vec_;
  /// Group mapping: T threads share an iteration of the top loop (T == 1: thread mapping).
  int group_threads_ = 1;
  bool in_group_context_ = false;           ///< statements here run on all T threads of the group
  llvm::Value* thread_in_group_ = nullptr;  ///< i64 in [0, T)
  llvm::Value* lane_in_warp_ = nullptr;     ///< i32
  llvm::Value* warp_in_block_ = nullptr;    ///< i32
  llvm::Value* row_active_ = nullptr;       ///< i1: this group's top-loop iteration is real
  llvm::GlobalVariable* shared_ = nullptr;  ///< [kScratchComponents x 33 x i64] scratch
  /// Column mapping (outer-dim reductions): C groups per block, consecutive threads on
  /// consecutive top-loop iterations (coalesced), the T thread rows of a group C apart and
  /// splitting the row body's loops. 0: the row mapping (T consecutive threads per group).
  int column_groups_ = 0;
  llvm::Value* tid_ = nullptr;                     ///< i64 thread index in the block
  llvm::GlobalVariable* column_shared_ = nullptr;  ///< [4 * block x i64] column combine
  int64_t column_block_ = 0;                       ///< threads per block of the column mapping
  bool column_vector_ = false;  ///< the row body runs with column vector lanes (vec_)
  int persistent_chunks_ = 0;   ///< > 0: emitting the persistent version of a row body
  int persistent_chunk_ = -1;   ///< the thread's chunk being emitted there
  /// Persistent version: "buffer|index|chunk" -> the lanes loaded (registers of the row).
  std::map<std::string, std::vector<llvm::Value*>> row_cache_;
  /// Persistent version of a row that is stored back: the row variable and the i64 L2
  /// evict_last cache policy its loads carry (row_load_with_policy); else "" and nullptr.
  std::string policy_row_var_;
  llvm::Value* row_load_policy_ = nullptr;
  /// sm (80, 90), read-once hint level, launch-shape constants (emit_ptx.h).
  const codegen::nvptx::GpuTarget target_;
  std::set<const ir::ValueNode*> read_once_;  ///< loads_read_once(kernel_)
};

}  // namespace inductor_cpp::codegen::nvptx_detail
