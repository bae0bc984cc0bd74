/// \file
/// Unary and binary math of the NVPTX emitter: LLVM instructions for the arithmetic, libdevice
/// (`__nv_<name>f` for float32, `__nv_<name>` for float64) for everything transcendental, so
/// the results match CUDA's own math library. Operands arrive in their compute type (float16
/// and bfloat16 already widened to float32). float32 division (also in reciprocal and sigmoid):
/// emit_division_nvptx.cpp; float32 erf, tanh and sigmoid's reciprocal: emit_special_nvptx.cpp
/// (libdevice's algorithms in fewer instructions).
#include <llvm/IR/Constants.h>
#include <llvm/IR/Intrinsics.h>

#include <limits>
#include <map>

#include "codegen/nvptx/nvptx_internal.h"

namespace inductor_cpp::codegen::nvptx_detail {

using ir::BinaryOp;
using ir::DType;
using ir::UnaryOp;

namespace {

/// Unary ops that are one libdevice call of the same arity.
const std::map<UnaryOp, const char*>& libdevice_unary() {
  static const std::map<UnaryOp, const char*> table = {
      {UnaryOp::sqrt, "sqrt"},     {UnaryOp::rsqrt, "rsqrt"}, {UnaryOp::exp, "exp"},
      {UnaryOp::exp2, "exp2"},     {UnaryOp::expm1, "expm1"}, {UnaryOp::log, "log"},
      {UnaryOp::log2, "log2"},     {UnaryOp::log10, "log10"}, {UnaryOp::log1p, "log1p"},
      {UnaryOp::sin, "sin"},       {UnaryOp::cos, "cos"},     {UnaryOp::tan, "tan"},
      {UnaryOp::asin, "asin"},     {UnaryOp::acos, "acos"},   {UnaryOp::atan, "atan"},
      {UnaryOp::sinh, "sinh"},     {UnaryOp::cosh, "cosh"},   {UnaryOp::tanh, "tanh"},
      {UnaryOp::asinh, "asinh"},   {UnaryOp::acosh, "acosh"}, {UnaryOp::atanh, "atanh"},
      {UnaryOp::erf, "erf"},       {UnaryOp::erfc, "erfc"},   {UnaryOp::erfinv, "erfinv"},
      {UnaryOp::lgamma, "lgamma"}, {UnaryOp::floor, "floor"}, {UnaryOp::ceil, "ceil"},
      {UnaryOp::trunc, "trunc"},   {UnaryOp::abs, "fabs"},
      // round: not libdevice's __nv_rint(f), whose llvm.nvvm.round.* LLVM 16 upgrades to
      // llvm.round (half away from zero: -2.5 -> -3); see unary_math.
  };
  return table;
}

const std::map<BinaryOp, const char*>& libdevice_binary() {
  static const std::map<BinaryOp, const char*> table = {
      {BinaryOp::pow, "pow"},
      {BinaryOp::fmod, "fmod"},
      {BinaryOp::atan2, "atan2"},
      {BinaryOp::hypot, "hypot"},
      {BinaryOp::nextafter, "nextafter"},
      {BinaryOp::copysign, "copysign"},
      {BinaryOp::fmax, "fmax"},
      {BinaryOp::fmin, "fmin"},
  };
  return table;
}

bool is_unsigned(DType t) {
  return t == DType::UInt8 || t == DType::Bool;
}

}  // namespace

llvm::Value* KernelEmitter::libdevice(const std::string& name, DType t,
                                      std::vector<llvm::Value*> args) {
  llvm::Type* ft = t == DType::Float64 ? b_.getDoubleTy() : b_.getFloatTy();
  const std::string symbol = "__nv_" + name + (t == DType::Float64 ? "" : "f");
  std::vector<llvm::Type*> params(args.size(), ft);
  llvm::FunctionCallee f =
      module_.getOrInsertFunction(symbol, llvm::FunctionType::get(ft, params, false));
  return b_.CreateCall(f, args);
}

llvm::Value* KernelEmitter::maximum(llvm::Value* a, llvm::Value* b, DType t, bool is_max) {
  if (t == DType::Bool) return is_max ? b_.CreateOr(a, b) : b_.CreateAnd(a, b);
  if (!ir::is_floating(t)) {
    llvm::Value* a_wins = is_max
                              ? (is_unsigned(t) ? b_.CreateICmpUGT(a, b) : b_.CreateICmpSGT(a, b))
                              : (is_unsigned(t) ? b_.CreateICmpULT(a, b) : b_.CreateICmpSLT(a, b));
    return b_.CreateSelect(a_wins, a, b);
  }
  // NaN-propagating: a NaN operand wins.
  llvm::Value* a_wins = is_max ? b_.CreateFCmpOGT(a, b) : b_.CreateFCmpOLT(a, b);
  llvm::Value* r = b_.CreateSelect(b_.CreateOr(a_wins, b_.CreateFCmpUNO(a, a)), a, b);
  return r;
}

llvm::Value* KernelEmitter::unary_math(UnaryOp op, llvm::Value* x, DType t) {
  const bool is_float = ir::is_floating(t);
  llvm::Type* type = x->getType();
  auto fconst = [&](double v) { return llvm::ConstantFP::get(type, v); };
  auto iconst = [&](int64_t v) {
    return llvm::ConstantInt::get(type, static_cast<uint64_t>(v), true);
  };
  switch (op) {
    case UnaryOp::neg:
      if (t == DType::Bool) break;
      return is_float ? b_.CreateFNeg(x) : b_.CreateSub(iconst(0), x);
    case UnaryOp::abs:
      if (is_float) break;  // libdevice fabs below
      if (is_unsigned(t)) return x;
      return b_.CreateSelect(b_.CreateICmpSLT(x, iconst(0)), b_.CreateSub(iconst(0), x), x);
    case UnaryOp::reciprocal:
      if (!is_float) break;
      return fast_divide(fconst(1.0), x, t);
    case UnaryOp::sigmoid: {
      if (!is_float) break;
      llvm::Value* d = b_.CreateFAdd(fconst(1.0), libdevice("exp", t, {b_.CreateFNeg(x)}));
      return t == DType::Float32 ? reciprocal_of_at_least_one(d) : fast_divide(fconst(1.0), d, t);
    }
    case UnaryOp::erf:
      if (t != DType::Float32) break;  // libdevice
      return erf_f32(x);
    case UnaryOp::tanh:
      if (t != DType::Float32) break;
      return tanh_f32(x);
    case UnaryOp::sign: {
      if (t == DType::Bool) return x;
      if (is_float) {  // NaN and +-0 return themselves
        llvm::Value* negative = b_.CreateSelect(b_.CreateFCmpOLT(x, fconst(0)), fconst(-1.0), x);
        return b_.CreateSelect(b_.CreateFCmpOGT(x, fconst(0)), fconst(1.0), negative);
      }
      llvm::Value* pos = b_.CreateZExt(
          is_unsigned(t) ? b_.CreateICmpUGT(x, iconst(0)) : b_.CreateICmpSGT(x, iconst(0)), type);
      llvm::Value* neg =
          b_.CreateZExt(is_unsigned(t) ? b_.getFalse() : b_.CreateICmpSLT(x, iconst(0)), type);
      return b_.CreateSub(pos, neg);
    }
    case UnaryOp::signbit:
      if (is_float) {
        llvm::Type* it = t == DType::Float64 ? b_.getInt64Ty() : b_.getInt32Ty();
        return b_.CreateICmpSLT(b_.CreateBitCast(x, it), llvm::ConstantInt::get(it, 0));
      }
      return is_unsigned(t) ? b_.getFalse() : b_.CreateICmpSLT(x, iconst(0));
    case UnaryOp::logical_not:
      if (t == DType::Bool) return b_.CreateNot(x);
      return is_float ? b_.CreateFCmpOEQ(x, fconst(0)) : b_.CreateICmpEQ(x, iconst(0));
    case UnaryOp::bitwise_not:
      if (is_float) break;
      return b_.CreateNot(x);
    case UnaryOp::isnan:
      return is_float ? b_.CreateFCmpUNO(x, x) : b_.getFalse();
    case UnaryOp::isinf:
      if (!is_float) return b_.getFalse();
      return b_.CreateFCmpOEQ(libdevice("fabs", t, {x}),
                              fconst(std::numeric_limits<double>::infinity()));
    case UnaryOp::round:
      if (!is_float) return x;
      // Half to even, as torch.round: llvm.roundeven is cvt.rni on NVPTX.
      return b_.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, x);
    case UnaryOp::floor:
    case UnaryOp::ceil:
    case UnaryOp::trunc:
      if (!is_float) return x;  // integers are already whole
      break;
    default:
      break;
  }
  auto it = libdevice_unary().find(op);
  if (is_float && it != libdevice_unary().end()) return libdevice(it->second, t, {x});
  unsupported(std::string("unary ") + ir::unary_op_name(op) + " on " + ir::dtype_name(t));
}

llvm::Value* KernelEmitter::binary_math(BinaryOp op, llvm::Value* a, llvm::Value* b, DType t) {
  const bool is_float = ir::is_floating(t), is_bool = t == DType::Bool, is_u = is_unsigned(t);
  llvm::Type* type = a->getType();
  auto zero = [&] { return llvm::Constant::getNullValue(type); };
  auto truth = [&](llvm::Value* v) {
    if (is_bool) return v;
    return is_float ? b_.CreateFCmpUNE(v, zero()) : b_.CreateICmpNE(v, zero());
  };
  switch (op) {
    case BinaryOp::add:
      if (is_bool) return b_.CreateOr(a, b);
      return is_float ? b_.CreateFAdd(a, b) : b_.CreateAdd(a, b);
    case BinaryOp::sub:
      if (is_bool) break;
      return is_float ? b_.CreateFSub(a, b) : b_.CreateSub(a, b);
    case BinaryOp::mul:
      if (is_bool) return b_.CreateAnd(a, b);
      return is_float ? b_.CreateFMul(a, b) : b_.CreateMul(a, b);
    case BinaryOp::div:
      if (!is_float) break;
      return fast_divide(a, b, t);
    case BinaryOp::truncdiv:
      if (is_float) return libdevice("trunc", t, {b_.CreateFDiv(a, b)});
      if (is_bool) break;
      return is_u ? b_.CreateUDiv(a, b) : b_.CreateSDiv(a, b);
    case BinaryOp::floordiv: {
      if (is_float) return libdevice("floor", t, {b_.CreateFDiv(a, b)});
      if (is_bool) break;
      if (is_u) return b_.CreateUDiv(a, b);
      llvm::Value* q = b_.CreateSDiv(a, b);
      llvm::Value* r = b_.CreateSRem(a, b);
      llvm::Value* fix =
          b_.CreateAnd(b_.CreateICmpNE(r, zero()),
                       b_.CreateICmpNE(b_.CreateICmpSLT(r, zero()), b_.CreateICmpSLT(b, zero())));
      return b_.CreateSub(q, b_.CreateZExt(fix, type));
    }
    case BinaryOp::remainder: {
      if (is_bool) break;
      if (is_u) return b_.CreateURem(a, b);
      llvm::Value* r = is_float ? libdevice("fmod", t, {a, b}) : b_.CreateSRem(a, b);
      llvm::Value* r_neg = is_float ? b_.CreateFCmpOLT(r, zero()) : b_.CreateICmpSLT(r, zero());
      llvm::Value* b_neg = is_float ? b_.CreateFCmpOLT(b, zero()) : b_.CreateICmpSLT(b, zero());
      llvm::Value* nonzero = is_float ? b_.CreateFCmpUNE(r, zero()) : b_.CreateICmpNE(r, zero());
      llvm::Value* fix = b_.CreateAnd(nonzero, b_.CreateICmpNE(r_neg, b_neg));
      return b_.CreateSelect(fix, is_float ? b_.CreateFAdd(r, b) : b_.CreateAdd(r, b), r);
    }
    case BinaryOp::fmod:
      if (is_float) break;  // libdevice
      if (is_bool) break;
      return is_u ? b_.CreateURem(a, b) : b_.CreateSRem(a, b);
    case BinaryOp::maximum:
    case BinaryOp::minimum:
      return maximum(a, b, t, op == BinaryOp::maximum);
    case BinaryOp::fmax:
    case BinaryOp::fmin:
      if (is_float) break;  // libdevice
      return maximum(a, b, t, op == BinaryOp::fmax);
    case BinaryOp::eq:
      return is_float ? b_.CreateFCmpOEQ(a, b) : b_.CreateICmpEQ(a, b);
    case BinaryOp::ne:
      return is_float ? b_.CreateFCmpUNE(a, b) : b_.CreateICmpNE(a, b);
    case BinaryOp::lt:
      return is_float ? b_.CreateFCmpOLT(a, b)
                      : (is_u ? b_.CreateICmpULT(a, b) : b_.CreateICmpSLT(a, b));
    case BinaryOp::le:
      return is_float ? b_.CreateFCmpOLE(a, b)
                      : (is_u ? b_.CreateICmpULE(a, b) : b_.CreateICmpSLE(a, b));
    case BinaryOp::gt:
      return is_float ? b_.CreateFCmpOGT(a, b)
                      : (is_u ? b_.CreateICmpUGT(a, b) : b_.CreateICmpSGT(a, b));
    case BinaryOp::ge:
      return is_float ? b_.CreateFCmpOGE(a, b)
                      : (is_u ? b_.CreateICmpUGE(a, b) : b_.CreateICmpSGE(a, b));
    case BinaryOp::logical_and:
      return b_.CreateAnd(truth(a), truth(b));
    case BinaryOp::logical_or:
      return b_.CreateOr(truth(a), truth(b));
    case BinaryOp::logical_xor:
      return b_.CreateXor(truth(a), truth(b));
    case BinaryOp::bitwise_and:
      if (is_float) break;
      return b_.CreateAnd(a, b);
    case BinaryOp::bitwise_or:
      if (is_float) break;
      return b_.CreateOr(a, b);
    case BinaryOp::bitwise_xor:
      if (is_float) break;
      return b_.CreateXor(a, b);
    case BinaryOp::lshift:
      if (is_float || is_bool) break;
      return b_.CreateShl(a, b);
    case BinaryOp::rshift:
      if (is_float || is_bool) break;
      return is_u ? b_.CreateLShr(a, b) : b_.CreateAShr(a, b);
    default:
      break;
  }
  auto it = libdevice_binary().find(op);
  if (is_float && it != libdevice_binary().end()) return libdevice(it->second, t, {a, b});
  unsupported(std::string("binary ") + ir::binary_op_name(op) + " on " + ir::dtype_name(t));
}

}  // namespace inductor_cpp::codegen::nvptx_detail
