/// \file gemm_driver.cpp
/// \brief The fp32 GEMM driver (see gemm_driver.h): the per-thread loop over the team's B
/// blocks with cooperative packing into a shared ring of block buffers, and the entry points.
/// The plan it runs is made in gemm_plan.cpp; split-K calls are in gemm_split_k.cpp.
#include "matrix/gemm_driver.h"

#include <omp.h>
#include <xmmintrin.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "matrix/epilogue.h"
#include "matrix/gemm_driver_internal.h"
#include "matrix/jit/cpu_features.h"
#include "matrix/pack.h"

namespace inductor_cpp::matrix {
namespace gemm_detail {

Scratch& thread_scratch() {
  thread_local Scratch scratch;
  return scratch;
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

namespace {

using xbyak::MicroKernelArgs;

/// Rows per A block for a thread's `rows`: the fewest blocks of at most 1.15 · mc rows, made even
/// (multiples of mr). Each block streams every B panel of the step through L2 once, so a thread
/// that ended on a sliver (256 rows in blocks of 120: 120 + 120 + 16) paid a third more B traffic
/// for 6 % of its work; now 132 + 124.
int64_t block_rows(int64_t rows, int64_t mc, int mr) {
  const int64_t blocks = std::max<int64_t>(1, ceil_div(rows * 20, mc * 23));
  return ceil_div(ceil_div(rows, blocks), mr) * mr;
}

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
    // runs, and its call overhead is paid once per block (`bench matrix --rows tile`:
    // per strip, z/2 + y² at 8192 x 1024 x 32 read 0.94x the separate kernel; per block 1.15x).
    if (epilogue_now) {
      const int64_t col0 = nc0 + p0 * nr, col1 = std::min(p.n, nc0 + p1 * nr);
      apply_tile_kernel(p.epilogue, mc0, mc1 - mc0, col0, col1 - col0);
    }
  }
}

}  // namespace

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

}  // namespace gemm_detail

namespace {

using namespace gemm_detail;

/// Whether a parallel region opened here would get a team of one (already inside an active
/// region with nesting unavailable).
bool nested_region_is_serial() {
  return omp_get_active_level() >= omp_get_max_active_levels();
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
      throw std::invalid_argument(
          "gemm: a tile kernel must be the last epilogue op, with a function");
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