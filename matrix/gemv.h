/// \file gemv.h
/// \brief One-row GEMMs as matrix-vector products, and few-row ones (2-32 rows) times Bᵀ, B read in
/// place once, with no packing:
///   * few rows × Bᵀ (nn.Linear on a small batch): W walked in blocks of four rows, each block
///     run over every group of 3 (AVX2) or 4 (AVX-512) A rows while it is in L1 (one dot
///     product per output, as below);
///   * B transposed (nn.Linear's weight W [N, K], y = x · Wᵀ): each output is a dot product
///     along a contiguous row of W, four rows of W at a time;
///   * B plain (y = x · B, torch.mm of one row): B's rows are streamed in order, eight at a
///     time, into the thread's slice of y (in L1), so B is read as long sequential runs; with
///     K ≥ N on several threads, each thread instead sums a contiguous range of B's rows over
///     all N columns, and the threads' partial rows are added in thread order (with K < N and
///     more threads than runs of 512 columns, a grid of column ranges × row ranges).
///
/// Why: a one-row GEMM is bound by reading B. The tile kernels need B packed into panels (a
/// second copy of W, as large as W, made on first use and kept by the packed-weight cache) or
/// read B in short K chunks across all columns (many concurrent streams per thread); these
/// forms read B at full width. Results are the same on every run with the same thread count.
/// With Bᵀ, and with a plain B whose grid has one K group, they do not depend on the thread
/// count either (each output is computed by one thread in a fixed order: dot products in 32
/// lanes over K then a fixed tree; plain B summed in k order, as the tile kernels do); the
/// split over B's rows sums each output per thread, then across threads.
#pragma once

#include "matrix/gemm.h"

namespace inductor_cpp::matrix {

/// Whether gemv_f32 computes p: one row (m = 1) with A's row contiguous, or 2-32 rows of a plain
/// (row-major) A times a transposed B.
bool gemv_applies(const GemmProblem& p);

/// How gemv_f32 lays out its team over a plain B: k_parts groups over B's rows (K) × n_parts over
/// its columns. k_parts 1: each output is computed by one thread, so the result does not depend
/// on the thread count; k_parts > 1: each output sums its groups' partials in group order.
struct GemvGrid {
  int k_parts = 1, n_parts = 1;
};

/// The threads gemv_f32 uses for p out of num_threads (1 for small problems and inside a parallel
/// region that cannot nest).
int gemv_threads(const GemmProblem& p, int num_threads);

/// The layout of `threads` threads: Bᵀ and one thread: {1, threads}. Plain B with K ≥ N: all over
/// K. K < N: over N in runs of at least 512 floats, what is left of the team over K (at least 64
/// rows a group; INDUCTOR_CPP_MATRIX_SPLIT_K=0: over N only).
GemvGrid gemv_grid(const GemmProblem& p, int threads);

/// C (1 × n) = epilogue(alpha · A · B [+ C]) for a problem where gemv_applies, on up to
/// num_threads threads (each a contiguous range of outputs, or of B's rows for a plain B with
/// K ≥ N; small problems on the caller).
void gemv_f32(const GemmProblem& p, int num_threads);

}  // namespace inductor_cpp::matrix
