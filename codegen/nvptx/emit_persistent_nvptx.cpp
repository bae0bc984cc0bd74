/// \file
/// Persistent rows (softmax, layernorm, ...): when every loop of a row body spread over the
/// row's T threads covers the same row in the same vector chunks, and each thread's share is a
/// few chunks (at most kMaxPersistentChunks), the loops are emitted unrolled over the thread's
/// chunks and a contiguous load repeated by a later loop (the same buffer and index at the same
/// chunk) reuses the registers of the first one: the row is read from memory once instead of
/// once per loop. The chunks are then known to be full; one alignment check per row picks this
/// version or the general one (the row body is emitted twice), uniformly for the whole row
/// (T >= 32: one row per warp or block), so the barriers of the combines stay uniform.
/// When the row is stored back (layer_norm, softmax), its loads carry an L2 evict_last cache
/// policy (`ld.global.L2::cache_hint`, inline PTX: LLVM 16 has no intrinsic for it).
#include <llvm/IR/InlineAsm.h>

#include <algorithm>
#include <set>

#include "codegen/nvptx/nvptx_internal.h"

namespace inductor_cpp::codegen::nvptx_detail {

using ir::Stmt;
using ir::StmtKind;

namespace {

/// True when a loop of the row body stores (the row is written back, not only reduced).
bool stores_in_loop(const std::vector<Stmt>& body) {
  return std::any_of(body.begin(), body.end(), [](const Stmt& s) {
    return s.kind == StmtKind::For &&
           std::any_of(s.body.begin(), s.body.end(),
                       [](const Stmt& inner) { return inner.kind == StmtKind::Store; });
  });
}

void buffers_touched(const std::vector<Stmt>& body, std::set<std::string>& loaded,
                     std::set<std::string>& stored) {
  for (const Stmt& s : body) {
    if (s.kind == StmtKind::Store) stored.insert(s.buffer);
    if (s.value) {
      for (const ir::Value& l : ir::loads_in(s.value)) loaded.insert(l->name);
    }
    buffers_touched(s.body, loaded, stored);
  }
}

}  // namespace

int KernelEmitter::persistent_chunks(const Stmt& top, int t) const {
  if (t < 32 || column_groups_ > 0) return 0;
  int loops = 0;
  int64_t width = 0, extent = 0;
  for (const Stmt& s : top.body) {
    if (s.kind != StmtKind::For) continue;
    if (s.vector_width <= 1 || !s.extent.is_const()) return 0;
    for (const Stmt& inner : s.body) {
      if (inner.kind == StmtKind::For || inner.kind == StmtKind::DefineAccumulator) return 0;
    }
    if (loops > 0 && (s.vector_width != width || s.extent.value() != extent)) return 0;
    width = s.vector_width;
    extent = s.extent.value();
    ++loops;
  }
  if (loops < 2 || extent % width != 0 || (extent / width) % t != 0) return 0;
  const int64_t chunks = extent / width / t;
  if (chunks < 1 || chunks > kMaxPersistentChunks) return 0;
  std::set<std::string> loaded, stored;
  buffers_touched(top.body, loaded, stored);
  for (const std::string& b : stored) {
    if (loaded.count(b)) return 0;  // a later loop could read what an earlier one stored
  }
  return static_cast<int>(chunks);
}

int KernelEmitter::persistent_row_threads(const Stmt& top, int t) const {
  const bool welford = std::any_of(top.body.begin(), top.body.end(), [](const Stmt& s) {
    return s.kind == StmtKind::DefineAccumulator && s.reduce_op == ir::ReduceOp::welford_m2;
  });
  if (!welford || persistent_chunks(top, t) == 0) return t;
  while (t / 2 >= kPersistentRowThreads && persistent_chunks(top, t / 2) > 0) t /= 2;
  return t;
}

void KernelEmitter::row_body(const Stmt& top) {
  const int chunks = persistent_chunks(top, group_threads_);
  if (chunks == 0) return statements(top.body);
  // Every vector access of the thread's first chunk aligned <=> of all its chunks (they are
  // T * W elements apart, a multiple of the vector size) and of every thread of the row.
  llvm::Value* aligned = b_.getTrue();
  for (const Stmt& s : top.body) {
    if (s.kind != StmtKind::For) continue;
    llvm::Value* base = b_.CreateMul(thread_in_group_, b_.getInt64(s.vector_width));
    aligned = b_.CreateAnd(aligned, chunk_aligned(s, base, static_cast<int>(s.vector_width)));
  }
  // The general version defines its accumulators afresh (new allocas, not combined).
  if_else(
      aligned, [&] { persistent_row(top, chunks); }, [&] { statements(top.body); },
      "row.persistent", "row.general", "row.done");
}

void KernelEmitter::persistent_row(const Stmt& top, int chunks) {
  persistent_chunks_ = chunks;
  if (target_.sm >= 80 && stores_in_loop(top.body)) {  // createpolicy: sm_80 and PTX ISA 7.4
    // H200, 16384 x 8192 layer_norm with weight and bias, back to back: 0.2643 -> 0.2546 ms
    // (stock Inductor 0.2535); evict_first on these loads: 0.2777 (`python -m inductor_cpp.bench
    // gpu_raw`).
    llvm::Type* i64 = b_.getInt64Ty();
    llvm::InlineAsm* policy =
        llvm::InlineAsm::get(llvm::FunctionType::get(i64, false),
                             "createpolicy.fractional.L2::evict_last.b64 $0, 0f3F800000;", "=l",
                             /*hasSideEffects=*/false);
    llvm::CallInst* call = b_.CreateCall(policy, {}, "l2.evict_last");
    call->setDoesNotAccessMemory();  // a constant: LICM may hoist it out of the row loop
    call->setDoesNotThrow();
    row_load_policy_ = call;
    policy_row_var_ = top.var;
  }
  statements(top.body);
  persistent_chunks_ = 0;
  row_cache_.clear();
  row_load_policy_ = nullptr;
  policy_row_var_.clear();
}

void KernelEmitter::persistent_group_loop(const Stmt& s) {
  const int lanes = static_cast<int>(s.vector_width);
  for (int k = 0; k < persistent_chunks_; ++k) {
    persistent_chunk_ = k;
    llvm::Value* chunk = b_.CreateAdd(thread_in_group_, b_.getInt64(int64_t{k} * group_threads_));
    push_scope();
    chunk_body(s, b_.CreateMul(chunk, b_.getInt64(lanes), s.var + ".base"), lanes);
    pop_scope();
  }
  persistent_chunk_ = -1;
}

bool KernelEmitter::cached_row_chunk(const ir::ValueNode& n) {
  if (persistent_chunk_ < 0) return false;
  const std::string key =
      n.name + "|" + ir::to_string(n.index.at(0)) + "|" + std::to_string(persistent_chunk_);
  auto it = row_cache_.find(key);
  if (it == row_cache_.end()) return false;
  for (int l = 0; l < vec_.lanes; ++l) scopes_.back().values[{&n, l}] = it->second.at(l);
  return true;
}

void KernelEmitter::remember_row_chunk(const ir::ValueNode& n) {
  if (persistent_chunk_ < 0) return;
  const std::string key =
      n.name + "|" + ir::to_string(n.index.at(0)) + "|" + std::to_string(persistent_chunk_);
  std::vector<llvm::Value*> lanes;
  for (int l = 0; l < vec_.lanes; ++l) lanes.push_back(scopes_.back().values.at({&n, l}));
  row_cache_[key] = std::move(lanes);
}

llvm::Value* KernelEmitter::row_load_with_policy(const ir::ValueNode& n, llvm::Type* type,
                                                 llvm::Value* address, int64_t bytes) {
  if (!row_load_policy_ || persistent_chunk_ < 0 || !ir::depends_on(n.index.at(0), policy_row_var_))
    return nullptr;  // e.g. layer_norm's weight and bias: the same for every row
  return inline_ptx_load(type, address, bytes, ".L2::cache_hint", row_load_policy_);
}

}  // namespace inductor_cpp::codegen::nvptx_detail
