/// \file gemv.h
/// \brief The matrix-vector form of a one-row GEMM whose B is a transposed row-major matrix
/// (nn.Linear's weight W [N, K], y = x · Wᵀ): each output is a dot product along a contiguous
/// row of W, so W streams from memory once, four rows at a time, with no packing.
///
/// Why: a one-row GEMM is bound by reading B. The tile kernels need B packed into panels (a
/// second copy of W, as large as W, made on first use and kept by the packed-weight cache) or
/// read Bᵀ down its columns; the dot-product form reads W in place at full width and its result
/// does not depend on the thread count (each output is one thread's dot product, summed in a
/// fixed order: 32 lanes over K, then a fixed tree).
#pragma once

#include "runtime/matrix/gemm.h"

namespace inductor_cpp::matrix {

/// Whether gemv_f32 computes p: one row (m = 1), B transposed (W = Bᵀ row-major, ldb ≥ k) and
/// A's row contiguous.
bool gemv_applies(const GemmProblem& p);

/// C (1 × n) = epilogue(alpha · A · B [+ C]) for a problem where gemv_applies, on up to
/// num_threads threads (each a contiguous range of outputs; small problems on the caller).
void gemv_f32(const GemmProblem& p, int num_threads);

}  // namespace inductor_cpp::matrix
