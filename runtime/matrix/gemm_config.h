/// \file gemm_config.h
/// \brief Private to runtime/matrix: register tile, cache blocking and threading choices.
///
/// Tile 14×32 (28 zmm accumulators, 2 B vectors, 1 broadcast): per k step 2 B loads and 14
/// broadcasts feed 28 FMAs, so loads stay under one per FMA-cycle. Kc = 256 keeps one packed B
/// micro-panel (256×32 floats = 32 KiB) in the 48 KiB L1 while the kernel walks down the rows of
/// an A block (Mc×Kc ≤ 448 KiB, L2); Nc = 1024 columns bounds the packed B block (1 MiB, L2).
#pragma once

#include <cstdint>

#include "codegen/xbyak/microkernel.h"

namespace inductor_cpp::matrix {

struct GemmBlocking {
  xbyak::Isa isa = xbyak::Isa::Avx512;
  int mr = 14;            ///< Register tile rows.
  int nr = 32;            ///< Register tile columns (= packed panel width).
  int64_t kc = 256;       ///< K block.
  int64_t plain_kc = 32;  ///< K chunk when B is read in place.
  int plain_nr = 64;      ///< Panel width when B is read in place (0: nr); mr shrinks to fit.
  int64_t pack_b_min_row_tiles =
      2;              ///< Pack a (non-transposed) B when a thread has this many row tiles.
  int64_t mc = 448;   ///< Rows of A per block (multiple of mr).
  int64_t nc = 1024;  ///< Columns of B per packed block (multiple of nr).
  int64_t serial_macs = 128 * 128 * 64;  ///< Problems with fewer multiply-adds run on one thread…
  int64_t serial_b_floats = 128 * 1024;  ///< …unless B has at least this many elements.
};

/// Splits threads into a tm × tn grid (tm·tn = threads) minimising the largest per-thread tile
/// count; ties go to splitting M (fp32: each thread then packs a disjoint part of A, B rows are a
/// cheap memcpy), or to splitting N with prefer_split_n (bf16: the VNNI packing of B costs more).
void choose_grid(int64_t tiles_m, int64_t tiles_n, int threads, int& tm, int& tn,
                 bool prefer_split_n = false);

/// The blocking in use, chosen once per process: AVX-512 values above; AVX2 (hosts without
/// AVX-512, or INDUCTOR_CPP_MATRIX_ISA=avx2) uses a 6×16 tile.
const GemmBlocking& gemm_blocking();

}  // namespace inductor_cpp::matrix
