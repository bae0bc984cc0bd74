/// \file
/// float32 erf, tanh and sigmoid with libdevice's own algorithms and constants (CUDA 12/13
/// `__nv_erff`, `__nv_tanhf`; results bit for bit the same), written so that they cost fewer
/// instructions per element in the pointwise kernels that are bound by instruction issue (the
/// GPU benchmark's gelu(x)·sigmoid(x) − tanh(x) chain):
///   * erf: libdevice picks one of two polynomials by |x| >= 1.00296 through a select on each
///     of its 7 coefficients, which ptxas emits as a move plus a predicated move per
///     coefficient (14 instructions); both polynomials with immediate coefficients and one
///     select of the results take about 10 fewer per element.
///   * the sign of x on erf's and tanh's non-negative tails as one bitwise and/or (one LOP3)
///     instead of LLVM 16's copysign (shift, compare and select).
///   * sigmoid's 1 / (1 + exp(-x)): the denominator is >= 1 or NaN, so `div.full.f32`'s
///     subnormal scaling never applies: rcp.approx of it, scaled by 1/4 above 2^126 as
///     div.full does (the same result, <= 2 ulp): 4 instructions instead of 8.
/// libdevice's exp stays (sigmoid's exp(-x)).
#include <llvm/IR/Constants.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include <array>
#include <cstdint>
#include <cstring>

#include "codegen/nvptx/nvptx_internal.h"

namespace inductor_cpp::codegen::nvptx_detail {

namespace {

/// A float32 constant from its bit pattern (as libdevice's IR spells them).
llvm::Constant* f32_bits(llvm::LLVMContext& ctx, uint32_t bits) {
  float v = 0;
  std::memcpy(&v, &bits, sizeof v);
  return llvm::ConstantFP::get(llvm::Type::getFloatTy(ctx), v);
}

// __nv_erff: |x| >= kErfLarge uses the polynomial in |x| (then erf = 1 - 2^p, sign of x),
// else the one in x^2 (erf = x + x p). Coefficients from the highest degree down.
constexpr uint32_t kErfLarge = 0x3f8060fe;  // 1.00295997
constexpr std::array<uint32_t, 7> kErfLargeCoefficients = {
    0x38eb4c3a, 0xbaae005b, 0x3c09919f, 0xbd24d99a, 0x3e235519, 0x3f69b4f9, 0x3f210a14};
constexpr std::array<uint32_t, 7> kErfSmallCoefficients = {
    0x38b1e96a, 0xba574d20, 0x3baad5ea, 0xbcdc1be7, 0x3de718af, 0xbec093ac, 0x3e0375d3};

// __nv_tanhf: |x| >= kTanhLarge: 1 - 2 / (2^(|x| 2/ln 2) + 1) (1 from kTanhOne on), sign of x;
// else x + x^3 p(x^2).
constexpr uint32_t kTanhLarge = 0x3f19999a;   // 0.6
constexpr uint32_t kTanhOne = 0x41102cb4;     // 9.01091
constexpr uint32_t kTwoOverLn2 = 0x4038aa3b;  // 2.88539
constexpr std::array<uint32_t, 4> kTanhCoefficients = {0x3c80f082, 0xbd563cae, 0x3e085941,
                                                       0xbeaaa9ed};

}  // namespace

llvm::Value* KernelEmitter::with_sign_of(llvm::Value* magnitude, llvm::Value* sign) {
  llvm::Type* i32 = b_.getInt32Ty();
  llvm::Value* s = b_.CreateAnd(b_.CreateBitCast(sign, i32), 0x80000000u);
  return b_.CreateBitCast(b_.CreateOr(b_.CreateBitCast(magnitude, i32), s), b_.getFloatTy());
}

llvm::Value* KernelEmitter::horner(const uint32_t* coefficients, size_t count, llvm::Value* y) {
  llvm::Value* p = f32_bits(ctx_, coefficients[0]);
  for (size_t i = 1; i < count; ++i) {
    p = b_.CreateIntrinsic(llvm::Intrinsic::fma, {b_.getFloatTy()},
                           {p, y, f32_bits(ctx_, coefficients[i])});
  }
  return p;
}

llvm::Value* KernelEmitter::erf_f32(llvm::Value* x) {
  llvm::IRBuilderBase::FastMathFlagGuard guard(b_);
  b_.clearFastMathFlags();  // libdevice's exact operations: no contraction
  auto fma = [&](llvm::Value* a, llvm::Value* b, llvm::Value* c) {
    return b_.CreateIntrinsic(llvm::Intrinsic::fma, {b_.getFloatTy()}, {a, b, c});
  };
  llvm::Value* t = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  llvm::Value* large = b_.CreateFCmpOGE(t, f32_bits(ctx_, kErfLarge));
  llvm::Value* x2 = b_.CreateFMul(x, x);
  llvm::Value* small_p = horner(kErfSmallCoefficients.data(), kErfSmallCoefficients.size(), x2);
  llvm::Value* small_r = fma(small_p, x, x);
  llvm::Value* large_p = horner(kErfLargeCoefficients.data(), kErfLargeCoefficients.size(), t);
  llvm::Value* minus_t = b_.CreateFNeg(t);
  llvm::Value* exponent = fma(large_p, minus_t, minus_t);
  llvm::Value* tail = b_.CreateIntrinsic(llvm::Intrinsic::nvvm_ex2_approx_ftz_f, {}, {exponent});
  // 1 - 2^exponent is in (0, 1]: the exponent is -|x| (1 + p), p > 0 (its constant term is
  // 0.629 and it grows with |x|).
  llvm::Value* large_r = with_sign_of(b_.CreateFSub(f32_bits(ctx_, 0x3f800000), tail), x);
  return b_.CreateSelect(large, large_r, small_r);
}

llvm::Value* KernelEmitter::tanh_f32(llvm::Value* x) {
  llvm::IRBuilderBase::FastMathFlagGuard guard(b_);
  b_.clearFastMathFlags();
  llvm::Type* f32 = b_.getFloatTy();
  auto one = f32_bits(ctx_, 0x3f800000);
  llvm::Value* t = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  llvm::Value* e = b_.CreateIntrinsic(llvm::Intrinsic::nvvm_ex2_approx_ftz_f, {},
                                      {b_.CreateFMul(t, f32_bits(ctx_, kTwoOverLn2))});
  llvm::InlineAsm* rcp = llvm::InlineAsm::get(llvm::FunctionType::get(f32, {f32}, false),
                                              "rcp.approx.ftz.f32 $0,$1;", "=f,f",
                                              /*hasSideEffects=*/false);
  llvm::CallInst* r = b_.CreateCall(rcp, {b_.CreateFAdd(one, e)});
  r->setDoesNotAccessMemory();
  r->setDoesNotThrow();
  llvm::Value* s =
      b_.CreateIntrinsic(llvm::Intrinsic::fma, {f32}, {r, llvm::ConstantFP::get(f32, -2.0), one});
  s = b_.CreateSelect(b_.CreateFCmpOGE(t, f32_bits(ctx_, kTanhOne)), one, s);
  // 1 - 2 / (1 + 2^(|x| 2/ln 2)) >= +0 (the denominator is >= 2), where it is selected.
  llvm::Value* large_r = with_sign_of(s, x);
  llvm::Value* x2 = b_.CreateFMul(x, x);
  llvm::Value* p = horner(kTanhCoefficients.data(), kTanhCoefficients.size(), x2);
  p = b_.CreateIntrinsic(llvm::Intrinsic::fma, {f32}, {p, x2, llvm::ConstantFP::get(f32, 0.0)});
  llvm::Value* small_r = b_.CreateIntrinsic(llvm::Intrinsic::fma, {f32}, {p, x, x});
  return b_.CreateSelect(b_.CreateFCmpOGE(t, f32_bits(ctx_, kTanhLarge)), large_r, small_r);
}

llvm::Value* KernelEmitter::reciprocal_of_at_least_one(llvm::Value* d) {
  llvm::Type* f32 = b_.getFloatTy();
  // div.full.f32(1, d) for d >= 1: rcp.approx of d, or of d / 4 then / 4 above 2^126 (where
  // the reciprocal is subnormal: rcp.approx.ftz would flush it). NaN stays NaN.
  llvm::Value* huge = b_.CreateFCmpOGT(d, llvm::ConstantFP::get(f32, 0x1p126));
  auto quarter = [&](llvm::Value* v) { return b_.CreateFMul(v, llvm::ConstantFP::get(f32, 0.25)); };
  llvm::InlineAsm* rcp = llvm::InlineAsm::get(llvm::FunctionType::get(f32, {f32}, false),
                                              "rcp.approx.ftz.f32 $0,$1;", "=f,f",
                                              /*hasSideEffects=*/false);
  llvm::CallInst* r = b_.CreateCall(rcp, {b_.CreateSelect(huge, quarter(d), d)});
  r->setDoesNotAccessMemory();
  r->setDoesNotThrow();
  return b_.CreateSelect(huge, quarter(r), r);
}

}  // namespace inductor_cpp::codegen::nvptx_detail
