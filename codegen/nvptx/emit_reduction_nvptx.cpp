/// \file
/// Accumulators of the NVPTX emitter: identities, updates and combines with the CPU runtime's
/// semantics (codegen/cpu/ic_runtime_reduce.h: NaN wins max/min and argmax/argmin, first index
/// on ties, Welford with Chan's combination), and the combine across the T threads of a group:
/// a shuffle-down tree inside each warp, then (T > 32) one slot per warp in shared memory that
/// every warp reduces the same way, then a broadcast of lane 0, so all T threads hold the same
/// result and the order is fixed (deterministic).
#include <llvm/IR/Constants.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include <limits>

#include "codegen/nvptx/nvptx_internal.h"

namespace inductor_cpp::codegen::nvptx_detail {

using ir::DType;
using ir::ReduceOp;

namespace {

bool is_arg(ReduceOp op) {
  return op == ReduceOp::argmax || op == ReduceOp::argmin;
}
bool is_logical(ReduceOp op) {
  return op == ReduceOp::any || op == ReduceOp::all;
}

/// The type the accumulator's value component is kept in.
DType state_type(const Accumulator& a) {
  return is_logical(a.op) ? DType::Bool : ir::compute_type(a.dtype);
}

}  // namespace

void KernelEmitter::define_accumulator(const ir::Stmt& s) {
  if (column_vector_) {  // one accumulator per column lane
    for (int l = 0; l < vec_.lanes; ++l) define_accumulator_as(s, accumulator_key(s.name, l));
    return;
  }
  if (vec_.lanes > 1) unsupported("accumulator " + s.name + " defined inside a vector chunk");
  define_accumulator_as(s, s.name);
}

void KernelEmitter::define_accumulator_as(const ir::Stmt& s, const std::string& key) {
  Accumulator a;
  a.op = s.reduce_op;
  a.dtype = s.dtype;
  const DType st = state_type(a);
  if (a.op == ReduceOp::welford_m2 && !ir::is_floating(st))
    unsupported("welford_m2 of " + std::string(ir::dtype_name(a.dtype)));
  if ((a.op == ReduceOp::sum || a.op == ReduceOp::prod) && st == DType::Bool)
    unsupported("sum/prod of bool");
  llvm::IRBuilder<> at_entry(entry_, entry_->begin());
  llvm::Type* t = register_type(st);
  a.value = at_entry.CreateAlloca(t, nullptr, s.name);
  if (is_arg(a.op)) a.index = at_entry.CreateAlloca(b_.getInt64Ty(), nullptr, s.name + ".idx");
  if (a.op == ReduceOp::welford_m2) {
    a.m2 = at_entry.CreateAlloca(t, nullptr, s.name + ".m2");
    a.count = at_entry.CreateAlloca(t, nullptr, s.name + ".n");
  }
  a.group_level = in_group_context_ && group_threads_ > 1;
  store_state(a, identity(a));
  accumulators_[key] = a;
}

void KernelEmitter::accumulate(const ir::Stmt& s) {
  if (column_vector_) {  // each column lane into its own accumulator
    for (vec_.lane = 0; vec_.lane < vec_.lanes; ++vec_.lane) {
      auto it = accumulators_.find(accumulator_key(s.name));
      if (it == accumulators_.end()) unsupported("accumulate into undefined " + s.name);
      const Accumulator& a = it->second;
      llvm::Value* x = value(s.value);
      llvm::Value* index = is_arg(a.op) ? expr(s.index) : nullptr;
      store_state(a, update(a, load_state(a), x, index));
    }
    vec_.lane = 0;
    return;
  }
  auto it = accumulators_.find(s.name);
  if (it == accumulators_.end()) unsupported("accumulate into undefined " + s.name);
  const Accumulator& a = it->second;
  if (a.group_level && in_group_context_) {
    unsupported("accumulate into " + s.name + " outside a thread-mapped loop of its group");
  }
  const int n = std::max(vec_.lanes, 1);
  if (a.op == ReduceOp::welford_m2 && n > 1) return accumulate_welford_chunk(a, s);
  for (vec_.lane = 0; vec_.lane < n; ++vec_.lane) {  // lanes in order: the sequential order
    llvm::Value* x = value(s.value);
    llvm::Value* index = is_arg(a.op) ? expr(s.index) : nullptr;
    store_state(a, update(a, load_state(a), x, index));
  }
  vec_.lane = 0;
}

void KernelEmitter::accumulate_welford_chunk(const Accumulator& a, const ir::Stmt& s) {
  const int n = vec_.lanes;
  std::vector<llvm::Value*> xs;
  for (vec_.lane = 0; vec_.lane < n; ++vec_.lane) {
    llvm::Value* x = value(s.value);
    xs.push_back(ir::is_reduced_float(a.dtype) ? to_float32(x, a.dtype) : x);
  }
  vec_.lane = 0;
  llvm::Type* t = xs[0]->getType();
  auto c = [&](double v) { return llvm::ConstantFP::get(t, v); };
  // The chunk's own mean and m2 (lanes in order; GPU chunks have 2^k lanes: an exact
  // multiplication) ...
  llvm::Value* sum = xs[0];
  for (int l = 1; l < n; ++l) sum = b_.CreateFAdd(sum, xs[l]);
  llvm::Value* chunk_mean = fast_divide(sum, c(n), state_type(a));
  llvm::Value* chunk_m2 = c(0.0);
  for (llvm::Value* x : xs) {
    llvm::Value* d = b_.CreateFSub(x, chunk_mean);
    chunk_m2 = b_.CreateFAdd(chunk_m2, b_.CreateFMul(d, d));
  }
  // ... merged into the state as Chan et al.: one division per chunk instead of one per lane.
  AccState st = load_state(a);
  llvm::Value* total = b_.CreateFAdd(st.count, c(n));
  llvm::Value* share = fast_divide(c(n), total, state_type(a));
  llvm::Value* delta = b_.CreateFSub(chunk_mean, st.value);
  st.value = b_.CreateFAdd(st.value, b_.CreateFMul(delta, share));
  st.m2 = b_.CreateFAdd(b_.CreateFAdd(st.m2, chunk_m2),
                        b_.CreateFMul(b_.CreateFMul(b_.CreateFMul(delta, delta), st.count), share));
  st.count = total;
  store_state(a, st);
}

llvm::Value* KernelEmitter::read_accumulator(const std::string& name, DType result_type) {
  auto it = accumulators_.find(accumulator_key(name));
  if (it == accumulators_.end()) unsupported("local(" + name + ") read outside its scope");
  const Accumulator& a = it->second;
  const AccState s = load_state(a);
  if (is_arg(a.op)) return convert(s.index, DType::Int64, result_type);
  if (a.op == ReduceOp::welford_m2) return convert(s.m2, state_type(a), result_type);
  return convert(s.value, state_type(a), result_type);
}

AccState KernelEmitter::load_state(const Accumulator& a) {
  llvm::Type* t = register_type(state_type(a));
  AccState s;
  s.value = b_.CreateLoad(t, a.value);
  if (a.index) s.index = b_.CreateLoad(b_.getInt64Ty(), a.index);
  if (a.m2) s.m2 = b_.CreateLoad(t, a.m2);
  if (a.count) s.count = b_.CreateLoad(t, a.count);
  return s;
}

void KernelEmitter::store_state(const Accumulator& a, const AccState& s) {
  b_.CreateStore(s.value, a.value);
  if (a.index) b_.CreateStore(s.index, a.index);
  if (a.m2) b_.CreateStore(s.m2, a.m2);
  if (a.count) b_.CreateStore(s.count, a.count);
}

AccState KernelEmitter::identity(const Accumulator& a) {
  const DType st = state_type(a);
  llvm::Type* t = register_type(st);
  const bool is_float = ir::is_floating(st);
  const bool is_u = st == DType::UInt8 || st == DType::Bool;
  auto lowest = [&]() -> llvm::Value* {
    if (is_float) return llvm::ConstantFP::getInfinity(t, true);
    return is_u
               ? llvm::ConstantInt::get(t, 0)
               : llvm::ConstantInt::get(t, llvm::APInt::getSignedMinValue(t->getIntegerBitWidth()));
  };
  auto highest = [&]() -> llvm::Value* {
    if (is_float) return llvm::ConstantFP::getInfinity(t, false);
    return is_u
               ? llvm::ConstantInt::get(t, llvm::APInt::getMaxValue(t->getIntegerBitWidth()))
               : llvm::ConstantInt::get(t, llvm::APInt::getSignedMaxValue(t->getIntegerBitWidth()));
  };
  AccState s;
  switch (a.op) {
    case ReduceOp::sum:
    case ReduceOp::welford_m2:
      s.value = llvm::Constant::getNullValue(t);
      break;
    case ReduceOp::prod:
      s.value = is_float ? llvm::ConstantFP::get(t, 1.0) : llvm::ConstantInt::get(t, 1);
      break;
    case ReduceOp::max:
    case ReduceOp::argmax:
      s.value = lowest();
      break;
    case ReduceOp::min:
    case ReduceOp::argmin:
      s.value = highest();
      break;
    case ReduceOp::any:
      s.value = b_.getFalse();
      break;
    case ReduceOp::all:
      s.value = b_.getTrue();
      break;
  }
  if (is_arg(a.op)) s.index = b_.getInt64(std::numeric_limits<int64_t>::max());  // loses every tie
  if (a.op == ReduceOp::welford_m2) {
    s.m2 = llvm::Constant::getNullValue(t);
    s.count = llvm::Constant::getNullValue(t);
  }
  return s;
}

llvm::Value* KernelEmitter::arg_takes(bool is_max, ir::DType t, llvm::Value* v, llvm::Value* i,
                                      llvm::Value* best, llvm::Value* best_i) {
  llvm::Value* earlier = b_.CreateICmpSLT(i, best_i);
  if (!ir::is_floating(t)) {
    const bool is_u = t == DType::UInt8 || t == DType::Bool;
    llvm::Value* better = is_max ? (is_u ? b_.CreateICmpUGT(v, best) : b_.CreateICmpSGT(v, best))
                                 : (is_u ? b_.CreateICmpULT(v, best) : b_.CreateICmpSLT(v, best));
    return b_.CreateOr(better, b_.CreateAnd(b_.CreateICmpEQ(v, best), earlier));
  }
  llvm::Value* v_nan = b_.CreateFCmpUNO(v, v);
  llvm::Value* best_nan = b_.CreateFCmpUNO(best, best);
  llvm::Value* better = is_max ? b_.CreateFCmpOGT(v, best) : b_.CreateFCmpOLT(v, best);
  llvm::Value* number_case = b_.CreateOr(better, b_.CreateAnd(b_.CreateFCmpOEQ(v, best), earlier));
  return b_.CreateSelect(best_nan, b_.CreateAnd(v_nan, earlier), b_.CreateOr(v_nan, number_case));
}

AccState KernelEmitter::update(const Accumulator& a, AccState s, llvm::Value* x,
                               llvm::Value* index) {
  const DType st = state_type(a);
  if (is_logical(a.op)) {
    x = convert(x, a.dtype, DType::Bool);
  } else if (ir::is_reduced_float(a.dtype)) {
    x = to_float32(x, a.dtype);
  }
  const bool is_float = ir::is_floating(st);
  switch (a.op) {
    case ReduceOp::sum:
      s.value = is_float ? b_.CreateFAdd(s.value, x) : b_.CreateAdd(s.value, x);
      return s;
    case ReduceOp::prod:
      s.value = is_float ? b_.CreateFMul(s.value, x) : b_.CreateMul(s.value, x);
      return s;
    case ReduceOp::max:
    case ReduceOp::min:
      s.value = maximum(s.value, x, st, a.op == ReduceOp::max);
      return s;
    case ReduceOp::any:
      s.value = b_.CreateOr(s.value, x);
      return s;
    case ReduceOp::all:
      s.value = b_.CreateAnd(s.value, x);
      return s;
    case ReduceOp::argmax:
    case ReduceOp::argmin: {
      llvm::Value* take = arg_takes(a.op == ReduceOp::argmax, st, x, index, s.value, s.index);
      s.value = b_.CreateSelect(take, x, s.value);
      s.index = b_.CreateSelect(take, index, s.index);
      return s;
    }
    case ReduceOp::welford_m2: {
      llvm::Value* one = llvm::ConstantFP::get(x->getType(), 1.0);
      s.count = b_.CreateFAdd(s.count, one);
      llvm::Value* delta = b_.CreateFSub(x, s.value);
      s.value = b_.CreateFAdd(s.value, fast_divide(delta, s.count, st));
      s.m2 = b_.CreateFAdd(s.m2, b_.CreateFMul(delta, b_.CreateFSub(x, s.value)));
      return s;
    }
  }
  unsupported("unknown reduce op");
}

AccState KernelEmitter::combine(const Accumulator& a, const AccState& x, const AccState& y) {
  const DType st = state_type(a);
  const bool is_float = ir::is_floating(st);
  AccState r = x;
  switch (a.op) {
    case ReduceOp::sum:
      r.value = is_float ? b_.CreateFAdd(x.value, y.value) : b_.CreateAdd(x.value, y.value);
      return r;
    case ReduceOp::prod:
      r.value = is_float ? b_.CreateFMul(x.value, y.value) : b_.CreateMul(x.value, y.value);
      return r;
    case ReduceOp::max:
    case ReduceOp::min:
      r.value = maximum(x.value, y.value, st, a.op == ReduceOp::max);
      return r;
    case ReduceOp::any:
      r.value = b_.CreateOr(x.value, y.value);
      return r;
    case ReduceOp::all:
      r.value = b_.CreateAnd(x.value, y.value);
      return r;
    case ReduceOp::argmax:
    case ReduceOp::argmin: {
      llvm::Value* take =
          arg_takes(a.op == ReduceOp::argmax, st, y.value, y.index, x.value, x.index);
      r.value = b_.CreateSelect(take, y.value, x.value);
      r.index = b_.CreateSelect(take, y.index, x.index);
      return r;
    }
    case ReduceOp::welford_m2: {  // Chan et al.; an empty y leaves x as it is
      llvm::Value* total = b_.CreateFAdd(x.count, y.count);
      llvm::Value* y_empty =
          b_.CreateFCmpOEQ(y.count, llvm::ConstantFP::get(y.count->getType(), 0.0));
      llvm::Value* delta = b_.CreateFSub(y.value, x.value);
      llvm::Value* y_share = b_.CreateFDiv(y.count, total);
      llvm::Value* mean = b_.CreateFAdd(x.value, b_.CreateFMul(delta, y_share));
      llvm::Value* m2 = b_.CreateFAdd(
          b_.CreateFAdd(x.m2, y.m2),
          b_.CreateFMul(b_.CreateFMul(b_.CreateFMul(delta, delta), x.count), y_share));
      r.value = b_.CreateSelect(y_empty, x.value, mean);
      r.m2 = b_.CreateSelect(y_empty, x.m2, m2);
      r.count = b_.CreateSelect(y_empty, x.count, total);
      return r;
    }
  }
  unsupported("unknown reduce op");
}

llvm::Value* KernelEmitter::shuffle(llvm::Value* v, llvm::Value* lane_or_offset, bool down) {
  const llvm::Intrinsic::ID id =
      down ? llvm::Intrinsic::nvvm_shfl_sync_down_i32 : llvm::Intrinsic::nvvm_shfl_sync_idx_i32;
  auto shfl32 = [&](llvm::Value* x) {
    return b_.CreateIntrinsic(id, {},
                              {b_.getInt32(0xFFFFFFFFu), x, lane_or_offset, b_.getInt32(0x1F)});
  };
  llvm::Type* t = v->getType();
  const unsigned bits = t->getPrimitiveSizeInBits().getFixedValue();
  llvm::Type* int_type = b_.getIntNTy(bits);
  llvm::Value* as_int = t->isFloatingPointTy() ? b_.CreateBitCast(v, int_type) : v;
  llvm::Value* result = nullptr;
  if (bits == 64) {
    llvm::Value* lo = shfl32(b_.CreateTrunc(as_int, b_.getInt32Ty()));
    llvm::Value* hi = shfl32(b_.CreateTrunc(b_.CreateLShr(as_int, 32), b_.getInt32Ty()));
    result = b_.CreateOr(b_.CreateZExt(lo, b_.getInt64Ty()),
                         b_.CreateShl(b_.CreateZExt(hi, b_.getInt64Ty()), 32));
  } else {
    result = b_.CreateTrunc(shfl32(b_.CreateZExt(as_int, b_.getInt32Ty())), int_type);
  }
  return t->isFloatingPointTy() ? b_.CreateBitCast(result, t) : result;
}

AccState KernelEmitter::shuffle_state(const AccState& s, llvm::Value* lane_or_offset, bool down) {
  AccState r;
  r.value = shuffle(s.value, lane_or_offset, down);
  if (s.index) r.index = shuffle(s.index, lane_or_offset, down);
  if (s.m2) r.m2 = shuffle(s.m2, lane_or_offset, down);
  if (s.count) r.count = shuffle(s.count, lane_or_offset, down);
  return r;
}

void KernelEmitter::combine_across_group(const std::vector<std::string>& names) {
  const int threads = group_threads_;
  std::vector<const Accumulator*> accs;
  std::vector<AccState> states;
  for (const std::string& name : names) {
    accs.push_back(&accumulators_.at(name));
    states.push_back(load_state(*accs.back()));
  }
  for (int offset = std::min(threads, 32) / 2; offset >= 1; offset /= 2) {
    for (size_t i = 0; i < accs.size(); ++i) {  // interleaved: independent shuffles in flight
      states[i] = combine(*accs[i], states[i], shuffle_state(states[i], b_.getInt32(offset), true));
    }
  }
  if (threads <= 32) {
    llvm::Value* leader = b_.CreateAnd(lane_in_warp_, b_.getInt32(~(threads - 1)));
    for (size_t i = 0; i < accs.size(); ++i) {
      store_state(*accs[i], shuffle_state(states[i], leader, false));
    }
    return;
  }
  // One slot per warp and component in shared memory (kScratchComponents rows of 33); every
  // warp then reduces the slots the same way (no third barrier and no broadcast through
  // memory). Accumulators whose components fit the rows together share the barriers.
  const int warps = threads / 32;
  auto slot = [&](int row, llvm::Value* warp) {
    llvm::Value* index = b_.CreateAdd(b_.getInt32(row * 33), warp);
    return b_.CreateGEP(shared_->getValueType(), shared_, {b_.getInt32(0), index});
  };
  auto parts_of = [](AccState& s) {
    return std::vector<llvm::Value**>{&s.value, &s.index, &s.m2, &s.count};
  };
  auto barrier = [&] { b_.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {}); };
  llvm::Value* source_warp = b_.CreateAnd(lane_in_warp_, b_.getInt32(warps - 1));
  for (size_t first = 0; first < accs.size();) {
    size_t last = first;  // batch [first, last): components fit the scratch rows
    int rows = 0;
    while (last < accs.size()) {
      int n = 0;
      for (llvm::Value** p : parts_of(states[last])) n += *p != nullptr;
      if (last > first && rows + n > kScratchComponents) break;
      rows += n;
      ++last;
    }
    barrier();  // earlier readers of the slots are done
    if_then(b_.CreateICmpEQ(lane_in_warp_, b_.getInt32(0)), [&] {
      int row = 0;
      for (size_t i = first; i < last; ++i) {
        for (llvm::Value** p : parts_of(states[i])) {
          if (*p) b_.CreateStore(*p, slot(row++, warp_in_block_));
        }
      }
    });
    barrier();
    std::vector<AccState> w(states.begin() + first, states.begin() + last);
    int row = 0;
    for (AccState& x : w) {
      for (llvm::Value** p : parts_of(x)) {
        if (*p) *p = b_.CreateLoad((*p)->getType(), slot(row++, source_warp));
      }
    }
    for (int offset = warps / 2; offset >= 1; offset /= 2) {
      for (size_t i = first; i < last; ++i) {
        AccState& x = w[i - first];
        x = combine(*accs[i], x, shuffle_state(x, b_.getInt32(offset), true));
      }
    }
    for (size_t i = first; i < last; ++i) {
      store_state(*accs[i], shuffle_state(w[i - first], b_.getInt32(0), false));
    }
    first = last;
  }
}

void KernelEmitter::combine_across_column_group(const std::string& name) {
  const Accumulator& a = accumulators_.at(name);
  const AccState s = load_state(a);
  std::vector<llvm::Value*> parts = {s.value, s.index, s.m2, s.count};
  auto slot = [&](int component, llvm::Value* thread) {
    llvm::Value* index = b_.CreateAdd(b_.getInt64(int64_t{component} * column_block_), thread);
    return b_.CreateGEP(column_shared_->getValueType(), column_shared_, {b_.getInt64(0), index});
  };
  auto barrier = [&] { b_.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {}); };
  barrier();  // earlier readers of the slots are done
  for (size_t c = 0; c < parts.size(); ++c) {
    if (parts[c]) b_.CreateStore(parts[c], slot(static_cast<int>(c), tid_));
  }
  barrier();
  // This thread's column: tid % C; thread row r of it sits at r * C + column. A loop over the
  // rows (not unrolled by us: T states loaded at once would take T x 4 registers).
  llvm::Value* column = b_.CreateAnd(tid_, b_.getInt64(column_groups_ - 1));
  auto state_of_row = [&](llvm::Value* r) {
    AccState x;
    llvm::Value** xf[] = {&x.value, &x.index, &x.m2, &x.count};
    llvm::Value* thread = b_.CreateAdd(column, b_.CreateMul(r, b_.getInt64(column_groups_)));
    for (size_t c = 0; c < parts.size(); ++c) {
      if (parts[c]) *xf[c] = b_.CreateLoad(parts[c]->getType(), slot(static_cast<int>(c), thread));
    }
    return x;
  };
  store_state(a, state_of_row(b_.getInt64(0)));
  counted_loop(b_.getInt64(1), b_.getInt64(group_threads_), b_.getInt64(1),
               [&](llvm::Value* r) { store_state(a, combine(a, load_state(a), state_of_row(r))); });
}

}  // namespace inductor_cpp::codegen::nvptx_detail
