/// \file attention_tiles.h
/// \brief Tables of FMA micro-kernels by tile rows, and the loop running them over a block: the
/// building blocks that attention's forward (attention.cpp) and backward
/// (attention_backward.cpp) share. Each call builds its tables once (kernels come from the
/// process-wide cache, matrix/jit/microkernel.h) and then runs tiles without lookups.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "matrix/jit/microkernel.h"

namespace inductor_cpp::matrix::attention_tiles {

/// Micro-kernels of one call, by rows (1..max) and whether the columns are the full tile width
/// or the call's tail.
struct KernelTable {
  std::vector<xbyak::MicroKernelFn> full, tail;  ///< index rows - 1
  int cols_tail = 0;
  xbyak::MicroKernelFn get(int rows, bool tail_cols) const {
    return (tail_cols ? tail : full)[size_t(rows - 1)];
  }
};

/// Kernels for tiles of 1..max_rows rows × `cols` columns (and × `cols_tail` when not 0).
inline KernelTable make_kernels(xbyak::MicroKernelDesc d, int max_rows, int cols, int cols_tail) {
  KernelTable t;
  t.cols_tail = cols_tail;
  for (int r = 1; r <= max_rows; ++r) {
    d.mr = r;
    d.nr = cols;
    t.full.push_back(xbyak::get_microkernel(d));
    if (cols_tail) {
      d.nr = cols_tail;
      t.tail.push_back(xbyak::get_microkernel(d));
    }
  }
  return t;
}

/// Runs `table` over a rows × cols block of tiles of tile_rows × tile_cols: A row i at
/// a + i·a_row_stride, the B of column tile t at b + t·b_tile_stride, C at c + i·ldc + j.
inline void tiled(const KernelTable& table, int64_t rows, int64_t cols, int tile_rows,
                  int tile_cols, const float* a, int64_t a_row_stride, const float* b,
                  int64_t b_tile_stride, float* c, int64_t ldc, int64_t k) {
  for (int64_t j = 0; j < cols; j += tile_cols) {
    const bool tail = cols - j < tile_cols;
    for (int64_t i = 0; i < rows; i += tile_rows) {
      const int r = int(std::min<int64_t>(tile_rows, rows - i));
      const float* a_ptr = a + i * a_row_stride;
      const float* b_ptr = b + j / tile_cols * b_tile_stride;
      xbyak::MicroKernelArgs args;
      args.a = &a_ptr, args.b = &b_ptr, args.batch = 1, args.k = k;
      args.c = c + i * ldc + j;
      table.get(r, tail)(&args);
    }
  }
}

}  // namespace inductor_cpp::matrix::attention_tiles
