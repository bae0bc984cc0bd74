/// \file
/// Running a float32 "mm" / "addmm" / "bmm" library call (runtime/plan.h GemmCall) on our
/// GEMM (matrix/gemm.h). The operands' strides are read per call: a plain or transposed matrix
/// is read as it is, anything else is made contiguous first. The epilogue (bias, activations,
/// residual, scale, a generated tile kernel) runs on each finished output block. B is kept
/// packed across calls while it does not change (runtime/matmul_step.h), except where reading
/// it in place beats a packed copy and its per-call fingerprint (matrix::in_place_beats_packed_copy).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "matrix/matrix.h"
#include "runtime/bound_step.h"
#include "runtime/loader/kernel_library.h"
#include "runtime/matmul_step.h"
#include "runtime/plan.h"

namespace inductor_cpp::runtime {

/// A bound float32 GEMM step. Thread-safe (the packed-weight cache has its own mutex).
class GemmStep final : public BoundStep {
 public:
  /// Checks the call: a float32 CPU output, row-major of the op's rank (or the dense tensor
  /// an absorbed reshape gives an mm / addmm). `kinds` are its epilogue's kinds, `tile_fn` the
  /// function of a last "kernel" op, if any; `frozen_weights`: trust B's version counter alone.
  GemmStep(std::string op, GemmCall call, std::vector<matrix::EpilogueKind> kinds, std::string label,
           KernelFn tile_fn, bool frozen_weights);

  /// Allocates the output, reads the operands' strides, runs the GEMM with its epilogue.
  void run(RunContext& ctx) const override;

  WeightCacheCounts weight_cache_counts() const override {
    return {packed_b_->packs(), packed_b_->adopted(), packed_b_->stale_drops()};
  }

 private:
  bool batched_ = false;  ///< "bmm"
  GemmCall call_;
  std::vector<matrix::EpilogueKind> kinds_;
  KernelFn tile_fn_ = nullptr;
  std::shared_ptr<PackedBCache> packed_b_;
};

}  // namespace inductor_cpp::runtime
