/// \file
/// Matching `aten::mm` / `addmm` / `bmm` extern steps to library calls, and the
/// activation / residual kernels their epilogue absorbs (plan_matmul.h).
#include "inductor/plan_matmul.h"

#include "inductor/lower/lower_graph.h"
#include "inductor/plan_epilogue.h"
#include "inductor/plan_tile_epilogue.h"
#include "matrix/matrix.h"

namespace inductor_cpp::inductor {

using ir::Arg;

using namespace matrix_plan;

namespace {

std::optional<int64_t> static_dim(const ir::Dim& d) {
  if (const int64_t* v = std::get_if<int64_t>(&d)) return *v;
  return std::nullopt;
}

/// The dtypes our GEMMs take: float32, and bfloat16 for mm / addmm when the caller allows it
/// (match_matmul's bf16_on_amx).
bool is_matrix_dtype(const std::string& dtype, bool bmm, bool bf16_on_amx) {
  return dtype == "float32" || (dtype == "bfloat16" && !bmm && bf16_on_amx);
}

bool is_cpu_2d(const ir::TensorMeta* m, const std::string& dtype) {
  return m && m->dtype == dtype && m->device == "cpu" && m->sizes.size() == 2 &&
         m->strides.size() == 2;
}

/// The launch of mm / addmm / bmm node `n` before anything is absorbed: operands, alpha, and
/// addmm's bias as the first epilogue op (`[cols]` / `[1, cols]` → bias_col; with static
/// `rows`, `[rows, 1]` → bias_row and `[rows, cols]` → residual). Nothing when addmm's beta is
/// not the literal 1, its alpha not a literal, or its bias none of those.
std::optional<MatmulMatch> start_launch(
    const ir::Graph& g, int64_t n, const std::string& op, const Arg& a, const Arg& b,
    std::optional<int64_t> rows, int64_t cols, const std::string& dtype,
    const std::function<int32_t(const std::string&)>& slot_of_buffer) {
  const ir::Node& node = g.nodes.at(static_cast<size_t>(n));
  MatmulMatch match;
  match.step.node = static_cast<int32_t>(n);
  match.step.action = runtime::LibraryCall::of(op);
  runtime::LibraryCall& call = *match.step.library();
  call.nodes = {static_cast<int32_t>(n)};
  runtime::GemmCall& launch = call.as<runtime::GemmCall>();
  launch.a = slot_of_buffer(buffer_name_of(a));
  launch.b = slot_of_buffer(buffer_name_of(b));
  if (op != "addmm") return match;
  const auto beta = number_or(node, 3, "beta", 1), alpha = number_or(node, 4, "alpha", 1);
  // The bf16 GEMM has no alpha: addmm with alpha != 1 stays ATen there.
  if (!beta || *beta != 1 || !alpha || (dtype != "float32" && *alpha != 1)) return std::nullopt;
  launch.alpha = static_cast<float>(*alpha);
  const Arg& bias = node.args[0];
  const auto bias_meta = meta_of(g, bias);
  if (!is_tensor_ref(bias) || !bias_meta || bias_meta->dtype != dtype || bias_meta->device != "cpu")
    return std::nullopt;
  const std::vector<int64_t>& bs = bias_meta->sizes;
  std::string kind;
  if (bs == std::vector<int64_t>{cols} || bs == std::vector<int64_t>{1, cols}) {
    kind = "bias_col";
  } else if (rows && bs == std::vector<int64_t>{*rows, 1}) {
    kind = "bias_row";
  } else if (rows && bs == std::vector<int64_t>{*rows, cols}) {
    kind = "residual";
  } else {
    return std::nullopt;
  }
  launch.epilogue.push_back({kind, slot_of_buffer(buffer_name_of(bias)), 0, 0});
  return match;
}

/// A symbolic plan's float32 dynamic-rows step absorbs a data-free activation (GELU, ReLU,
/// SiLU, ...) that is its output's only reader, directly or through one reshape (a Linear's
/// [B·S, N] viewed as [B, S, N]): both are ATen calls there, the activation one more pass
/// over the output (and a fresh allocation: ATen's gelu on 1024 × 3072 took 3.6 ms inside
/// the encoder's symbolic plan, 1.1 ms on its own). An elementwise op applied to every element
/// of a view of the step's output is applied to the output itself, so the activation's value
/// becomes the reshape's (or the step's) value: a slot alias.
void absorb_activation(const ir::Graph& g, const ir::ScheduledProgram& program, int64_t n,
                       MatmulMatch& match) {
  int32_t applied_to = static_cast<int32_t>(n);
  std::optional<int32_t> reader = sole_reader_node(g, program, applied_to);
  if (!reader) return;
  const std::string reader_op = op_name(g.nodes[*reader].op);
  if ((reader_op == "aten::view" || reader_op == "aten::_unsafe_view" ||
       reader_op == "aten::reshape") &&
      !g.nodes[*reader].args.empty() && g.nodes[*reader].args[0].kind == Arg::Kind::Value &&
      g.nodes[*reader].args[0].index == applied_to && g.nodes[*reader].args[0].output == 0) {
    applied_to = *reader;
    reader = sole_reader_node(g, program, applied_to);
    if (!reader) return;
  }
  const std::optional<runtime::MatmulEpilogue> op = activation_of(g.nodes[*reader], applied_to);
  if (!op) return;
  for (size_t k = 0; k < program.steps.size(); ++k) {
    const ir::ScheduledStep& s = program.steps[k];
    if (s.kind != ir::ScheduledStep::Kind::Extern || s.call.graph_node != *reader) continue;
    runtime::LibraryCall& call = *match.step.library();
    call.as<runtime::GemmCall>().epilogue.push_back(*op);
    call.nodes.push_back(*reader);
    match.absorbed_step = k;
    match.aliases.emplace_back(buffer_name_of(Arg::value(*reader, 0)),
                               buffer_name_of(Arg::value(applied_to, 0)));
    return;
  }
}

/// An mm / addmm whose row count is symbolic (Dynamo's dynamic batch: A [M, K], a weight
/// B [K, N], the output [M, N] with K and N static, row-major). The step's output has rows -1:
/// the runtime allocates [rows of A, N] per call. addmm's bias must be a [N] / [1, N] vector;
/// in float32 a data-free activation after it is absorbed (absorb_activation).
std::optional<MatmulMatch> match_dynamic_rows(
    const ir::Graph& g, const ir::ScheduledProgram& program, int64_t n, bool addmm,
    const std::function<int32_t(const std::string&)>& slot_of_buffer, bool bf16_on_amx) {
  const ir::Node& node = g.nodes.at(static_cast<size_t>(n));
  const size_t first = addmm ? 1 : 0;
  const Arg& a = node.args[first];
  const Arg& b = node.args[first + 1];
  const ir::TensorMeta* a_meta = tensor_meta_of(g, a);
  const ir::TensorMeta* out_meta = tensor_meta_of(g, Arg::value(n, 0));
  const auto b_meta = meta_of(g, b);
  const std::string dtype = a_meta ? a_meta->dtype : "";
  if (!is_matrix_dtype(dtype, false, bf16_on_amx) || !is_cpu_2d(a_meta, dtype) ||
      !is_cpu_2d(out_meta, dtype) || !is_cpu_tensor(b_meta, 2, dtype))
    return std::nullopt;
  const int64_t k = b_meta->sizes[0], cols = b_meta->sizes[1];
  const auto a_k = static_dim(a_meta->sizes[1]), out_cols = static_dim(out_meta->sizes[1]);
  const auto row_stride = static_dim(out_meta->strides[0]),
             col_stride = static_dim(out_meta->strides[1]);
  if (!a_k || *a_k != k || !out_cols || *out_cols != cols || !row_stride || *row_stride != cols ||
      !col_stride || *col_stride != 1)
    return std::nullopt;
  auto match =
      start_launch(g, n, addmm ? "addmm" : "mm", a, b, std::nullopt, cols, dtype, slot_of_buffer);
  if (!match) return std::nullopt;
  match->step.library()->as<runtime::GemmCall>().out = runtime::BufferAlloc{slot_of_buffer(buffer_name_of(Arg::value(n, 0))),
                                                {runtime::kRowsOfA, cols},
                                                {cols, 1},
                                                dtype,
                                                "cpu",
                                                -1};
  if (dtype == "float32") absorb_activation(g, program, n, *match);
  return match;
}

}  // namespace

std::optional<MatmulMatch> match_matmul(
    const ir::Graph& g, const ir::ScheduledProgram& program, size_t step_index,
    const std::set<std::string>& into_inputs,
    const std::function<int32_t(const std::string&)>& slot_of_buffer, const ir::LoopProgram* fused,
    bool bf16_on_amx) {
  const ir::ScheduledStep& s = program.steps.at(step_index);
  if (s.kind != ir::ScheduledStep::Kind::Extern || s.call.view || s.call.graph_node < 0)
    return std::nullopt;
  const int64_t n = s.call.graph_node;
  const ir::Node& node = g.nodes.at(static_cast<size_t>(n));
  const std::string op = op_name(node.op);
  const bool addmm = op == "aten::addmm", bmm = op == "aten::bmm";
  if (op != "aten::mm" && !addmm && !bmm) return std::nullopt;
  const size_t first = addmm ? 1 : 0;
  if (node.args.size() < first + 2 || node.outputs.size() != 1) return std::nullopt;
  const Arg& a = node.args[first];
  const Arg& b = node.args[first + 1];
  if (!is_tensor_ref(a) || !is_tensor_ref(b)) return std::nullopt;
  const size_t rank = bmm ? 3 : 2;
  const auto out_meta = meta_of(g, Arg::value(n, 0));
  const auto a_meta = meta_of(g, a), b_meta = meta_of(g, b);
  if (!bmm && (!out_meta || !a_meta))
    return match_dynamic_rows(g, program, n, addmm, slot_of_buffer, bf16_on_amx);
  const std::string dtype = out_meta ? out_meta->dtype : "";
  if (!is_matrix_dtype(dtype, bmm, bf16_on_amx) || !is_cpu_tensor(out_meta, rank, dtype) ||
      !is_cpu_tensor(a_meta, rank, dtype) || !is_cpu_tensor(b_meta, rank, dtype))
    return std::nullopt;
  if (!is_row_major(*out_meta)) return std::nullopt;
  const int64_t m = out_meta->sizes[rank - 2], cols = out_meta->sizes[rank - 1];
  if (a_meta->sizes[rank - 2] != m || b_meta->sizes[rank - 1] != cols ||
      a_meta->sizes[rank - 1] != b_meta->sizes[rank - 2])
    return std::nullopt;
  if (bmm && (a_meta->sizes[0] != out_meta->sizes[0] || b_meta->sizes[0] != out_meta->sizes[0]))
    return std::nullopt;

  auto started =
      start_launch(g, n, op.substr(6) /* after "aten::" */, a, b, m, cols, dtype, slot_of_buffer);
  if (!started) return std::nullopt;
  MatmulMatch match = std::move(*started);
  runtime::LibraryCall& call = *match.step.library();
  runtime::GemmCall& launch = call.as<runtime::GemmCall>();
  const std::string out = buffer_name_of(Arg::value(n, 0));
  if (dtype != "float32") {  // bf16: the bias only; the kernels after it stay kernels
    if (m > matrix::kBf16AmxMaxRows) return std::nullopt;  // ATen's GEMM is the faster there
    launch.out = runtime::BufferAlloc{
        slot_of_buffer(out), out_meta->sizes, out_meta->strides, dtype, "cpu", -1};
    return match;
  }
  auto absorbed =
      absorbable(g, program, step_index, n, *out_meta, is_row_major, into_inputs, slot_of_buffer,
                 /*batch_norm=*/false, /*materialized=*/nullptr, /*allow_reshapes=*/!bmm);
  if (!absorbed && !bmm && fused) {
    // The step writes the consumer's buffer, which must then be dense row-major (as a reshape
    // of the output is): the tile pass also takes other dense orders (a permuted view's result).
    auto tiled =
        tile_absorbable(g, *fused, program, step_index, n, m, cols, into_inputs, slot_of_buffer);
    if (tiled && is_row_major(StaticMeta{tiled->absorbed.sizes, tiled->absorbed.strides, "float32",
                                         "cpu"})) {
      absorbed = std::move(tiled->absorbed);
      match.tile_kernel = std::move(tiled->kernel);
    }
  }
  const std::string written = absorbed ? absorbed->written : out;
  if (absorbed) {
    launch.epilogue.insert(launch.epilogue.end(), absorbed->ops.begin(), absorbed->ops.end());
    call.nodes.insert(call.nodes.end(), absorbed->nodes.begin(), absorbed->nodes.end());
    match.absorbed_step = absorbed->step;
  }
  launch.out = runtime::BufferAlloc{slot_of_buffer(written),
                                    absorbed ? absorbed->sizes : out_meta->sizes,
                                    absorbed ? absorbed->strides : out_meta->strides,
                                    "float32",
                                    "cpu",
                                    -1};
  return match;
}

}  // namespace inductor_cpp::inductor
