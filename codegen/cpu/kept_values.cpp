/// \file
/// The CPU emitter's kept values: a costly vector value that a vector loop computes and a
/// later sibling loop over the same range computes again is stored once and reloaded.
///
/// Softmax is the case in point: the schedule reads the row three times (max, sum of
/// exp(x - max), exp(x - max) / sum) rather than write and reread a temporary, so
/// exp(x - max) is computed twice per element, and the exponential costs more than the
/// loads. The IR nodes are interned, so the second loop's exp(sub(load(..), local(t0))) is the
/// same node as the first's: the first loop stores it per element into a stack array of the
/// loop's extent (alignas(64) float y0_keep0[4096], per thread when inside a parallel loop,
/// L1/L2-resident), the second loads it. The stored bits are the computed bits, so results do
/// not change.
///
/// A value is kept when all of these hold:
///   * both loops are vector loops of the same width over the same variable and the same
///     constant extent, neither parallel, neither holding a nested loop;
///   * it depends on the loop variable (a vector), and computing it costs a math call or a
///     division (exp, log, tanh, sqrt, div, pow, ...); only the largest such subtree of the
///     later loop is kept;
///   * nothing it reads (buffers, locals) is written by the first loop, by the statements
///     between the two, or by the second loop;
///   * its array stays small (kMaxKeptBytes; kMaxKeptBytesPerKernel for all of them).
#include <functional>

#include "codegen/cpu/emit_cpp_internal.h"

namespace inductor_cpp::codegen::cpu_detail {

using ir::Stmt;
using ir::StmtKind;

namespace {

/// Largest array per kept value (a 16K-float row), and all of a kernel's arrays together: they
/// live on the stack of each thread.
constexpr int64_t kMaxKeptBytes = 64 * 1024, kMaxKeptBytesPerKernel = 256 * 1024;

bool costly_op(const ir::ValueNode& n) {
  if (n.kind == ir::ValueKind::Unary) {
    switch (n.unary_op()) {
      case ir::UnaryOp::neg:
      case ir::UnaryOp::abs:
      case ir::UnaryOp::floor:
      case ir::UnaryOp::ceil:
      case ir::UnaryOp::round:
      case ir::UnaryOp::trunc:
      case ir::UnaryOp::sign:
      case ir::UnaryOp::signbit:
      case ir::UnaryOp::logical_not:
      case ir::UnaryOp::bitwise_not:
      case ir::UnaryOp::isnan:
      case ir::UnaryOp::isinf:
        return false;
      default:
        return true;
    }
  }
  if (n.kind == ir::ValueKind::Binary) {
    switch (n.binary_op()) {
      case ir::BinaryOp::div:
      case ir::BinaryOp::floordiv:
      case ir::BinaryOp::truncdiv:
      case ir::BinaryOp::remainder:
      case ir::BinaryOp::fmod:
      case ir::BinaryOp::pow:
      case ir::BinaryOp::atan2:
      case ir::BinaryOp::hypot:
      case ir::BinaryOp::nextafter:
        return true;
      default:
        return false;
    }
  }
  return false;
}

bool has_nested_loop(const Stmt& loop) {
  for (const Stmt& s : loop.body) {
    if (s.kind == StmtKind::For) return true;
  }
  return false;
}

/// Every value node the loop's statements compute.
std::set<const ir::ValueNode*> nodes_of(const Stmt& loop) {
  std::set<const ir::ValueNode*> nodes;
  std::function<void(const ir::Value&)> visit = [&](const ir::Value& v) {
    if (!nodes.insert(v.node()).second) return;
    for (const ir::Value& op : v->operands) visit(op);
  };
  for (const Stmt& s : loop.body) {
    if (s.value) visit(s.value);
  }
  return nodes;
}

/// Buffers stored to and locals assigned anywhere in the statements.
void collect_writes(const Stmt& s, std::set<std::string>* buffers, std::set<std::string>* locals) {
  for_each_stmt({s}, [&](const Stmt& inner) {
    if (inner.kind == StmtKind::Store) buffers->insert(inner.buffer);
    if (inner.kind == StmtKind::Let || inner.kind == StmtKind::DefineAccumulator ||
        inner.kind == StmtKind::Accumulate) {
      locals->insert(inner.name);
    }
  });
}

}  // namespace

bool KernelEmitter::keepable_loop(const Stmt& s) const {
  return s.kind == StmtKind::For && vector_width_.at(&s) > 0 && !parallel_.at(&s) &&
         s.extent.is_const() && s.extent.value() > 0 && !has_nested_loop(s);
}

void KernelEmitter::plan_kept_values(const std::vector<Stmt>& stmts) {
  for (const Stmt& s : stmts) {
    if (s.kind == StmtKind::For) plan_kept_values(s.body);
  }
  std::map<const ir::ValueNode*, bool> costly_memo;
  std::function<bool(const ir::ValueNode*)> costly = [&](const ir::ValueNode* n) {
    auto memo = costly_memo.find(n);
    if (memo != costly_memo.end()) return memo->second;
    bool result = costly_op(*n);
    for (const ir::Value& op : n->operands) result = result || costly(op.node());
    return costly_memo[n] = result;
  };
  std::map<const Stmt*, std::set<const ir::ValueNode*>> computed;
  for (size_t j = 0; j < stmts.size(); ++j) {
    const Stmt& later = stmts[j];
    if (!keepable_loop(later)) continue;
    // Earlier loops over the same range, nearest first (the shortest stretch in which nothing
    // may change), with what they compute and what is written from them to `later`.
    struct Source {
      const Stmt* loop;
      const std::set<const ir::ValueNode*>* available;
      std::set<std::string> buffers, locals;
    };
    std::vector<Source> sources;
    for (size_t i = j; i-- > 0;) {
      const Stmt& earlier = stmts[i];
      if (!keepable_loop(earlier) || earlier.var != later.var ||
          !(earlier.extent == later.extent) ||
          vector_width_.at(&earlier) != vector_width_.at(&later)) {
        continue;
      }
      if (!computed.count(&earlier)) computed[&earlier] = nodes_of(earlier);
      Source source{&earlier, &computed[&earlier], {}, {}};
      for (size_t k = i; k <= j; ++k) collect_writes(stmts[k], &source.buffers, &source.locals);
      sources.push_back(std::move(source));
    }
    if (sources.empty()) continue;
    auto unchanged = [&](const ir::ValueNode* n, const Source& source) {
      const auto& reads = reads_of(n);
      for (const std::string& b : reads.first) {
        if (source.buffers.count(b)) return false;
      }
      for (const std::string& l : reads.second) {
        if (source.locals.count(l)) return false;
      }
      return true;
    };
    auto take = [&](const ir::ValueNode* n, const Source& source) {
      // The earlier loop may itself reload it from a still earlier one: share that array.
      for (const KeptValue& k : kept_by_consumer_[source.loop]) {
        if (k.node == n) {
          kept_by_consumer_[&later].push_back(k);
          return;
        }
      }
      kept_bytes_ += later.extent.value() * ir::dtype_size(n->dtype);
      KeptValue kept{n, unique_name(c_identifier(later.var) + "_keep"), later.extent.value()};
      kept_by_producer_[source.loop].push_back(kept);
      kept_by_consumer_[&later].push_back(kept);
    };
    // Top down: the largest kept subtree wins, its parts are not kept separately.
    std::set<const ir::ValueNode*> visited;
    std::function<void(const ir::ValueNode*)> visit = [&](const ir::ValueNode* n) {
      if (!visited.insert(n).second) return;
      const int64_t size = later.extent.value() * ir::dtype_size(n->dtype);
      if (index_vars_of(n).count(later.var) && costly(n) && size <= kMaxKeptBytes &&
          kept_bytes_ + size <= kMaxKeptBytesPerKernel) {
        for (const Source& source : sources) {
          if (source.available->count(n) && unchanged(n, source)) return take(n, source);
        }
      }
      for (const ir::Value& op : n->operands) visit(op.node());
    };
    for (const Stmt& s : later.body) {
      if (s.value) visit(s.value.node());
    }
  }
}

void KernelEmitter::begin_kept_values(const Stmt& loop) {
  auto produced = kept_by_producer_.find(&loop);
  if (produced != kept_by_producer_.end()) {
    for (const KeptValue& k : produced->second) {
      line("alignas(64) " + cpp_type(k.node->dtype) + " " + k.array + "[" +
           std::to_string(k.extent) + "];");
      storing_[k.node] = k.array;
    }
  }
  auto consumed = kept_by_consumer_.find(&loop);
  if (consumed != kept_by_consumer_.end()) {
    for (const KeptValue& k : consumed->second) loading_[k.node] = k.array;
  }
}

void KernelEmitter::end_kept_values() {
  storing_.clear();
  loading_.clear();
}

std::optional<Emitted> KernelEmitter::load_kept(const ir::ValueNode* n) {
  auto found = loading_.find(n);
  if (found == loading_.end() || vec_.width == 0) return std::nullopt;
  const std::string w = std::to_string(vec_.width);
  const std::string at = found->second + " + " + vec_.cvar;
  return declare(n->dtype, true,
                 vec_.tail ? "ic::loadu_n<" + w + ">(" + at + ", " + vec_.count + ")"
                           : "ic::loadu<" + w + ">(" + at + ")");
}

void KernelEmitter::store_kept(const ir::ValueNode* n, const Emitted& e) {
  auto found = storing_.find(n);
  if (found == storing_.end() || vec_.width == 0) return;
  const std::string at = found->second + " + " + vec_.cvar;
  const std::string v = e.vector ? e.text
                                 : "ic::broadcast<" + std::to_string(vec_.width) + ", " +
                                       cpp_type(n->dtype) + ">(" + e.text + ")";
  line(vec_.tail ? "ic::storeu_n(" + at + ", " + v + ", " + vec_.count + ");"
                 : "ic::storeu(" + at + ", " + v + ");");
}

}  // namespace inductor_cpp::codegen::cpu_detail
