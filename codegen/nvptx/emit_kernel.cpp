/// \file
/// The kernel function, its thread mapping and its loops (see nvptx_internal.h and
/// docs/codegen/nvptx.md for the mapping rules):
///   * a top-level For with gpu_threads <= 1: a grid-stride loop, one thread per chunk of
///     vector_width iterations;
///   * a top-level For with gpu_threads = T > 1: a grid-stride loop over groups of T threads,
///     one iteration each (several groups per block when T <= 32); the For loops directly in
///     its body are spread over the T threads and group-level accumulators combined after them
///     (outer-dim reductions: the T threads of a group lie C = 256 / T apart in the block, so
///     consecutive threads read consecutive columns; inner-dim rows that split evenly are kept
///     in registers across the loops, emit_persistent_nvptx.cpp);
///   * anything else (e.g. a full reduction with no outer loop): one block of
///     kSingleRowBlock threads treated as one group.
#include <llvm/IR/Constants.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <set>
#include <stdexcept>

#include "codegen/nvptx/nvptx_internal.h"

namespace inductor_cpp::codegen::nvptx_detail {

using codegen::nvptx::GpuLaunch;
using codegen::nvptx::GpuTarget;
using ir::Stmt;
using ir::StmtKind;

namespace {

bool has_nested_scopes(const std::vector<Stmt>& body) {
  return std::any_of(body.begin(), body.end(), [](const Stmt& s) {
    return s.kind == StmtKind::For || s.kind == StmtKind::DefineAccumulator;
  });
}

void accumulated_names(const std::vector<Stmt>& body, std::vector<std::string>& out) {
  for (const Stmt& s : body) {
    if (s.kind == StmtKind::Accumulate && std::find(out.begin(), out.end(), s.name) == out.end()) {
      out.push_back(s.name);
    }
    accumulated_names(s.body, out);
  }
}

/// Calls `visit` with the index of every access (store or load) in `body`, recursively.
void for_each_access(const std::vector<Stmt>& body,
                     const std::function<void(const ir::Expr&)>& visit) {
  for (const Stmt& s : body) {
    if (s.kind == StmtKind::Store) visit(s.index);
    if (s.value) {
      for (const ir::Value& l : ir::loads_in(s.value)) visit(l->index.at(0));
    }
    for_each_access(s.body, visit);
  }
}

/// Outer-dim reductions (sum(0)): the top loop's iterations are the contiguous columns and the
/// loops in its body run down them; the threads of a group are then better laid along the
/// columns (coalesced loads) than along the loops. Strides along the top loop count within the
/// runs of its flattened dims, as the scheduler counts them (ir/passes/schedule_gpu.cpp): a
/// per-(image, channel) sum over an NHWC tensor walks down the channels within runs of C; an
/// access that stays put within those runs (a per-pixel value that every channel reads) does
/// not make an inner loop a row. Laid along the loops instead, 32 threads of one column read
/// 32 pixels C floats apart: 4 useful bytes per 32-byte sector (~420 GB/s on the H200).
bool group_along_columns(const Stmt& top) {
  bool down_columns = false;
  for_each_access(top.body, [&](const ir::Expr& e) {
    down_columns = down_columns || ir::coefficient_within_runs(e, top.var) == std::optional<int64_t>(1);
  });
  if (!down_columns) return false;
  for (const Stmt& s : top.body) {
    if (s.kind != StmtKind::For) continue;
    bool along_loop = false;
    for_each_access(s.body, [&](const ir::Expr& e) {
      along_loop = along_loop ||
                   (ir::coefficient_of(e, s.var) == std::optional<int64_t>(1) &&
                    ir::coefficient_within_runs(e, top.var) != std::optional<int64_t>(0));
    });
    if (along_loop) return false;
  }
  return true;
}

int64_t grid_for(const ir::Expr& work_items, int64_t per_block, int64_t max_grid = kMaxGrid) {
  if (!work_items.is_const()) return kSymbolicGrid;
  const int64_t blocks = (work_items.value() + per_block - 1) / per_block;
  return std::clamp<int64_t>(blocks, 1, max_grid);
}

/// Columns per block of the column mapping with T thread rows: the widest block (up to
/// target.max_column_block threads) that still gives target.min_column_grid blocks, at least
/// kColumnBlock / T.
int column_groups_for(const ir::Expr& columns, int t, const GpuTarget& target) {
  int groups = kColumnBlock / t;
  if (!columns.is_const()) return groups;
  while (groups * 2 * t <= std::min(target.max_column_block, 1024) &&
         (columns.value() + groups * 2 - 1) / (groups * 2) >= target.min_column_grid) {
    groups *= 2;
  }
  return groups;
}

}  // namespace

KernelEmitter::KernelEmitter(llvm::Module& module, const ir::Kernel& kernel,
                             const codegen::nvptx::GpuTarget& target)
    : module_(module),
      ctx_(module.getContext()),
      kernel_(kernel),
      b_(module.getContext()),
      target_(target),
      read_once_(codegen::nvptx::loads_read_once(kernel)) {}

void KernelEmitter::unsupported(const std::string& what) const {
  throw std::runtime_error("nvptx: kernel " + kernel_.name + ": " + what);
}

void KernelEmitter::push_scope() {
  scopes_.emplace_back();
}
void KernelEmitter::pop_scope() {
  scopes_.pop_back();
}

void KernelEmitter::wait_for_predecessor(bool column_groups) {
  // launch_dependents first: once every block of this grid has issued it, the next kernel of
  // the stream may be launched and place its blocks as ours retire (each of them then waits
  // here in turn). Without it the next kernel is launched as our blocks exit. Measured on the
  // H200 (docs/gpu.md): the early trigger takes 16384 x 8192 layer_norm from 0.2530 to 0.2510
  // ms but column-group kernels (sum(0): 0.1213 -> 0.1229) from it lose, so they only wait.
  // griddepcontrol.wait returns when the grid this one depends on has completed and its
  // writes are visible; nothing of this kernel touches memory before it (the asm has side
  // effects and clobbers memory, so no load is hoisted above it). Without programmatic
  // serialization at launch, both are no-ops.
  const int mode = target_.programmatic_launch;
  const bool trigger_early = mode == 3 || (mode == 1 && !column_groups);
  const std::string text = trigger_early
                               ? "griddepcontrol.launch_dependents;\n\tgriddepcontrol.wait;"
                               : "griddepcontrol.wait;";
  llvm::InlineAsm* prologue =
      llvm::InlineAsm::get(llvm::FunctionType::get(b_.getVoidTy(), false), text, "~{memory}",
                           /*hasSideEffects=*/true);
  b_.CreateCall(prologue, {});
}

GpuLaunch KernelEmitter::emit() {
  // a * b + c of the kernel's own arithmetic may become one fma (one rounding), as nvcc's
  // default --fmad=true (PyTorch's CUDA kernels) and Triton allow; without `contract` every
  // mul/add is emitted `.rn`, which also stops ptxas from fusing. libdevice code is not
  // contracted (fusing inside expf etc. took softmax from 40 to 63 registers).
  llvm::FastMathFlags contract;
  contract.setAllowContract(true);
  b_.setFastMathFlags(contract);
  llvm::Type* global_ptr = llvm::PointerType::get(ctx_, 1);
  llvm::Type* i64 = b_.getInt64Ty();
  std::vector<llvm::Type*> types(kernel_.params.size(), global_ptr);
  types.insert(types.end(), kernel_.symbols.size(), i64);
  types.push_back(global_ptr);
  function_ = llvm::Function::Create(llvm::FunctionType::get(b_.getVoidTy(), types, false),
                                     llvm::GlobalValue::ExternalLinkage, kernel_.name, module_);
  if (function_->getName() != kernel_.name) unsupported("duplicate kernel name");
  entry_ = llvm::BasicBlock::Create(ctx_, "entry", function_);
  b_.SetInsertPoint(entry_);
  const bool programmatic = target_.programmatic_launch != 0 && target_.sm >= 90;
  size_t arg = 0;
  for (size_t k = 0; k < kernel_.params.size(); ++k) {
    function_->getArg(arg)->setName("buf" + std::to_string(k));
    buffers_.push_back(function_->getArg(arg++));
  }
  for (const std::string& s : kernel_.symbols) {
    function_->getArg(arg)->setName(s);
    vars_[s] = function_->getArg(arg++);
  }
  status_ = function_->getArg(arg);
  status_->setName("status");
  auto* scratch_type = llvm::ArrayType::get(i64, kScratchComponents * 33);
  shared_ =
      new llvm::GlobalVariable(module_, scratch_type, false, llvm::GlobalValue::InternalLinkage,
                               llvm::UndefValue::get(scratch_type), kernel_.name + "_scratch",
                               nullptr, llvm::GlobalValue::NotThreadLocal, 3);
  shared_->setAlignment(llvm::Align(8));

  auto sreg = [&](llvm::Intrinsic::ID id) { return b_.CreateIntrinsic(id, {}, {}); };
  llvm::Value* tid32 = sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x);
  llvm::Value* tid = b_.CreateZExt(tid32, i64, "tid");
  llvm::Value* ntid = b_.CreateZExt(sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x), i64);
  llvm::Value* ctaid = b_.CreateZExt(sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x), i64);
  llvm::Value* nctaid = b_.CreateZExt(sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x), i64);
  lane_in_warp_ = b_.CreateAnd(tid32, 31, "lane");
  warp_in_block_ = b_.CreateLShr(tid32, 5, "warp");
  row_active_ = b_.getTrue();
  push_scope();

  GpuLaunch launch;
  launch.name = kernel_.name;
  launch.programmatic = programmatic;
  const std::vector<Stmt>& body = kernel_.body;
  const bool single_loop = body.size() == 1 && body[0].kind == StmtKind::For;
  if (single_loop && body[0].gpu_threads <= 1) {
    if (programmatic) wait_for_predecessor(/*column_groups=*/false);
    const Stmt& loop = body[0];
    const int64_t lanes = std::max(loop.vector_width, 1);
    launch.block[0] = kPointwiseBlock;
    const ir::Expr chunks = ir::floordiv(loop.extent + (lanes - 1), ir::Expr(lanes));
    launch.grid[0] = grid_for(chunks, kPointwiseBlock, kMaxPointwiseGrid);
    group_threads_ = 1;
    in_group_context_ = false;
    chunk_loop(loop, b_.CreateAdd(b_.CreateMul(ctaid, ntid), tid), b_.CreateMul(nctaid, ntid));
  } else if (single_loop) {
    const Stmt& loop = body[0];
    int t = loop.gpu_threads;
    if (t > 1024 || (t & (t - 1)) != 0) unsupported("gpu_threads must be a power of two <= 1024");
    if (loop.vector_width > 1) unsupported("a vector loop shared by several threads");
    const bool columns = t <= kColumnBlock / 2 && group_along_columns(loop);
    if (programmatic) wait_for_predecessor(columns);
    if (!columns) t = persistent_row_threads(loop, t);
    // Column groups of `lanes` columns each (128-bit loads); the top loop then runs over groups.
    const int lanes = columns ? column_lanes(loop) : 1;
    const ir::Expr groups = lanes > 1 ? ir::Expr(loop.extent.value() / lanes) : loop.extent;
    const int rows = columns   ? column_groups_for(groups, t, target_)
                     : t <= 32 ? std::max(1, kSmallRowBlock / t)
                               : 1;
    launch.block[0] = t * rows;
    launch.grid[0] = grid_for(groups, rows);
    group_threads_ = t;
    tid_ = tid;
    llvm::Value* group = nullptr;
    if (columns) {  // thread = thread_row * rows + group: a warp reads consecutive columns
      column_groups_ = rows;
      thread_in_group_ = b_.CreateLShr(tid, __builtin_ctz(rows), "tig");
      group = b_.CreateAnd(tid, rows - 1, "group");
      column_block_ = int64_t{t} * rows;
      auto* type = llvm::ArrayType::get(i64, 4 * column_block_);
      column_shared_ = new llvm::GlobalVariable(
          module_, type, false, llvm::GlobalValue::InternalLinkage, llvm::UndefValue::get(type),
          kernel_.name + "_columns", nullptr, llvm::GlobalValue::NotThreadLocal, 3);
      column_shared_->setAlignment(llvm::Align(8));
    } else {
      thread_in_group_ = b_.CreateAnd(tid, t - 1, "tig");
      group = b_.CreateLShr(tid, __builtin_ctz(t), "group");
    }
    llvm::Value* extent = expr(groups);
    llvm::Value* aligned = lanes > 1 ? column_vectors_aligned(loop, lanes) : nullptr;
    counted_loop(b_.CreateMul(ctaid, b_.getInt64(rows)), extent,
                 b_.CreateMul(nctaid, b_.getInt64(rows)), [&](llvm::Value* first_row) {
                   llvm::Value* row = b_.CreateAdd(first_row, group);
                   row_active_ = b_.CreateICmpSLT(row, extent, "active");
                   // Groups past the end repeat the last row (so every thread of a warp
                   // takes part in the shuffles) and store nothing.
                   llvm::Value* real =
                       b_.CreateSelect(row_active_, row, b_.CreateSub(extent, b_.getInt64(1)));
                   in_group_context_ = true;
                   if (lanes > 1) {
                     column_vector_row(loop, real, lanes, aligned);
                   } else {
                     vars_[loop.var] = real;
                     row_body(loop);
                   }
                   in_group_context_ = false;
                   vars_.erase(loop.var);
                 });
    row_active_ = b_.getTrue();
  } else {
    if (programmatic) wait_for_predecessor(/*column_groups=*/false);
    launch.block[0] = kSingleRowBlock;
    launch.grid[0] = 1;
    group_threads_ = kSingleRowBlock;
    thread_in_group_ = tid;
    in_group_context_ = true;
    statements(body);
  }
  b_.CreateRetVoid();
  pop_scope();

  llvm::NamedMDNode* annotations = module_.getOrInsertNamedMetadata("nvvm.annotations");
  auto annotate = [&](const char* key, int v) {
    llvm::Metadata* ops[] = {llvm::ValueAsMetadata::get(function_), llvm::MDString::get(ctx_, key),
                             llvm::ValueAsMetadata::get(b_.getInt32(v))};
    annotations->addOperand(llvm::MDNode::get(ctx_, ops));
  };
  annotate("kernel", 1);
  annotate("maxntidx", launch.block[0]);
  return launch;
}

void KernelEmitter::statements(const std::vector<Stmt>& body) {
  for (const Stmt& s : body) statement(s);
}

void KernelEmitter::statement(const Stmt& s) {
  switch (s.kind) {
    case StmtKind::For:
      return in_group_context_ ? group_loop(s) : serial_loop(s);
    case StmtKind::Let: {
      std::vector<llvm::Value*> lanes;
      const int n = std::max(vec_.lanes, 1);
      for (vec_.lane = 0; vec_.lane < n; ++vec_.lane) lanes.push_back(value(s.value));
      vec_.lane = 0;
      scopes_.back().lets[s.name] = std::move(lanes);
      return;
    }
    case StmtKind::DefineAccumulator:
      return define_accumulator(s);
    case StmtKind::Accumulate:
      return accumulate(s);
    case StmtKind::Store:
      return store(s);
  }
}

void KernelEmitter::serial_loop(const Stmt& s) {
  chunk_loop(s, b_.getInt64(0), b_.getInt64(1));
}

void KernelEmitter::group_loop(const Stmt& s) {
  in_group_context_ = false;
  if (persistent_chunks_ > 0) {
    persistent_group_loop(s);
  } else {
    chunk_loop(s, thread_in_group_, b_.getInt64(group_threads_),
               column_groups_ > 0 ? target_.column_unroll : target_.row_unroll);
  }
  in_group_context_ = true;
  std::vector<std::string> names;
  accumulated_names(s.body, names);
  std::vector<std::string> keys;
  for (const std::string& name : names) {
    if (!column_vector_) keys.push_back(name);
    for (int l = 0; column_vector_ && l < vec_.lanes; ++l) keys.push_back(accumulator_key(name, l));
  }
  std::vector<std::string> group_level;
  for (const std::string& key : keys) {
    auto it = accumulators_.find(key);
    if (it == accumulators_.end() || !it->second.group_level) continue;
    if (it->second.combined)
      unsupported("accumulator " + key + " accumulated in two thread-mapped loops");
    if (column_groups_ > 0) combine_across_column_group(key);
    group_level.push_back(key);
    it->second.combined = true;
  }
  if (column_groups_ == 0 && !group_level.empty()) combine_across_group(group_level);
}

void KernelEmitter::chunk_loop(const Stmt& s, llvm::Value* first, llvm::Value* step, int unroll) {
  if (s.vector_width < 0) unsupported("negative vector width");
  const int64_t lanes = std::max(s.vector_width, 1);
  llvm::Value* extent = expr(s.extent);
  llvm::Value* chunks =
      lanes == 1 ? extent
                 : b_.CreateUDiv(b_.CreateAdd(extent, b_.getInt64(lanes - 1)), b_.getInt64(lanes));
  // Vector loops count chunks in 32 bits where the chunk count is a constant far below 2^31
  // (steps are at most grid x block < 2^24): one-instruction increments and compares instead
  // of pairs. Scalar loops keep 64 bits: the column groups' loop (unrolled 16) took 32 instead
  // of 48 registers with a 32-bit counter, 2 instead of 3+ loads in flight, sum(0) 0.125 ->
  // 0.133 ms on the H200.
  const bool narrow =
      lanes > 1 && s.extent.is_const() && s.extent.value() / lanes < (int64_t{1} << 30);
  auto counter = [&](llvm::Value* v) { return narrow ? b_.CreateTrunc(v, b_.getInt32Ty()) : v; };
  auto chunk_base = [&](llvm::Value* c) {
    llvm::Value* wide = narrow ? b_.CreateZExt(c, b_.getInt64Ty()) : c;
    return b_.CreateMul(wide, b_.getInt64(lanes), s.var + ".base", /*HasNUW=*/true,
                        /*HasNSW=*/true);
  };
  if (lanes == 1) {
    counted_loop(
        first, chunks, step, [&](llvm::Value* c) { chunk_body(s, c, 0); }, unroll);
    return;
  }
  // The last, partial chunk (or any chunk of a misaligned view) runs as a scalar loop.
  auto scalar_chunk = [&](llvm::Value* base) {
    llvm::Value* end = b_.CreateAdd(base, b_.getInt64(lanes));
    llvm::Value* stop = b_.CreateSelect(b_.CreateICmpSLT(end, extent), end, extent);
    counted_loop(base, stop, b_.getInt64(1), [&](llvm::Value* i) { chunk_body(s, i, 0); });
  };
  if (has_nested_scopes(s.body)) {  // lane after lane: full chunks unrolled, no vectors
    counted_loop(
        counter(first), counter(chunks), counter(step),
        [&](llvm::Value* c) {
          llvm::Value* base = chunk_base(c);
          llvm::Value* full = b_.CreateICmpSLE(b_.CreateAdd(base, b_.getInt64(lanes)), extent);
          if_else(
              full, [&] { chunk_body(s, base, static_cast<int>(lanes)); },
              [&] { scalar_chunk(base); }, s.var + ".full");
        },
        unroll);
    return;
  }
  // Vector accesses have coefficient 1 in the loop variable, so chunk c's are aligned exactly
  // when chunk 0's are (they are c x their size further): one check before the loop picks a
  // loop of full vector chunks (then the partial last chunk, by the thread it falls to) or, for
  // a misaligned view, a loop of scalar chunks. No test or branch per chunk is left.
  llvm::Value* aligned = chunk_aligned(s, b_.getInt64(0), static_cast<int>(lanes));
  const bool all_full = s.extent.is_const() && s.extent.value() % lanes == 0;
  llvm::Value* full_chunks = b_.CreateUDiv(extent, b_.getInt64(lanes));
  if_else(
      aligned,
      [&] {
        llvm::Value* after = counted_loop(
            counter(first), counter(full_chunks), counter(step),
            [&](llvm::Value* c) { chunk_body(s, chunk_base(c), static_cast<int>(lanes)); }, unroll);
        if (all_full) return;
        // The thread whose chunks continue at full_chunks has the partial one.
        llvm::Value* tail_base = b_.CreateMul(full_chunks, b_.getInt64(lanes));
        llvm::Value* mine = b_.CreateAnd(b_.CreateICmpEQ(after, counter(full_chunks)),
                                         b_.CreateICmpSLT(tail_base, extent));
        if_then(mine, [&] { scalar_chunk(tail_base); });
      },
      [&] {
        // Misaligned (a row of 50257 logits starts at any element): element after element,
        // neighbouring threads on neighbouring elements, unrolled so that a thread keeps as
        // many loads in flight as its vector chunks would. Chunks of `lanes` scalar loads one
        // at a time held one load per thread in flight: 1.4-1.7 TB/s on GPT-2's cross entropy.
        counted_loop(
            first, extent, step, [&](llvm::Value* i) { chunk_body(s, i, 0); },
            std::max(unroll, 1) * static_cast<int>(lanes));
      },
      s.var + ".full");
}

void KernelEmitter::chunk_body(const Stmt& s, llvm::Value* base, int lanes) {
  auto saved_var = vars_.find(s.var) == vars_.end() ? nullptr : vars_[s.var];
  // Callers open a scope for the body first (counted_loop, the full chunk, the persistent
  // chunk), so the loop's scopes start at the current innermost one.
  loops_.push_back({&s, scopes_.size() - 1});
  if (lanes == 0) {
    vars_[s.var] = base;
    statements(s.body);
  } else if (has_nested_scopes(s.body)) {  // lane by lane: the plain sequential order
    for (int l = 0; l < lanes; ++l) {
      push_scope();
      vars_[s.var] = b_.CreateAdd(base, b_.getInt64(l));
      statements(s.body);
      pop_scope();
    }
  } else {  // statement by statement, all lanes: vector loads and stores
    const VectorChunk saved = vec_;
    vec_ = {s.var, base, lanes, 0};
    vars_.erase(s.var);
    statements(s.body);
    vec_ = saved;
  }
  loops_.pop_back();
  if (saved_var) {
    vars_[s.var] = saved_var;
  } else {
    vars_.erase(s.var);
  }
}

llvm::Value* KernelEmitter::counted_loop(llvm::Value* start, llvm::Value* end, llvm::Value* step,
                                         const std::function<void(llvm::Value*)>& body,
                                         int unroll) {
  llvm::BasicBlock* before = b_.GetInsertBlock();
  llvm::BasicBlock* header = llvm::BasicBlock::Create(ctx_, "loop", function_);
  llvm::BasicBlock* inside = llvm::BasicBlock::Create(ctx_, "body", function_);
  llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx_, "exit", function_);
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  llvm::PHINode* iv = b_.CreatePHI(start->getType(), 2, "iv");
  iv->addIncoming(start, before);
  b_.CreateCondBr(b_.CreateICmpSLT(iv, end), inside, exit);
  b_.SetInsertPoint(inside);
  push_scope();
  body(iv);
  pop_scope();
  llvm::Value* next = b_.CreateAdd(iv, step, "", false, true);  // nsw: iv < end, step small
  iv->addIncoming(next, b_.GetInsertBlock());
  llvm::BranchInst* latch = b_.CreateBr(header);
  if (unroll > 1) {
    llvm::Metadata* count[] = {llvm::MDString::get(ctx_, "llvm.loop.unroll.count"),
                               llvm::ConstantAsMetadata::get(b_.getInt32(unroll))};
    llvm::Metadata* ops[] = {nullptr, llvm::MDNode::get(ctx_, count)};
    llvm::MDNode* loop_id = llvm::MDNode::getDistinct(ctx_, ops);
    loop_id->replaceOperandWith(0, loop_id);
    latch->setMetadata(llvm::LLVMContext::MD_loop, loop_id);
  }
  b_.SetInsertPoint(exit);
  return iv;
}

void KernelEmitter::if_else(llvm::Value* cond, const std::function<void()>& then,
                            const std::function<void()>& otherwise, const std::string& label,
                            const std::string& else_label, const std::string& done_label) {
  llvm::BasicBlock* inside = llvm::BasicBlock::Create(ctx_, label, function_);
  llvm::BasicBlock* other = llvm::BasicBlock::Create(ctx_, else_label, function_);
  llvm::BasicBlock* after = llvm::BasicBlock::Create(ctx_, done_label, function_);
  b_.CreateCondBr(cond, inside, other);
  for (auto [block, emit] : {std::pair{inside, &then}, std::pair{other, &otherwise}}) {
    b_.SetInsertPoint(block);
    push_scope();
    (*emit)();
    pop_scope();
    b_.CreateBr(after);
  }
  b_.SetInsertPoint(after);
}

void KernelEmitter::if_then(llvm::Value* cond, const std::function<void()>& then) {
  llvm::BasicBlock* inside = llvm::BasicBlock::Create(ctx_, "then", function_);
  llvm::BasicBlock* after = llvm::BasicBlock::Create(ctx_, "endif", function_);
  b_.CreateCondBr(cond, inside, after);
  b_.SetInsertPoint(inside);
  push_scope();
  then();
  pop_scope();
  b_.CreateBr(after);
  b_.SetInsertPoint(after);
}

}  // namespace inductor_cpp::codegen::nvptx_detail
