/// \file gemm_driver.h
/// \brief Private to matrix: the fp32 GEMM driver behind gemm_f32 / gemm_f32_packed —
/// kernel selection, the thread grid, cooperative B packing and the BLIS-style block loops.
///
/// Per call, every thread walks the same sequence of B blocks (nc columns × kc rows; "steps"),
/// computing its rows × its column panels of each. When B is packed per call, the team packs it
/// cooperatively into ONE shared ring of 3 block buffers owned by the calling thread: whoever
/// first needs a chunk of panels of a step claims it (an atomic state word per chunk), packs it
/// and publishes it; the others use it, waiting only if it is being packed. Threads start their
/// panel walk at different chunks, so with an M split each packs about 1/T of B and nobody waits.
/// A slot is refilled only after every reader of its previous block has moved on (per-thread
/// step counters), so no barrier is needed: a thread descheduled for a while delays the others
/// only once they run 2 blocks ahead of it. A pre-packed B or a B read in place needs no
/// synchronisation at all. Same thread count → same partition and per-element summation order
/// (K blocks in order) → bit-identical results run to run.
#pragma once

#include "matrix/gemm.h"

namespace inductor_cpp::matrix {

/// Throws std::invalid_argument on bad sizes, pointers, leading dimensions or epilogue ops (B is
/// checked by the callers: it may come pre-packed).
void check_gemm_problem(const GemmProblem& p);

/// C = epilogue(alpha·op(A)·op(B) [+ C]) with up to num_threads OpenMP threads; B is taken from
/// `packed` when given (p.b, p.ldb, p.trans_b ignored). Inside an active parallel region that
/// cannot nest, it runs on the calling thread.
void run_gemm_f32(const GemmProblem& p, const PackedB* packed, int num_threads);

/// Whether run_gemm_f32 (without a packed B) reads op(B) in place: a plain B under few row tiles
/// per thread, where packing would not pay off.
bool gemm_plan_reads_b_in_place(const GemmProblem& p, int num_threads);

/// How many K ranges run_gemm_f32 splits p into on num_threads threads (1: none): long-K
/// problems whose output tiles do not share out evenly over the team, unless a part would pack
/// B per call for its whole group (for tests and diagnostics; gemm_split_k.cpp
/// "split_k_parts").
int gemm_split_k_parts(const GemmProblem& p, const PackedB* packed, int num_threads);

}  // namespace inductor_cpp::matrix
