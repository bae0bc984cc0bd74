/// \file
/// Loop-order and loop-merging decisions for the scheduler (schedule.cpp), over the list of
/// index expressions a kernel evaluates. Private to ir/passes.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/index_expr.h"
#include "ir/value.h"

namespace inductor_cpp::ir {

struct LoopDim {
  std::string var;
  Expr extent;
};

/// Every index expression a value DAG evaluates (load offsets and masks, index values).
void collect_index_exprs(const Value& v, std::vector<Expr>& out);

/// The memory offsets a value DAG loads from (no masks, no index values): what decides which
/// loop a kernel is vectorized along (an index value or a mask costs the same either way).
void collect_load_offsets(const Value& v, std::vector<Expr>& out);

/// Orders `dims` (outer to inner) by decreasing coefficient in `reference` (the access whose
/// contiguity matters most); keeps the given order where coefficients are unknown or tie.
std::vector<LoopDim> order_by_stride(std::vector<LoopDim> dims, const Expr& reference);

/// Merges adjacent dims (outer a, inner b) wherever every expression in `exprs` is affine in
/// both with coefficient(a) == coefficient(b) * extent(b). The merged loop keeps b's name and
/// takes extent(a) * extent(b); `substitutions` receives a -> 0 for each merged-away a, which
/// callers apply to every expression (valid exactly because of the coefficient condition).
std::vector<LoopDim> merge_dims(const std::vector<LoopDim>& dims, const std::vector<Expr>& exprs,
                                std::map<std::string, Expr>& substitutions);

/// Collapses `dims` (outer to inner, at least one) into one loop over `flat_var` whose extent
/// is the product of theirs (the GPU schedule: one flat index mapped to threads). Each dim's
/// variable is recovered as (flat // inner extents) % extent; `substitutions` receives those
/// replacements, which callers apply to every expression. A single dim is returned as is.
LoopDim flatten_dims(const std::vector<LoopDim>& dims, const std::string& flat_var,
                     std::map<std::string, Expr>& substitutions);

}  // namespace inductor_cpp::ir
