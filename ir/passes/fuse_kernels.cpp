/// \file
/// Greedy grouping of kernel steps, in step order, scored by bytes saved.
#include "ir/passes/fuse_kernels.h"

#include <algorithm>
#include <optional>
#include <set>
#include <stdexcept>

#include "ir/passes/program_queries.h"

namespace inductor_cpp::ir {

namespace {

std::vector<Expr> concat(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  std::vector<Expr> out = a;
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

/// The shape of `shape` extended by `c`, or nullopt when c does not fit.
std::optional<GroupShape> extend_shape(const GroupShape& shape, const Compute& c) {
  if (!shape.inner.empty()) {
    if (c.is_reduction()) {
      if (c.ranges == shape.outer && c.reduce_ranges == shape.inner) return shape;
      return std::nullopt;
    }
    if (c.ranges == concat(shape.outer, shape.inner) || c.ranges == shape.outer) return shape;
    return std::nullopt;
  }
  // A pointwise-only group over `outer`.
  if (!c.is_reduction()) {
    if (c.ranges == shape.outer) return shape;
    return std::nullopt;
  }
  if (concat(c.ranges, c.reduce_ranges) == shape.outer) return GroupShape{c.ranges, c.reduce_ranges};
  if (c.ranges == shape.outer) return GroupShape{c.ranges, c.reduce_ranges};
  return std::nullopt;
}

GroupShape shape_of(const Compute& c) {
  return c.is_reduction() ? GroupShape{c.ranges, c.reduce_ranges} : GroupShape{c.ranges, {}};
}

/// The loop variables naming "the same point" for a compute of role `role`.
std::vector<Expr> identity_index(size_t rank) {
  std::vector<Expr> idx;
  for (size_t k = 0; k < rank; ++k) idx.push_back(Expr::var(range_var(k)));
  return idx;
}

/// Whether every read `c` makes of a member of `members` is at a point the group can supply.
bool reads_members_legally(const LoopProgram& p, const Compute& c, const std::set<std::string>& members,
                           const GroupShape& shape) {
  const MemberRole reader_role = member_role(c, shape);
  for (const Value& l : loads_in(c.body)) {
    if (!members.count(l->name)) continue;
    if (l->mask != Expr(1) || !l->operands.empty()) return false;
    const Compute& m = p.computes.at(l->name);
    const MemberRole role = member_role(m, shape);
    if (role == MemberRole::Reduction || role == MemberRole::Outer) {
      if (l->index != identity_index(shape.outer.size())) return false;
      continue;
    }
    // An inner member: only inner readers, at their own point.
    if (reader_role != MemberRole::Inner) return false;
    if (l->index != identity_index(shape.outer.size() + shape.inner.size())) return false;
  }
  return true;
}

int64_t static_numel(const std::vector<Expr>& sizes) {
  int64_t n = 1;
  for (const Expr& s : sizes) n *= s.is_const() ? s.value() : 1024;  // symbolic: a guess
  return n;
}

/// Bytes a merge saves: members read from registers instead of memory, shared inputs read once.
int64_t bytes_saved(const LoopProgram& p, const Compute& c, const std::set<std::string>& members,
                    const std::set<std::string>& group_reads) {
  int64_t saved = 0;
  for (const std::string& b : buffers_read(c.body)) {
    const Buffer* buf = p.find_buffer(b);
    const int64_t bytes = buf ? static_numel(buf->sizes) * dtype_size(buf->dtype) : 0;
    if (members.count(b) || group_reads.count(b)) saved += bytes;
  }
  return saved;
}

struct OpenGroup {
  size_t step;  ///< index into the output step list
  GroupShape shape;
  std::set<std::string> members;
  std::set<std::string> reads;
};

}  // namespace

MemberRole member_role(const Compute& c, const GroupShape& shape) {
  if (c.is_reduction()) return MemberRole::Reduction;
  if (!shape.inner.empty() && c.ranges == shape.outer) return MemberRole::Outer;
  return shape.inner.empty() ? MemberRole::Outer : MemberRole::Inner;
}

GroupShape group_shape(const LoopProgram& program, const KernelGroup& group) {
  if (group.computes.empty()) throw std::logic_error("empty kernel group");
  GroupShape shape = shape_of(program.computes.at(group.computes.front()));
  for (const std::string& name : group.computes) {
    auto extended = extend_shape(shape, program.computes.at(name));
    if (!extended) throw std::logic_error("compute " + name + " does not fit its kernel group");
    shape = *extended;
  }
  return shape;
}

LoopProgram fuse_kernels(const LoopProgram& program) {
  LoopProgram out = program;
  out.steps.clear();
  std::vector<OpenGroup> open;  // groups since the last extern step
  for (const Step& s : program.steps) {
    if (s.kind == Step::Kind::Extern) {
      out.steps.push_back(s);
      open.clear();
      continue;
    }
    const std::string& name = s.kernel.computes.front();
    const Compute& c = program.computes.at(name);
    if (c.is_scan()) {  // alone: the CPU schedule runs it as running accumulators
      out.steps.push_back(s);
      continue;
    }
    // The best-scoring open group that can take c.
    OpenGroup* best = nullptr;
    int64_t best_saving = 0;
    GroupShape best_shape;
    for (OpenGroup& g : open) {
      auto shape = extend_shape(g.shape, c);
      if (!shape || !reads_members_legally(program, c, g.members, *shape)) continue;
      // Members' roles may change with the shape (a pointwise-only group gaining a reduction).
      bool members_ok = true;
      for (const std::string& m : g.members) {
        const Compute& mc = program.computes.at(m);
        if (!reads_members_legally(program, mc, g.members, *shape)) members_ok = false;
      }
      if (!members_ok) continue;
      const int64_t saving = bytes_saved(program, c, g.members, g.reads);
      if (saving > best_saving) {
        best = &g;
        best_saving = saving;
        best_shape = *shape;
      }
    }
    if (best) {
      // Every step after the group's is a kernel step (externs close groups), and kernels are
      // pure, so moving c up to the group is legal when nothing in between writes what c reads.
      bool blocked = false;
      const std::set<std::string> reads = buffers_read(c.body);
      for (size_t k = best->step + 1; k < out.steps.size() && !blocked; ++k) {
        for (const std::string& w : out.steps[k].kernel.computes) blocked |= reads.count(w) > 0;
      }
      if (!blocked) {
        out.steps[best->step].kernel.computes.push_back(name);
        best->shape = best_shape;
        best->members.insert(name);
        best->reads.insert(reads.begin(), reads.end());
        continue;
      }
    }
    out.steps.push_back(s);
    open.push_back(OpenGroup{out.steps.size() - 1, shape_of(c), {name}, buffers_read(c.body)});
  }
  return out;
}

}  // namespace inductor_cpp::ir
