/// \file
/// Column groups with vector lanes (outer-dim reductions such as sum(0)): a group of T thread
/// rows handles W consecutive columns (W = 16 bytes / widest contiguous element: 4 float32),
/// so each thread reads one 128-bit vector per row instead of W 4-byte words; every column
/// keeps its own accumulators ("name#lane"), combined across the thread rows column by column.
/// Taken when every plain access contiguous in the columns (exactly, or within the runs of a
/// flattened column variable that hold whole vectors: ir::chunk_step) keeps whole-vector steps
/// in the other loop variables and the column count splits into whole vectors; one
/// run-time check of the base addresses (uniform over the kernel) picks the vector row body,
/// else the columns of a group run one after another (docs/codegen/nvptx.md "Column groups").
#include <algorithm>
#include <functional>
#include <set>

#include "codegen/nvptx/nvptx_internal.h"

namespace inductor_cpp::codegen::nvptx_detail {

using ir::Stmt;
using ir::StmtKind;

namespace {

/// Every (index, dtype, plain) access in `body`, recursively; loop variables into `loop_vars`.
struct Access {
  std::string buffer;
  ir::Expr index;
  ir::DType dtype;
  bool plain;
};

void collect(const std::function<ir::DType(const std::string&)>& params,
             const std::vector<Stmt>& body, const std::string& column_var,
             std::vector<Access>& accesses, std::set<std::string>& loop_vars, bool& per_column) {
  for (const Stmt& s : body) {
    if (s.kind == StmtKind::For) {
      loop_vars.insert(s.var);
      // A vector loop would take over the lanes; an extent that depends on the column differs
      // from lane to lane.
      if (s.vector_width > 1 ||
          ir::coefficient_of(s.extent, column_var) != std::optional<int64_t>(0))
        per_column = true;
    }
    if (s.kind == StmtKind::Store) accesses.push_back({s.buffer, s.index, params(s.buffer), true});
    if (s.value) {
      for (const ir::Value& l : ir::loads_in(s.value)) {
        accesses.push_back(
            {l->name, l->index.at(0), l->dtype, l->operands.empty() && l->mask.is_const()});
      }
    }
    collect(params, s.body, column_var, accesses, loop_vars, per_column);
  }
}

}  // namespace

int KernelEmitter::column_lanes(const Stmt& top) const {
  if (!top.extent.is_const() || top.extent.value() <= 0) return 1;
  std::vector<Access> accesses;
  std::set<std::string> loop_vars;
  bool per_column = false;
  auto dtype_of = [&](const std::string& b) { return kernel_.params[param_index(b)].dtype; };
  collect(dtype_of, top.body, top.var, accesses, loop_vars, per_column);
  if (per_column) return 1;
  // Contiguous along the columns, exactly or within the runs of a flattened top loop (the
  // channels of an NHWC tensor per image): the latter only where the runs hold whole chunks
  // that keep their alignment from run to run (ir::chunk_step); the others are read lane by
  // lane.
  auto vectorized = [&](const Access& a) {
    return a.plain && ir::coefficient_within_runs(a.index, top.var) == std::optional<int64_t>(1);
  };
  int64_t widest = 0;
  for (const Access& a : accesses) {
    if (vectorized(a)) widest = std::max<int64_t>(widest, ir::dtype_size(a.dtype));
  }
  if (widest == 0 || widest > 8) return 1;
  const int lanes = static_cast<int>(16 / widest);  // 16 bytes of the widest element
  if (top.extent.value() % lanes != 0) return 1;
  bool any_vector = false;
  for (const Access& a : accesses) {
    if (!vectorized(a)) continue;
    const std::optional<ir::ChunkStep> step = ir::chunk_step(a.index, top.var, lanes);
    if (!step || step->coefficient != 1 || !step->steps_keep_alignment) continue;  // per lane
    any_vector = true;
    const int64_t bytes = lanes * ir::dtype_size(a.dtype);  // this access's vector
    for (const std::string& v : loop_vars) {
      const std::optional<int64_t> c = ir::coefficient_of(a.index, v);
      if (!c || (*c * ir::dtype_size(a.dtype)) % bytes != 0) return 1;
    }
    for (const std::string& v : kernel_.symbols) {
      if (ir::coefficient_of(a.index, v) != std::optional<int64_t>(0)) return 1;
    }
  }
  return any_vector ? lanes : 1;
}

llvm::Value* KernelEmitter::column_vectors_aligned(const Stmt& top, int lanes) {
  std::vector<Access> accesses;
  std::set<std::string> loop_vars;
  bool per_column = false;
  auto dtype_of = [&](const std::string& b) { return kernel_.params[param_index(b)].dtype; };
  collect(dtype_of, top.body, top.var, accesses, loop_vars, per_column);
  const VectorChunk saved = vec_;
  vec_ = {top.var, b_.getInt64(0), lanes, 0, /*within_runs=*/true};
  for (const std::string& v : loop_vars) vars_[v] = b_.getInt64(0);
  llvm::Value* aligned = b_.getTrue();
  for (const Access& a : accesses) {
    const int64_t bytes = vector_bytes(a.index, a.dtype, a.plain);
    if (bytes == 0) continue;
    llvm::Value* address = element_address(param_index(a.buffer), expr(a.index));
    llvm::Value* low_bits = b_.CreateAnd(b_.CreatePtrToInt(address, b_.getInt64Ty()), bytes - 1);
    aligned = b_.CreateAnd(aligned, b_.CreateICmpEQ(low_bits, b_.getInt64(0)));
  }
  for (const std::string& v : loop_vars) vars_.erase(v);
  vec_ = saved;
  return aligned;
}

void KernelEmitter::column_vector_row(const Stmt& top, llvm::Value* group, int lanes,
                                      llvm::Value* aligned) {
  llvm::Value* base = b_.CreateMul(group, b_.getInt64(lanes), top.var + ".base");
  auto vector_columns = [&] {
    const VectorChunk saved = vec_;
    vec_ = {top.var, base, lanes, 0, /*within_runs=*/true};
    column_vector_ = true;
    statements(top.body);
    column_vector_ = false;
    vec_ = saved;
  };
  auto scalar_columns = [&] {  // misaligned views: the group's columns one by one
    for (int l = 0; l < lanes; ++l) {
      push_scope();
      vars_[top.var] = b_.CreateAdd(base, b_.getInt64(l));
      statements(top.body);
      vars_.erase(top.var);
      pop_scope();
    }
  };
  if_else(aligned, vector_columns, scalar_columns, "columns.vector", "columns.scalar",
          "columns.done");
}

std::string KernelEmitter::accumulator_key(const std::string& name, int lane) const {
  if (!column_vector_) return name;
  return name + "#" + std::to_string(lane < 0 ? vec_.lane : lane);
}

}  // namespace inductor_cpp::codegen::nvptx_detail
