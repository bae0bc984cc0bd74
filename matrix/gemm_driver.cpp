/// \file gemm_driver.cpp
/// \brief The fp32 GEMM driver (see gemm_driver.h): plan (kernels, B source, A packing, K and N
/// blocking), the tm × tn thread grid, and the per-thread loop over the team's B blocks with
/// cooperative packing into a shared double buffer.
#include "matrix/gemm_driver.h"

#include <omp.h>
#include <xmmintrin.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "matrix/jit/cpu_features.h"
#include "matrix/jit/microkernel.h"
#include "matrix/epilogue.h"
#include "matrix/gemm_config.h"
#include "matrix/pack.h"
#include "matrix/scratch.h"

namespace inductor_cpp::matrix {
namespace {

using xbyak::MicroKernelArgs;
using xbyak::MicroKernelDesc;
using xbyak::MicroKernelFn;

enum Phase { kOnly, kFirst, kMiddle, kLast, kNumPhases };

/// Where the kernels read B from.
enum class BSource {
  Prepacked,  ///< The caller's PackedB (read-only, shared by all threads).
  Shared,     ///< Packed per call, block by block, by the whole team into one shared buffer.
  Plain,      ///< Read in place (few row tiles: packing would not pay off).
};

int64_t ceil_div(int64_t a, int64_t b) {
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
Scratch& thread_scratch() {
  thread_local Scratch scratch;
  return scratch;
}

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
bool runs_serially(const GemmBlocking& blk, const GemmProblem& p) {
  return p.m * p.n * std::max<int64_t>(p.k, 1) < blk.serial_macs && p.n * p.k < blk.serial_b_floats;
}

Grid partition(const GemmBlocking& blk, const GemmProblem& p, int num_threads) {
  Grid g;
  g.m = p.m;
  g.mr = blk.mr;
  g.tiles_m = ceil_div(p.m, blk.mr);
  g.tiles_n = ceil_div(p.n, blk.nr);
  g.threads = runs_serially(blk, p) ? 1 : std::max(1, num_threads);
  g.threads = int(std::min<int64_t>(g.threads, g.tiles_m * g.tiles_n));
  choose_grid(g.tiles_m, g.tiles_n, g.threads, g.tm, g.tn, false, blk.grid_slack);
  if (blk.grid_tm > 0 && g.threads % blk.grid_tm == 0 && blk.grid_tm <= g.tiles_m &&
      g.threads / blk.grid_tm <= g.tiles_n)
    g.tm = blk.grid_tm, g.tn = g.threads / blk.grid_tm;
  return g;
}

/// Whether B is streamed: read in place over an N split, in K chunks of stream_kc with
/// prefetch (gemm_config.h "Streamed plain B"): few rows times a plain B of one to a few
/// MiB, with enough column panels for every thread.
bool streams_plain_b(const GemmBlocking& blk, const GemmProblem& p, const Grid& g) {
  return blk.stream_max_rows > 0 && !p.trans_b && p.m >= 2 && p.m <= blk.stream_max_rows &&
         p.n * p.k >= blk.stream_min_b_floats && p.n * p.k <= blk.stream_max_b_floats &&
         g.tiles_n >= g.threads * blk.stream_min_panels;
}

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
  MicroKernelFn kernels[kNumPhases][3][4] = {};
  int tail_rows[2] = {0, 0};
  int row_kind(int rows) const { return rows == blk.mr ? 0 : rows == tail_rows[0] ? 1 : 2; }
  int tile_cols() const { return pair_panels ? 2 * blk.nr : blk.nr; }
  int col_kind(int cols) const {
    return cols == tile_cols() ? 0 : cols == blk.nr ? 1 : cols > blk.nr || !pair_panels ? 2 : 3;
  }
};

/// Rows [m0, m1) of thread row ti: an even split of M in rows, not tiles (1024 rows on 16
/// threads: 64 each = 4 tiles + 8 rows, instead of 5 tiles on some threads and 4 on others).
void thread_rows(const Plan& plan, int ti, int64_t& m0, int64_t& m1) {
  const int64_t m = plan.p->m, tm = plan.grid.tm;
  m0 = ti * m / tm;
  m1 = (ti + 1) * m / tm;
}

/// Rows per A block for a thread's `rows`: the fewest blocks of at most 1.15 · mc rows, made even
/// (multiples of mr). Each block streams every B panel of the step through L2 once, so a thread
/// that ended on a sliver (256 rows in blocks of 120: 120 + 120 + 16) paid a third more B traffic
/// for 6 % of its work; now 132 + 124.
int64_t block_rows(int64_t rows, int64_t mc, int mr) {
  const int64_t blocks = std::max<int64_t>(1, ceil_div(rows * 20, mc * 23));
  return ceil_div(ceil_div(rows, blocks), mr) * mr;
}

MicroKernelFn kernel_for(const Plan& plan, Phase phase, int rows, int cols) {
  const GemmProblem& p = *plan.p;
  MicroKernelDesc d;
  d.isa = plan.blk.isa;
  d.mr = rows;
  d.nr = cols;
  d.k = 0;
  d.a_row_stride = plan.pack_a ? 1 : p.lda;
  d.a_k_stride = plan.pack_a ? plan.blk.mr : 1;
  const bool b_packed = plan.b_source != BSource::Plain;
  d.ldb = b_packed ? plan.blk.nr : p.ldb;
  d.b_layout = b_packed ? xbyak::BLayout::Packed : xbyak::BLayout::Plain;
  if (plan.stream) d.b_prefetch = plan.blk.stream_prefetch;
  if (plan.pair_panels && cols > plan.blk.nr) d.b_panel_cols = plan.blk.nr;
  d.ldc = p.ldc;
  d.alpha = p.alpha;
  d.accumulate = (phase == kOnly || phase == kFirst) ? p.accumulate : true;
  if (phase == kOnly || phase == kLast) d.epilogue = kernel_epilogue(p.epilogue, plan.jit_epilogue);
  return xbyak::get_microkernel(d);
}

void select_kernels(Plan& plan) {
  const GemmProblem& p = *plan.p;
  const int mr = plan.blk.mr, nr = plan.blk.nr;
  int tails = 0;
  for (int ti = 0; ti < plan.grid.tm; ++ti) {
    int64_t m0, m1;
    thread_rows(plan, ti, m0, m1);
    const int tail = int((m1 - m0) % mr);
    if (tail && tail != plan.tail_rows[0] && tail != plan.tail_rows[1]) {
      if (tails == 2) throw std::logic_error("gemm: more than two row tails");
      plan.tail_rows[tails++] = tail;
    }
  }
  // Column counts a tile can have (col_kind): a full tile, one full panel, a tile ending in
  // the partial last panel (col_tail columns), that panel alone (pair plans).
  const int col_tail = int(p.n % nr);
  const int tile = plan.tile_cols();
  const int widths[4] = {int(std::min<int64_t>(tile, p.n)), plan.pair_panels ? nr : 0,
                         col_tail ? (plan.pair_panels ? nr + col_tail : col_tail) : 0,
                         plan.pair_panels ? col_tail : 0};
  const bool phases[kNumPhases] = {plan.nkb == 1, plan.nkb > 1, plan.nkb > 2, plan.nkb > 1};
  for (int ph = 0; ph < kNumPhases; ++ph) {
    if (!phases[ph]) continue;
    for (int rk = 0; rk < 3; ++rk)
      for (int ct = 0; ct < 4; ++ct) {
        const int rows = rk ? plan.tail_rows[rk - 1] : int(std::min<int64_t>(mr, p.m));
        const int cols = widths[ct];
        if (rows == 0 || cols == 0 || plan.col_kind(cols) != ct) continue;
        plan.kernels[ph][rk][ct] = kernel_for(plan, Phase(ph), rows, cols);
      }
  }
}

Plan make_plan(const GemmProblem& p, const PackedB* packed, int num_threads) {
  Plan plan;
  plan.p = &p;
  plan.packed = packed;
  plan.blk = gemm_blocking();
  if (packed && packed->panel_width() != plan.blk.nr)
    throw std::invalid_argument("gemm: PackedB panel width mismatch");
  Grid g = partition(plan.blk, p, num_threads);
  plan.stream = !packed && streams_plain_b(plan.blk, p, g);
  // A streamed B: a pure N split, every thread its own columns (B read once).
  auto stream_grid = [&] {
    if (plan.stream) g.tm = 1, g.tn = int(std::min<int64_t>(g.threads, g.tiles_n));
  };
  stream_grid();
  const bool pack_b = !packed && !plan.stream &&
                      (p.trans_b || g.row_tiles_per_thread() >= plan.blk.pack_b_min_row_tiles);
  if (!packed && !pack_b && plan.blk.plain_nr > 0 && p.n >= plan.blk.plain_nr &&
      p.m <= xbyak::max_rows(plan.blk.isa, plan.blk.plain_nr)) {
    // B read in place by one short row tile (M ≤ 6): wider panels read longer runs of each B row
    // per kernel (measured: helps M = 1, hurts M = 8 split into 6 + 2 rows).
    plan.blk.nr = plan.blk.plain_nr;
    plan.blk.mr = std::min(plan.blk.mr, xbyak::max_rows(plan.blk.isa, plan.blk.nr));
    plan.blk.mc = std::max<int64_t>(1, plan.blk.mc / plan.blk.mr) * plan.blk.mr;
    g = partition(plan.blk, p, num_threads);
    stream_grid();
  }
  plan.b_source = packed ? BSource::Prepacked : pack_b ? BSource::Shared : BSource::Plain;
  // Packed B with many rows per thread, or a single short row tile (M ≤ pair_mr: no B panel is
  // read twice, and a kernel then reads two B streams): the wide tile, over pairs of panels
  // (gemm_config.h).
  if (plan.b_source != BSource::Plain && plan.blk.pair_min_rows > 0 &&
      (ceil_div(p.m, g.tm) >= plan.blk.pair_min_rows || p.m <= plan.blk.pair_mr)) {
    plan.pair_panels = true;
    plan.blk.mr = plan.blk.pair_mr;
    plan.blk.mc = plan.blk.pair_mc;
    plan.blk.kc = plan.blk.pair_kc;
    g = partition(plan.blk, p, num_threads);
  }
  plan.grid = g;
  // Pack A into row tiles when it is transposed, or reused across column panels while its rows
  // are a multiple of 2 KiB apart (they would then share one or two L1 sets: 14 rows, 12 ways),
  // or always when the blocking says so (tuning knob). The wide tile's 6 rows fit in one set's
  // ways, and reading them in place saves the packing pass: dev machine, 2 threads,
  // `matrix_bench 2 shape:...` alternating runs, 512³ +3-6 %, 1024³ +2-6 %, 2048³ +3-5 %, 4096³
  // +3 % (402-403 against 415-417 ms), Linear 1024 × 768 × 3072 +2-5 %; one thread ±2 %.
  plan.pack_a = p.trans_a || (p.m > 1 && g.panels_per_thread() >= 2 &&
                              (plan.blk.pack_a_always || (p.lda % 512 == 0 && !plan.pair_panels)));
  // Packed B: K blocks of kc (gemm_config.h). One row tile per thread: no reuse of a B panel
  // across row tiles, so the whole K (C written once), up to 2·kc for a shared B (its ring
  // holds 3 blocks). Plain B (few row tiles, read in place): short K chunks, so that consecutive
  // kernels walk along the rows of B (a few parallel streams) instead of down its columns.
  const int64_t kc_target = plan.stream                       ? plan.blk.stream_kc
                            : plan.b_source == BSource::Plain ? plan.blk.plain_kc
                            : g.row_tiles_per_thread() > 1    ? plan.blk.kc
                            : plan.b_source == BSource::Shared && p.k > 2 * plan.blk.kc
                                ? plan.blk.kc
                                : p.k;
  plan.nkb = std::max<int64_t>(1, ceil_div(p.k, std::max<int64_t>(kc_target, 1)));
  plan.kc = std::max<int64_t>(1, ceil_div(p.k, plan.nkb));
  // A B block spans nc columns per thread column, so each thread's share of a block is about
  // nc wide whatever tn is (and a pure N split has as few blocks as an M split).
  const int nr = plan.blk.nr;
  plan.nc = std::min(ceil_div(p.n, nr), ceil_div(plan.blk.nc, nr) * g.tn) * nr;
  // Small B (< 64 Ki floats per thread column, e.g. 128³): each thread packs its own copy; the
  // threads' wake-up skew and pulling freshly written panels from another core's cache cost
  // more than packing it twice (128³ at 2 threads: 195 → 280 GFLOP/s).
  plan.private_b = plan.b_source == BSource::Shared && p.k * ceil_div(p.n, g.tn) < 64 * 1024;
  // Shared B chunks: up to 4 panels, but at least one chunk per thread of a thread column.
  plan.pack_chunk = std::clamp<int64_t>(plan.nc / nr / g.tn / g.tm, 1, 4);
  plan.jit_epilogue = jit_epilogue_prefix(p.epilogue);
  select_kernels(plan);
  return plan;
}

/// The shared B of one call (BSource::Shared): a ring of `slots` block buffers and, per slot and
/// panel, a state word: 2s + 1 while a thread packs the panel for step s, 2s + 2 once it is
/// ready (steps count the (nc, kc) blocks from 0). Whoever first needs a panel packs it; the
/// others wait for it. Before a slot is refilled for step s, every thread of the panel's thread
/// column must have finished step s − slots (`done` counts each thread's finished steps).
struct SharedB {
  static constexpr int kSlots = 3;
  int tm = 1, tn = 1;  ///< The readers' grid (1 × 1 for a thread's private copy).
  float* data = nullptr;
  /// kc · nc. Panel q of a slot starts at q · kc · nr whatever the step's K length: thread
  /// columns may be up to kSlots steps apart, and a shorter last K block laid out at
  /// q · kcur · nr would overlap the panels of another column still reading the slot.
  size_t slot_floats = 0;
  int64_t block_panels = 0;                             ///< Panels per block (nc / nr).
  std::unique_ptr<std::atomic<int64_t>[]> panel_state;  ///< kSlots × block_panels.
  struct alignas(64) Counter {
    std::atomic<int64_t> steps{0};
  };
  std::unique_ptr<Counter[]> done;  ///< Per thread (ti · tn + tj); "infinite" without rows.

  /// Sets up the ring for the readers' grid tm × tn (thread t = ti · tn + tj reads panels of
  /// thread column tj); `data` holds kSlots blocks.
  void init(const Plan& plan, float* ring, int readers_tm, int readers_tn) {
    tm = readers_tm, tn = readers_tn;
    data = ring;
    slot_floats = size_t(plan.kc) * plan.nc;
    block_panels = plan.nc / plan.blk.nr;
    const int64_t states = kSlots * block_panels;
    panel_state.reset(new std::atomic<int64_t>[states]);
    for (int64_t i = 0; i < states; ++i) panel_state[i].store(0, std::memory_order_relaxed);
    done.reset(new Counter[tm * tn]);
  }
  Counter& progress(int ti, int tj) { return done[(ti % tm) * tn + tj % tn]; }
};

/// Spin with pause, yielding the core after a while (the thread we wait for may need it).
template <class Ready>
void spin_until(Ready ready) {
  for (int spins = 0; !ready(); ++spins) {
    _mm_pause();
    if (spins > 2000) std::this_thread::yield();
  }
}

/// The packed panel `panel` of step `step` (index within the block; the thread's panels of the
/// block are [p0, p1)), packing its chunk of plan.pack_chunk panels if nobody has. Chunks are
/// claimed rather than single panels so that a plain B is read in runs of a few hundred bytes
/// per row (one 128-byte panel row per 4 KiB-apart B row was 4 % slower).
const float* shared_panel(const Plan& plan, SharedB& sb, int64_t step, int tj, int64_t nc0,
                          int64_t p0, int64_t p1, int64_t panel, int64_t k0, int64_t kcur) {
  const GemmProblem& p = *plan.p;
  const int nr = plan.blk.nr;
  const int64_t slot = step % SharedB::kSlots;
  float* block = sb.data + slot * sb.slot_floats;
  const int64_t c0 = p0 + (panel - p0) / plan.pack_chunk * plan.pack_chunk,
                c1 = std::min(p1, c0 + plan.pack_chunk);
  std::atomic<int64_t>& state = sb.panel_state[slot * sb.block_panels + c0];
  const int64_t claimed = 2 * step + 1, ready = 2 * step + 2;
  int64_t seen = state.load(std::memory_order_acquire);
  while (seen != ready) {
    if (seen == claimed) {
      spin_until([&] { return state.load(std::memory_order_acquire) == ready; });
      break;
    }
    if (step >= SharedB::kSlots) {  // the slot's previous block must be released by its readers
      for (int ti = 0; ti < sb.tm; ++ti) {
        const std::atomic<int64_t>& done = sb.progress(ti, tj).steps;
        spin_until([&] { return done.load(std::memory_order_acquire) > step - SharedB::kSlots; });
      }
    }
    if (state.compare_exchange_strong(seen, claimed, std::memory_order_acq_rel)) {
      const int64_t j = nc0 + c0 * nr;
      pack_b_panels(p.b, p.ldb, p.trans_b, k0, kcur, j, std::min<int64_t>((c1 - c0) * nr, p.n - j),
                    nr, plan.kc * nr, block + c0 * plan.kc * nr);
      state.store(ready, std::memory_order_release);
      break;
    }
  }
  return block + panel * plan.kc * nr;
}

/// One thread's share of one B block: rows [m0, m1) × panels [p0, p1) of the block starting at
/// column nc0, K range [k0, k0 + kcur). The panels are walked from `first` on (cyclically), so
/// that the threads sharing them start on different ones (and pack those).
void compute_block(const Plan& plan, Phase phase, int64_t step, int tj, int64_t m0, int64_t m1,
                   int64_t mc, int64_t nc0, int64_t p0, int64_t p1, int64_t first, int64_t k0,
                   int64_t kcur, SharedB* sb, float* a_buf) {
  const GemmProblem& p = *plan.p;
  const GemmBlocking& blk = plan.blk;
  const int mr = blk.mr, nr = blk.nr;
  const bool epilogue_now = phase == kOnly || phase == kLast;
  const float* epilogue_data[16] = {};
  for (int64_t mc0 = m0; mc0 < m1; mc0 += mc) {
    const int64_t mc1 = std::min(m1, mc0 + mc);
    const float* a_block = p.a + mc0 * p.lda + k0;
    int64_t a_tile_stride = mr * p.lda;  // from one row tile to the next
    if (plan.pack_a) {
      pack_a_tiles(p.a, p.lda, p.trans_a, mc0, mc1 - mc0, k0, kcur, mr, a_buf);
      a_block = a_buf;
      a_tile_stride = mr * kcur;
    }
    auto panel_data = [&](int64_t panel) {
      const int64_t j = nc0 + panel * nr;
      return plan.b_source == BSource::Prepacked
                 ? plan.packed->panel(j / nr) + (plan.packed_k0 + k0) * nr
             : plan.b_source == BSource::Shared
                 ? shared_panel(plan, *sb, step, tj, nc0, p0, p1, panel, k0, kcur)
                 : p.b + k0 * p.ldb + j;
    };
    // Tiles of `per_tile` panels, walked cyclically from the one holding `first`.
    const int64_t per_tile = plan.pair_panels ? 2 : 1, tiles = ceil_div(p1 - p0, per_tile);
    for (int64_t n = 0; n < tiles; ++n) {
      const int64_t panel = p0 + ((first - p0) / per_tile + n) % tiles * per_tile;
      const int64_t j = nc0 + panel * nr;
      const bool two = per_tile == 2 && panel + 1 < p1;
      const int cols = int(std::min<int64_t>(two ? 2 * nr : nr, p.n - j));
      const float* b_ptr = panel_data(panel);
      const int64_t b_panel_stride =
          two ? (panel_data(panel + 1) - b_ptr) * int64_t(sizeof(float)) : 0;
      for (int64_t i = mc0; i < mc1; i += mr) {
        const int rows = int(std::min<int64_t>(mr, mc1 - i));
        const float* a_ptr = a_block + (i - mc0) / mr * a_tile_stride;
        float* c_ptr = p.c + i * p.ldc + j;
        MicroKernelArgs args;
        args.a = &a_ptr;
        args.b = &b_ptr;
        args.batch = 1;
        args.c = c_ptr;
        args.k = kcur;
        args.b_panel_stride = b_panel_stride;
        if (epilogue_now) {
          for (size_t e = 0; e < plan.jit_epilogue; ++e)
            epilogue_data[e] = epilogue_tile_data(p.epilogue[e], i, j);
          args.epilogue_data = epilogue_data;
        }
        plan.kernels[phase][plan.row_kind(rows)][plan.col_kind(cols)](&args);
        if (epilogue_now && plan.jit_epilogue < p.epilogue.size())
          apply_epilogue_tile(c_ptr, p.ldc, rows, cols, i, j, p.epilogue, plan.jit_epilogue,
                              /*tile_kernel=*/false);
      }
    }
    // A generated tile kernel runs once over the block's finished rows × panels, not per
    // micro-tile or per column strip: long rows read its other operands (a residual) in long
    // runs, and its call overhead is paid once per block (scripts/debug/tile_epilogue_probe.py:
    // per strip, z/2 + y² at 8192 x 1024 x 32 read 0.94x the separate kernel; per block 1.15x).
    if (epilogue_now) {
      const int64_t col0 = nc0 + p0 * nr, col1 = std::min(p.n, nc0 + p1 * nr);
      apply_tile_kernel(p.epilogue, mc0, mc1 - mc0, col0, col1 - col0);
    }
  }
}

/// Thread t of the team: walks every B block (steps), computing its rows × its panels of each.
void work(const Plan& plan, int t, SharedB* sb) {
  const GemmProblem& p = *plan.p;
  const Grid& g = plan.grid;
  const int mr = plan.blk.mr, nr = plan.blk.nr;
  const int ti = t / g.tn, tj = t % g.tn;
  int64_t m0, m1;
  thread_rows(plan, ti, m0, m1);
  if (m0 >= m1) return;
  const int64_t mc = block_rows(m1 - m0, plan.blk.mc, mr);
  float* a_buf = nullptr;
  if (plan.pack_a)
    a_buf = thread_scratch().a.get(size_t(ceil_div(std::min(mc, m1 - m0), mr) * mr * plan.kc));
  SharedB private_b;  // BSource::Shared with plan.private_b: this thread's own packed copy
  if (plan.private_b) {
    private_b.init(plan, thread_scratch().shared_b.get(SharedB::kSlots * size_t(plan.kc) * plan.nc),
                   1, 1);
    sb = &private_b;
  }
  int64_t step = 0;
  for (int64_t nc0 = 0; nc0 < p.n; nc0 += plan.nc) {
    const int64_t panels = ceil_div(std::min(p.n - nc0, plan.nc), nr);
    const int64_t p0 = tj * panels / g.tn, p1 = (tj + 1) * panels / g.tn;
    const int64_t first =
        p0 + ti * (p1 - p0) / g.tm / plan.pack_chunk * plan.pack_chunk;  // a chunk's start
    for (int64_t kb = 0; kb < plan.nkb; ++kb, ++step) {
      const int64_t k0 = kb * plan.kc, kcur = std::min(plan.kc, p.k - k0);
      const Phase phase = plan.nkb == 1        ? kOnly
                          : kb == 0            ? kFirst
                          : kb + 1 == plan.nkb ? kLast
                                               : kMiddle;
      if (p0 < p1)
        compute_block(plan, phase, step, tj, m0, m1, mc, nc0, p0, p1, first, k0, kcur, sb, a_buf);
      if (sb) sb->progress(ti, tj).steps.store(step + 1, std::memory_order_release);
    }
  }
}

/// Whether a parallel region opened here would get a team of one (already inside an active
/// region with nesting unavailable).
bool nested_region_is_serial() {
  return omp_get_active_level() >= omp_get_max_active_levels();
}

constexpr int64_t kMinSplitK = 256;             ///< Shortest K range of a split-K part.
constexpr int64_t kMaxPartialFloats = 1 << 20;  ///< Largest partial C buffers (all parts).
/// Least work a split must take off the busiest thread (multiply-adds): the barrier and the
/// reduction cost a few µs. H200 host, 16 threads: 8 × 768² (24 panels, a split would save 8
/// rows × 32 × 768 = 192 Ki) was 17-20 µs unsplit against 22-24 split.
constexpr double kMinSplitSavedMacs = 256 * 1024;

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
int split_k_parts(const Plan& plan, int num_threads) {
  const GemmProblem& p = *plan.p;
  if (!plan.blk.balance_split_k || num_threads < 2 || p.m * p.n * 2 > kMaxPartialFloats ||
      runs_serially(plan.blk, p))
    return 1;  // (every large GEMM leaves here, before any candidate grid is tried)
  if (const int forced = plan.blk.force_split_k; forced > 1)
    return num_threads % forced == 0 && p.k / forced >= kMinSplitK &&
                   p.m * p.n * forced <= kMaxPartialFloats
               ? forced
               : 1;
  // The busiest thread's rows × panels (a thread's short last row tile costs its rows, not mr).
  auto share = [&](const Grid& g) { return double(ceil_div(p.m, g.tm) * g.panels_per_thread()); };
  const double row_panel_macs = double(plan.blk.nr) * p.k;
  const double unsplit = share(plan.grid);
  double best = unsplit;
  int parts = 1;
  for (int s = 2; s <= num_threads && p.k / s >= kMinSplitK; ++s) {
    if (num_threads % s || p.m * p.n * s > kMaxPartialFloats) continue;
    GemmProblem part;  // the sizes partition() reads
    part.m = p.m, part.n = p.n, part.k = p.k / s;
    const double cost = share(partition(plan.blk, part, num_threads / s)) / s;
    if (cost <= 0.9 * best) best = cost, parts = s;
  }
  return (unsplit - best) * row_panel_macs >= kMinSplitSavedMacs ? parts : 1;
}

/// Thread t's share of the split-K reduction: C = alpha · Σ partials (in part order, so the
/// result is fixed by the thread count) [+ C], then the whole epilogue, in runs of up to 64
/// columns of one row; a generated tile kernel once per row of the share (one call per run
/// cost 0.79x the separate kernel: Linear 32 x 3072 x 768 at 16 threads).
void reduce_partials(const GemmProblem& p, const float* partial, int parts, int t, int threads) {
  constexpr int64_t kRun = 64;
  const int64_t runs_per_row = ceil_div(p.n, kRun), units = p.m * runs_per_row;
  const size_t part_floats = size_t(p.m) * p.n;
  int64_t row = -1, row_j0 = 0, row_j1 = 0;  // the row segment awaiting the tile kernel
  for (int64_t u = units * t / threads; u < units * (t + 1) / threads; ++u) {
    const int64_t i = u / runs_per_row, j0 = u % runs_per_row * kRun;
    const int64_t j1 = std::min(p.n, j0 + kRun);
    float* c = p.c + i * p.ldc;
    const float* x = partial + i * p.n;
    for (int64_t j = j0; j < j1; ++j) {
      float sum = x[j];
      for (int s = 1; s < parts; ++s) sum += x[s * part_floats + j];
      c[j] = p.alpha * sum + (p.accumulate ? c[j] : 0.0f);
    }
    if (p.epilogue.empty()) continue;
    apply_epilogue_tile(c + j0, p.ldc, 1, j1 - j0, i, j0, p.epilogue, 0, /*tile_kernel=*/false);
    if (i != row) {
      apply_tile_kernel(p.epilogue, row, 1, row_j0, row_j1 - row_j0);
      row = i, row_j0 = j0;
    }
    row_j1 = j1;
  }
  if (row >= 0) apply_tile_kernel(p.epilogue, row, 1, row_j0, row_j1 - row_j0);
}

/// The parts' problems (K range k0.., alpha 1, no epilogue, C = their slice of `partial`) and
/// plans on num_threads / parts threads each (a plan points at its problem: `sub` must outlive
/// `plans`). False when a part would pack B per call for its whole group: the team's ring is
/// one per call, so such a call is not split.
bool make_split_plans(const GemmProblem& p, const PackedB* packed, int num_threads, int parts,
                      float* partial, std::vector<GemmProblem>& sub, std::vector<Plan>& plans) {
  sub.assign(size_t(parts), p);
  plans.clear();
  plans.reserve(size_t(parts));
  for (int s = 0; s < parts; ++s) {
    const int64_t k0 = p.k * s / parts, k1 = p.k * (s + 1) / parts;
    GemmProblem& q = sub[size_t(s)];
    q.k = k1 - k0;
    q.a = p.trans_a ? p.a + k0 * p.lda : p.a + k0;
    if (!packed) q.b = p.trans_b ? p.b + k0 : p.b + k0 * p.ldb;
    q.c = partial + size_t(s) * p.m * p.n;
    q.ldc = p.n;
    q.alpha = 1;
    q.accumulate = false;
    q.epilogue.clear();
    plans.push_back(make_plan(q, packed, num_threads / parts));
    plans.back().packed_k0 = k0;
    if (plans.back().b_source == BSource::Shared && !plans.back().private_b) return false;
  }
  return true;
}

/// The call as `parts` K ranges (split_k_parts, make_split_plans), then the reduction. False,
/// with nothing written, when the parts cannot be planned or the runtime gives a smaller team:
/// the caller then runs the unsplit plan.
bool run_split_k(const GemmProblem& p, const PackedB* packed, int num_threads, int parts) {
  const int per_part = num_threads / parts;
  float* partial = thread_scratch().partial.get(size_t(parts) * p.m * p.n);
  std::vector<GemmProblem> sub;
  std::vector<Plan> plans;
  if (!make_split_plans(p, packed, num_threads, parts, partial, sub, plans)) return false;
  std::atomic<bool> short_team{false};
#pragma omp parallel num_threads(num_threads)
  {
    const bool full = omp_get_num_threads() == num_threads;
    if (!full) short_team = true;
    const int t = omp_get_thread_num();
    const unsigned saved_csr = _mm_getcsr();
    if (p.flush_denormals) _mm_setcsr(saved_csr | 0x8040);  // FTZ | DAZ
    const Plan& mine = plans[size_t(t / per_part)];
    if (full && t % per_part < mine.grid.threads) work(mine, t % per_part, nullptr);
#pragma omp barrier
    if (full) reduce_partials(p, partial, parts, t, num_threads);
    _mm_setcsr(saved_csr);
  }
  return !short_team;
}

}  // namespace

void check_gemm_problem(const GemmProblem& p) {
  if (p.m < 0 || p.n < 0 || p.k < 0) throw std::invalid_argument("gemm: negative size");
  if (!p.c || p.ldc < p.n) throw std::invalid_argument("gemm: bad C / ldc");
  if (p.k > 0 && (!p.a || p.lda < (p.trans_a ? p.m : p.k)))
    throw std::invalid_argument("gemm: bad A / lda");
  if (p.epilogue.size() > 16) throw std::invalid_argument("gemm: more than 16 epilogue ops");
  for (const EpilogueOp& op : p.epilogue) {
    if (epilogue_needs_data(op.kind) && !op.data)
      throw std::invalid_argument("gemm: epilogue op without data");
    if (is_residual_op(op.kind) && op.ld < p.n)
      throw std::invalid_argument("gemm: residual ld < n");
    if (op.kind == EpilogueKind::Tile && (&op != &p.epilogue.back() || !op.tile || !op.tile->fn))
      throw std::invalid_argument("gemm: a tile kernel must be the last epilogue op, with a function");
  }
  const auto& cpu = xbyak::cpu_features();
  if (!cpu.avx512 && !cpu.avx2) throw std::runtime_error("gemm: needs AVX2+FMA or AVX-512");
}

bool gemm_plan_reads_b_in_place(const GemmProblem& p, int num_threads) {
  // A transposed B is always packed (make_plan): answer without planning (callers ask per call).
  if (p.m == 0 || p.n == 0 || p.trans_b) return false;
  if (num_threads > 1 && nested_region_is_serial()) num_threads = 1;
  return make_plan(p, nullptr, num_threads).b_source == BSource::Plain;
}

int gemm_split_k_parts(const GemmProblem& p, const PackedB* packed, int num_threads) {
  if (p.m == 0 || p.n == 0) return 1;
  if (num_threads > 1 && nested_region_is_serial()) num_threads = 1;
  const int parts = split_k_parts(make_plan(p, packed, num_threads), num_threads);
  std::vector<GemmProblem> sub;
  std::vector<Plan> plans;
  return parts > 1 && make_split_plans(p, packed, num_threads, parts, nullptr, sub, plans) ? parts
                                                                                           : 1;
}

void run_gemm_f32(const GemmProblem& p, const PackedB* packed, int num_threads) {
  check_gemm_problem(p);
  if (p.m == 0 || p.n == 0) return;
  if (num_threads > 1 && nested_region_is_serial()) num_threads = 1;
  const Plan plan = make_plan(p, packed, num_threads);
  if (const int parts = split_k_parts(plan, num_threads);
      parts > 1 && run_split_k(p, packed, num_threads, parts))
    return;
  SharedB shared;
  const bool team_shares_b = plan.b_source == BSource::Shared && !plan.private_b;
  if (team_shares_b) {
    const Grid& g = plan.grid;
    shared.init(plan, thread_scratch().shared_b.get(SharedB::kSlots * size_t(plan.kc) * plan.nc),
                g.tm, g.tn);
    for (int ti = 0; ti < g.tm; ++ti) {
      int64_t m0, m1;
      thread_rows(plan, ti, m0, m1);
      if (m0 < m1) continue;
      for (int tj = 0; tj < g.tn; ++tj)
        shared.progress(ti, tj).steps.store(INT64_MAX, std::memory_order_relaxed);
    }
  }
  SharedB* sb = team_shares_b ? &shared : nullptr;
  auto worker = [&](int t) {
    const unsigned saved_csr = _mm_getcsr();
    if (p.flush_denormals) _mm_setcsr(saved_csr | 0x8040);  // FTZ | DAZ
    work(plan, t, sb);
    _mm_setcsr(saved_csr);
  };
  if (plan.grid.threads == 1) return worker(0);
  // The runtime may still give a smaller team (thread limit, dynamic adjustment): the partition
  // needs exactly grid.threads, so then the call reruns on this thread.
  std::atomic<bool> short_team{false};
#pragma omp parallel num_threads(plan.grid.threads)
  {
    if (omp_get_num_threads() != plan.grid.threads)
      short_team = true;
    else
      worker(omp_get_thread_num());
  }
  if (short_team) run_gemm_f32(p, packed, 1);
}

}  // namespace inductor_cpp::matrix
