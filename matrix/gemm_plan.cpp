/// \file gemm_plan.cpp
/// \brief The fp32 GEMM driver's plan (gemm_driver_internal.h): the thread grid, where B is
/// read from (pre-packed, packed per call by the team, read in place or streamed), A packing,
/// K and N blocking, and the micro-kernel for every tile shape the call meets. Made once per
/// call before any worker starts; apart from the workers' loop in gemm_driver.cpp.
#include <algorithm>
#include <stdexcept>

#include "matrix/epilogue.h"
#include "matrix/gemm_driver_internal.h"

namespace inductor_cpp::matrix::gemm_detail {
namespace {

using xbyak::MicroKernelDesc;
using xbyak::MicroKernelFn;

/// Whether B is streamed: read in place over an N split, in K chunks of stream_kc with
/// prefetch (gemm_config.h "Streamed plain B"): few rows times a plain B of one to a few
/// MiB, with enough column panels for every thread.
bool streams_plain_b(const GemmBlocking& blk, const GemmProblem& p, const Grid& g) {
  return blk.stream_max_rows > 0 && !p.trans_b && p.m >= 2 && p.m <= blk.stream_max_rows &&
         p.n * p.k >= blk.stream_min_b_floats && p.n * p.k <= blk.stream_max_b_floats &&
         g.tiles_n >= g.threads * blk.stream_min_panels;
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

}  // namespace

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

}  // namespace inductor_cpp::matrix::gemm_detail
