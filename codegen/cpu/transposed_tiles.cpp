/// \file
/// The CPU emitter's transposed tiles: the read of a tiled transpose copied, before the tile's
/// loops, into a small stack array in the order the vector loop reads it.
///
/// The schedule tiles a pointwise kernel whose accesses disagree on the fastest dim
/// (ir/passes/schedule_cpu.cpp transpose_tiles, `x.t() + y`, NCHW <-> NHWC) into
/// [u in the tile (serial), v in the tile (vector)] loops of at most T = 16 iterations each.
/// One access is contiguous along v; the transposed one is contiguous along u and a stride
/// apart along v, so a vector of it was a gather of 16 elements from 16 rows. Instead, before
/// the u loop, `ic::transpose_tile` reads the tile's rows of that input contiguously (16
/// vector loads), transposes them in registers (4 stages of two-vector shuffles) and stores
/// them to `alignas(64) float tileN[16 * 16]`, from which the vector loop loads plain vectors.
/// 2 threads, `x.t() + y` at 4096 x 1024 float32: the kernel alone 7.9 -> 3.1 ms on one core
/// (the gathered tile vs the transposed tile, same loops).
///
/// A transposed store goes the other way: the vector loop stores into the tile, and
/// `ic::transpose_tile_out` writes it to its destination after the u loop (a store whose
/// buffer the loops do not read, stored once there). The schedule prefers the store's layout
/// for the vector loop (schedule_cpu.cpp), so this is for kernels with several outputs.
///
/// A load becomes a tile read when all of these hold:
///   * the loop is serial with a single statement, a vector loop without nested loops, and
///     both extents are at most a constant (16 or 8, the same for both: a square tile);
///   * it reads 4- or 2-byte elements (float32, int32, bf16, fp16; the 2-byte ones go through
///     registers with AVX-512 only, else element by element) with no mask, no indirect operands, and an
///     offset `base + u + S * v` with a constant S other than 0 and 1 (base free of u and v);
///   * nothing in the loops writes its buffer (the tile is read before the loops run).
#include <algorithm>
#include <set>

#include "codegen/cpu/emit_cpp_internal.h"
#include "ir/simplify.h"

namespace inductor_cpp::codegen::cpu_detail {

using ir::Expr;
using ir::Stmt;
using ir::StmtKind;

namespace {

/// A constant the extent never exceeds: the extent itself, or the constant side of a min.
std::optional<int64_t> extent_limit(const Expr& e) {
  if (e.is_const()) return e.value();
  if (e.kind() != ir::ExprKind::Min) return std::nullopt;
  if (e.lhs().is_const()) return e.lhs().value();
  if (e.rhs().is_const()) return e.rhs().value();
  return std::nullopt;
}

bool writes_buffer(const std::vector<Stmt>& stmts, const std::string& buffer) {
  bool writes = false;
  for_each_stmt(stmts, [&](const Stmt& s) {
    if (s.kind == StmtKind::Store && s.buffer == buffer) writes = true;
  });
  return writes;
}

}  // namespace

void KernelEmitter::begin_transposed_tiles(const Stmt& u_loop) {
  tile_reads_.emplace_back();
  tile_writes_.emplace_back();
  pending_tile_stores_.emplace_back();
  if (u_loop.body.size() != 1 || u_loop.body[0].kind != StmtKind::For) return;
  const Stmt& v_loop = u_loop.body[0];
  const int width = vector_width_.at(&v_loop);
  if (width <= 0 || parallel_.at(&u_loop)) return;
  for (const Stmt& s : v_loop.body) {
    if (s.kind == StmtKind::For) return;
  }
  const std::optional<int64_t> rows = extent_limit(u_loop.extent), cols = extent_limit(v_loop.extent);
  if (!rows || !cols || *rows != *cols || (*rows != 8 && *rows != 16 && *rows != 32) || *cols % width != 0) return;
  // An access base + u + S v (S a constant other than 0 and 1) of 4- or 2-byte elements: its
  // base and S.
  auto tile_base = [&](const Expr& index, ir::DType dtype) -> std::optional<std::pair<Expr, int64_t>> {
    const std::optional<int64_t> stride = ir::coefficient_of(index, v_loop.var);
    if ((ir::dtype_size(dtype) != 4 && ir::dtype_size(dtype) != 2) || ir::coefficient_of(index, u_loop.var) != std::optional<int64_t>(1) ||
        !stride || *stride == 0 || *stride == 1)
      return std::nullopt;
    const Expr base = ir::simplify(ir::substitute(index, {{u_loop.var, Expr(0)}, {v_loop.var, Expr(0)}}));
    if (ir::simplify(index - (base + Expr::var(u_loop.var) + Expr(*stride) * Expr::var(v_loop.var))) != Expr(0))
      return std::nullopt;
    return std::make_pair(base, *stride);
  };
  auto declare_tile = [&](ir::DType dtype) {
    const std::string array = fresh("tile");
    line("alignas(64) " + cpp_type(dtype) + " " + array + "[" + std::to_string(*rows * *cols) + "];");
    return array;
  };
  const std::string shape = std::to_string(*rows) + ", " + std::to_string(*cols);
  const std::string extents = scalar_expr(u_loop.extent) + ", " + scalar_expr(v_loop.extent);
  std::set<std::string> read, written;
  for (const Stmt& s : v_loop.body) {
    if (s.kind == StmtKind::Store) written.insert(s.buffer);
    if (!s.value) continue;
    for (const ir::Value& l : ir::loads_in(s.value)) read.insert(l->name);
  }
  for (const Stmt& s : v_loop.body) {
    // A store of a buffer written once in the tile and not read there (its values reach
    // memory only after the loops): kept in the tile, transposed out after the u loop.
    if (s.kind == StmtKind::Store && !read.count(s.buffer) &&
        std::count_if(v_loop.body.begin(), v_loop.body.end(), [&](const Stmt& o) {
          return o.kind == StmtKind::Store && o.buffer == s.buffer;
        }) == 1) {
      int k = 0;
      const ir::KernelParam& p = param(s.buffer, &k);
      if (auto at = tile_base(s.index, p.dtype)) {
        const std::string array = declare_tile(p.dtype);
        tile_writes_.back()[&s] = TileAccess{array, u_loop.var, *cols};
        pending_tile_stores_.back().push_back("ic::transpose_tile_out<" + shape + ">(buf" +
                                              std::to_string(k) + " + " + scalar_expr(at->first) +
                                              ", " + int64_literal(at->second) + ", " + array +
                                              ", " + extents + ");");
      }
    }
    if (!s.value) continue;
    for (const ir::Value& l : ir::loads_in(s.value)) {
      const ir::ValueNode& n = *l;
      if (tile_reads_.back().count(&n) || !n.operands.empty() || !n.mask.is_const() ||
          n.mask.value() == 0 || n.index.size() != 1 || written.count(n.name))
        continue;
      if (auto at = tile_base(n.index[0], n.dtype)) {
        int k = 0;
        param(n.name, &k);
        const std::string array = declare_tile(n.dtype);
        line("ic::transpose_tile<" + shape + ">(" + array + ", buf" + std::to_string(k) + " + " +
             scalar_expr(at->first) + ", " + int64_literal(at->second) + ", " + extents + ");");
        tile_reads_.back()[&n] = TileAccess{array, u_loop.var, *cols};
      }
    }
  }
}

void KernelEmitter::end_transposed_tiles() {
  for (const std::string& text : pending_tile_stores_.back()) line(text);
  pending_tile_stores_.pop_back();
  tile_reads_.pop_back();
  tile_writes_.pop_back();
}

std::string KernelEmitter::tile_write_address(const Stmt& store) {
  if (vec_.width == 0) return "";
  for (const auto& writes : tile_writes_) {
    auto it = writes.find(&store);
    if (it == writes.end()) continue;
    const TileAccess& t = it->second;
    return t.array + " + " + scalar_expr(Expr::var(t.row_var) * Expr(t.columns) + Expr::var(vec_.var));
  }
  return "";
}

std::optional<Emitted> KernelEmitter::load_tile_read(const ir::ValueNode& n) {
  if (vec_.width == 0) return std::nullopt;
  for (const auto& reads : tile_reads_) {
    auto it = reads.find(&n);
    if (it == reads.end()) continue;
    const TileAccess& t = it->second;
    const std::string offset =
        scalar_expr(Expr::var(t.row_var) * Expr(t.columns) + Expr::var(vec_.var));
    const std::string w = std::to_string(vec_.width);
    const std::string text = vec_.tail ? "ic::loadu_n<" + w + ">(" + t.array + " + " + offset +
                                             ", " + vec_.count + ")"
                                       : "ic::loadu<" + w + ">(" + t.array + " + " + offset + ")";
    return declare(n.dtype, true, text);
  }
  return std::nullopt;
}

}  // namespace inductor_cpp::codegen::cpu_detail
