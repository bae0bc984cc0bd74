/// \file
/// Shared by the pooling lowerings (private to inductor/lower/pooling*.cpp): the window
/// geometry of a pooled op, the loop variables of a compute over a window, and the one way
/// a window is combined (unrolled into a pointwise compute when small, a reduction else).
///
/// Forward ops combine over the window: kept dims are the output's, reduce dims r0, r1 walk
/// the window (rows, then columns, the order of ATen's loops). Backward ops are gathers
/// (the IR has no scatter): each input position combines grad_output over the windows that
/// may contain it, r0, r1 walking those windows in ascending order.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "inductor/lower/elementwise.h"

namespace inductor_cpp::inductor::lowering::pooling {

using ir::BinaryOp;
using ir::DType;
using ir::Expr;
using ir::ReduceOp;

/// One spatial dim of a pooling window: output o reads input rows o*stride - pad +
/// k*dilation for k in [0, kernel).
struct WindowDim {
  int64_t in = 1, out = 1, kernel = 1, stride = 1, pad = 0, dilation = 1;

  ir::Expr start(const ir::Expr& o) const { return o * ir::Expr(stride) - ir::Expr(pad); }
  int64_t span() const { return (kernel - 1) * dilation + 1; }
};

/// The input layout and the window of a pooled op: batch dims (C, or N and C) then H, W.
struct Geometry {
  std::vector<int64_t> batch;
  WindowDim h, w;

  std::vector<int64_t> with(int64_t rows, int64_t cols) const {
    std::vector<int64_t> s = batch;
    s.push_back(rows);
    s.push_back(cols);
    return s;
  }
  std::vector<int64_t> in_sizes() const { return with(h.in, w.in); }
  std::vector<int64_t> out_sizes() const { return with(h.out, w.out); }
};

/// The batch dims of a 3-D or 4-D input; declines for other ranks.
std::vector<int64_t> batch_of(const TensorInfo& t, const char* what);
/// Reads kernel_size, stride (empty: the kernel), padding, dilation (when the op has it) and
/// ceil_mode, computes the output size as torch does (with ceil_mode the last window must
/// start inside the input or the left padding); declines where ATen would raise.
Geometry window_geometry(const NodeLowering& n, const TensorInfo& self, bool has_dilation);

/// Loop variables of a compute over batch + (rows, cols), with the window reduce vars.
struct PoolVars {
  /// Windows of at most this many positions are unrolled into a pointwise compute (as
  /// Inductor does): the vector axis is then an output dim rather than the window's few
  /// columns, and the terms combine in ATen's sequential order.
  static constexpr int64_t kMaxUnrolledWindow = 25;

  std::vector<ir::Expr> batch;
  ir::Expr row, col;
  ir::Expr r0 = ir::Expr::var(ir::reduce_var(0));
  ir::Expr r1 = ir::Expr::var(ir::reduce_var(1));
  int64_t reduce0, reduce1;  ///< the window: extents of r0, r1
  ir::RangeMap ranges;

  PoolVars(const std::vector<int64_t>& sizes, int64_t reduce0_, int64_t reduce1_);

  ir::Expr simplify(const ir::Expr& e) const { return ir::simplify(e, ranges); }
  /// batch vars + (rows, cols), simplified.
  std::vector<ir::Expr> at(const ir::Expr& rows, const ir::Expr& cols) const;
  bool unrolled() const { return reduce0 * reduce1 <= kMaxUnrolledWindow; }
  /// `e` / every index of `body` at window position (a, b).
  ir::Expr at_position(const ir::Expr& e, int64_t a, int64_t b) const;
  ir::Value at_position(const ir::Value& body, int64_t a, int64_t b) const;
};

/// A reduction compute over `sizes` with the window [reduce0, reduce1].
ir::Compute reduction(const std::string& name, const std::vector<int64_t>& sizes, int64_t reduce0,
                      int64_t reduce1, ir::ReduceOp op, const ir::Value& body);

/// Computes the output from the combined window value (a division), at the output index
/// of `vars`.
using Finish = std::function<ir::Value(const ir::Value& combined, const PoolVars& vars)>;

/// Defines output `out` as the sum or max of `body` over the window of `v` (a pointwise
/// compute when the window is unrolled, else a reduction in `body`'s type), then `finish`
/// and the cast to the output type; a reduction needing those goes through an internal
/// buffer "<out>.<suffix>".
void define_pooled(NodeLowering& n, const OutputInfo& out, const PoolVars& v, ir::ReduceOp op,
                   const ir::Value& body, const std::string& suffix, const Finish& finish);

/// The windows of one dim that may contain input row `in_var`: o = top - (count - 1) + r,
/// where top is the last window starting at or before the row; `valid` masks o < 0 and, when
/// the gather checks ends, windows that end before the row.
struct GatherDim {
  ir::Expr o;
  ir::Expr valid;
  int64_t count;
};

/// A backward gather over the input of `g`: the loop variables (the input's, with r0, r1
/// walking the windows that may contain a position), those windows per dim, and `valid`, the
/// mask of the ones that exist (with `check_end`, also of those that end before the position).
struct Gather {
  PoolVars vars;
  GatherDim h, w;
  ir::Expr valid;
};
Gather gather_windows(const Geometry& g, bool check_end);

/// Declines unless the output's dtype is `dtype`.
void expect_dtype(const OutputInfo& out, ir::DType dtype, const char* what);
/// Declines unless the tensor argument has `sizes`.
void require_same_sizes(const TensorInfo& t, const std::vector<int64_t>& sizes, const char* what);
ir::Value int64_of(const ir::Expr& e);
ir::Value int64_const(int64_t v);

/// avg_pool2d, _adaptive_avg_pool2d and their backward ops (pooling_average.cpp).
void register_average_pooling_ops(OpTable& table);

}  // namespace inductor_cpp::inductor::lowering::pooling
