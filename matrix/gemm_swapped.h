/// \file gemm_swapped.h
/// \brief Private to matrix: a product of a few dozen rows times a transposed B
/// (nn.Linear's x · Wᵀ on a batch of 17-128 rows, W not frozen) computed with the operands'
/// roles swapped, Cᵀ = W · op(A)ᵀ, then transposed into C with the epilogue.
///
/// Why: with few rows, reading W is the cost. The usual form needs W packed into column panels:
/// per call (a read of W, a write of the panels, the kernels' read of them) or kept across calls
/// by a compiled graph's packed-weight cache, which reads W once more per call for its content
/// fingerprint (runtime/matmul_step.h). Swapped, W is the A operand, which the wide 6 × 64 tile
/// reads in place row by row (gemm_driver.cpp), and op(A)ᵀ, the small operand, is what gets
/// packed: W is read once, streaming, while the kernels run. Its output, Cᵀ (n × m), goes to
/// per-thread scratch; a second pass transposes it into C through 16×16 register blocks,
/// adding C's old values with `accumulate`, and applies the whole epilogue there (the ops see
/// C's rows and columns, so a column bias stays a column bias). Dev Xeon, 2 threads, against a
/// packed W plus a read of W: 64 × 4096² 10.3 against 14.8 ms
/// (docs/decisions/013-swapped-few-row-products.md).
#pragma once

#include "matrix/gemm.h"

namespace inductor_cpp::matrix {

/// Whether gemm_f32 computes p swapped: AVX-512, B transposed, swap_min_rows ≤ m ≤
/// swap_max_rows (gemm_config.h), and enough of W for every thread: a wide tile's 64 rows and
/// 256 Ki floats (1 MiB).
bool swapped_product_applies(const GemmProblem& p, int num_threads);

/// C = epilogue(alpha · op(A) · op(B) [+ C]) as described above, on up to num_threads threads.
void gemm_f32_swapped(const GemmProblem& p, int num_threads);

}  // namespace inductor_cpp::matrix
