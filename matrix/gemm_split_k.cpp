/// \file gemm_split_k.cpp
/// \brief Split-K for the fp32 GEMM driver (gemm_driver_internal.h): when the output tiles do
/// not share out evenly over the team, groups of threads each compute the whole output over
/// one K range into partial C buffers, then every thread sums a slice of them and applies the
/// epilogue. Apart from gemm_driver.cpp because it only composes that file's plans and workers.
#include <omp.h>
#include <xmmintrin.h>

#include <algorithm>
#include <atomic>

#include "matrix/epilogue.h"
#include "matrix/gemm_driver_internal.h"

namespace inductor_cpp::matrix::gemm_detail {
namespace {

constexpr int64_t kMinSplitK = 256;             ///< Shortest K range of a split-K part.
constexpr int64_t kMaxPartialFloats = 1 << 20;  ///< Largest partial C buffers (all parts).
/// Least work a split must take off the busiest thread (multiply-adds): the barrier and the
/// reduction cost a few µs. H200 host, 16 threads: 8 × 768² (24 panels, a split would save 8
/// rows × 32 × 768 = 192 Ki) was 17-20 µs unsplit against 22-24 split.
constexpr double kMinSplitSavedMacs = 256 * 1024;

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

}  // namespace

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

}  // namespace inductor_cpp::matrix::gemm_detail
