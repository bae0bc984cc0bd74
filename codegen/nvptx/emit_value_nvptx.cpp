/// \file
/// Values, index arithmetic, loads and stores of the NVPTX emitter (declared in
/// nvptx_internal.h). Semantics follow the CPU runtime (codegen/cpu/ic_runtime_scalar.h):
/// Python floor division and remainder, NaN-propagating maximum/minimum, float16/bfloat16
/// computed in float32 and rounded to nearest even on the way back, masked loads reading 0,
/// bounds-checked indirect indices that report kKernelIndexOutOfBounds and read 0.
#include <llvm/IR/Constants.h>
#include <llvm/IR/Intrinsics.h>

#include <cmath>
#include <stdexcept>

#include "codegen/nvptx/nvptx_internal.h"

namespace inductor_cpp::codegen::nvptx_detail {

using ir::DType;
using ir::Expr;
using ir::ExprKind;

namespace {

/// Whether `e` is >= 0 for every value of its variables (loop variables and size symbols are;
/// indirect-index placeholders are not known to be).
bool non_negative(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::Const:
      return e.value() >= 0;
    case ExprKind::Var:
      return e.name().empty() || e.name()[0] != '%';
    case ExprKind::Lt:
    case ExprKind::Le:
    case ExprKind::Eq:
    case ExprKind::Ne:
      return true;
    default:
      return non_negative(e.lhs()) && non_negative(e.rhs());
  }
}

bool is_unsigned(DType t) {
  return t == DType::UInt8 || t == DType::Bool;
}

}  // namespace

llvm::Type* KernelEmitter::register_type(DType t) {
  switch (t) {
    case DType::Bool:
      return b_.getInt1Ty();
    case DType::UInt8:
    case DType::Int8:
      return b_.getInt8Ty();
    case DType::Int16:
    case DType::Float16:
    case DType::BFloat16:
      return b_.getInt16Ty();
    case DType::Int32:
      return b_.getInt32Ty();
    case DType::Int64:
      return b_.getInt64Ty();
    case DType::Float32:
      return b_.getFloatTy();
    case DType::Float64:
      return b_.getDoubleTy();
  }
  unsupported("unknown dtype");
}

llvm::Type* KernelEmitter::memory_type(DType t) {
  return t == DType::Bool ? b_.getInt8Ty() : register_type(t);
}

int KernelEmitter::param_index(const std::string& buffer) const {
  for (size_t k = 0; k < kernel_.params.size(); ++k) {
    if (kernel_.params[k].buffer == buffer) return static_cast<int>(k);
  }
  unsupported("buffer " + buffer + " is not a kernel parameter");
}

// ---- index expressions ----------------------------------------------------------------------

llvm::Value* KernelEmitter::expr(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::Const:
      return b_.getInt64(e.value());
    case ExprKind::Var: {
      if (vec_.lanes > 0 && e.name() == vec_.var)
        return b_.CreateAdd(vec_.base, b_.getInt64(vec_.lane));
      auto it = vars_.find(e.name());
      if (it == vars_.end()) unsupported("unbound index variable " + e.name());
      return it->second;
    }
    default:
      break;
  }
  llvm::Value* a = expr(e.lhs());
  llvm::Value* b = expr(e.rhs());
  const bool unsigned_ok = e.rhs().is_const() && e.rhs().value() > 0 && non_negative(e.lhs());
  switch (e.kind()) {
    case ExprKind::Add:
      return b_.CreateAdd(a, b);
    case ExprKind::Mul:
      return b_.CreateMul(a, b);
    case ExprKind::FloorDiv: {
      if (unsigned_ok) return b_.CreateUDiv(a, b);
      llvm::Value* q = b_.CreateSDiv(a, b);
      llvm::Value* r = b_.CreateSRem(a, b);
      llvm::Value* fix = b_.CreateAnd(b_.CreateICmpNE(r, b_.getInt64(0)),
                                      b_.CreateICmpNE(b_.CreateICmpSLT(r, b_.getInt64(0)),
                                                      b_.CreateICmpSLT(b, b_.getInt64(0))));
      return b_.CreateSub(q, b_.CreateZExt(fix, b_.getInt64Ty()));
    }
    case ExprKind::Mod: {
      if (unsigned_ok) return b_.CreateURem(a, b);
      llvm::Value* r = b_.CreateSRem(a, b);
      llvm::Value* fix = b_.CreateAnd(b_.CreateICmpNE(r, b_.getInt64(0)),
                                      b_.CreateICmpNE(b_.CreateICmpSLT(r, b_.getInt64(0)),
                                                      b_.CreateICmpSLT(b, b_.getInt64(0))));
      return b_.CreateSelect(fix, b_.CreateAdd(r, b), r);
    }
    case ExprKind::Min:
      return b_.CreateSelect(b_.CreateICmpSLT(a, b), a, b);
    case ExprKind::Max:
      return b_.CreateSelect(b_.CreateICmpSGT(a, b), a, b);
    case ExprKind::Lt:
      return b_.CreateZExt(b_.CreateICmpSLT(a, b), b_.getInt64Ty());
    case ExprKind::Le:
      return b_.CreateZExt(b_.CreateICmpSLE(a, b), b_.getInt64Ty());
    case ExprKind::Eq:
      return b_.CreateZExt(b_.CreateICmpEQ(a, b), b_.getInt64Ty());
    case ExprKind::Ne:
      return b_.CreateZExt(b_.CreateICmpNE(a, b), b_.getInt64Ty());
    default:
      unsupported(std::string("index expression kind ") + ir::expr_kind_name(e.kind()));
  }
}

llvm::Value* KernelEmitter::condition(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::Lt:
      return b_.CreateICmpSLT(expr(e.lhs()), expr(e.rhs()));
    case ExprKind::Le:
      return b_.CreateICmpSLE(expr(e.lhs()), expr(e.rhs()));
    case ExprKind::Eq:
      return b_.CreateICmpEQ(expr(e.lhs()), expr(e.rhs()));
    case ExprKind::Ne:
      return b_.CreateICmpNE(expr(e.lhs()), expr(e.rhs()));
    default:
      return b_.CreateICmpNE(expr(e), b_.getInt64(0));
  }
}

// ---- values -----------------------------------------------------------------------------------

llvm::Value* KernelEmitter::value(const ir::Value& v) {
  if (!v) unsupported("null value");
  const std::pair<const ir::ValueNode*, int> key{v.node(), vec_.lanes > 0 ? vec_.lane : 0};
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
    auto found = it->values.find(key);
    if (found != it->values.end()) return found->second;
  }
  const ir::ValueNode& n = *v;
  llvm::Value* result = nullptr;
  switch (n.kind) {
    case ir::ValueKind::Constant:
      result = constant(n);
      break;
    case ir::ValueKind::Local: {
      for (auto it = scopes_.rbegin(); it != scopes_.rend() && !result; ++it) {
        auto found = it->lets.find(n.name);
        if (found == it->lets.end()) continue;
        const std::vector<llvm::Value*>& lanes = found->second;
        result = lanes.size() == 1 ? lanes[0] : lanes.at(key.second);
      }
      if (result) break;
      return read_accumulator(n.name, n.dtype);  // not cached: the state changes
    }
    case ir::ValueKind::Load:
      result = load(n);
      break;
    case ir::ValueKind::IndexValue:
      result = convert(expr(n.index.at(0)), DType::Int64, n.dtype);
      break;
    default:
      result = compute(n);
  }
  scopes_.back().values[key] = result;
  return result;
}

llvm::Value* KernelEmitter::constant(const ir::ValueNode& n) {
  switch (n.dtype) {
    case DType::Bool:
      return b_.getInt1(n.int_value != 0);
    case DType::Float32:
      return llvm::ConstantFP::get(b_.getFloatTy(), n.float_value);
    case DType::Float64:
      return llvm::ConstantFP::get(b_.getDoubleTy(), n.float_value);
    case DType::Float16:
    case DType::BFloat16:
      return from_float32(llvm::ConstantFP::get(b_.getFloatTy(), n.float_value), n.dtype);
    default:
      return llvm::ConstantInt::get(register_type(n.dtype), static_cast<uint64_t>(n.int_value),
                                    true);
  }
}

llvm::Value* KernelEmitter::compute(const ir::ValueNode& n) {
  switch (n.kind) {
    case ir::ValueKind::Cast:
      return convert(value(n.operands[0]), n.operands[0]->dtype, n.dtype);
    case ir::ValueKind::Where:
      return b_.CreateSelect(value(n.operands[0]), value(n.operands[1]), value(n.operands[2]));
    case ir::ValueKind::Unary:
    case ir::ValueKind::Binary: {
      const DType t = n.operands[0]->dtype;
      const bool widen = ir::is_reduced_float(t);
      const DType ct = widen ? DType::Float32 : t;
      std::vector<llvm::Value*> ops;
      for (const ir::Value& o : n.operands)
        ops.push_back(widen ? to_float32(value(o), t) : value(o));
      const bool invariant_divisor = n.kind == ir::ValueKind::Binary &&
                                     n.binary_op() == ir::BinaryOp::div && ct == DType::Float32 &&
                                     invariant_in_loop(n.operands[1]);
      llvm::Value* r = n.kind == ir::ValueKind::Unary ? unary_math(n.unary_op(), ops[0], ct)
                       : invariant_divisor            ? divide_by_invariant(ops[0], ops[1])
                                           : binary_math(n.binary_op(), ops[0], ops[1], ct);
      return widen && n.dtype == t ? from_float32(r, t) : r;
    }
    default:
      unsupported(std::string("value kind ") + ir::value_kind_name(n.kind));
  }
}

// ---- conversions ------------------------------------------------------------------------------

llvm::Value* KernelEmitter::to_float32(llvm::Value* v, DType from) {
  if (from == DType::Float16)
    return b_.CreateFPExt(b_.CreateBitCast(v, b_.getHalfTy()), b_.getFloatTy());
  llvm::Value* wide = b_.CreateShl(b_.CreateZExt(v, b_.getInt32Ty()), 16);
  return b_.CreateBitCast(wide, b_.getFloatTy());
}

llvm::Value* KernelEmitter::from_float32(llvm::Value* v, DType to) {
  if (to == DType::Float16)
    return b_.CreateBitCast(b_.CreateFPTrunc(v, b_.getHalfTy()), b_.getInt16Ty());
  // bfloat16: round to nearest even; NaN becomes 0x7FC0 (as c10 and the CPU runtime do).
  llvm::Value* bits = b_.CreateBitCast(v, b_.getInt32Ty());
  llvm::Value* odd = b_.CreateAnd(b_.CreateLShr(bits, 16), 1);
  llvm::Value* rounded =
      b_.CreateLShr(b_.CreateAdd(bits, b_.CreateAdd(odd, b_.getInt32(0x7FFF))), 16);
  llvm::Value* is_nan = b_.CreateFCmpUNO(v, v);
  return b_.CreateSelect(is_nan, b_.getInt16(0x7FC0), b_.CreateTrunc(rounded, b_.getInt16Ty()));
}

llvm::Value* KernelEmitter::convert(llvm::Value* v, DType from, DType to) {
  if (from == to) return v;
  const bool from_float = ir::is_floating(from), to_float = ir::is_floating(to);
  auto as_float = [&](llvm::Value* x, DType t) {
    return ir::is_reduced_float(t) ? to_float32(x, t) : x;
  };
  if (to == DType::Bool) {
    if (from_float) {
      llvm::Value* x = as_float(v, from);
      return b_.CreateFCmpUNE(x, llvm::ConstantFP::get(x->getType(), 0.0));
    }
    return b_.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
  }
  llvm::Type* float_type = to == DType::Float64 ? b_.getDoubleTy() : b_.getFloatTy();
  if (from_float && to_float) {
    llvm::Value* x = as_float(v, from);
    x = b_.CreateFPCast(x, float_type);
    return ir::is_reduced_float(to) ? from_float32(x, to) : x;
  }
  if (from_float) {  // saturating (NaN -> 0) instead of LLVM's poison for out-of-range values
    llvm::Value* x = as_float(v, from);
    llvm::Value* i =
        b_.CreateIntrinsic(llvm::Intrinsic::fptosi_sat, {b_.getInt64Ty(), x->getType()}, {x});
    return b_.CreateTrunc(i, register_type(to));
  }
  if (to_float) {
    llvm::Value* x =
        is_unsigned(from) ? b_.CreateUIToFP(v, float_type) : b_.CreateSIToFP(v, float_type);
    return ir::is_reduced_float(to) ? from_float32(x, to) : x;
  }
  return b_.CreateIntCast(v, register_type(to), !is_unsigned(from));
}

// ---- memory -----------------------------------------------------------------------------------

llvm::Value* KernelEmitter::element_address(int param, llvm::Value* offset) {
  return b_.CreateGEP(memory_type(kernel_.params.at(param).dtype), buffers_.at(param), offset);
}

llvm::Value* KernelEmitter::from_memory(llvm::Value* raw, DType t) {
  return t == DType::Bool ? b_.CreateICmpNE(raw, b_.getInt8(0)) : raw;
}

llvm::Value* KernelEmitter::to_memory(llvm::Value* v, DType t) {
  return t == DType::Bool ? b_.CreateZExt(v, b_.getInt8Ty()) : v;
}

llvm::Value* KernelEmitter::load(const ir::ValueNode& n) {
  const int k = param_index(n.name);
  if (kernel_.params[k].dtype != n.dtype)
    unsupported("load of " + n.name + " with a different dtype");
  if (n.index.size() != 1) unsupported("load of " + n.name + " without one element offset");
  if (n.mask.is_const() && n.mask.value() == 0)
    return llvm::Constant::getNullValue(register_type(n.dtype));
  if (vec_.lanes > 1 && load_contiguous_chunk(n)) return scopes_.back().values.at({&n, vec_.lane});
  std::map<std::string, llvm::Value*> saved;
  for (size_t i = 0; i < n.operands.size(); ++i) {
    const std::string name = "%ind" + std::to_string(i);
    llvm::Value* ind = convert(value(n.operands[i]), n.operands[i]->dtype, DType::Int64);
    if (vars_.count(name)) saved[name] = vars_[name];
    vars_[name] = ind;
  }
  llvm::Value* guard = n.mask.is_const() ? nullptr : condition(n.mask);
  for (size_t i = 0; i < n.bounds.size() && i < n.operands.size(); ++i) {
    llvm::Value* ind = vars_.at("%ind" + std::to_string(i));
    llvm::Value* ok = b_.CreateAnd(b_.CreateICmpSGE(ind, b_.getInt64(0)),
                                   b_.CreateICmpSLT(ind, expr(n.bounds[i])));
    llvm::Value* bad = b_.CreateNot(ok);
    if (guard) bad = b_.CreateAnd(bad, guard);
    if_then(bad, [&] {
      b_.CreateAlignedStore(b_.getInt32(ir::kKernelIndexOutOfBounds), status_, llvm::Align(4));
    });
    guard = guard ? b_.CreateAnd(guard, ok) : ok;
  }
  llvm::Value* offset = expr(n.index[0]);
  llvm::Type* mt = memory_type(n.dtype);
  const llvm::Align align(ir::dtype_size(n.dtype));
  llvm::Value* result = nullptr;
  if (!guard) {
    llvm::Value* address = element_address(k, offset);
    llvm::Value* raw = read_once_load(n, mt, address, ir::dtype_size(n.dtype));
    if (!raw) raw = b_.CreateAlignedLoad(mt, address, align);
    result = from_memory(raw, n.dtype);
  } else {
    llvm::BasicBlock* before = b_.GetInsertBlock();
    llvm::BasicBlock* read = llvm::BasicBlock::Create(ctx_, "masked_load", function_);
    llvm::BasicBlock* after = llvm::BasicBlock::Create(ctx_, "masked_done", function_);
    b_.CreateCondBr(guard, read, after);
    b_.SetInsertPoint(read);
    llvm::Value* loaded = b_.CreateAlignedLoad(mt, element_address(k, offset), align);
    b_.CreateBr(after);
    b_.SetInsertPoint(after);
    llvm::PHINode* phi = b_.CreatePHI(mt, 2);
    phi->addIncoming(llvm::Constant::getNullValue(mt), before);
    phi->addIncoming(loaded, read);
    result = from_memory(phi, n.dtype);
  }
  for (size_t i = 0; i < n.operands.size(); ++i) vars_.erase("%ind" + std::to_string(i));
  for (const auto& [name, v] : saved) vars_[name] = v;
  return result;
}

int64_t KernelEmitter::vector_bytes(const ir::Expr& index, ir::DType t, bool plain) const {
  const int64_t bytes = int64_t{vec_.lanes} * ir::dtype_size(t);
  if (!plain || (bytes != 16 && bytes != 8 && bytes != 4)) return 0;
  if (vec_.within_runs) {  // column_lanes() checked that such chunks keep their alignment
    const std::optional<ir::ChunkStep> step = ir::chunk_step(index, vec_.var, vec_.lanes);
    return step && step->coefficient == 1 && step->steps_keep_alignment ? bytes : 0;
  }
  return ir::coefficient_of(index, vec_.var) == std::optional<int64_t>(1) ? bytes : 0;
}

llvm::Value* KernelEmitter::chunk_aligned(const ir::Stmt& loop, llvm::Value* base, int lanes) {
  const VectorChunk saved = vec_;
  vec_ = {loop.var, base, lanes, 0};
  llvm::Value* aligned = b_.getTrue();
  auto check = [&](const std::string& buffer, const ir::Expr& index, ir::DType t, bool plain) {
    const int64_t bytes = vector_bytes(index, t, plain);
    if (bytes == 0) return;
    llvm::Value* address = element_address(param_index(buffer), expr(index));
    llvm::Value* low_bits = b_.CreateAnd(b_.CreatePtrToInt(address, b_.getInt64Ty()), bytes - 1);
    aligned = b_.CreateAnd(aligned, b_.CreateICmpEQ(low_bits, b_.getInt64(0)));
  };
  for (const ir::Stmt& s : loop.body) {
    if (s.kind == ir::StmtKind::Store)
      check(s.buffer, s.index, kernel_.params[param_index(s.buffer)].dtype, true);
    if (!s.value) continue;
    for (const ir::Value& l : ir::loads_in(s.value)) {
      check(l->name, l->index.at(0), l->dtype, l->operands.empty() && l->mask.is_const());
    }
  }
  vec_ = saved;
  return aligned;
}

bool KernelEmitter::load_contiguous_chunk(const ir::ValueNode& n) {
  const int64_t bytes = vector_bytes(n.index[0], n.dtype, n.operands.empty() && n.mask.is_const());
  if (bytes == 0) return false;
  if (cached_row_chunk(n)) return true;
  // chunk_aligned() checked this access: the whole chunk is one aligned vector.
  const int lane = vec_.lane;
  vec_.lane = 0;
  llvm::Value* address = element_address(param_index(n.name), expr(n.index[0]));
  vec_.lane = lane;
  llvm::Type* vector_type = llvm::FixedVectorType::get(memory_type(n.dtype), vec_.lanes);
  llvm::Value* packed = row_load_with_policy(n, vector_type, address, bytes);
  if (!packed) packed = read_once_load(n, vector_type, address, bytes);
  if (!packed) packed = b_.CreateAlignedLoad(vector_type, address, llvm::Align(bytes));
  for (int l = 0; l < vec_.lanes; ++l) {
    scopes_.back().values[{&n, l}] = from_memory(b_.CreateExtractElement(packed, l), n.dtype);
  }
  remember_row_chunk(n);
  return true;
}

void KernelEmitter::store(const ir::Stmt& s) {
  const int k = param_index(s.buffer);
  const DType t = kernel_.params[k].dtype;
  llvm::Type* mt = memory_type(t);
  // Where the store happens: one thread of a group, and only for real rows.
  llvm::Value* guard = row_active_;
  if (in_group_context_ && group_threads_ > 1) {
    guard = b_.CreateAnd(guard, b_.CreateICmpEQ(thread_in_group_, b_.getInt64(0)));
  }
  const llvm::Align align(ir::dtype_size(t));
  if (vec_.lanes <= 1) {
    llvm::Value* v = to_memory(convert(value(s.value), s.value->dtype, t), t);
    llvm::Value* address = element_address(k, expr(s.index));
    return if_then(guard, [&] { b_.CreateAlignedStore(v, address, align); });
  }
  std::vector<llvm::Value*> lanes, addresses;
  for (vec_.lane = 0; vec_.lane < vec_.lanes; ++vec_.lane) {
    lanes.push_back(to_memory(convert(value(s.value), s.value->dtype, t), t));
    addresses.push_back(element_address(k, expr(s.index)));
  }
  vec_.lane = 0;
  const int64_t bytes = vector_bytes(s.index, t, true);
  if_then(guard, [&] {
    if (bytes == 0) {
      for (size_t l = 0; l < lanes.size(); ++l)
        b_.CreateAlignedStore(lanes[l], addresses[l], align);
      return;
    }
    // chunk_aligned() checked this access: one aligned vector store.
    llvm::Value* packed = llvm::UndefValue::get(llvm::FixedVectorType::get(mt, vec_.lanes));
    for (size_t l = 0; l < lanes.size(); ++l) packed = b_.CreateInsertElement(packed, lanes[l], l);
    b_.CreateAlignedStore(packed, addresses[0], llvm::Align(bytes));
  });
}

}  // namespace inductor_cpp::codegen::nvptx_detail
