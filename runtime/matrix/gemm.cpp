/// \file gemm.cpp
/// \brief The GEMM driver: argument checks, kernel selection, cache blocking, static M×N
/// partition over OpenMP threads, and the per-thread block loop (see gemm_config.h for sizes).
#include "runtime/matrix/gemm.h"

#include <omp.h>
#include <xmmintrin.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <vector>

#include "codegen/xbyak/cpu_features.h"
#include "codegen/xbyak/microkernel.h"
#include "runtime/matrix/epilogue.h"
#include "runtime/matrix/gemm_config.h"
#include "runtime/matrix/pack.h"

namespace inductor_cpp::matrix {
namespace {

using xbyak::MicroKernelArgs;
using xbyak::MicroKernelDesc;
using xbyak::MicroKernelFn;

enum Phase { kOnly, kFirst, kMiddle, kLast, kNumPhases };

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

/// Per-thread scratch that grows and is reused across calls (OpenMP workers persist). Only the
/// owning thread touches it, and no gemm call runs nested inside another on one thread.
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
  };
  Buffer a, b;
};
Scratch& thread_scratch() {
  thread_local Scratch scratch;
  return scratch;
}

/// Everything the workers share for one call (read-only once built).
struct Plan {
  const GemmProblem* p = nullptr;
  const PackedB* packed = nullptr;
  GemmBlocking blk;
  bool pack_b = false, pack_a = false;
  int64_t kc = 0, nkb = 1;
  size_t jit_epilogue = 0;
  MicroKernelFn kernels[kNumPhases][2][2] = {};
};

MicroKernelFn kernel_for(const Plan& plan, Phase phase, int rows, int cols) {
  const GemmProblem& p = *plan.p;
  MicroKernelDesc d;
  d.isa = plan.blk.isa;
  d.mr = rows;
  d.nr = cols;
  d.k = 0;
  d.a_row_stride = plan.pack_a ? 1 : p.lda;
  d.a_k_stride = plan.pack_a ? plan.blk.mr : 1;
  const bool b_packed = plan.packed || plan.pack_b;
  d.ldb = b_packed ? plan.blk.nr : p.ldb;
  d.b_layout = b_packed ? xbyak::BLayout::Packed : xbyak::BLayout::Plain;
  d.ldc = p.ldc;
  d.alpha = p.alpha;
  d.accumulate = (phase == kOnly || phase == kFirst) ? p.accumulate : true;
  if (phase == kOnly || phase == kLast) d.epilogue = kernel_epilogue(p.epilogue, plan.jit_epilogue);
  return xbyak::get_microkernel(d);
}

void select_kernels(Plan& plan) {
  const GemmProblem& p = *plan.p;
  const int mr = plan.blk.mr, nr = plan.blk.nr;
  const int row_tail = int(p.m % mr), col_tail = int(p.n % nr);
  const bool phases[kNumPhases] = {plan.nkb == 1, plan.nkb > 1, plan.nkb > 2, plan.nkb > 1};
  for (int ph = 0; ph < kNumPhases; ++ph) {
    if (!phases[ph]) continue;
    for (int rt = 0; rt < 2; ++rt)
      for (int ct = 0; ct < 2; ++ct) {
        const int rows = rt ? row_tail : std::min<int64_t>(mr, p.m);
        const int cols = ct ? col_tail : std::min<int64_t>(nr, p.n);
        if (rows == 0 || cols == 0) continue;
        plan.kernels[ph][rt][ct] = kernel_for(plan, Phase(ph), rows, cols);
      }
  }
}

void run_block(const Plan& plan, int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
  const GemmProblem& p = *plan.p;
  const GemmBlocking& blk = plan.blk;
  const int mr = blk.mr, nr = blk.nr;
  Scratch& scratch = thread_scratch();
  float* b_buf = plan.pack_b
                     ? scratch.b.get(size_t(plan.kc) * std::min(blk.nc, ceil_div(n1 - n0, nr) * nr))
                     : nullptr;
  float* a_buf = plan.pack_a
                     ? scratch.a.get(size_t(ceil_div(std::min(blk.mc, m1 - m0), mr) * mr * plan.kc))
                     : nullptr;
  const float* epilogue_data[16] = {};
  for (int64_t nc0 = n0; nc0 < n1; nc0 += blk.nc) {
    const int64_t nc1 = std::min(n1, nc0 + blk.nc);
    for (int64_t kb = 0; kb < plan.nkb; ++kb) {
      const int64_t k0 = kb * plan.kc, kcur = std::min(plan.kc, p.k - k0);
      const Phase phase = plan.nkb == 1        ? kOnly
                          : kb == 0            ? kFirst
                          : kb + 1 == plan.nkb ? kLast
                                               : kMiddle;
      const bool epilogue_now = phase == kOnly || phase == kLast;
      if (plan.pack_b)
        pack_b_panels(p.b, p.ldb, p.trans_b, k0, kcur, nc0, nc1 - nc0, nr, kcur * nr, b_buf);
      for (int64_t mc0 = m0; mc0 < m1; mc0 += blk.mc) {
        const int64_t mc1 = std::min(m1, mc0 + blk.mc);
        const float* a_block = p.a + mc0 * p.lda + k0;
        int64_t a_tile_stride = mr * p.lda;  // from one row tile to the next
        if (plan.pack_a) {
          pack_a_tiles(p.a, p.lda, p.trans_a, mc0, mc1 - mc0, k0, kcur, mr, a_buf);
          a_block = a_buf;
          a_tile_stride = mr * kcur;
        }
        for (int64_t j = nc0; j < nc1; j += nr) {
          const int cols = int(std::min<int64_t>(nr, nc1 - j));
          const float* b_ptr = plan.packed   ? plan.packed->panel(j / nr) + k0 * nr
                               : plan.pack_b ? b_buf + ((j - nc0) / nr) * kcur * nr
                                             : p.b + k0 * p.ldb + j;
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
            if (epilogue_now) {
              for (size_t e = 0; e < plan.jit_epilogue; ++e) {
                const EpilogueOp& op = p.epilogue[e];
                epilogue_data[e] = op.kind == EpilogueKind::BiasRow       ? op.data + i
                                   : op.kind == EpilogueKind::BiasCol     ? op.data + j
                                   : op.kind == EpilogueKind::AddResidual ? op.data + i * op.ld + j
                                                                          : nullptr;
              }
              args.epilogue_data = epilogue_data;
            }
            plan.kernels[phase][rows != mr][cols != nr](&args);
            if (epilogue_now && plan.jit_epilogue < p.epilogue.size())
              apply_epilogue_tile(c_ptr, p.ldc, rows, cols, i, j, p.epilogue, plan.jit_epilogue);
          }
        }
      }
    }
  }
}

void check_problem(const GemmProblem& p) {
  if (p.m < 0 || p.n < 0 || p.k < 0) throw std::invalid_argument("gemm: negative size");
  if (!p.c || p.ldc < p.n) throw std::invalid_argument("gemm: bad C / ldc");
  if (p.k > 0 && (!p.a || p.lda < (p.trans_a ? p.m : p.k)))
    throw std::invalid_argument("gemm: bad A / lda");
  if (p.epilogue.size() > 16) throw std::invalid_argument("gemm: more than 16 epilogue ops");
  for (const EpilogueOp& op : p.epilogue) {
    const bool needs_data = op.kind == EpilogueKind::BiasRow || op.kind == EpilogueKind::BiasCol ||
                            op.kind == EpilogueKind::AddResidual;
    if (needs_data && !op.data) throw std::invalid_argument("gemm: epilogue op without data");
    if (op.kind == EpilogueKind::AddResidual && op.ld < p.n)
      throw std::invalid_argument("gemm: residual ld < n");
  }
  const auto& cpu = xbyak::cpu_features();
  if (!cpu.avx512 && !cpu.avx2) throw std::runtime_error("gemm: needs AVX2+FMA or AVX-512");
}

/// The static thread partition of the mr × nr tiles.
struct Grid {
  int threads = 1, tm = 1, tn = 1;
  int64_t tiles_m = 0, tiles_n = 0;
  int64_t tiles_m_per_thread() const { return ceil_div(tiles_m, tm); }
};

Grid partition(const GemmBlocking& blk, const GemmProblem& p, int num_threads) {
  Grid g;
  g.tiles_m = ceil_div(p.m, blk.mr);
  g.tiles_n = ceil_div(p.n, blk.nr);
  g.threads = std::max(1, num_threads);
  // Small problems run on the caller, unless B is big enough that reading it is the cost (skinny
  // M): then two cores' cache bandwidth beats one.
  if (p.m * p.n * std::max<int64_t>(p.k, 1) < blk.serial_macs && p.n * p.k < blk.serial_b_floats)
    g.threads = 1;
  g.threads = int(std::min<int64_t>(g.threads, g.tiles_m * g.tiles_n));
  choose_grid(g.tiles_m, g.tiles_n, g.threads, g.tm, g.tn);
  return g;
}

void run(const GemmProblem& p, const PackedB* packed, int num_threads) {
  check_problem(p);
  if (p.m == 0 || p.n == 0) return;
  Plan plan;
  plan.p = &p;
  plan.packed = packed;
  plan.blk = gemm_blocking();
  if (packed && packed->panel_width() != plan.blk.nr)
    throw std::invalid_argument("gemm: PackedB panel width mismatch");
  Grid g = partition(plan.blk, p, num_threads);
  plan.pack_b = !packed && (p.trans_b || g.tiles_m_per_thread() >= plan.blk.pack_b_min_row_tiles);
  if (!packed && !plan.pack_b && plan.blk.plain_nr > 0 && p.n >= plan.blk.plain_nr &&
      p.m <= xbyak::max_rows(plan.blk.isa, plan.blk.plain_nr)) {
    // B read in place by one short row tile (M ≤ 6): wider panels read longer runs of each B row
    // per kernel (measured: helps M = 1, hurts M = 8 split into 6 + 2 rows).
    plan.blk.nr = plan.blk.plain_nr;
    plan.blk.mr = std::min(plan.blk.mr, xbyak::max_rows(plan.blk.isa, plan.blk.nr));
    plan.blk.mc = std::max<int64_t>(1, plan.blk.mc / plan.blk.mr) * plan.blk.mr;
    g = partition(plan.blk, p, num_threads);
  }
  // Pack A into row tiles when it is transposed, or reused across column panels while its rows
  // are a multiple of 2 KiB apart (they would then share one or two L1 sets: 14 rows, 12 ways).
  plan.pack_a = p.trans_a || (p.m > 1 && ceil_div(g.tiles_n, g.tn) >= 2 && p.lda % 512 == 0);
  // Packed B: K blocks keep a B micro-panel in L1 across the row tiles (one row tile: no reuse,
  // whole K). Plain B (few row tiles, read in place): short K chunks, so that consecutive
  // kernels walk along the rows of B (a few parallel streams) instead of down its columns.
  const bool b_is_packed = packed || plan.pack_b;
  const int64_t kc_target = !b_is_packed                 ? plan.blk.plain_kc
                            : g.tiles_m_per_thread() > 1 ? plan.blk.kc
                                                         : p.k;
  plan.nkb = std::max<int64_t>(1, ceil_div(p.k, std::max<int64_t>(kc_target, 1)));
  plan.kc = std::max<int64_t>(1, ceil_div(p.k, plan.nkb));
  plan.jit_epilogue = jit_epilogue_prefix(p.epilogue);
  select_kernels(plan);
  const int mr = plan.blk.mr, nr = plan.blk.nr, tm = g.tm, tn = g.tn, threads = g.threads;
  const int64_t tiles_m = g.tiles_m, tiles_n = g.tiles_n;

  auto worker = [&](int t) {
    const unsigned saved_csr = _mm_getcsr();
    if (p.flush_denormals) _mm_setcsr(saved_csr | 0x8040);  // FTZ | DAZ
    const int64_t ti = t / tn, tj = t % tn;
    const int64_t m0 = std::min(p.m, ti * tiles_m / tm * mr),
                  m1 = std::min(p.m, (ti + 1) * tiles_m / tm * mr);
    const int64_t n0 = std::min(p.n, tj * tiles_n / tn * nr),
                  n1 = std::min(p.n, (tj + 1) * tiles_n / tn * nr);
    if (m0 < m1 && n0 < n1) run_block(plan, m0, m1, n0, n1);
    _mm_setcsr(saved_csr);
  };
  if (threads == 1) return worker(0);
#pragma omp parallel num_threads(threads)
  worker(omp_get_thread_num());
}

/// Too few output tiles for the threads but a long K (e.g. a 1×32 row times a 4096×32 matrix):
/// split K instead of idling threads.
bool use_split_k(const GemmProblem& p, int num_threads) {
  const GemmBlocking& blk = gemm_blocking();
  return num_threads > 1 && p.k >= 1024 &&
         ceil_div(p.m, blk.mr) * ceil_div(p.n, blk.nr) < num_threads &&
         (p.m * p.n * p.k >= blk.serial_macs || p.n * p.k >= blk.serial_b_floats);
}

/// Each thread reduces one K range into a private m×n buffer (alpha 1, no epilogue); the caller
/// then sums them in thread order (deterministic), applies alpha / accumulate, and the epilogue.
void run_split_k(const GemmProblem& p, int num_threads) {
  check_problem(p);
  const int parts = num_threads;
  std::vector<float> partial(size_t(parts) * p.m * p.n);
#pragma omp parallel for num_threads(parts) schedule(static)
  for (int t = 0; t < parts; ++t) {
    const int64_t k0 = p.k * t / parts, k1 = p.k * (t + 1) / parts;
    GemmProblem q;
    q.m = p.m, q.n = p.n, q.k = k1 - k0;
    q.a = p.trans_a ? p.a + k0 * p.lda : p.a + k0, q.lda = p.lda, q.trans_a = p.trans_a;
    q.b = p.trans_b ? p.b + k0 : p.b + k0 * p.ldb, q.ldb = p.ldb, q.trans_b = p.trans_b;
    q.c = partial.data() + size_t(t) * p.m * p.n, q.ldc = p.n;
    q.flush_denormals = p.flush_denormals;
    run(q, nullptr, 1);
  }
  const unsigned saved_csr = _mm_getcsr();
  if (p.flush_denormals) _mm_setcsr(saved_csr | 0x8040);
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t j = 0; j < p.n; ++j) {
      float sum = 0;
      for (int t = 0; t < parts; ++t) sum += partial[(size_t(t) * p.m + i) * p.n + j];
      float& c = p.c[i * p.ldc + j];
      c = p.alpha * sum + (p.accumulate ? c : 0.0f);
    }
  apply_epilogue_tile(p.c, p.ldc, p.m, p.n, 0, 0, p.epilogue, 0);
  _mm_setcsr(saved_csr);
}

}  // namespace

PackedB pack_b_f32(const float* b, int64_t k, int64_t n, int64_t ldb, bool trans_b) {
  if (k < 0 || n < 0 || !b) throw std::invalid_argument("pack_b_f32: bad arguments");
  const int nr = gemm_blocking().nr;
  PackedB packed(k, n, nr);
  if (k > 0 && n > 0)
    pack_b_panels(b, ldb, trans_b, 0, k, 0, n, nr, k * nr, packed.mutable_panel(0));
  return packed;
}

void gemm_f32(const GemmProblem& p, int num_threads) {
  if (p.k > 0 && (!p.b || p.ldb < (p.trans_b ? p.k : p.n)))
    throw std::invalid_argument("gemm: bad B / ldb");
  if (use_split_k(p, num_threads)) return run_split_k(p, num_threads);
  run(p, nullptr, num_threads);
}

void gemm_f32_packed(const GemmProblem& p, const PackedB& packed, int num_threads) {
  if (packed.k() != p.k || packed.n() != p.n)
    throw std::invalid_argument("gemm: PackedB shape mismatch");
  run(p, &packed, num_threads);
}

void bmm_f32(const GemmProblem& p, int64_t batch, int64_t stride_a, int64_t stride_b,
             int64_t stride_c, int num_threads) {
  auto one = [&](int64_t t, int threads) {
    GemmProblem q = p;
    q.a += t * stride_a;
    q.b += t * stride_b;
    q.c += t * stride_c;
    for (EpilogueOp& op : q.epilogue)
      if (op.kind == EpilogueKind::AddResidual) op.data += t * stride_c;
    gemm_f32(q, threads);
  };
  if (batch >= num_threads && num_threads > 1) {
#pragma omp parallel for num_threads(num_threads) schedule(static)
    for (int64_t t = 0; t < batch; ++t) one(t, 1);
    return;
  }
  for (int64_t t = 0; t < batch; ++t) one(t, num_threads);
}

}  // namespace inductor_cpp::matrix
