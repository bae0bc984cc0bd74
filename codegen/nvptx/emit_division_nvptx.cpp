/// \file
/// float32 division on the GPU, by cost and accuracy (docs/codegen/nvptx.md "Division"):
///   * a divisor that does not change inside the innermost loop being emitted (constants,
///     accumulators read after their loop, lets from outside the loop: softmax's `exp(..) / sum`)
///     becomes one multiplication by its reciprocal per element; the reciprocal (IEEE, then
///     hoisted out of the loop by LLVM) is taken of the divisor scaled by 2^+-64 when the
///     divisor is outside [2^-100, 2^100], so it never overflows or goes subnormal, and the
///     product is scaled back: <= 1.5 ulp, fewer than div.full's 2;
///   * any other divisor: `div.full.f32` (<= 2 ulp over the full range: what Triton and nvcc
///     -prec-div=false emit) instead of IEEE `div.rn.f32` (reciprocal, Newton steps, range
///     check and slow path per element). float64 stays IEEE.
#include <llvm/IR/Constants.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/Intrinsics.h>

#include <algorithm>
#include <cmath>

#include "codegen/nvptx/nvptx_internal.h"

namespace inductor_cpp::codegen::nvptx_detail {

using ir::DType;

namespace {

bool accumulates(const std::vector<ir::Stmt>& body, const std::string& name) {
  return std::any_of(body.begin(), body.end(), [&](const ir::Stmt& s) {
    return (s.kind == ir::StmtKind::Accumulate && s.name == name) || accumulates(s.body, name);
  });
}

}  // namespace

llvm::Value* KernelEmitter::fast_divide(llvm::Value* a, llvm::Value* b, DType t) {
  if (t != DType::Float32) return b_.CreateFDiv(a, b);
  // A power-of-two divisor: LLVM turns the division into an exact multiplication.
  if (auto* c = llvm::dyn_cast<llvm::ConstantFP>(b)) {
    int exponent = 0;
    const double v = c->getValueAPF().convertToFloat();
    if (std::isfinite(v) && v != 0 && std::frexp(v, &exponent) == 0.5 && exponent > -125 &&
        exponent < 127) {
      return b_.CreateFDiv(a, b);
    }
  }
  llvm::Type* f32 = b_.getFloatTy();
  llvm::InlineAsm* div_full =
      llvm::InlineAsm::get(llvm::FunctionType::get(f32, {f32, f32}, false),
                           "div.full.f32 $0, $1, $2;", "=f,f,f", /*hasSideEffects=*/false);
  llvm::CallInst* call = b_.CreateCall(div_full, {a, b});
  call->setDoesNotAccessMemory();  // a pure function of its operands: CSE and LICM may move it
  call->setDoesNotThrow();
  return call;
}

llvm::Value* KernelEmitter::divide_by_invariant(llvm::Value* a, llvm::Value* b) {
  llvm::Type* f32 = b_.getFloatTy();
  auto c = [&](double v) { return llvm::ConstantFP::get(f32, v); };
  llvm::Value* magnitude = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, b);
  // NaN compares false both ways: scale 1, and the NaN propagates through the reciprocal.
  llvm::Value* small = b_.CreateFCmpOLT(magnitude, c(std::ldexp(1.0, -100)));
  llvm::Value* large = b_.CreateFCmpOGT(magnitude, c(std::ldexp(1.0, 100)));
  llvm::Value* scale = b_.CreateSelect(small, c(std::ldexp(1.0, 64)),
                                       b_.CreateSelect(large, c(std::ldexp(1.0, -64)), c(1.0)));
  llvm::Value* reciprocal = b_.CreateFDiv(c(1.0), b_.CreateFMul(b, scale));
  return b_.CreateFMul(b_.CreateFMul(a, reciprocal), scale);
}

bool KernelEmitter::invariant_in_loop(const ir::Value& v) const {
  if (loops_.empty() || !v) return false;
  const ir::ValueNode& n = *v;
  switch (n.kind) {
    case ir::ValueKind::Constant:
      return true;
    case ir::ValueKind::Local: {
      for (size_t i = scopes_.size(); i-- > 0;) {
        if (scopes_[i].lets.count(n.name)) return i < loops_.back().first_scope;
      }
      // An accumulator: its final value, unless the loop itself feeds it.
      return accumulators_.count(accumulator_key(n.name)) &&
             !accumulates(loops_.back().loop->body, n.name);
    }
    case ir::ValueKind::Unary:
    case ir::ValueKind::Binary:
    case ir::ValueKind::Cast:
    case ir::ValueKind::Where:
      return std::all_of(n.operands.begin(), n.operands.end(),
                         [&](const ir::Value& o) { return invariant_in_loop(o); });
    default:  // loads (LLVM could not hoist them past the loop's stores), index values
      return false;
  }
}

}  // namespace inductor_cpp::codegen::nvptx_detail
