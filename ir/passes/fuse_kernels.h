/// \file
/// Kernel fusion by grouping: computes that share their outer loops run as one kernel.
///
/// After inlining, each kernel step holds one realized compute. This pass merges steps into
/// groups over a common iteration space: outer ranges O and (for groups with reductions)
/// inner ranges I. A member is a reduction over O x I, an "inner" pointwise compute over
/// O ++ I, or an "outer" pointwise compute over O. That covers
///   * epilogues: pointwise after a reduction over the same outer ranges (softmax's divide,
///     layernorm's normalize), which then read the reduction result from a register;
///   * sibling reductions over the same input (layernorm's mean and variance);
///   * horizontal fusion: pointwise siblings over the same ranges reading the same input;
///   * realized pointwise producers feeding a reduction (a prologue kept in memory because
///     the graph also returns it).
/// A merge must save bytes (a member's result read from a register instead of memory, or a
/// shared input read once), may read other members only at the same point (or a reduction's
/// result at the same outer point), and never moves work across an extern step, so it can
/// neither create a cycle nor reorder around ATen calls with effects.
#pragma once

#include "ir/loop_ir.h"

namespace inductor_cpp::ir {

/// How a compute sits in a group's iteration space (used by the scheduler too).
enum class MemberRole { Reduction, Inner, Outer };

struct GroupShape {
  std::vector<Expr> outer;
  std::vector<Expr> inner;  ///< empty: a pointwise-only group
};

/// The shape of a kernel group, and each member's role in it. Throws std::logic_error if
/// the group is not a valid fusion (fuse_kernels only builds valid ones).
GroupShape group_shape(const LoopProgram& program, const KernelGroup& group);
MemberRole member_role(const Compute& c, const GroupShape& shape);

LoopProgram fuse_kernels(const LoopProgram& program);

}  // namespace inductor_cpp::ir
