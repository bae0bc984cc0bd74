/// \file
/// Lowerings that read inputs at data-dependent or piecewise positions: cat and
/// constant_pad_nd (masked loads selected with where), gather, index.Tensor, index_select and
/// embedding (indirect loads, bounds-checked at run time like ATen's index checks).
#include "inductor/lower/elementwise.h"

namespace inductor_cpp::inductor::lowering {
namespace {

using ir::BinaryOp;
using ir::DType;
using Index = std::vector<ir::Expr>;

/// A value of `t` converted to the output type's compute type.
ir::Value in_compute_type(const ir::Value& v, DType out) {
  return ir::cast(ir::cast(v, out), ir::compute_type(out));
}

/// cat: piece j covers [offset_j, offset_j + size_j) of `dim`; each piece is a load masked to
/// its range, chosen with nested wheres from the last piece backwards.
void lower_cat(NodeLowering& n) {
  const ir::Arg* list = n.arg("tensors");
  if (list == nullptr || list->kind != ir::Arg::Kind::List || list->items.empty())
    decline("cat without a tensor list");
  std::vector<TensorInfo> pieces;
  std::vector<Operand> operands;
  for (const ir::Arg& item : list->items) {
    pieces.push_back(n.tensor_of(item));
    operands.push_back(Operand{pieces.back(), {}});
  }
  const size_t rank = pieces[0].rank();
  if (rank == 0) decline("cat of 0-dim tensors");
  const int64_t dim = wrap_dim(n.int_arg("dim", 0), rank);
  std::vector<int64_t> sizes = pieces[0].sizes;
  sizes[dim] = 0;
  for (const TensorInfo& p : pieces) {
    if (p.rank() != rank) decline("cat of tensors of different ranks");
    for (size_t d = 0; d < rank; ++d)
      if (static_cast<int64_t>(d) != dim && p.sizes[d] != sizes[d]) decline("cat shapes differ");
    sizes[dim] += p.sizes[dim];
  }
  const OutputInfo out = n.output(0);
  expect_output_sizes(out, sizes, "cat");
  if (result_type(operands) != out.dtype) decline("cat type promotion disagrees with the graph");

  const Index index = range_vars(rank);
  const ir::RangeMap ranges = range_map(sizes);
  const ir::Expr& at = index[dim];
  std::vector<int64_t> offsets;
  int64_t offset = 0;
  for (const TensorInfo& p : pieces) {
    offsets.push_back(offset);
    offset += p.sizes[dim];
  }
  ir::Value value;
  for (size_t j = pieces.size(); j-- > 0;) {
    const TensorInfo& p = pieces[j];
    const ir::Expr begin(offsets[j]), end(offsets[j] + p.sizes[dim]);
    const ir::Expr inside = ir::simplify(ir::le(begin, at) * ir::lt(at, end), ranges);
    Index piece_index = index;
    piece_index[dim] = at - begin;
    const ir::Value piece =
        in_compute_type(ir::load(p.buffer, p.dtype, piece_index, inside), out.dtype);
    if (j + 1 == pieces.size()) {
      value = piece;
    } else {
      value = ir::where(index_condition(ir::lt(at, end)), piece, value);
    }
  }
  n.define(make_pointwise(out.buffer, out.sizes, ir::cast(value, out.dtype), n.node_index()));
}

/// constant_pad_nd: pads (before, after) per dim from the last dim backwards; negative pads
/// cut. Positions outside the input read the fill value.
void lower_constant_pad(NodeLowering& n) {
  const TensorInfo t = n.tensor("self");
  const std::vector<int64_t> pad = n.int_list("pad");
  if (pad.size() % 2 != 0 || pad.size() / 2 > t.rank()) decline("bad pad list");
  const OutputInfo out = n.output(0);
  if (out.dtype != t.dtype) decline("constant_pad_nd changes the dtype");
  std::vector<int64_t> sizes = t.sizes;
  std::vector<int64_t> before(t.rank(), 0), after(t.rank(), 0);
  for (size_t k = 0; k < pad.size() / 2; ++k) {
    const size_t d = t.rank() - 1 - k;
    before[d] = pad[2 * k];
    after[d] = pad[2 * k + 1];
    sizes[d] += before[d] + after[d];
  }
  expect_output_sizes(out, sizes, "constant_pad_nd");
  const Index index = range_vars(t.rank());
  Index in_index;
  ir::Expr inside(1);
  for (size_t d = 0; d < t.rank(); ++d) {
    const ir::Expr e = index[d] - ir::Expr(before[d]);
    in_index.push_back(e);
    if (before[d] > 0) inside = inside * ir::le(ir::Expr(0), e);
    if (after[d] > 0) inside = inside * ir::lt(e, ir::Expr(t.sizes[d]));
  }
  inside = ir::simplify(inside, range_map(sizes));
  const DType compute = ir::compute_type(t.dtype);
  ir::Value v = ir::cast(ir::load(t.buffer, t.dtype, in_index, inside), compute);
  if (inside != ir::Expr(1)) {
    const ir::Value fill =
        ir::cast(scalar_constant(n.scalar("value", ir::Arg::of_int(0)), t.dtype), compute);
    v = ir::where(index_condition(inside), v, fill);
  }
  n.define(make_pointwise(out.buffer, out.sizes, ir::cast(v, out.dtype), n.node_index()));
}

void check_index_type(const TensorInfo& idx) {
  if (idx.dtype != DType::Int64 && idx.dtype != DType::Int32)
    decline(std::string("indices of type ") + ir::dtype_name(idx.dtype) +
            " (bool masks are not generated)");
}

/// An index tensor's value at `index`, as int64.
ir::Value index_value_at(const TensorInfo& idx, Index index) {
  check_index_type(idx);
  return ir::cast(load_at(idx, std::move(index)), DType::Int64);
}

ir::Expr placeholder(size_t k) {
  return ir::Expr::var("%ind" + std::to_string(k));
}

void lower_gather(NodeLowering& n) {
  const TensorInfo self = n.tensor("self");
  const TensorInfo idx = n.tensor("index");
  n.bool_arg("sparse_grad", false);
  if (self.rank() == 0 || idx.rank() != self.rank()) decline("gather ranks");
  const int64_t dim = wrap_dim(n.int_arg("dim"), self.rank());
  const OutputInfo out = n.output(0);
  expect_output_sizes(out, idx.sizes, "gather");
  if (out.dtype != self.dtype) decline("gather changes the dtype");
  for (size_t d = 0; d < self.rank(); ++d)
    if (static_cast<int64_t>(d) != dim && idx.sizes[d] > self.sizes[d])
      decline("gather index larger than its input");
  const Index index = range_vars(self.rank());
  Index self_index = index;
  self_index[dim] = placeholder(0);
  const ir::Value v = ir::load(self.buffer, self.dtype, self_index, ir::Expr(1),
                               {index_value_at(idx, index)}, {ir::Expr(self.sizes[dim])});
  n.define(make_pointwise(out.buffer, out.sizes, v, n.node_index()));
}

/// scatter.value(self, dim, index, value): self with `value` written at every position index
/// names. One value for all, so duplicate indices do not matter and it is a gather: out[p] is
/// `value` when some k < index.size(dim) has index[p with dim := k] == p[dim] (p inside
/// index's extent in the other dims), else self[p] — an `any` reduction over k, then a where.
/// (nll_loss's backward is such a scatter.) Unlike eager, an index outside [0, size) is not
/// reported: it matches no position.
void lower_scatter_value(NodeLowering& n) {
  const TensorInfo self = n.tensor("self");
  const TensorInfo idx = n.tensor("index");
  check_index_type(idx);
  if (self.rank() == 0 || idx.rank() != self.rank()) decline("scatter ranks");
  const int64_t dim = wrap_dim(n.int_arg("dim"), self.rank());
  const OutputInfo out = n.output(0);
  expect_output_sizes(out, self.sizes, "scatter");
  if (out.dtype != self.dtype) decline("scatter changes the dtype");
  ir::Expr inside(1);
  const Index index = range_vars(self.rank());
  Index idx_index = index;
  for (size_t d = 0; d < self.rank(); ++d) {
    if (static_cast<int64_t>(d) == dim) continue;
    if (idx.sizes[d] > self.sizes[d]) decline("scatter index larger than its input");
    if (idx.sizes[d] < self.sizes[d]) inside = inside * ir::lt(index[d], ir::Expr(idx.sizes[d]));
  }
  // One index per line (nll_loss's backward: one target per row): the hit is a plain
  // comparison, fused into the where; no `any` over one element (on the GPU a reduction kernel
  // over the whole [rows, classes] output).
  const bool single = idx.sizes[dim] == 1;
  idx_index[dim] = single ? ir::Expr(0) : reduce_vars(1)[0];
  const ir::Value target = ir::cast(ir::load(idx.buffer, idx.dtype, idx_index, inside), DType::Int64);
  ir::Value hit = ir::binary(BinaryOp::eq, target, ir::index_value(index[dim], DType::Int64));
  if (inside != ir::Expr(1)) hit = ir::binary(BinaryOp::logical_and, hit, index_condition(inside));
  if (single) {
    const ir::Value v = ir::where(hit, scalar_constant(n.scalar("value"), self.dtype), load_at(self, index));
    n.define(make_pointwise(out.buffer, out.sizes, v, n.node_index()));
    return;
  }
  const std::string hits = n.internal_buffer("hit", DType::Bool, self.sizes);
  ir::Compute any;
  any.name = hits;
  any.ranges = to_exprs(self.sizes);
  any.reduce_ranges = to_exprs({idx.sizes[dim]});
  any.reduce_op = ir::ReduceOp::any;
  any.body = hit;
  any.graph_node = n.node_index();
  n.define(any);
  const ir::Value v = ir::where(ir::load(hits, DType::Bool, index), scalar_constant(n.scalar("value"), self.dtype),
                                load_at(self, index));
  n.define(make_pointwise(out.buffer, out.sizes, v, n.node_index()));
}

/// Python-style negative indices: v < 0 -> v + size (still out of range -> the bounds check).
ir::Value wrap_negative(const ir::Value& v, int64_t size) {
  const ir::Value zero64 = ir::constant_int(0, DType::Int64);
  return ir::where(bin(BinaryOp::lt, v, zero64),
                   bin(BinaryOp::add, v, ir::constant_int(size, DType::Int64)), v);
}

/// index.Tensor: advanced indexing with int64/int32 index tensors (None skips a dim). The
/// broadcast index dims replace the indexed dims in place when those are adjacent, else they
/// come first (numpy's rule, as torch).
void lower_index(NodeLowering& n) {
  const TensorInfo self = n.tensor("self");
  const ir::Arg* list = n.arg("indices");
  if (list == nullptr || list->kind != ir::Arg::Kind::List) decline("index without indices");
  if (list->items.size() > self.rank()) decline("too many indices");
  std::vector<std::optional<TensorInfo>> indices(self.rank());
  std::vector<std::vector<int64_t>> shapes;
  std::vector<size_t> indexed;
  for (size_t d = 0; d < list->items.size(); ++d) {
    if (list->items[d].kind == ir::Arg::Kind::None) continue;
    indices[d] = n.tensor_of(list->items[d]);
    check_index_type(*indices[d]);
    shapes.push_back(indices[d]->sizes);
    indexed.push_back(d);
  }
  if (indexed.empty()) decline("index without index tensors");
  const std::vector<int64_t> bshape = broadcast_shapes(shapes);
  const bool adjacent = indexed.back() - indexed.front() + 1 == indexed.size();
  const size_t insert_at = adjacent ? indexed.front() : 0;

  // Output dims: the unindexed dims, with the broadcast dims inserted at insert_at.
  std::vector<int64_t> sizes;
  std::vector<size_t> out_dim_of;  // for each unindexed self dim, its output dim
  std::vector<size_t> plain_dims;
  for (size_t d = 0; d < self.rank(); ++d)
    if (!indices[d]) plain_dims.push_back(d);
  size_t k = 0;
  for (size_t d : plain_dims) {
    if (k == insert_at) sizes.insert(sizes.end(), bshape.begin(), bshape.end());
    sizes.push_back(self.sizes[d]);
    ++k;
  }
  if (k <= insert_at) sizes.insert(sizes.end(), bshape.begin(), bshape.end());
  const OutputInfo out = n.output(0);
  expect_output_sizes(out, sizes, "index");
  if (out.dtype != self.dtype) decline("index changes the dtype");

  const Index vars = range_vars(sizes.size());
  const Index bvars(vars.begin() + insert_at, vars.begin() + insert_at + bshape.size());
  Index self_index(self.rank());
  for (size_t j = 0; j < plain_dims.size(); ++j)
    self_index[plain_dims[j]] = vars[j < insert_at ? j : j + bshape.size()];
  std::vector<ir::Value> indirect;
  std::vector<ir::Expr> bounds;
  for (size_t d : indexed) {
    const ir::Value raw = ir::cast(load_broadcast(*indices[d], bshape, bvars), DType::Int64);
    self_index[d] = placeholder(indirect.size());
    indirect.push_back(wrap_negative(raw, self.sizes[d]));
    bounds.emplace_back(self.sizes[d]);
  }
  const ir::Value v = ir::load(self.buffer, self.dtype, self_index, ir::Expr(1), indirect, bounds);
  n.define(make_pointwise(out.buffer, out.sizes, v, n.node_index()));
}

void lower_index_select(NodeLowering& n) {
  const TensorInfo self = n.tensor("self");
  const TensorInfo idx = n.tensor("index");
  if (idx.rank() > 1) decline("index_select with a multi-dim index");
  if (self.rank() == 0) decline("index_select of a 0-dim tensor");
  const int64_t dim = wrap_dim(n.int_arg("dim"), self.rank());
  std::vector<int64_t> sizes = self.sizes;
  sizes[dim] = idx.numel();
  const OutputInfo out = n.output(0);
  expect_output_sizes(out, sizes, "index_select");
  if (out.dtype != self.dtype) decline("index_select changes the dtype");
  const Index index = range_vars(sizes.size());
  Index self_index = index;
  self_index[dim] = placeholder(0);
  const ir::Value at = index_value_at(idx, idx.rank() == 1 ? Index{index[dim]} : Index{});
  const ir::Value v =
      ir::load(self.buffer, self.dtype, self_index, ir::Expr(1), {at}, {ir::Expr(self.sizes[dim])});
  n.define(make_pointwise(out.buffer, out.sizes, v, n.node_index()));
}

/// embedding: weight[indices] along dim 0 (padding_idx and scale_grad_by_freq only matter
/// for the backward).
void lower_embedding(NodeLowering& n) {
  const TensorInfo weight = n.tensor("weight");
  const TensorInfo idx = n.tensor("indices");
  n.int_arg("padding_idx", -1);
  n.bool_arg("scale_grad_by_freq", false);
  n.bool_arg("sparse", false);
  if (weight.rank() != 2) decline("embedding weight must be 2-D");
  std::vector<int64_t> sizes = idx.sizes;
  sizes.push_back(weight.sizes[1]);
  const OutputInfo out = n.output(0);
  expect_output_sizes(out, sizes, "embedding");
  if (out.dtype != weight.dtype) decline("embedding changes the dtype");
  const Index index = range_vars(sizes.size());
  const ir::Value at = index_value_at(idx, Index(index.begin(), index.end() - 1));
  const ir::Value v = ir::load(weight.buffer, weight.dtype, {placeholder(0), index.back()},
                               ir::Expr(1), {at}, {ir::Expr(weight.sizes[0])});
  n.define(make_pointwise(out.buffer, out.sizes, v, n.node_index()));
}

}  // namespace

void register_indexing_ops(OpTable& table) {
  table.add("aten::cat", "tensors dim", lower_cat);
  table.add("aten::constant_pad_nd", "self pad value", lower_constant_pad);
  table.add("aten::gather", "self dim index sparse_grad", lower_gather);
  table.add("aten::scatter.value", "self dim index value", lower_scatter_value);
  table.add("aten::index.Tensor", "self indices", lower_index);
  table.add("aten::index.Tensor_hacked_twin", "self indices", lower_index);
  table.add("aten::index_select", "self dim index", lower_index_select);
  table.add("aten::embedding", "weight indices padding_idx scale_grad_by_freq sparse",
            lower_embedding);
}

}  // namespace inductor_cpp::inductor::lowering
