/// \file
/// Binding a matrix step's "kernel" epilogue op (runtime/plan.h; ir/passes/tile_epilogue.h) for
/// one call: the generated tile kernel's buffer pointers (the step's output for its own slot,
/// which stands for both the matrix output the kernel reads and the buffer it writes; every
/// other operand in the layout the kernel assumes, copied when it is not), and the status the
/// library keeps when the kernel reports an index out of bounds. Shared by mm / addmm
/// (gemm_step.cpp) and convolutions (conv_step.cpp).
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

#include <string>
#include <vector>

#include "runtime/loader/kernel_library.h"
#include "matrix/matrix.h"
#include "runtime/plan.h"

namespace inductor_cpp::runtime {

/// One call's binding; stays where it is built (the library points into it).
struct TileKernelCall {
  std::vector<char*> bufs;
  std::vector<at::Tensor> keep;  ///< operands copied into the kernel's layout
  matrix::TileKernel tile;

  TileKernelCall() = default;
  TileKernelCall(const TileKernelCall&) = delete;
  TileKernelCall& operator=(const TileKernelCall&) = delete;

  /// Binds op `e` (kind "kernel") of a step whose output `out` lives in slot `out_slot`, and
  /// returns the library's op for it. Throws (naming `label`) on operands of other sizes.
  matrix::EpilogueOp bind(KernelFn fn, const MatmulEpilogue& e, int32_t out_slot, const at::Tensor& out,
                          const std::vector<c10::IValue>& slots, const std::string& label);

  /// Raises IndexError (naming `label`) when a call of the kernel reported an index out of
  /// bounds.
  void check(const std::string& label) const;
};

}  // namespace inductor_cpp::runtime
