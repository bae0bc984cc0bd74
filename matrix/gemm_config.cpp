/// \file gemm_config.cpp
/// \brief The blocking chosen once per process (with its tuning knobs) and the thread grid.
#include "matrix/gemm_config.h"

#include <cstdio>
#include <string>

#include "knobs/knobs.h"
#include "matrix/jit/cpu_features.h"

namespace inductor_cpp::matrix {
namespace {

using knobs::Knob;

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

}  // namespace

void choose_grid(int64_t tiles_m, int64_t tiles_n, int threads, int& tm, int& tn,
                 bool prefer_split_n, double slack) {
  auto cost = [&](int cand_tn) {
    return ceil_div(tiles_m, threads / cand_tn) * ceil_div(tiles_n, cand_tn);
  };
  int64_t best = -1;
  for (int cand_tn = 1; cand_tn <= threads; ++cand_tn)
    if (threads % cand_tn == 0 && (best < 0 || cost(cand_tn) < best)) best = cost(cand_tn);
  // The preferred side among the grids within `slack` of the best.
  const double limit = double(best) * (1 + slack);
  for (int i = 1; i <= threads; ++i) {
    const int cand_tn = prefer_split_n ? threads + 1 - i : i;
    if (threads % cand_tn || double(cost(cand_tn)) > limit) continue;
    tm = threads / cand_tn;
    tn = cand_tn;
    return;
  }
}

const GemmBlocking& gemm_blocking() {
  static const GemmBlocking blocking = [] {
    GemmBlocking b;
    // Tuning/testing knob: INDUCTOR_CPP_MATRIX_ISA=avx2 uses the AVX2 kernels on an AVX-512 host.
    const bool force_avx2 = knobs::get_text(Knob::MatrixIsa) == "avx2";
    if (!xbyak::cpu_features().avx512 || force_avx2) {
      b.isa = xbyak::Isa::Avx2;
      b.mr = 6;
      b.nr = 16;
      b.mc = 6 * 64;
      b.plain_nr = 0;
      b.pair_min_rows = 0;
      b.swap_max_rows = 0;  // measured on AVX-512 only (gemm_swapped.h)
      b.stream_max_rows = 0;  // likewise (gemm_config.h "Streamed plain B")
    }
    // Tuning knob: INDUCTOR_CPP_MATRIX_BLOCKING="mr,nr,kc,mc,nc[,plain_kc,pack_b_min_row_tiles]"
    // (read once).
    if (const auto env = knobs::raw(Knob::MatrixBlocking)) {
      long mr, nr, kc, mc, nc, plain_kc = b.plain_kc, pack_b_tiles = b.pack_b_min_row_tiles;
      if (std::sscanf(env->c_str(), "%ld,%ld,%ld,%ld,%ld,%ld,%ld", &mr, &nr, &kc, &mc, &nc,
                      &plain_kc, &pack_b_tiles) >= 5) {
        b.mr = int(mr), b.nr = int(nr), b.kc = kc, b.mc = mc / mr * mr, b.nc = nc / nr * nr;
        b.plain_kc = plain_kc, b.pack_b_min_row_tiles = pack_b_tiles;
      }
    }
    if (const auto env = knobs::raw(Knob::MatrixStream)) {
      long max_rows = b.stream_max_rows, kc = b.stream_kc, prefetch = b.stream_prefetch,
           max_b = b.stream_max_b_floats;
      if (std::sscanf(env->c_str(), "%ld,%ld,%ld,%ld", &max_rows, &kc, &prefetch, &max_b) >= 1 &&
          kc > 0) {
        b.stream_max_rows = b.isa == xbyak::Isa::Avx512 ? max_rows : 0;
        b.stream_kc = kc, b.stream_prefetch = prefetch, b.stream_max_b_floats = max_b;
      }
    }
    // Tuning knob: INDUCTOR_CPP_MATRIX_GRID_TM=tm forces tm thread rows where it divides the team.
    if (const auto tm = knobs::get_count(Knob::MatrixGridTm)) b.grid_tm = int(*tm);
    // Tuning knob: INDUCTOR_CPP_MATRIX_PAIR="min_rows[,mr,mc,kc]" (min_rows 0: no wide tile).
    if (const auto env = knobs::raw(Knob::MatrixPair)) {
      long min_rows = b.pair_min_rows, mr = b.pair_mr, mc = b.pair_mc, kc = b.pair_kc;
      if (std::sscanf(env->c_str(), "%ld,%ld,%ld,%ld", &min_rows, &mr, &mc, &kc) >= 1) {
        b.pair_min_rows = b.isa == xbyak::Isa::Avx512 ? min_rows : 0;
        b.pair_mr = int(mr), b.pair_mc = mc / mr * mr, b.pair_kc = kc;
      }
    }
    if (const auto env = knobs::raw(Knob::MatrixConvTile)) {
      long mr = 0, panels = 0;
      if (std::sscanf(env->c_str(), "%ld,%ld", &mr, &panels) >= 1) {
        b.conv_mr = int(mr);
        b.conv_panels = panels == 0 ? 0 : b.isa == xbyak::Isa::Avx512 && panels == 2 ? 2 : 1;
      }
    }
    if (const auto parts = knobs::get_count(Knob::MatrixSplitK))
      b.balance_split_k = *parts != 0, b.force_split_k = int(*parts);
    if (const auto rows = knobs::get_count(Knob::MatrixFewRows)) b.few_rows = int64_t(*rows);
    if (const auto rows = knobs::get_count(Knob::MatrixSwapRows)) b.swap_max_rows = int64_t(*rows);
    b.pack_a_always = knobs::get_text(Knob::MatrixPackA) == "always";
    return b;
  }();
  return blocking;
}

}  // namespace inductor_cpp::matrix
