/// \file epilogue.h
/// \brief Private to matrix: splitting an epilogue between the JIT kernel and the C++
/// pass, and the C++ pass itself (vectorized AVX-512 when available, scalar otherwise).
#pragma once

#include <cstddef>
#include <vector>

#include "matrix/jit/microkernel.h"
#include "matrix/gemm.h"

namespace inductor_cpp::matrix {

/// Number of leading ops the JIT kernel applies (everything before the first GELU, SiLU,
/// sigmoid or tanh).
size_t jit_epilogue_prefix(const std::vector<EpilogueOp>& ops);

/// The kernel-descriptor form of ops[0, count).
std::vector<xbyak::KernelEpilogueOp> kernel_epilogue(const std::vector<EpilogueOp>& ops,
                                                     size_t count);

/// Applies ops[first, ops.size()) to the rows × cols tile at c (leading dimension ldc) whose
/// top-left element is C(row0, col0); bias/residual data are indexed by absolute row/column.
/// A last Tile op is called once on the whole tile after the others, unless `tile_kernel` is
/// false (the caller calls apply_tile_kernel on a larger block).
void apply_epilogue_tile(float* c, int64_t ldc, int64_t rows, int64_t cols, int64_t row0,
                         int64_t col0, const std::vector<EpilogueOp>& ops, size_t first,
                         bool tile_kernel = true);

/// Calls the generated tile kernel of a last Tile op, if any, on rows × cols of C from
/// (row0, col0) (absolute), whose other ops are already applied; keeps a nonzero status.
void apply_tile_kernel(const std::vector<EpilogueOp>& ops, int64_t row0, int64_t rows,
                       int64_t col0, int64_t cols);

/// Reference scalar op, also used for the tails of the vector pass and by the tests. (A
/// ScaleCol followed by a BiasCol is one FMA in the kernels and the pass: see
/// apply_epilogue_scalar_list.)
float apply_epilogue_scalar(const EpilogueOp& op, float x, int64_t row, int64_t col);

/// ops[first, ops.size()) applied to x at (row, col) as the kernels apply them (a ScaleCol
/// directly followed by a BiasCol is one fused multiply-add).
float apply_epilogue_scalar_list(const std::vector<EpilogueOp>& ops, size_t first, float x,
                                 int64_t row, int64_t col);

/// True for ops that read `data` (BiasRow, BiasCol, ScaleCol, AddResidual, MulResidual).
bool epilogue_needs_data(EpilogueKind kind);

/// The data pointer a micro-kernel gets for op on the tile whose top-left element is C(row, col)
/// (bias/scale/residual offset to the tile; nullptr for ops without data).
const float* epilogue_tile_data(const EpilogueOp& op, int64_t row, int64_t col);

}  // namespace inductor_cpp::matrix
