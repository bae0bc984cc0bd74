/// \file gemm_driver_internal.h
/// \brief Private to the fp32 GEMM driver (gemm_driver.cpp, gemm_plan.cpp, gemm_split_k.cpp):
/// the per-call Plan the workers share, how it is made (gemm_plan.cpp), the per-thread walk
/// over B blocks (gemm_driver.cpp) and the split-K variant built from it (gemm_split_k.cpp).
/// See gemm_driver.h for the scheme.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "matrix/gemm.h"
#include "matrix/gemm_config.h"
#include "matrix/jit/microkernel.h"
#include "matrix/scratch.h"

namespace inductor_cpp::matrix::gemm_detail {

enum Phase { kOnly, kFirst, kMiddle, kLast, kNumPhases };

/// Where the kernels read B from.
enum class BSource {
  Prepacked,  ///< The caller's PackedB (read-only, shared by all threads).
  Shared,     ///< Packed per call, block by block, by the whole team into one shared buffer.
  Plain,      ///< Read in place (few row tiles: packing would not pay off).
};

inline int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

/// Per-thread scratch that grows and is reused across calls (OpenMP workers persist). `a` is the
/// thread's packed A block; `shared_b` is the team's B double buffer when this thread is the
/// caller; `partial` the split-K parts' C when it is the caller (allocated per call, a buffer
/// above the allocator's mmap threshold would be an mmap / munmap pair each time, and the
/// munmap's TLB shootdown reaches every thread of the team). No gemm call runs nested inside
/// another on one thread. Freed by release_scratch (scratch.h).
struct Scratch {
  struct Buffer {
    float* data = nullptr;
    size_t size = 0;
    ~Buffer() { std::free(data); }
    float* get(size_t floats) {
      if (floats <= size) return data;
      std::free(data);
      size = floats;
      data = static_cast<float*>(std::aligned_alloc(64, (floats * 4 + 63) / 64 * 64));
      return data;
    }
    size_t release() {
      const size_t bytes = size * sizeof(float);
      std::free(data);
      data = nullptr;
      size = 0;
      return bytes;
    }
  };
  Buffer a, shared_b, partial;  ///< partial: the calling thread's split-K partial C

  Scratch() {
    register_scratch(this, [](void* self) {
      auto* s = static_cast<Scratch*>(self);
      return s->a.release() + s->shared_b.release() + s->partial.release();
    });
  }
  ~Scratch() { unregister_scratch(this); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
};

/// The calling thread's Scratch.
Scratch& thread_scratch();

/// The static partition: a tm × tn grid of threads; thread row ti owns a contiguous range of
/// rows (thread_rows), thread column tj a contiguous range of the column panels of every B block.
struct Grid {
  int threads = 1, tm = 1, tn = 1;
  int64_t m = 0, mr = 1, tiles_m = 0, tiles_n = 0;
  int64_t row_tiles_per_thread() const { return ceil_div(ceil_div(m, tm), mr); }
  int64_t panels_per_thread() const { return ceil_div(tiles_n, tn); }
};

/// Small problems run on the caller, unless B is big enough that reading it is the cost (skinny
/// M): then two cores' cache bandwidth beats one.
bool runs_serially(const GemmBlocking& blk, const GemmProblem& p);

/// The tm × tn grid for num_threads threads (fewer for small problems, see runs_serially).
Grid partition(const GemmBlocking& blk, const GemmProblem& p, int num_threads);

/// Everything the workers share for one call (read-only once built).
struct Plan {
  const GemmProblem* p = nullptr;
  const PackedB* packed = nullptr;
  int64_t packed_k0 = 0;  ///< K offset into `packed` (a split-K part's range starts there).
  GemmBlocking blk;
  Grid grid;
  BSource b_source = BSource::Plain;
  bool stream = false;  ///< Plain B streamed over an N split (gemm_config.h "Streamed plain B").
  bool pack_a = false;
  int64_t kc = 0, nkb = 1;  ///< K block and number of K blocks.
  int64_t nc = 0;           ///< Columns per B block (a multiple of nr), split over tn.
  int64_t pack_chunk = 1;   ///< Panels packed together (BSource::Shared).
  bool private_b = false;   ///< BSource::Shared, but each thread packs its own copy.
  size_t jit_epilogue = 0;
  /// Tiles span two adjacent packed panels (mr × 2·nr, gemm_config.h: the wide tile); a
  /// thread's odd last panel is a tile of its own.
  bool pair_panels = false;
  /// [phase][row kind][column kind]: row kind 0 = mr rows, 1 and 2 = the (at most two) row
  /// counts of the threads' last tiles (thread row ranges need not be multiples of mr); column
  /// kind (col_kind) 0 = a full tile, 1 = one full panel of a pair plan, 2 = a tile ending in
  /// B's partial last panel, 3 = that panel alone in a pair plan.
  xbyak::MicroKernelFn kernels[kNumPhases][3][4] = {};
  int tail_rows[2] = {0, 0};
  int row_kind(int rows) const { return rows == blk.mr ? 0 : rows == tail_rows[0] ? 1 : 2; }
  int tile_cols() const { return pair_panels ? 2 * blk.nr : blk.nr; }
  int col_kind(int cols) const {
    return cols == tile_cols() ? 0 : cols == blk.nr ? 1 : cols > blk.nr || !pair_panels ? 2 : 3;
  }
};

/// Rows [m0, m1) of thread row ti: an even split of M in rows, not tiles (1024 rows on 16
/// threads: 64 each = 4 tiles + 8 rows, instead of 5 tiles on some threads and 4 on others).
inline void thread_rows(const Plan& plan, int ti, int64_t& m0, int64_t& m1) {
  const int64_t m = plan.p->m, tm = plan.grid.tm;
  m0 = ti * m / tm;
  m1 = (ti + 1) * m / tm;
}

/// The plan of one call on num_threads threads (B from `packed` when given): blocking, grid,
/// B source, A packing, K and N blocks, and the micro-kernels for every tile shape it meets.
Plan make_plan(const GemmProblem& p, const PackedB* packed, int num_threads);

struct SharedB;

/// Thread t of the team: walks every B block (steps), computing its rows × its panels of each.
/// `sb`: the team's shared B (BSource::Shared without private_b), else null.
void work(const Plan& plan, int t, SharedB* sb);

/// How many K ranges a call splits into (1: none). When the output tiles do not share out evenly
/// over the team (Linear 8 × 768 × 3072 at 16 threads: 24 column panels, so half the threads
/// compute two panels and half one, or a single tile and an idle team), the team splits into
/// `parts` groups of num_threads / parts threads; each group computes every tile over one K
/// range into a partial C, then every thread sums a slice of the partials (run_split_k). Chosen
/// when it cuts the largest per-thread share (rows × panels × K) by 10 % or more over the next
/// smaller split and by kMinSplitSavedMacs, every part keeps kMinSplitK of K, and the partials
/// stay small. Counted in whole row tiles instead, 32 × 768² at 16 threads split in two (8 rows
/// × 6 panels a thread became 32 rows × 3 panels, the same work) and ran 50 → 62 µs. A B packed per
/// call by the whole team is not split (its ring is one per call): the part plans would have to
/// share it.
int split_k_parts(const Plan& plan, int num_threads);

/// The parts' problems (K range k0.., alpha 1, no epilogue, C = their slice of `partial`) and
/// plans on num_threads / parts threads each (a plan points at its problem: `sub` must outlive
/// `plans`). False when a part would pack B per call for its whole group: the team's ring is
/// one per call, so such a call is not split.
bool make_split_plans(const GemmProblem& p, const PackedB* packed, int num_threads, int parts,
                      float* partial, std::vector<GemmProblem>& sub, std::vector<Plan>& plans);

/// The call as `parts` K ranges (split_k_parts, make_split_plans), then the reduction. False,
/// with nothing written, when the parts cannot be planned or the runtime gives a smaller team:
/// the caller then runs the unsplit plan.
bool run_split_k(const GemmProblem& p, const PackedB* packed, int num_threads, int parts);

}  // namespace inductor_cpp::matrix::gemm_detail
