/// \file
/// Copies that move elements without arithmetic: flip, repeat, and the `*_scatter` ops that
/// functionalization makes of writes into a view (`y[:, 1:5] = z` becomes slice_scatter(y, z,
/// 1, 1, 5)). Each output element loads one input element at a rewritten index, so readers
/// inline them like views; the scatters choose between the base and the source with a where
/// over a region test, the source's load masked to that region. (roll and select_scatter
/// need no row: torch's core decompositions turn them into cat/slices and where.)
#include <algorithm>

#include "inductor/lower/lowering_internal.h"

namespace inductor_cpp::inductor::lowering {
namespace {

using Index = std::vector<ir::Expr>;

/// Defines the output as out[i] = src[index_of(i)] (a copy, not a view: these ops return new
/// tensors).
void define_moved(NodeLowering& n, const TensorInfo& src, const std::vector<int64_t>& sizes,
                  const std::function<Index(const Index&)>& index_of, const std::string& what) {
  const OutputInfo out = n.output(0);
  expect_output_sizes(out, sizes, what);
  if (out.dtype != src.dtype) decline(what + " that changes the dtype");
  const ir::RangeMap ranges = range_map(out.sizes);
  Index index = index_of(range_vars(out.sizes.size()));
  for (ir::Expr& e : index) e = ir::simplify(e, ranges);
  n.define(make_pointwise(out.buffer, out.sizes, load_at(src, std::move(index)), n.node_index()));
}

/// flip(self, dims): index size-1-i along each listed dim.
void lower_flip(NodeLowering& n) {
  const TensorInfo src = n.tensor("self");
  std::vector<bool> flipped(src.rank(), false);
  for (int64_t d : n.int_list("dims")) {
    const int64_t w = wrap_dim(d, src.rank());
    if (flipped[w]) decline("flip repeats a dim");
    flipped[w] = true;
  }
  define_moved(n, src, src.sizes, [&](const Index& i) {
    Index index = i;
    for (size_t d = 0; d < src.rank(); ++d)
      if (flipped[d]) index[d] = ir::Expr(src.sizes[d] - 1) - i[d];
    return index;
  }, "flip");
}

/// repeat(self, repeats): self left-padded with size-1 dims to len(repeats) dims, tiled
/// repeats[d] times along each; out[i] = self[i mod size] over self's own dims.
void lower_repeat(NodeLowering& n) {
  const TensorInfo src = n.tensor("self");
  const std::vector<int64_t> repeats = n.int_list("repeats");
  if (repeats.size() < src.rank()) decline("repeat with fewer repeats than dims");
  const size_t lead = repeats.size() - src.rank();
  std::vector<int64_t> sizes;
  for (size_t d = 0; d < repeats.size(); ++d) {
    if (repeats[d] < 0) decline("negative repeat");
    sizes.push_back(repeats[d] * (d < lead ? 1 : src.sizes[d - lead]));
  }
  define_moved(n, src, sizes, [&](const Index& i) {
    Index index;
    for (size_t d = 0; d < src.rank(); ++d) {
      const int64_t size = src.sizes[d];
      index.push_back(repeats[lead + d] == 1 ? i[lead + d] : ir::mod(i[lead + d], ir::Expr(size)));
    }
    return index;
  }, "repeat");
}

/// out[i] = inside(i) ? src[src_index(i)] : self[i], with self and src of the output's dtype;
/// the load of src is masked to the region (its index is meaningless outside).
void define_scatter(NodeLowering& n, const TensorInfo& self, const TensorInfo& src,
                    const std::vector<int64_t>& expected_src_sizes, ir::Expr inside,
                    const Index& src_index, const std::string& what) {
  const OutputInfo out = n.output(0);
  expect_output_sizes(out, self.sizes, what);
  if (out.dtype != self.dtype || src.dtype != self.dtype)
    decline(what + " with different dtypes");
  if (src.sizes != expected_src_sizes)
    decline(what + ": source of shape " + shape_text(src.sizes) + ", the view has " +
            shape_text(expected_src_sizes));
  const ir::RangeMap ranges = range_map(out.sizes);
  inside = ir::simplify(inside, ranges);
  Index from;
  for (const ir::Expr& e : src_index) from.push_back(ir::simplify(e, ranges));
  const ir::DType compute = ir::compute_type(out.dtype);
  const ir::Value base = ir::cast(load_at(self, range_vars(self.rank())), compute);
  ir::Value value = base;
  if (inside != ir::Expr(0)) {
    const ir::Value written = ir::cast(ir::load(src.buffer, src.dtype, from, inside), compute);
    value = inside == ir::Expr(1) ? written : ir::where(index_condition(inside), written, base);
  }
  n.define(make_pointwise(out.buffer, out.sizes, ir::cast(value, out.dtype), n.node_index()));
}

/// slice_scatter(self, src, dim, start, end, step): src written over self's slice (bounds
/// clamped as slice clamps them).
void lower_slice_scatter(NodeLowering& n) {
  const TensorInfo self = n.tensor("self");
  const TensorInfo src = n.tensor("src");
  if (self.rank() == 0) decline("slice_scatter of a 0-dim tensor");
  const int64_t dim = wrap_dim(n.int_arg("dim", 0), self.rank());
  const auto [start, step, length] = slice_range(n, self.sizes[dim]);
  std::vector<int64_t> view_sizes = self.sizes;
  view_sizes[dim] = length;

  const Index i = range_vars(self.rank());
  const ir::Expr offset = i[dim] - ir::Expr(start);
  ir::Expr inside = length == 0 ? ir::Expr(0)
                                : ir::le(ir::Expr(0), offset) *
                                      ir::lt(offset, ir::Expr((length - 1) * step + 1));
  if (step > 1) inside = inside * ir::eq(ir::mod(offset, ir::Expr(step)), ir::Expr(0));
  Index from = i;
  from[dim] = step == 1 ? offset : ir::floordiv(offset, ir::Expr(step));
  define_scatter(n, self, src, view_sizes, inside, from, "slice_scatter");
}

/// diagonal_scatter(self, src, offset, dim1, dim2): src (other dims, then the diagonal)
/// written over the diagonal i[dim2] - i[dim1] == offset.
void lower_diagonal_scatter(NodeLowering& n) {
  const TensorInfo self = n.tensor("self");
  const TensorInfo src = n.tensor("src");
  const DiagonalRange r = diagonal_range(n, self.sizes);
  const Index i = range_vars(self.rank());
  Index from;
  for (size_t d = 0; d < self.rank(); ++d)
    if (!r.is_diagonal_dim(d)) from.push_back(i[d]);
  from.push_back(i[r.dim1] - ir::Expr(r.row0));
  const ir::Expr inside = r.view_sizes.back() == 0
                              ? ir::Expr(0)
                              : ir::eq(i[r.dim2] - i[r.dim1], ir::Expr(r.col0 - r.row0));
  define_scatter(n, self, src, r.view_sizes, inside, from, "diagonal_scatter");
}

}  // namespace

void register_rearrange_ops(OpTable& table) {
  table.add("aten::flip", "self dims", lower_flip);
  table.add("aten::repeat", "self repeats", lower_repeat);
  table.add("aten::slice_scatter", "self src dim start end step", lower_slice_scatter);
  table.add("aten::diagonal_scatter", "self src offset dim1 dim2", lower_diagonal_scatter);
}

}  // namespace inductor_cpp::inductor::lowering
