/// \file
/// View ops as index rewrites: each becomes a `view` compute whose body loads its input at
/// indices computed from the output's loop variables (no copy; readers inline it). Shapes are
/// recomputed from the arguments with torch's rules and checked against the metadata.
#include <algorithm>
#include <numeric>

#include "inductor/lower/lowering_internal.h"

namespace inductor_cpp::inductor::lowering {
namespace {

using Index = std::vector<ir::Expr>;
using IndexFn = std::function<Index(const Index& out_index)>;

/// Defines output `k` as a view of `src` of shape `sizes`: out[i] = src[index_of(i)], each
/// index simplified with the output's loop ranges.
void define_view(NodeLowering& n, const TensorInfo& src, const std::vector<int64_t>& sizes,
                 const IndexFn& index_of, size_t k = 0) {
  const OutputInfo out = n.output(k);
  expect_output_sizes(out, sizes, "the view");
  if (out.dtype != src.dtype) decline("a view that changes the dtype");
  const ir::RangeMap ranges = range_map(out.sizes);
  Index index = index_of(range_vars(out.sizes.size()));
  for (ir::Expr& e : index) e = ir::simplify(e, ranges);
  n.define(make_pointwise(out.buffer, out.sizes, load_at(src, std::move(index)), n.node_index(),
                          /*view=*/true));
}

/// The input index of a reshape, group by group: input and output dims (size-1 dims aside)
/// split into the smallest groups with equal products; within a group, the output position is
/// linearized over the group's output dims and delinearized over its input dims. Keeping the
/// groups apart yields plain expressions (`i0 // 3, i0 % 3`) without relying on the
/// simplifier to see through a whole-tensor linearization.
Index reshape_index(const Index& out_index, const std::vector<int64_t>& out_sizes,
                    const std::vector<int64_t>& in_sizes) {
  std::vector<size_t> in_dims, out_dims;
  for (size_t d = 0; d < in_sizes.size(); ++d)
    if (in_sizes[d] != 1) in_dims.push_back(d);
  for (size_t d = 0; d < out_sizes.size(); ++d)
    if (out_sizes[d] != 1) out_dims.push_back(d);
  Index index(in_sizes.size(), ir::Expr(0));
  size_t a = 0, b = 0;
  while (a < in_dims.size() && b < out_dims.size()) {
    size_t a_end = a + 1, b_end = b + 1;
    int64_t in_product = in_sizes[in_dims[a]], out_product = out_sizes[out_dims[b]];
    while (in_product != out_product) {
      if (in_product < out_product) {
        if (a_end == in_dims.size()) decline("reshape sizes do not match");
        in_product *= in_sizes[in_dims[a_end++]];
      } else {
        if (b_end == out_dims.size()) decline("reshape sizes do not match");
        out_product *= out_sizes[out_dims[b_end++]];
      }
    }
    ir::Expr position(0);
    for (size_t k = b; k < b_end; ++k)
      position = position * ir::Expr(out_sizes[out_dims[k]]) + out_index[out_dims[k]];
    int64_t stride = 1;
    for (size_t k = a_end; k-- > a;) {
      ir::Expr e = stride == 1 ? position : ir::floordiv(position, ir::Expr(stride));
      if (k != a) e = ir::mod(e, ir::Expr(in_sizes[in_dims[k]]));
      index[in_dims[k]] = e;
      stride *= in_sizes[in_dims[k]];
    }
    a = a_end;
    b = b_end;
  }
  if (a != in_dims.size() || b != out_dims.size()) decline("reshape sizes do not match");
  return index;
}

/// torch's size inference for view/reshape: one -1 takes what is left.
std::vector<int64_t> infer_size(std::vector<int64_t> sizes, int64_t numel) {
  int64_t known = 1;
  std::optional<size_t> infer;
  for (size_t k = 0; k < sizes.size(); ++k) {
    if (sizes[k] == -1) {
      if (infer) decline("more than one -1 in a view size");
      infer = k;
    } else if (sizes[k] < 0) {
      decline("negative view size");
    } else {
      known *= sizes[k];
    }
  }
  if (infer) {
    if (known == 0 || numel % known != 0) decline("view size does not divide the numel");
    sizes[*infer] = numel / known;
  }
  int64_t total = 1;
  for (int64_t s : sizes) total *= s;
  if (total != numel) decline("view size " + shape_text(sizes) + " has a different numel");
  return sizes;
}

void lower_reshape(NodeLowering& n, const std::string& size_param) {
  const TensorInfo src = n.tensor("self");
  const std::vector<int64_t> sizes = infer_size(n.int_list(size_param), src.numel());
  define_view(n, src, sizes, [&](const Index& i) { return reshape_index(i, sizes, src.sizes); });
}

void lower_permute(NodeLowering& n, std::vector<int64_t> dims) {
  const TensorInfo src = n.tensor("self");
  if (dims.size() != src.rank()) decline("permute with a wrong number of dims");
  std::vector<bool> seen(src.rank(), false);
  std::vector<int64_t> sizes;
  for (int64_t& d : dims) {
    d = wrap_dim(d, src.rank());
    if (seen.at(d)) decline("permute repeats a dim");
    seen[d] = true;
    sizes.push_back(src.sizes[d]);
  }
  define_view(n, src, sizes, [&](const Index& i) {
    Index index(src.rank());
    for (size_t j = 0; j < dims.size(); ++j) index[dims[j]] = i[j];
    return index;
  });
}

/// The permutation swapping two dims (identity elsewhere).
std::vector<int64_t> swap_dims(size_t rank, int64_t a, int64_t b) {
  std::vector<int64_t> dims(rank);
  std::iota(dims.begin(), dims.end(), 0);
  if (rank == 0) return dims;
  std::swap(dims[wrap_dim(a, rank)], dims[wrap_dim(b, rank)]);
  return dims;
}

void lower_expand(NodeLowering& n) {
  const TensorInfo src = n.tensor("self");
  n.bool_arg("implicit", false);
  std::vector<int64_t> sizes = n.int_list("size");
  if (sizes.size() < src.rank()) decline("expand to fewer dims");
  const size_t lead = sizes.size() - src.rank();
  for (size_t d = 0; d < src.rank(); ++d) {
    int64_t& s = sizes[lead + d];
    if (s == -1) s = src.sizes[d];
    if (src.sizes[d] != 1 && s != src.sizes[d]) decline("expand of a non-1 dim");
  }
  for (size_t d = 0; d < lead; ++d)
    if (sizes[d] < 0) decline("-1 in a new leading dim of expand");
  define_view(n, src, sizes, [&](const Index& i) {
    Index index;
    for (size_t d = 0; d < src.rank(); ++d)
      index.push_back(src.sizes[d] == 1 ? ir::Expr(0) : i[lead + d]);
    return index;
  });
}

/// squeeze of the size-1 dims among `dims` (all dims when nullopt).
void lower_squeeze(NodeLowering& n, const std::optional<std::vector<int64_t>>& dims) {
  const TensorInfo src = n.tensor("self");
  std::vector<bool> drop(src.rank(), !dims.has_value());
  if (dims)
    for (int64_t d : *dims) {
      const int64_t w = wrap_dim(d, src.rank());
      if (src.rank() > 0) drop[w] = true;
    }
  std::vector<int64_t> sizes;
  for (size_t d = 0; d < src.rank(); ++d) {
    drop[d] = drop[d] && src.sizes[d] == 1;
    if (!drop[d]) sizes.push_back(src.sizes[d]);
  }
  define_view(n, src, sizes, [&](const Index& i) {
    Index index;
    size_t k = 0;
    for (size_t d = 0; d < src.rank(); ++d) index.push_back(drop[d] ? ir::Expr(0) : i[k++]);
    return index;
  });
}

void lower_unsqueeze(NodeLowering& n) {
  const TensorInfo src = n.tensor("self");
  const int64_t dim = wrap_dim(n.int_arg("dim"), src.rank() + 1);
  std::vector<int64_t> sizes = src.sizes;
  sizes.insert(sizes.begin() + dim, 1);
  define_view(n, src, sizes, [&](const Index& i) {
    Index index = i;
    index.erase(index.begin() + dim);
    return index;
  });
}

/// slice.Tensor with torch's clamping: negative bounds count from the end, bounds are clamped
/// to [0, size], an empty range stays empty (and then declines as zero-size).
void lower_slice(NodeLowering& n) {
  const TensorInfo src = n.tensor("self");
  if (src.rank() == 0) decline("slice of a 0-dim tensor");
  const int64_t dim = wrap_dim(n.int_arg("dim", 0), src.rank());
  const SliceRange r = slice_range(n, src.sizes[dim]);
  std::vector<int64_t> sizes = src.sizes;
  sizes[dim] = r.length;
  define_view(n, src, sizes, [&](const Index& i) {
    Index index = i;
    index[dim] = ir::Expr(r.start) + i[dim] * ir::Expr(r.step);
    return index;
  });
}

/// narrow(self, dim, start, length): a slice of `length` from `start` (negative counts from the
/// end); unlike slice, a range past the end is an error in torch, so it declines.
void lower_narrow(NodeLowering& n) {
  const TensorInfo src = n.tensor("self");
  if (src.rank() == 0) decline("narrow of a 0-dim tensor");
  const int64_t dim = wrap_dim(n.int_arg("dim"), src.rank());
  int64_t start = n.int_arg("start");
  const int64_t length = n.int_arg("length");
  if (start < 0) start += src.sizes[dim];
  if (start < 0 || length < 0 || start + length > src.sizes[dim]) decline("narrow out of range");
  std::vector<int64_t> sizes = src.sizes;
  sizes[dim] = length;
  define_view(n, src, sizes, [&](const Index& i) {
    Index index = i;
    index[dim] = ir::Expr(start) + i[dim];
    return index;
  });
}

/// split_with_sizes / split.Tensor / unbind: output k is the k-th piece of `self` along `dim`
/// (`sizes` pieces; `drop_dim`: unbind's pieces of size 1 lose the dim), each a view.
void define_pieces(NodeLowering& n, const TensorInfo& src, int64_t dim,
                   const std::vector<int64_t>& sizes, bool drop_dim) {
  if (sizes.size() != n.output_count())
    decline("split into " + std::to_string(sizes.size()) + " pieces, the graph has " +
            std::to_string(n.output_count()) + " outputs");
  int64_t start = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    if (sizes[k] < 0) decline("a negative split size");
    std::vector<int64_t> piece = src.sizes;
    piece[dim] = sizes[k];
    if (drop_dim) piece.erase(piece.begin() + dim);
    define_view(
        n, src, piece,
        [&](const Index& i) {
          Index index = i;
          if (drop_dim) {
            index.insert(index.begin() + dim, ir::Expr(start));
          } else {
            index[dim] = ir::Expr(start) + i[dim];
          }
          return index;
        },
        k);
    start += sizes[k];
  }
  if (start != src.sizes[dim]) decline("split sizes do not add up to the dim's size");
}

void lower_split_with_sizes(NodeLowering& n) {
  const TensorInfo src = n.tensor("self");
  if (src.rank() == 0) decline("split of a 0-dim tensor");
  define_pieces(n, src, wrap_dim(n.int_arg("dim", 0), src.rank()), n.int_list("split_sizes"),
                false);
}

void lower_split(NodeLowering& n) {
  const TensorInfo src = n.tensor("self");
  if (src.rank() == 0) decline("split of a 0-dim tensor");
  const int64_t dim = wrap_dim(n.int_arg("dim", 0), src.rank());
  const int64_t each = n.int_arg("split_size");
  if (each <= 0) decline("split size must be positive");
  std::vector<int64_t> sizes;
  for (int64_t left = src.sizes[dim]; left > 0; left -= each) sizes.push_back(std::min(each, left));
  if (sizes.empty()) sizes.push_back(0);  // torch: one empty piece
  define_pieces(n, src, dim, sizes, false);
}

void lower_unbind(NodeLowering& n) {
  const TensorInfo src = n.tensor("self");
  if (src.rank() == 0) decline("unbind of a 0-dim tensor");
  const int64_t dim = wrap_dim(n.int_arg("dim", 0), src.rank());
  define_pieces(n, src, dim, std::vector<int64_t>(static_cast<size_t>(src.sizes[dim]), 1), true);
}

void lower_select(NodeLowering& n) {
  const TensorInfo src = n.tensor("self");
  if (src.rank() == 0) decline("select of a 0-dim tensor");
  const int64_t dim = wrap_dim(n.int_arg("dim"), src.rank());
  int64_t at = n.int_arg("index");
  if (at < -src.sizes[dim] || at >= src.sizes[dim]) decline("select index out of range");
  if (at < 0) at += src.sizes[dim];
  std::vector<int64_t> sizes = src.sizes;
  sizes.erase(sizes.begin() + dim);
  define_view(n, src, sizes, [&](const Index& i) {
    Index index = i;
    index.insert(index.begin() + dim, ir::Expr(at));
    return index;
  });
}

/// diagonal: the other dims in order, then the diagonal as the last dim.
void lower_diagonal(NodeLowering& n) {
  const TensorInfo src = n.tensor("self");
  const DiagonalRange r = diagonal_range(n, src.sizes);
  define_view(n, src, r.view_sizes, [&](const Index& i) {
    Index index(src.rank());
    size_t k = 0;
    for (size_t d = 0; d < src.rank(); ++d)
      if (!r.is_diagonal_dim(d)) index[d] = i[k++];
    index[r.dim1] = i.back() + ir::Expr(r.row0);
    index[r.dim2] = i.back() + ir::Expr(r.col0);
    return index;
  });
}

/// unfold(self, dimension, size, step): windows of `size` elements every `step` along the dim,
/// the window position replacing the dim and the offset within the window appended last.
void lower_unfold(NodeLowering& n) {
  const TensorInfo src = n.tensor("self");
  if (src.rank() == 0) decline("unfold of a 0-dim tensor");
  const int64_t dim = wrap_dim(n.int_arg("dimension"), src.rank());
  const int64_t window = n.int_arg("size");
  const int64_t step = n.int_arg("step");
  if (step <= 0 || window < 0 || window > src.sizes[dim]) decline("unfold window out of range");
  std::vector<int64_t> sizes = src.sizes;
  sizes[dim] = (src.sizes[dim] - window) / step + 1;
  sizes.push_back(window);
  define_view(n, src, sizes, [&](const Index& i) {
    Index index(i.begin(), i.end() - 1);
    index[dim] = i[dim] * ir::Expr(step) + i.back();
    return index;
  });
}

/// as_strided addresses storage, but loads are logical. It is expressible when the input is
/// a memory-backed buffer whose layout is dense and non-overlapping (a permutation of
/// row-major) and every addressed element lies inside the input's own elements: the storage
/// position then maps back to one logical index.
void lower_as_strided(NodeLowering& n) {
  const TensorInfo src = n.tensor("self");
  if (src.origin == ir::BufferOrigin::Computed)
    decline("as_strided of a computed buffer (its storage is not known before scheduling)");
  const std::vector<int64_t> sizes = n.int_list("size");
  const std::vector<int64_t> strides = n.int_list("stride");
  if (sizes.size() != strides.size()) decline("as_strided size and stride ranks differ");
  const int64_t offset = n.optional_int("storage_offset").value_or(src.offset);

  // Input dims from outermost to innermost storage stride; they must tile [0, numel).
  std::vector<size_t> order;
  for (size_t d = 0; d < src.rank(); ++d)
    if (src.sizes[d] != 1) order.push_back(d);
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return src.strides[a] > src.strides[b]; });
  int64_t expected = 1;
  for (size_t k = order.size(); k-- > 0;) {
    if (src.strides[order[k]] != expected) decline("as_strided of a non-dense input");
    expected *= src.sizes[order[k]];
  }
  int64_t lo = offset - src.offset, hi = offset - src.offset;
  for (size_t k = 0; k < sizes.size(); ++k) {
    if (strides[k] < 0) decline("negative as_strided stride");
    hi += strides[k] * (sizes[k] - 1);
  }
  if (lo < 0 || hi >= src.numel()) decline("as_strided reads outside its input's elements");

  define_view(n, src, sizes, [&](const Index& i) {
    ir::Expr rel(offset - src.offset);
    for (size_t k = 0; k < sizes.size(); ++k) rel = rel + i[k] * ir::Expr(strides[k]);
    Index index(src.rank(), ir::Expr(0));
    for (size_t d : order) {
      ir::Expr e = ir::floordiv(rel, ir::Expr(src.strides[d]));
      if (d != order.front()) e = ir::mod(e, ir::Expr(src.sizes[d]));
      index[d] = e;
    }
    return index;
  });
}

/// Registers `op` and, when `copy_op` is given, its `*_copy` twin: the same index rewrite,
/// defined as an ordinary compute (a new tensor).
void add_view(OpTable& table, const std::string& op, const std::string& copy_op,
              const std::string& params, const LowerFn& lower) {
  if (!op.empty()) table.add(op, params, lower);
  if (copy_op.empty()) return;
  table.add(copy_op, params, [lower](NodeLowering& n) {
    lower(n);
    n.make_views_copies();
  });
}

}  // namespace

void register_view_ops(OpTable& table) {
  add_view(table, "aten::view", "aten::view_copy", "self size",
           [](NodeLowering& n) { lower_reshape(n, "size"); });
  add_view(table, "aten::_unsafe_view", "", "self size",
           [](NodeLowering& n) { lower_reshape(n, "size"); });
  add_view(table, "aten::reshape", "", "self shape",
           [](NodeLowering& n) { lower_reshape(n, "shape"); });
  add_view(table, "aten::permute", "aten::permute_copy", "self dims",
           [](NodeLowering& n) { lower_permute(n, n.int_list("dims")); });
  add_view(table, "aten::transpose.int", "aten::transpose_copy.int", "self dim0 dim1",
           [](NodeLowering& n) {
             const size_t rank = n.tensor("self").rank();
             lower_permute(n, swap_dims(rank, n.int_arg("dim0"), n.int_arg("dim1")));
           });
  add_view(table, "aten::t", "aten::t_copy", "self", [](NodeLowering& n) {
    const size_t rank = n.tensor("self").rank();
    if (rank > 2) decline("t of more than 2 dims");
    lower_permute(n, swap_dims(rank, 0, rank == 2 ? 1 : 0));
  });
  add_view(table, "aten::expand", "aten::expand_copy", "self size implicit", lower_expand);
  add_view(table, "aten::squeeze", "aten::squeeze_copy", "self",
           [](NodeLowering& n) { lower_squeeze(n, std::nullopt); });
  add_view(table, "aten::squeeze.dim", "aten::squeeze_copy.dim", "self dim",
           [](NodeLowering& n) { lower_squeeze(n, std::vector<int64_t>{n.int_arg("dim")}); });
  add_view(table, "aten::squeeze.dims", "aten::squeeze_copy.dims", "self dim",
           [](NodeLowering& n) { lower_squeeze(n, n.int_list("dim")); });
  add_view(table, "aten::unsqueeze", "aten::unsqueeze_copy", "self dim", lower_unsqueeze);
  add_view(table, "aten::slice.Tensor", "aten::slice_copy.Tensor", "self dim start end step",
           lower_slice);
  add_view(table, "", "aten::narrow_copy", "self dim start length", lower_narrow);
  add_view(table, "aten::select.int", "aten::select_copy.int", "self dim index", lower_select);
  add_view(table, "aten::split_with_sizes", "aten::split_with_sizes_copy",
           "self split_sizes dim", lower_split_with_sizes);
  add_view(table, "aten::split.Tensor", "aten::split_copy.Tensor", "self split_size dim",
           lower_split);
  add_view(table, "aten::unbind.int", "aten::unbind_copy.int", "self dim", lower_unbind);
  add_view(table, "aten::alias", "aten::alias_copy", "self", [](NodeLowering& n) {
    const TensorInfo src = n.tensor("self");
    define_view(n, src, src.sizes, [](const Index& i) { return i; });
  });
  add_view(table, "aten::diagonal", "aten::diagonal_copy", "self offset dim1 dim2",
           lower_diagonal);
  add_view(table, "aten::as_strided", "aten::as_strided_copy", "self size stride storage_offset",
           lower_as_strided);
  add_view(table, "aten::unfold", "", "self dimension size step", lower_unfold);
}

}  // namespace inductor_cpp::inductor::lowering
