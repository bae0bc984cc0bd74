/// \file
/// Running a bfloat16 "mm" / "addmm" library call (runtime/plan.h GemmCall) on the AMX GEMM
/// (matrix/gemm_bf16.h): the plan routes a 2-D bf16 matmul here only with the
/// "freezing" option on a CPU whose AMX tiles are usable (inductor/lower/library_calls.cpp). There our
/// kernels on a B kept packed beat ATen's (oneDNN's) bf16 GEMM; with the per-call content
/// check of the packed copy that non-frozen weights need, they do not (one more pass over
/// every weight per call, at memory speed, where AMX makes the product itself short).
///
/// What runs: A (bf16) times B (bf16, kept packed in VNNI panels across calls by the same
/// packed-weight cache as float32: storage, layout, version counter, and the content
/// fingerprint unless frozen, runtime/matmul_step.h), summed in fp32; addmm's bias (column, row or
/// full) added in fp32; rounded once to bf16 (round to nearest even) into the output. Eager's
/// oneDNN call does the same up to summation order. Nothing after the product is absorbed: a bf16
/// graph's pointwise kernels stay kernels.
///
/// A call whose B is not cached (its first call, or a B that changes every call: an
/// activation) runs ATen's mm / addmm instead: packing B for one use costs more than oneDNN's
/// whole product on the shapes measured. So does a call of more than kBf16AmxMaxRows rows
/// (gemm_bf16.h; with dynamic rows, where the plan could not tell): oneDNN is the faster there
/// (docs/decisions/019-bf16-on-amx-only-frozen-and-up-to-256-rows.md).
#pragma once

#include <ATen/core/ivalue.h>

#include <memory>
#include <string>
#include <vector>

#include "matrix/matrix.h"
#include "runtime/bound_step.h"
#include "runtime/matmul_step.h"
#include "runtime/plan.h"

namespace inductor_cpp::runtime {

/// A bound bf16 mm / addmm step. Thread-safe (the packed-weight cache has its own mutex).
class MatmulBf16Step final : public BoundStep {
 public:
  /// `op`: "mm" or "addmm"; `frozen_weights`: trust the version counter alone (the
  /// "freezing" option).
  MatmulBf16Step(const std::string& op, GemmCall call, std::string label, bool frozen_weights);

  void run(RunContext& ctx) const override;

 private:
  GemmCall call_;
  std::shared_ptr<PackedWeightCache<matrix::PackedBBf16>> packed_b_;
};

}  // namespace inductor_cpp::runtime
