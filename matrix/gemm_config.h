/// \file gemm_config.h
/// \brief Private to matrix: register tile, cache blocking and threading choices.
///
/// Tile 14×32 (28 zmm accumulators, 2 B vectors, 1 broadcast): per k step 2 B loads and 14
/// broadcasts feed 28 FMAs, so loads stay under one per FMA-cycle. Kc = 512: a packed B
/// micro-panel (512×32 floats = 64 KiB) and an A row tile (28 KiB) both stream from L2 (~13 B
/// per cycle, far under what L2 delivers), and C is loaded and stored half as often as with
/// Kc = 256 (which keeps the B micro-panel in the 48 KiB L1, but measured 5–10 % slower at one
/// thread on the dev machine, 1024³ to 4096³ and the BERT shapes; tied at 16 threads on the
/// H200 host). Mc = 112 rows (A block 224 KiB, L2):
/// with C rows a multiple of 16 KiB apart (4096 columns) they fall into 8 L2 set groups, and a
/// 224-row C block no longer stayed in L2 (mc 224 → 112: +3–5 % at 4096³, same at 1024³).
/// Nc = 1024 columns per packed B block and thread column (2 MiB, shared by the threads, L2/L3).
/// With many rows per thread the driver switches to the wide tile, 6 × 64 over two adjacent
/// 32-column panels (pair_*; docs/matrix/gemm.md: +4–8 % on the BERT Linear shapes).
#pragma once

#include <omp.h>

#include <cstdint>

#include "matrix/jit/microkernel.h"

namespace inductor_cpp::matrix {

struct GemmBlocking {
  xbyak::Isa isa = xbyak::Isa::Avx512;
  int mr = 14;            ///< Register tile rows.
  int nr = 32;            ///< Register tile columns (= packed panel width).
  int64_t kc = 512;       ///< K block.
  int64_t plain_kc = 32;  ///< K chunk when B is read in place.
  int plain_nr = 64;      ///< Panel width when B is read in place (0: nr); mr shrinks to fit.
  /// Streamed plain B: a product of 2..stream_max_rows rows times a plain (row-major) B of
  /// stream_min_b_floats to stream_max_b_floats, with stream_min_panels column panels per
  /// thread, reads B in place over an N split (each thread its own columns, so B is read once)
  /// in K chunks of stream_kc rows, every kernel prefetching its rows' lines stream_prefetch
  /// bytes to the right, where the next panel's kernels read. The default grid's M split had
  /// each thread read all of B, and a compiled graph read it twice (its packed copy and the
  /// copy's fingerprint). Without the prefetch, K chunks over 32 rows collapsed (dev Xeon, 2
  /// threads, 32 × 4096²: 7.9 ms at 64 rows, 11.7 at 128, against 4.1 at 32; with it 3.9-4.0).
  /// The B-size bound is measured: B of 2.4 and 9.4 MB (768², 3072 × 768) gained on the dev Xeon
  /// and on the H200 host at 2 threads (32 × 768²: 0.73 → 1.02x eager there); a 64 MB B
  /// (4096²) gained 1.1-1.3x on the dev Xeon but lost on the host at 2-16 threads (32 × 4096² at
  /// 16: 0.76 → 0.69x), where the streamed kernels read it from memory well under MKL's rate.
  /// docs/decisions/014-streamed-plain-b-up-to-16-mib.md. Knob INDUCTOR_CPP_MATRIX_STREAM=
  /// "max_rows[,kc,prefetch,max_b_floats]" (max_rows 0: off).
  int64_t stream_max_rows = 64;
  int64_t stream_kc = 128;
  int64_t stream_prefetch = 256;
  int64_t stream_min_b_floats = 256 * 1024;
  int64_t stream_max_b_floats = 4 * 1024 * 1024;
  int64_t stream_min_panels = 2;
  int64_t pack_b_min_row_tiles =
      2;              ///< Pack a (non-transposed) B when a thread has this many row tiles.
  int64_t mc = 112;   ///< Rows of A per block (multiple of mr).
  int64_t nc = 1024;  ///< Columns of B per packed block and thread column (multiple of nr).
  bool pack_a_always = false;  ///< Pack A whenever reused (else at lda % 512 == 0, 14-row tiles).
  int64_t serial_macs = 128 * 128 * 64;  ///< Problems with fewer multiply-adds run on one thread…
  int64_t serial_b_floats = 128 * 1024;  ///< …unless B has at least this many elements.
  /// The wide tile: pair_mr × 2·nr over two adjacent packed panels, used on packed B when each
  /// thread has at least pair_min_rows rows, or M ≤ pair_mr (pair_min_rows 0: never).
  int64_t pair_min_rows = 64;
  int pair_mr = 6;
  int64_t pair_mc = 120;  ///< Multiple of pair_mr.
  int64_t pair_kc =
      1024;  ///< 384 while A was packed; docs/decisions/008-gemm-blocking-and-wide-tile.md.
  /// choose_grid's slack for the GEMM's thread grid: grids within 6 % of the fewest tiles per
  /// thread that split M more win. H200 host, 16 threads, ratios to torch.mm: with 0 the wide
  /// tile's finer rows tipped 1024³ and 4096³ to a 1 × 16 grid (16 threads each packing all of
  /// A: 0.70x / 0.68x); 0.03: 0.99x / 0.87x; 0.06: 1.01x / 0.91x.
  double grid_slack = 0.06;
  /// Direct convolution's register tile: conv_mr output pixels (0: mr, or pair_mr on two
  /// panels) × conv_panels adjacent nr-column panels (0: chosen per convolution, conv.cpp
  /// "two_panel_tiles_pay"; 2: the wide tile's two-panel kernel). Tuning knob
  /// INDUCTOR_CPP_MATRIX_CONV_TILE="mr[,panels]".
  int conv_mr = 0;
  int conv_panels = 0;
  int grid_tm = 0;  ///< Tuning knob: > 0 forces a grid_tm × (threads / grid_tm) thread grid.
  /// Split K over groups of the team when the output tiles do not share out evenly (gemm_driver
  /// "split_k_parts", gemv "gemv_grid"); knob INDUCTOR_CPP_MATRIX_SPLIT_K=0 turns it off.
  bool balance_split_k = true;
  /// Tuning knob INDUCTOR_CPP_MATRIX_SPLIT_K=n (n ≥ 2): split every problem that allows it
  /// (n divides the team, K / n ≥ 256, the partials fit) into n K ranges.
  int force_split_k = 0;
  /// Most A rows for which gemv.h reads Wᵀ in place (dot products) rather than the GEMM reading
  /// it packed. AMD Zen 1 (AVX2), 2 threads, in place against B packed beforehand: 8 × 768² 149
  /// against 234 µs, 16 × 768² 277 / 258, 32 × 768² 551 / 529, 64 × 768² 1102 / 999 (the packed
  /// kernels win from there); a Xeon (AVX-512), 2 threads: 32 × 768² 228 / 171, 32 × 4096²
  /// 6.4 / 5.9 ms (docs/decisions/012-few-rows-read-the-weight-in-place.md). From swap_min_rows on,
  /// the swapped product takes the problems it applies to first. Knob
  /// INDUCTOR_CPP_MATRIX_FEW_ROWS=n (1: products of two or more rows all go to the tile kernels or
  /// the swapped product).
  int64_t few_rows = 32;
  /// Least A rows for the swapped product (gemm_swapped.h): dev Xeon, 2 threads, compiled
  /// Linear, swapped against the dot products: 32 × 4096² 6.0 against 7.7 ms, 32 × 768² 248
  /// against 387 µs; at 16 rows mixed (0.8-1.2x), at 8 rows the dot products win (1.2-2.4x).
  int64_t swap_min_rows = 17;
  /// Most A rows for which gemm_f32 computes a product with a transposed B (nn.Linear, W not
  /// frozen) as Cᵀ = W · op(A)ᵀ, reading W once in place (gemm_swapped.h); 0: never. Dev Xeon,
  /// 2 threads, compiled Linear against the packed copy and its fingerprint: 1.1-1.9x up to 128
  /// rows, mixed at 160-256 (0.9-1.5x). Knob INDUCTOR_CPP_MATRIX_SWAP_ROWS=n (the most rows; 0
  /// turns the swapped product off).
  int64_t swap_max_rows = 128;
};

/// Splits threads into a tm × tn grid (tm·tn = threads) minimising the largest per-thread tile
/// count; among the grids within `slack` (a fraction) of that minimum, the one splitting M most
/// (fp32: A is packed by each thread column, B once by the team, so tn is A's redundancy), or N
/// most with prefer_split_n (bf16: the VNNI packing of B costs more).
/// Inside a parallel region: runs fn(t) for every worker t in [0, workers), the team's thread i
/// taking t = i, i + team, ... Regions ask for the caller's whole team even when fewer workers
/// have work (the others skip): a smaller team lets the rest of the threads go idle, and on the
/// H200 host's VM the next full-team region waited for them to wake (a 16-thread convolution
/// after a 4-thread weight pack: 0.68 ms a call, against 0.09 with the whole team packing). A
/// team smaller than asked for (a nested region) still covers every worker.
template <typename Fn>
void for_each_worker(int workers, Fn&& fn) {
  for (int t = omp_get_thread_num(); t < workers; t += omp_get_num_threads()) fn(t);
}

void choose_grid(int64_t tiles_m, int64_t tiles_n, int threads, int& tm, int& tn,
                 bool prefer_split_n = false, double slack = 0);

/// The blocking in use, chosen once per process: AVX-512 values above; AVX2 (hosts without
/// AVX-512, or INDUCTOR_CPP_MATRIX_ISA=avx2) uses a 6×16 tile.
const GemmBlocking& gemm_blocking();

}  // namespace inductor_cpp::matrix
