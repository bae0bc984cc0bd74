/// \file
/// Epilogue selection: a library call's epilogue expression (library_call.h) as the sequence of
/// fixed operations the library kernels apply to each finished output tile (matrix/gemm.h
/// EpilogueKind), or nothing when the expression is not such a sequence.
///
/// The expression is read from its root down to `acc`, each level one operation:
///   maximum(x, 0)                         relu          minimum(maximum(x, lo), hi)  clamp lo hi
///   maximum(x, lo) / minimum(x, hi)       clamp         tanh(x) / sigmoid(x)         tanh / sigmoid
///   gelu_formula(x) / silu_formula(x)     gelu, gelu_tanh, silu  (activation_formulas.h)
///   x + load(b, [.., j, ..])              bias_col      a vector along the column dim (j)
///   x + load(b, [i, 0])                   bias_row      2-D mm / addmm: a vector along the rows
///   x + load(r, [i0, .., ik])             residual      a tensor of the output's sizes
///   x · c                                 scale         a constant
///   x · load(s, [.., j, ..])              scale_col     a vector along the column dim
///   x · load(r, [i0, .., ik])             mul           a tensor of the output's sizes (a gate)
/// (either operand order for + and ·). Loads are unmasked and direct, of the epilogue's type:
/// float32, or bfloat16 (the AMX GEMM takes its bias ops), or float16 (a GPU addmm's bias).
/// The column dim
/// is the last for mm / addmm / bmm and 1 (channels) for conv2d.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/library_call.h"
#include "ir/loop_ir.h"

namespace inductor_cpp::ir {

#define INDUCTOR_CPP_EPILOGUE_OP_KINDS(X)                                                     \
  X(bias_col) X(bias_row) X(residual) X(mul) X(scale) X(scale_col) X(relu) X(gelu) X(gelu_tanh) \
  X(silu) X(sigmoid) X(tanh) X(clamp)

enum class EpilogueOpKind : uint8_t {
#define INDUCTOR_CPP_ENUM_ENTRY(k) k,
  INDUCTOR_CPP_EPILOGUE_OP_KINDS(INDUCTOR_CPP_ENUM_ENTRY)
#undef INDUCTOR_CPP_ENUM_ENTRY
};
const char* epilogue_op_kind_name(EpilogueOpKind kind);

struct EpilogueOp {
  EpilogueOpKind kind;
  std::string buffer;  ///< bias_col, bias_row, residual, mul, scale_col: the data read
  double a = 0, b = 0;  ///< scale: a; clamp: [a, b]
  bool operator==(const EpilogueOp& o) const;
};

/// Where an epilogue's coordinates put the output's columns and rows.
struct EpilogueShape {
  std::vector<Expr> sizes;  ///< of the domain (the buffer the epilogue's indices address)
  size_t column_dim = 0;
  std::optional<size_t> row_dim;  ///< 2-D mm / addmm only
};

/// The shape of `call`'s epilogue domain, whose buffer is `domain` (the call's first output,
/// or its tile input when it has a tile).
EpilogueShape epilogue_shape(const LibraryCall& call, const Buffer& domain);

/// True when `v` mentions the epilogue accumulator.
bool mentions_accumulator(const Value& v);

/// `epilogue` as fixed operations, innermost first (a null epilogue: none), or nothing with the
/// reason in `why_not` (when given). `buffer_of` finds the buffers the loads name.
std::optional<std::vector<EpilogueOp>> select_epilogue_ops(
    const Value& epilogue, const EpilogueShape& shape,
    const std::function<const Buffer*(const std::string&)>& buffer_of, std::string* why_not = nullptr);

/// Whether a GPU library call applies `ops` (innermost first) itself, through ATen
/// (runtime/gpu_library_step.h); false with the reason in `why_not` (when given) otherwise:
///   mm / addmm / bmm  [scale] [bias_col | bias_row | residual] [relu | gelu_tanh]
/// the scale folded into alpha, the vector or tensor as cuBLAS's C (beta 1), the activation as
/// cuBLASLt's epilogue (2-D, and only after a C: ATen's _addmm_activation; bmm has no
/// bias_row and no activation);
///   conv2d  [bias_col]  (cuDNN's bias).
bool gpu_epilogue_fits(LibraryOp op, const std::vector<EpilogueOp>& ops, std::string* why_not = nullptr);

/// A text form for logs and tests: "bias_col(%c2) -> batch... -> clamp(0, 6)".
std::string epilogue_ops_text(const std::vector<EpilogueOp>& ops);

}  // namespace inductor_cpp::ir
