/// \file
/// Per-column affine folding of an epilogue expression, for absorb_epilogues.h: a run of
/// +, -, · by values that depend on the column index alone (a bias, batch norm's mean,
/// 1/sqrt(var + eps), weight and bias) is one map y·s[c] + t[c]. Where s or t is more than a
/// constant or a plain vector, it becomes a small compute over the columns, and the expression
/// reads that vector: the library then applies the whole run as one scale and one shift per
/// column (scale_col, bias_col in epilogue_ops.h).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/epilogue_ops.h"
#include "ir/loop_ir.h"

namespace inductor_cpp::ir {

struct FoldedEpilogue {
  Value epilogue;
  std::vector<Buffer> buffers;    ///< of the new computes
  std::vector<Compute> computes;  ///< the per-column vectors, each pointwise over [columns]
};

/// `epilogue` with its per-column runs folded. New vectors are named `prefix` + "_scale<k>" /
/// "_shift<k>"; `device` is theirs.
FoldedEpilogue fold_column_affine(const Value& epilogue, const EpilogueShape& shape,
                                  const std::function<const Buffer*(const std::string&)>& buffer_of,
                                  const std::string& prefix, const std::string& device);

}  // namespace inductor_cpp::ir
