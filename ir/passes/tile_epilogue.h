/// \file
/// Tile epilogues: a pointwise kernel that consumes a matrix step's output (mm / addmm, conv2d) and
/// that the matrix library's fixed epilogue ops cannot express (`x * 0.5 + y * y`, a gate with
/// a broadcast operand, a cast-free mix of activations) rescheduled to run on one finished
/// output tile at a time, inside the matrix kernel's own loop, while the tile is still in
/// L1/L2: one pass over memory less, and one parallel region less.
///
/// The tile kernel is the consumer's own compute over a symbolic window of the [rows, cols]
/// output (a convolution's: [N·OH·OW, OC]): loop extents `tile_rows` × `tile_cols`, indices shifted
/// by `tile_row0` / `tile_col0` (absolute position of the tile's first element). It keeps the
/// ordinary kernel signature
///   extern "C" int32_t name(char* const* bufs, const int64_t* symbols, int32_t num_threads)
/// with symbols, in this order, {tile_row0, tile_rows, tile_col0, tile_cols}; bufs hold the
/// whole buffers (the matrix output, read, and the consumer's output, written, are the same
/// storage: the kernel reads each element of the matrix output exactly where it writes its own
/// output, and before it does, so the matrix step writes the consumer's buffer directly).
///
/// Conditions (anything else keeps the consumer a kernel of its own):
///   * no transcendental function (exp, log, sigmoid, tanh, erf, pow, trigonometric, ...): such
///     consumers are compute-bound and measured 0.91-0.97x as tile kernels (unexplained; the
///     cheap ones gain 0-18 %), docs/matrix/gemm.md;
///   * the step is a kernel of one pointwise compute (not a view), float32, whose buffer is
///     dense with offset 0 in some dimension order, `rows · cols` elements and a `cols`-sized
///     innermost dim (the matrix output itself, a row-major reshape of it such as Linear's
///     [B, S, N], or a convolution's channels-last [N, C, H, W]: the row splits into the outer
///     dims in memory order);
///   * rescheduled over the window it stores once, has no parallel loop, and reads the matrix
///     output only at the offsets it writes (plan_memory.h reads_only_where_written).
/// Which other buffers it may read (ready before the matrix step runs) is the caller's check.
#pragma once

#include <optional>
#include <string>

#include "ir/kernel_ir.h"
#include "ir/loop_ir.h"

namespace inductor_cpp::ir {

struct TileEpilogueRequest {
  size_t step = 0;            ///< the consumer's kernel step in the (fused) program
  std::string matrix_output;  ///< the buffer the matrix step computes, [rows, cols] row-major
  int64_t rows = 0, cols = 0;
  std::string name;  ///< the tile kernel's name
};

/// The symbols of a tile kernel, in Kernel::symbols order.
inline constexpr const char* kTileSymbols[4] = {"tile_row0", "tile_rows", "tile_col0", "tile_cols"};

struct TileEpilogue {
  Kernel kernel;        ///< params name the program's buffers (the written one: `written`)
  std::string written;  ///< the consumer's buffer
};

/// The tile kernel for `request`, or nothing (with the reason in `why_not`, when given).
std::optional<TileEpilogue> tile_epilogue_kernel(const LoopProgram& program,
                                                 const TileEpilogueRequest& request,
                                                 std::string* why_not = nullptr);

}  // namespace inductor_cpp::ir
