/// \file
/// AtenExecutable: binding plan operands to operator schemas, and the step loop.
#include "runtime/aten_executor.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/jit_type.h>
#include <ATen/record_function.h>
#include <c10/util/Exception.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <optional>
#include <stdexcept>

#include "runtime/aten_literals.h"
#include "runtime/attention_step.h"
#include "runtime/conv_backward_step.h"
#include "runtime/conv_step.h"
#include "runtime/cpu_pool.h"
#include "runtime/cuda/gpu_step.h"
#include "runtime/matmul_bf16_step.h"
#include "runtime/matmul_step.h"
#include "matrix/matrix.h"
#include "runtime/scalar_ops.h"
#include "runtime/tile_kernel_call.h"

namespace inductor_cpp::runtime {

namespace {

using nlohmann::json;

// ---- bound operands ---------------------------------------------------------------------------

/// How one schema argument gets its value on each call.
struct Operand {
  enum class Kind { Constant, Slot, TensorList, OptionalTensorList, NumberList };
  Kind kind = Kind::Constant;
  c10::IValue constant;
  int32_t slot = -1;
  /// A Tensor is declared but the slot may hold a number (a size, in dynamic-shape graphs):
  /// pass it as a wrapped-number tensor, as Python would.
  bool wrap_number = false;
  std::vector<int32_t> slots;  ///< list members; -1 is None in an optional-tensor list
  /// NumberList: each member is slots[i] if >= 0, else members[i] (a literal).
  std::vector<c10::IValue> members;
  c10::TypePtr element_type;  ///< NumberList: int, float or bool
};

Operand bind_operand(const PlanArg& arg, const c10::Argument& formal) {
  Operand out;
  if (arg.kind == PlanArg::Kind::Slot) {
    out.kind = Operand::Kind::Slot;
    out.slot = arg.slot;
    out.wrap_number = strip_optional(formal.type())->kind() == c10::TypeKind::TensorType;
    return out;
  }
  if (arg.kind == PlanArg::Kind::Literal) {
    // None for a (non-optional) Tensor is an undefined tensor, as autograd formulas pass it
    // (e.g. attn_bias of _scaled_dot_product_efficient_attention_backward).
    if (arg.literal.is_null() && formal.type()->kind() == c10::TypeKind::TensorType) {
      out.constant = c10::IValue(at::Tensor());
      return out;
    }
    out.constant = literal_to_ivalue(arg.literal, formal.type(), formal.N());
    return out;
  }
  // A list holding slots: Tensor[] or Tensor?[], or a size list mixing literals and slots
  // ([-1, s0 * 2] in dynamic-shape graphs). Lists of literals only are constants.
  const auto list_type = strip_optional(formal.type())->cast<c10::ListType>();
  if (!list_type)
    throw std::runtime_error("a list was given for '" + formal.name() + "', declared " +
                             formal.type()->str());
  const bool optional_elems = list_type->getElementType()->cast<c10::OptionalType>() != nullptr;
  const bool has_slot = std::any_of(arg.items.begin(), arg.items.end(),
                                    [](const PlanArg& i) { return i.kind == PlanArg::Kind::Slot; });
  if (!has_slot) {
    json items = json::array();
    for (const PlanArg& item : arg.items) items.push_back(item.literal);
    out.constant = list_literal(items, list_type);
    return out;
  }
  const c10::TypePtr elem = list_type->getElementType();
  if (elem->kind() != c10::TypeKind::TensorType && !optional_elems) {
    out.kind = Operand::Kind::NumberList;
    out.element_type = elem;
    for (const PlanArg& item : arg.items) {
      if (item.kind == PlanArg::Kind::List)
        throw std::runtime_error("nested list argument '" + formal.name() + "'");
      out.slots.push_back(item.kind == PlanArg::Kind::Slot ? item.slot : -1);
      out.members.push_back(item.kind == PlanArg::Kind::Slot
                                ? c10::IValue()
                                : literal_to_ivalue(item.literal, elem, std::nullopt));
    }
    return out;
  }
  for (const PlanArg& item : arg.items) {
    if (item.kind == PlanArg::Kind::Slot) {
      out.slots.push_back(item.slot);
    } else if (item.kind == PlanArg::Kind::Literal && item.literal.is_null() && optional_elems) {
      out.slots.push_back(-1);
    } else {
      throw std::runtime_error("list argument '" + formal.name() +
                               "' mixes tensors and other values");
    }
  }
  out.kind = optional_elems ? Operand::Kind::OptionalTensorList : Operand::Kind::TensorList;
  return out;
}

/// A generated-kernel step, ready to call.
struct BoundKernel {
  KernelFn fn = nullptr;
  int32_t gpu_index = -1;  ///< GPU plans: the kernel in Bound::gpu_kernels (fn is null)
  std::vector<int32_t> args;
  std::vector<ExpectedLayout> layouts;
  std::vector<bool> written;    ///< per argument: the kernel stores to it
  std::vector<bool> allocated;  ///< per argument: allocated for this call (else it updates a tensor)
  struct Alloc {
    int32_t slot;
    std::vector<int64_t> sizes, strides;
    at::TensorOptions options;
    int32_t reuse_slot;
  };
  std::vector<Alloc> allocs;
  std::string label;
  std::string profile_name;  ///< torch.profiler range name (profile_name_of)
};

/// A matrix step (MatmulLaunch), ready to run on our GEMM / convolution library.
struct BoundMatmul {
  MatmulLaunch launch;
  std::vector<matrix::EpilogueKind> kinds;  ///< per launch.epilogue entry
  at::TensorOptions options;
  std::string label;
  std::string profile_name;  ///< torch.profiler range name (profile_name_of)
  /// mm/addmm: B packed once while it does not change (runtime/matmul_step.h).
  std::shared_ptr<PackedBCache> packed_b;
  std::shared_ptr<const ConvStep> conv;  ///< set for "conv2d" (runtime/conv_step.h)
  /// set for "conv2d_backward" (runtime/conv_backward_step.h)
  std::shared_ptr<const ConvBackwardStep> conv_backward;
  /// set for "attention" and "attention_backward" (runtime/attention_step.h)
  std::shared_ptr<const AttentionStep> attention;
  /// set for a bfloat16 mm / addmm (runtime/matmul_bf16_step.h)
  std::shared_ptr<const MatmulBf16Step> bf16;
  KernelFn tile_fn = nullptr;  ///< the "kernel" epilogue op's function (the last op), if any
};

struct BoundStep {
  std::optional<BoundKernel> kernel;
  std::optional<BoundMatmul> matmul;
  std::optional<ScalarOp> scalar_op;  ///< set for "sym::" steps, which never touch the dispatcher
  std::optional<c10::OperatorHandle> op;
  std::vector<Operand> operands;  ///< one per schema argument, in schema order
  std::vector<int32_t> outs;
  bool flatten_list_return = false;
  std::vector<int32_t> free_after;
  int32_t node = -1;
};

/// An operand with no schema to follow (scalar-op arguments, graph outputs): a slot or a
/// literal taken as written.
Operand bind_untyped(const PlanArg& arg, const std::string& what) {
  Operand o;
  if (arg.kind == PlanArg::Kind::Slot) {
    o.kind = Operand::Kind::Slot;
    o.slot = arg.slot;
    return o;
  }
  if (arg.kind == PlanArg::Kind::List)
    throw std::runtime_error(what + ": list values are not supported");
  o.constant = literal_to_ivalue(arg.literal, c10::AnyType::get(), std::nullopt);
  return o;
}

BoundStep bind_scalar_step(const Step& step) {
  BoundStep bound;
  bound.scalar_op = scalar_op_from_name(step.call.op);
  if (!bound.scalar_op) throw std::runtime_error("unknown scalar operation " + step.call.op);
  for (const PlanArg& arg : step.call.args)
    bound.operands.push_back(bind_untyped(arg, step.call.op));
  bound.outs = step.call.outs;
  bound.free_after = step.free_after;
  bound.node = step.node;
  return bound;
}

/// The name torch.profiler shows for a generated or matrix step: "inductor_cpp::<what>" and
/// the ATen ops it computes, e.g. "inductor_cpp::kernel2 (add, native_layer_norm)". Labels look
/// like "%12 aten::add.Tensor (file.py:3 in f: ...)": the op name is the word after "aten::".
std::string profile_name_of(const std::string& what, const std::vector<int32_t>& nodes,
                            const std::vector<std::string>& labels) {
  std::string ops;
  for (int32_t n : nodes) {
    if (n < 0 || n >= static_cast<int32_t>(labels.size())) continue;
    const std::string& l = labels[n];
    const size_t at = l.find("::");
    if (at == std::string::npos) continue;
    const size_t end = l.find_first_of(". (", at + 2);
    const std::string op = l.substr(at + 2, end == std::string::npos ? std::string::npos : end - at - 2);
    if (op == "view" || op == "permute" || op == "_unsafe_view" || op == "expand") continue;
    if (ops.find(op) != std::string::npos) continue;
    ops += (ops.empty() ? "" : ", ") + op;
  }
  return "inductor_cpp::" + what + (ops.empty() ? "" : " (" + ops + ")");
}

/// What tells a matrix step's profiler range apart from another of the same ops: the output's
/// sizes ("?" for a symbolic row count) and, for convolutions, stride and padding; a
/// convolution backward names the gradients it computes. E.g. " [16, 128, 14, 14] stride 2 pad 1".
std::string matrix_shape_text(const MatmulLaunch& launch) {
  const auto sizes = [](const BufferAlloc& b) {
    std::string text = "[";
    for (size_t i = 0; i < b.sizes.size(); ++i)
      text += (i ? ", " : "") + (b.sizes[i] < 0 ? std::string("?") : std::to_string(b.sizes[i]));
    return text + "]";
  };
  std::string text;
  if (launch.is_conv_backward()) {
    if (launch.out.slot >= 0) text += " dx " + sizes(launch.out);
    if (launch.grad_weight.slot >= 0) text += " dw " + sizes(launch.grad_weight);
  } else {
    text += " " + sizes(launch.out);
  }
  if (launch.is_conv() || launch.is_conv_backward()) {
    const ConvGeometry& g = launch.conv;
    const auto pair = [](const std::array<int64_t, 2>& v) {
      return v[0] == v[1] ? std::to_string(v[0]) : std::to_string(v[0]) + "x" + std::to_string(v[1]);
    };
    text += " stride " + pair(g.stride) + " pad " + pair(g.padding);
    if (g.dilation[0] != 1 || g.dilation[1] != 1) text += " dilation " + pair(g.dilation);
  }
  return text;
}

BoundStep bind_kernel_step(const Step& step, const KernelLibrary* library, const std::vector<std::string>& labels) {
  BoundStep bound;
  BoundKernel k;
  if (library) k.fn = library->kernel(step.kernel.name);  // GPU plans: bound in the constructor
  k.args = step.kernel.args;
  k.layouts = step.kernel.layouts;
  k.written.assign(k.args.size(), false);
  k.allocated.assign(k.args.size(), false);
  for (const BufferAlloc& a : step.kernel.allocs) {
    const auto options = at::TensorOptions().dtype(scalar_type_from_name(a.dtype)).device(c10::Device(a.device));
    k.allocs.push_back({a.slot, a.sizes, a.strides, options, a.reuse_slot});
    for (size_t i = 0; i < k.args.size(); ++i) {
      if (k.args[i] == a.slot) k.written[i] = k.allocated[i] = true;
    }
  }
  for (int32_t u : step.kernel.updates) k.written.at(static_cast<size_t>(u)) = true;
  k.label = "generated " + step.kernel.name;
  std::string computing;
  for (int32_t n : step.kernel.nodes) {
    if (n >= 0 && n < static_cast<int32_t>(labels.size())) computing += (computing.empty() ? "" : ", ") + labels[n];
  }
  if (!computing.empty()) k.label += " computing " + computing;
  k.profile_name = profile_name_of(step.kernel.name, step.kernel.nodes, labels);
  bound.kernel = std::move(k);
  bound.free_after = step.free_after;
  bound.node = step.node;
  return bound;
}

matrix::EpilogueKind epilogue_kind(const std::string& kind) {
  static const std::pair<const char*, matrix::EpilogueKind> kinds[] = {
      {"bias_col", matrix::EpilogueKind::BiasCol}, {"bias_row", matrix::EpilogueKind::BiasRow},
      {"residual", matrix::EpilogueKind::AddResidual}, {"scale", matrix::EpilogueKind::Scale},
      {"relu", matrix::EpilogueKind::Relu},         {"gelu", matrix::EpilogueKind::Gelu},
      {"gelu_tanh", matrix::EpilogueKind::GeluTanh}, {"silu", matrix::EpilogueKind::Silu},
      {"clamp", matrix::EpilogueKind::Clamp},       {"mul", matrix::EpilogueKind::MulResidual},
      {"sigmoid", matrix::EpilogueKind::Sigmoid},   {"tanh", matrix::EpilogueKind::Tanh},
      // conv2d only; ConvStep expands it into ScaleCol + BiasCol (runtime/conv_step.h)
      {"batch_norm", matrix::EpilogueKind::ScaleCol},
      // mm / addmm / conv2d, last: a generated tile kernel (ir/passes/tile_epilogue.h)
      {"kernel", matrix::EpilogueKind::Tile}};
  for (const auto& [name, k] : kinds) {
    if (kind == name) return k;
  }
  throw std::runtime_error("unknown matmul epilogue '" + kind + "'");
}

/// True when the allocation's strides are those of a contiguous tensor (size-1 dims: any).
bool is_dense_row_major(const BufferAlloc& a) {
  if (a.sizes.size() != a.strides.size()) return false;
  int64_t expected = 1;
  for (size_t d = a.sizes.size(); d-- > 0;) {
    if (a.sizes[d] != 1 && a.strides[d] != expected) return false;
    expected *= a.sizes[d];
  }
  return true;
}

BoundStep bind_matmul_step(const Step& step, const KernelLibrary* library, const std::vector<std::string>& labels,
                           bool frozen_weights) {
  BoundMatmul m;
  m.packed_b = std::make_shared<PackedBCache>(!frozen_weights, /*shared=*/true);
  m.launch = step.matmul;
  for (const MatmulEpilogue& e : m.launch.epilogue) {
    m.kinds.push_back(epilogue_kind(e.kind));
    if (e.kind == "kernel") {
      if (&e != &m.launch.epilogue.back() || m.launch.op == "bmm" || e.kernel.empty() ||
          e.layouts.size() != e.params.size())
        throw std::runtime_error("matmul epilogue 'kernel': the last op of an mm / addmm / conv2d, with its layouts");
      if (!library) throw std::runtime_error("matmul epilogue 'kernel': no kernel library");
      m.tile_fn = library->kernel(e.kernel);
      continue;
    }
    const bool needs_data =
        e.kind == "bias_col" || e.kind == "bias_row" || e.kind == "residual" || e.kind == "mul";
    if (needs_data != (e.slot >= 0)) throw std::runtime_error("matmul epilogue '" + e.kind + "': bad data slot");
    if ((e.kind == "batch_norm") != !e.params.empty() || (e.kind == "batch_norm" && !m.launch.is_conv()))
      throw std::runtime_error("matmul epilogue '" + e.kind + "': batch_norm params on conv2d only");
  }
  const BufferAlloc& out = m.launch.out;
  // Steps with their own checks: the convolution backward (several outputs, none required),
  // attention and bf16 mm / addmm (runtime/matmul_bf16_step.h).
  const bool bf16 = out.dtype == "bfloat16" && out.device == "cpu" && !m.launch.is_conv();
  if (m.launch.is_conv_backward() || m.launch.is_attention() || m.launch.is_attention_backward() ||
      bf16) {
    m.label = "matrix::" + m.launch.op +
              (step.node >= 0 && step.node < static_cast<int32_t>(labels.size())
                   ? " computing " + labels[step.node]
                   : "");
    m.profile_name = profile_name_of("matrix::" + m.launch.op, m.launch.nodes, labels) +
                     matrix_shape_text(m.launch);
    if (m.launch.is_attention() || m.launch.is_attention_backward())
      m.attention = std::make_shared<const AttentionStep>(m.launch, m.label);
    else if (bf16)
      m.bf16 = std::make_shared<const MatmulBf16Step>(m.launch, m.label, frozen_weights);
    else
      m.conv_backward = std::make_shared<const ConvBackwardStep>(m.launch, m.label);
    BoundStep bound;
    bound.matmul = std::move(m);
    bound.free_after = step.free_after;
    bound.node = step.node;
    return bound;
  }
  if (out.dtype != "float32" || out.device != "cpu")
    throw std::runtime_error("matmul output must be float32 (or bfloat16 for mm / addmm) on the CPU");
  const size_t rank = m.launch.op == "bmm" ? 3 : 2;
  // mm/addmm whose absorbed chain ends in a reshape (addmm → view → gelu) write the chain's
  // dense row-major tensor, of any rank: run_matmul hands the GEMM its 2-D view.
  const bool reshaped = m.launch.op != "bmm" && out.sizes.size() != rank && is_dense_row_major(out);
  if (!m.launch.is_conv() && !reshaped &&
      (out.sizes.size() != rank || out.strides.size() != rank ||
       (out.strides[rank - 1] != 1 && out.sizes[rank - 1] != 1)))
    throw std::runtime_error("matmul output must be a row-major " + std::to_string(rank) + "-D tensor");
  m.options = at::TensorOptions().dtype(at::kFloat).device(c10::kCPU);
  m.label = "matrix::" + m.launch.op;
  std::string computing;
  for (int32_t n : m.launch.nodes) {
    if (n >= 0 && n < static_cast<int32_t>(labels.size())) computing += (computing.empty() ? "" : ", ") + labels[n];
  }
  if (!computing.empty()) m.label += " computing " + computing;
  m.profile_name =
      profile_name_of("matrix::" + m.launch.op, m.launch.nodes, labels) + matrix_shape_text(m.launch);
  if (m.launch.is_conv()) m.conv = std::make_shared<const ConvStep>(m.launch, m.kinds, m.label, m.tile_fn, frozen_weights);
  BoundStep bound;
  bound.matmul = std::move(m);
  bound.free_after = step.free_after;
  bound.node = step.node;
  return bound;
}

/// One matrix operand as the GEMM reads it: row-major (plain) or its transpose, with its
/// leading dimension; `keep` holds a contiguous copy when the strides were neither.
struct MatrixOperand {
  const float* data = nullptr;
  int64_t ld = 0;
  bool trans = false;
  at::Tensor keep;
};

/// `t`: a float32 tensor whose last two dims are the matrix (leading dims: the batch).
MatrixOperand matrix_operand(at::Tensor t) {
  const int64_t d = t.dim();
  const int64_t rows = t.size(d - 2), cols = t.size(d - 1);
  const int64_t rs = t.stride(d - 2), cs = t.stride(d - 1);
  MatrixOperand o;
  if (const auto layout = matrix::operand_layout(rows, cols, rs, cs)) {
    o.ld = layout->ld;
    o.trans = layout->trans;
  } else {
    t = t.contiguous();
    o.ld = cols;
  }
  for (int64_t i = 0; i + 2 < d; ++i) {
    if (t.stride(i) < 0) t = t.contiguous();
  }
  o.keep = t;
  o.data = t.data_ptr<float>();
  return o;
}

at::Tensor checked_f32(const c10::IValue& v, const char* what) {
  TORCH_CHECK(v.isTensor(), "inductor_cpp: matmul ", what, " is not a tensor");
  at::Tensor t = v.toTensor();
  TORCH_CHECK(t.scalar_type() == at::kFloat && t.device().is_cpu(), "inductor_cpp: matmul ", what,
              " must be a float32 CPU tensor, got ", t.scalar_type(), " on ", t.device());
  return t;
}

/// Allocates the output, reads the operands' strides, runs the GEMM with its epilogue.
void run_matmul(const BoundMatmul& bm, std::vector<c10::IValue>& slots) {
  if (bm.conv) return bm.conv->run(slots);
  if (bm.conv_backward) return bm.conv_backward->run(slots);
  if (bm.attention) return bm.attention->run(slots);
  if (bm.bf16) return bm.bf16->run(slots);
  const MatmulLaunch& m = bm.launch;
  const bool batched = m.op == "bmm";
  at::Tensor a = checked_f32(slots[m.a], "input");
  at::Tensor b = checked_f32(slots[m.b], "mat2");
  const int64_t rank = batched ? 3 : 2;
  TORCH_CHECK(a.dim() == rank && b.dim() == rank, "inductor_cpp: ", bm.label, ": operands of rank ", a.dim(), " and ",
              b.dim(), ", expected ", rank);
  // `stored` goes to the slot; the GEMM writes its 2-D view when the absorbed chain reshaped it.
  // Dynamic shapes: rows kRowsOfA are A's rows in this call.
  std::vector<int64_t> out_sizes = m.out.sizes;
  if (!batched && !out_sizes.empty() && out_sizes[0] == kRowsOfA) out_sizes[0] = a.size(0);
  const at::Tensor stored = empty_strided_pooled(out_sizes, m.out.strides, bm.options);
  const at::Tensor c = stored.dim() == rank ? stored : stored.view({a.size(0), b.size(1)});
  const int64_t batch = batched ? c.size(0) : 1;
  const int64_t rows = c.size(rank - 2), cols = c.size(rank - 1), inner = a.size(rank - 1);
  TORCH_CHECK(a.size(rank - 2) == rows && b.size(rank - 1) == cols && b.size(rank - 2) == inner &&
                  (!batched || (a.size(0) == batch && b.size(0) == batch)),
              "inductor_cpp: ", bm.label, ": operand sizes ", a.sizes(), " and ", b.sizes(), " do not give ", c.sizes());
  const MatrixOperand ao = matrix_operand(a), bo = matrix_operand(b);
  matrix::GemmProblem p;
  p.m = rows;
  p.n = cols;
  p.k = inner;
  p.a = ao.data;
  p.lda = ao.ld;
  p.trans_a = ao.trans;
  p.b = bo.data;
  p.ldb = bo.ld;
  p.trans_b = bo.trans;
  p.c = c.data_ptr<float>();
  p.ldc = rows == 1 ? cols : c.stride(rank - 2);
  p.alpha = m.alpha;
  p.flush_denormals = matrix::caller_flushes_denormals();
  std::vector<at::Tensor> data;  // epilogue operands (kept alive through the call)
  TileKernelCall tile;  // a "kernel" op's binding
  for (size_t i = 0; i < m.epilogue.size(); ++i) {
    const MatmulEpilogue& e = m.epilogue[i];
    matrix::EpilogueOp op;
    op.kind = bm.kinds[i];
    op.a = e.a;
    op.b = e.b;
    if (op.kind == matrix::EpilogueKind::Tile) {
      p.epilogue.push_back(tile.bind(bm.tile_fn, e, m.out.slot, stored, slots, bm.label));
      continue;
    }
    if (e.slot >= 0) {
      at::Tensor t = checked_f32(slots[e.slot], "epilogue operand");
      if (matrix::is_residual_op(op.kind)) {  // a tensor of the output's shape
        TORCH_CHECK(t.sizes() == stored.sizes(), "inductor_cpp: ", bm.label, ": ", e.kind, " operand of sizes ", t.sizes(),
                    ", expected ", stored.sizes());
        if (stored.dim() != rank) t = t.reshape(c.sizes());
        // bmm: the library steps residual data by the output's batch stride.
        const bool plain = t.stride(rank - 1) == 1 && (rows == 1 || t.stride(rank - 2) >= cols) &&
                           (!batched || t.stride(0) == c.stride(0) || batch == 1);
        if (!plain) t = t.contiguous();
        if (batched && batch > 1 && t.stride(0) != c.stride(0)) {
          at::Tensor laid = empty_strided_pooled(c.sizes(), c.strides(), bm.options);
          laid.copy_(t);
          t = laid;
        }
        op.ld = rows == 1 ? cols : t.stride(rank - 2);
      } else {
        const int64_t length = e.kind == "bias_col" ? cols : rows;
        TORCH_CHECK(t.numel() == length, "inductor_cpp: ", bm.label, ": bias of ", t.numel(), " elements, expected ",
                    length);
        t = t.reshape({length}).contiguous();
      }
      op.data = t.data_ptr<float>();
      data.push_back(t);
    }
    p.epilogue.push_back(op);
  }
  const int threads = static_cast<int>(at::get_num_threads());
  if (batched) {
    const int64_t stride_a = batch == 1 ? 0 : ao.keep.stride(0), stride_b = batch == 1 ? 0 : bo.keep.stride(0);
    matrix::bmm_f32(p, batch, stride_a, stride_b, c.stride(0), threads);
  } else if (matrix::in_place_beats_packed_copy(p, threads, !bm.packed_b->checks_contents())) {
    // One or few rows times Wᵀ, or a plain B under few row tiles, where reading B once in place
    // beats the packed copy and its fingerprint (gemm.h): no copy to keep or check. With
    // freezing a plain B is still cached: the packed copy is faster than reading it in place
    // (16 threads: mm 8 × 4096² 0.67 against 0.92 ms).
    matrix::gemm_f32(p, threads);
  } else if (auto packed = bm.packed_b->lookup(
                 b, threads, [&] { return matrix::pack_b_f32(bo.data, inner, cols, bo.ld, bo.trans); })) {
    matrix::gemm_f32_packed(p, *packed, threads);
  } else {
    matrix::gemm_f32(p, threads);
  }
  tile.check(bm.label);
  slots[m.out.slot] = stored;
}

/// The GPU side of one run: the plan's bound kernels and the run's status words (made at
/// the first launch, on the device of its first buffer).
struct GpuRun {
  const std::vector<cuda::GpuKernel>& kernels;
  std::optional<cuda::GpuRunStatus> status;
  std::optional<c10::Device> device;
  /// Set when no kernel of the plan can write its status word: then every run shares one
  /// zeroed set per device (no fill kernel launched per run).
  cuda::SharedRunStatus* shared_status = nullptr;
};

/// Allocates the kernel's outputs, checks its inputs' layouts, calls it.
void run_kernel(const BoundKernel& k, std::vector<c10::IValue>& slots, GpuRun& gpu) {
  if (k.gpu_index >= 0 && !gpu.device && !k.allocs.empty()) gpu.device = k.allocs.front().options.device();
  for (const BoundKernel::Alloc& a : k.allocs) {
    if (a.reuse_slot >= 0 && slots[a.reuse_slot].isTensor()) {
      const at::Tensor old = slots[a.reuse_slot].toTensor();
      slots[a.slot] = old.as_strided(a.sizes, a.strides, 0);
    } else {
      slots[a.slot] = empty_strided_pooled(a.sizes, a.strides, a.options);
    }
  }
  std::vector<char*> ptrs(k.args.size());
  std::vector<at::Tensor> relaid;  // inputs copied into the layout the kernel assumes
  // Tensors the kernel overwrites in place (graph inputs it updates), with the temporary it
  // writes instead when their layout is not the one it assumes.
  std::vector<std::pair<at::Tensor, at::Tensor>> updated;
  for (size_t i = 0; i < k.args.size(); ++i) {
    at::Tensor t = slots[k.args[i]].toTensor();
    if (k.gpu_index >= 0) {  // GPU kernel: a CPU operand (a 0-dim scalar) moves to the device
      if (!gpu.device) gpu.device = t.device();
      if (t.device() != *gpu.device) {
        t = t.to(*gpu.device);
        relaid.push_back(t);  // alive until the launch is queued (the allocator reuses freed blocks)
      }
    }
    const ExpectedLayout& want = k.layouts[i];
    const bool allocated = k.allocated[i];
    if (!allocated && (t.sizes() != c10::IntArrayRef(want.sizes) || t.strides() != c10::IntArrayRef(want.strides) ||
                       (k.written[i] && t.storage_offset() != 0))) {
      TORCH_CHECK(t.sizes() == c10::IntArrayRef(want.sizes), "inductor_cpp: a generated kernel expected sizes ",
                  c10::IntArrayRef(want.sizes), " for an argument, got ", t.sizes());
      at::Tensor copy = empty_strided_pooled(want.sizes, want.strides, t.options());
      copy.copy_(t);
      relaid.push_back(copy);
      if (k.written[i]) updated.emplace_back(t, copy);
      t = copy;
    } else if (k.written[i] && !allocated) {
      updated.emplace_back(t, at::Tensor());
    }
    ptrs[i] = static_cast<char*>(t.data_ptr());
  }
  if (k.gpu_index >= 0) {
    if (!gpu.status) {
      if (gpu.shared_status)
        gpu.status.emplace(gpu.shared_status->get(static_cast<int32_t>(gpu.kernels.size()), *gpu.device));
      else
        gpu.status.emplace(static_cast<int32_t>(gpu.kernels.size()), *gpu.device);
    }
    cuda::launch_gpu_kernel(gpu.kernels.at(k.gpu_index), ptrs, *gpu.device, *gpu.status);
  } else {
    const int32_t status = k.fn(ptrs.data(), nullptr, static_cast<int32_t>(at::get_num_threads()));
    TORCH_CHECK_INDEX(status == 0, "index out of bounds (index out of range in self) in ", k.label);
  }
  for (auto& [target, written] : updated) {
    if (written.defined()) target.copy_(written);  // bumps the version itself
    else target.unsafeGetTensorImpl()->bump_version();  // as the in-place ATen op would
  }
}

BoundStep bind_step(const Step& step) {
  if (step.call.op.rfind("sym::", 0) == 0) return bind_scalar_step(step);
  const auto [name, overload] = [&] {
    const auto ns = step.call.op.find("::");
    const auto dot = step.call.op.find('.', ns == std::string::npos ? 0 : ns + 2);
    if (dot == std::string::npos) return std::make_pair(step.call.op, std::string());
    return std::make_pair(step.call.op.substr(0, dot), step.call.op.substr(dot + 1));
  }();
  auto handle = c10::Dispatcher::singleton().findSchema({name, overload});
  if (!handle)
    throw std::runtime_error("operator " + step.call.op + " is not registered with the dispatcher");
  BoundStep bound;
  bound.op = *handle;
  bound.outs = step.call.outs;
  bound.free_after = step.free_after;
  bound.node = step.node;
  const c10::FunctionSchema& schema = handle->schema();
  const auto& formals = schema.arguments();
  if (step.call.args.size() > formals.size())
    throw std::runtime_error(step.call.op + ": " + std::to_string(step.call.args.size()) +
                             " arguments given, schema takes " + std::to_string(formals.size()));
  for (size_t i = 0; i < formals.size(); ++i) {
    const c10::Argument& formal = formals[i];
    if (i < step.call.args.size()) {
      bound.operands.push_back(bind_operand(step.call.args[i], formal));
      continue;
    }
    auto kw = std::find_if(step.call.kwargs.begin(), step.call.kwargs.end(),
                           [&](const auto& p) { return p.first == formal.name(); });
    if (kw != step.call.kwargs.end()) {
      bound.operands.push_back(bind_operand(kw->second, formal));
      continue;
    }
    if (!formal.default_value())
      throw std::runtime_error(step.call.op + ": no value for argument '" + formal.name() + "'");
    Operand def;
    def.constant = *formal.default_value();
    bound.operands.push_back(std::move(def));
  }
  for (const auto& kw : step.call.kwargs) {
    const bool known = std::any_of(formals.begin(), formals.end(),
                                   [&](const c10::Argument& f) { return f.name() == kw.first; });
    if (!known)
      throw std::runtime_error(step.call.op + ": unknown keyword argument '" + kw.first + "'");
  }
  const auto& returns = schema.returns();
  bound.flatten_list_return =
      returns.size() == 1 && returns[0].type()->kind() == c10::TypeKind::ListType;
  return bound;
}

void push_operand(const Operand& o, const std::vector<c10::IValue>& slots,
                  torch::jit::Stack& stack) {
  switch (o.kind) {
    case Operand::Kind::Constant:
      stack.push_back(o.constant);
      return;
    case Operand::Kind::Slot: {
      const c10::IValue& v = slots[o.slot];
      if (o.wrap_number && (v.isInt() || v.isDouble() || v.isBool() || v.isSymInt())) {
        stack.emplace_back(wrapped_number(v));
      } else {
        stack.push_back(v);
      }
      return;
    }
    case Operand::Kind::NumberList: {
      auto member = [&](size_t i) -> const c10::IValue& {
        return o.slots[i] >= 0 ? slots[o.slots[i]] : o.members[i];
      };
      if (o.element_type->kind() == c10::TypeKind::FloatType) {
        c10::List<double> list;
        for (size_t i = 0; i < o.slots.size(); ++i) list.push_back(member(i).toScalar().toDouble());
        stack.emplace_back(std::move(list));
      } else if (o.element_type->kind() == c10::TypeKind::BoolType) {
        c10::List<bool> list;
        for (size_t i = 0; i < o.slots.size(); ++i) list.push_back(member(i).toScalar().toBool());
        stack.emplace_back(std::move(list));
      } else {
        c10::List<int64_t> list;
        for (size_t i = 0; i < o.slots.size(); ++i) list.push_back(member(i).toScalar().toLong());
        stack.emplace_back(std::move(list));
      }
      return;
    }
    case Operand::Kind::TensorList: {
      c10::List<at::Tensor> list;
      list.reserve(o.slots.size());
      for (int32_t s : o.slots) list.push_back(slots[s].toTensor());
      stack.emplace_back(std::move(list));
      return;
    }
    case Operand::Kind::OptionalTensorList: {
      c10::List<std::optional<at::Tensor>> list;
      list.reserve(o.slots.size());
      for (int32_t s : o.slots) {
        if (s < 0 || slots[s].isNone()) {
          list.push_back(std::nullopt);
        } else {
          list.push_back(slots[s].toTensor());
        }
      }
      stack.emplace_back(std::move(list));
      return;
    }
  }
}

Number to_number(const c10::IValue& v) {
  if (v.isBool()) return v.toBool();
  if (v.isInt()) return v.toInt();
  if (v.isDouble()) return v.toDouble();
  if (v.isSymInt()) return v.toSymInt().expect_int();
  if (v.isSymFloat()) return v.toSymFloat().expect_float();
  if (v.isSymBool()) return v.toSymBool().expect_bool();
  if (v.isTensor() && v.toTensor().numel() == 1) {
    const at::Tensor& t = v.toTensor();
    if (t.scalar_type() == c10::kBool) return t.item<bool>();
    if (c10::isIntegralType(t.scalar_type(), false)) return t.item<int64_t>();
    return t.item<double>();
  }
  throw std::runtime_error("expected a number, got " + v.tagKind());
}

/// Replaces the arguments on `stack` by the result, like a boxed call.
void run_scalar_step(ScalarOp op, torch::jit::Stack& stack) {
  std::vector<Number> args;
  args.reserve(stack.size());
  for (const c10::IValue& v : stack) args.push_back(to_number(v));
  const Number result = eval_scalar_op(op, args);
  stack.clear();
  std::visit([&](auto x) { stack.emplace_back(x); }, result);
}

std::string error_text(const std::exception& e) {
  if (auto* c10_error = dynamic_cast<const c10::Error*>(&e))
    return c10_error->what_without_backtrace();
  return e.what();
}

}  // namespace

struct AtenExecutable::Bound {
  int32_t num_inputs = 0;
  int32_t num_slots = 0;
  std::vector<at::Tensor> constants;
  std::vector<int32_t> free_at_start;
  std::vector<BoundStep> steps;
  std::vector<Operand> outputs;
  std::vector<std::string> labels;
  std::shared_ptr<KernelLibrary> library;
  std::vector<cuda::GpuKernel> gpu_kernels;  ///< GPU plans: every kernel step, in plan order
  bool gpu_checks_bounds = false;            ///< some GPU kernel may set its status word
  mutable cuda::SharedRunStatus shared_status;  ///< the never-written words when none can
};

AtenExecutable::AtenExecutable(const Plan& plan, std::vector<at::Tensor> constants,
                               std::vector<std::string> labels, std::shared_ptr<KernelLibrary> library,
                               bool frozen_weights) {
  auto b = std::make_unique<Bound>();
  if (static_cast<int32_t>(constants.size()) != plan.num_constants)
    throw std::runtime_error("plan expects " + std::to_string(plan.num_constants) +
                             " constants, got " + std::to_string(constants.size()));
  b->num_inputs = plan.num_inputs;
  b->num_slots = plan.num_slots;
  b->constants = std::move(constants);
  b->free_at_start = plan.free_at_start;
  b->labels = std::move(labels);
  b->library = std::move(library);
  if (!plan.kernel_library.empty() && !b->library && !plan.is_gpu())
    throw std::runtime_error("inductor_cpp: the plan has generated kernels but no kernel library was loaded");
  for (const Step& step : plan.steps) {
    try {
      if (step.is_matmul()) {
        b->steps.push_back(bind_matmul_step(step, b->library.get(), b->labels, frozen_weights));
        continue;
      }
      if (step.is_kernel()) {
        b->steps.push_back(bind_kernel_step(step, b->library.get(), b->labels));
        continue;
      }
      b->steps.push_back(bind_step(step));
    } catch (const std::exception& e) {
      const std::string where = step.node >= 0 && step.node < static_cast<int32_t>(b->labels.size())
                                    ? b->labels[step.node]
                                    : step.call.op;
      throw std::runtime_error("inductor_cpp: cannot bind " + where + ": " + error_text(e));
    }
  }
  if (plan.is_gpu()) {  // one CUDA module for the graph (runtime/cuda/gpu_step.h)
    std::vector<std::string> kernel_labels;
    for (BoundStep& s : b->steps) {
      if (!s.kernel) continue;
      s.kernel->gpu_index = static_cast<int32_t>(kernel_labels.size());
      kernel_labels.push_back(s.kernel->label);
    }
    b->gpu_kernels = cuda::bind_gpu_kernels(plan, kernel_labels);
    for (const cuda::GpuKernel& k : b->gpu_kernels) b->gpu_checks_bounds |= k.checks_bounds;
  }
  for (const PlanArg& out : plan.outputs)
    b->outputs.push_back(bind_untyped(out, "inductor_cpp: graph output"));
  bound_ = std::move(b);
}

AtenExecutable::~AtenExecutable() = default;

AtenExecutable::WeightCacheCounts AtenExecutable::weight_cache_counts() const {
  WeightCacheCounts counts;
  for (const BoundStep& step : bound_->steps) {
    if (!step.matmul) continue;
    const BoundMatmul& m = *step.matmul;
    counts.packs += m.conv ? m.conv->cached_packs() : m.packed_b->packs();
    counts.adopted += m.conv ? m.conv->adopted_packs() : m.packed_b->adopted();
    counts.stale_drops += m.conv ? m.conv->stale_drops() : m.packed_b->stale_drops();
  }
  return counts;
}

std::vector<c10::IValue> AtenExecutable::run(std::vector<c10::IValue> inputs) const {
  const Bound& b = *bound_;
  if (static_cast<int32_t>(inputs.size()) != b.num_inputs)
    throw std::runtime_error("inductor_cpp: compiled graph takes " + std::to_string(b.num_inputs) +
                             " inputs, got " + std::to_string(inputs.size()));
  std::vector<c10::IValue> slots(b.num_slots);
  for (int32_t i = 0; i < b.num_inputs; ++i) slots[i] = std::move(inputs[i]);
  inputs.clear();
  for (size_t c = 0; c < b.constants.size(); ++c) slots[b.num_inputs + c] = b.constants[c];
  for (int32_t s : b.free_at_start) slots[s] = c10::IValue();

  torch::jit::Stack stack;
  GpuRun gpu{b.gpu_kernels, std::nullopt, std::nullopt,
             b.gpu_checks_bounds ? nullptr : &b.shared_status};
  for (const BoundStep& step : b.steps) {
    if (step.matmul) {
      RECORD_FUNCTION(step.matmul->profile_name, std::vector<c10::IValue>());
      try {
        run_matmul(*step.matmul, slots);
      } catch (...) {
        std::throw_with_nested(StepError("inductor_cpp: while running " + step.matmul->label));
      }
      for (int32_t s : step.free_after) slots[s] = c10::IValue();
      continue;
    }
    if (step.kernel) {
      RECORD_FUNCTION(step.kernel->profile_name, std::vector<c10::IValue>());
      try {
        run_kernel(*step.kernel, slots, gpu);
      } catch (...) {
        std::throw_with_nested(StepError("inductor_cpp: while running " + step.kernel->label));
      }
      for (int32_t s : step.free_after) slots[s] = c10::IValue();
      continue;
    }
    stack.clear();
    for (const Operand& o : step.operands) push_operand(o, slots, stack);
    try {
      if (step.scalar_op) {
        run_scalar_step(*step.scalar_op, stack);
      } else {
        step.op->callBoxed(stack);
      }
    } catch (...) {
      std::throw_with_nested(StepError("inductor_cpp: while running " + b.labels.at(step.node)));
    }
    if (step.flatten_list_return) {
      const c10::List<c10::IValue> list = stack.at(0).toList();
      for (size_t k = 0; k < step.outs.size() && k < list.size(); ++k) {
        if (step.outs[k] >= 0) slots[step.outs[k]] = list.get(k);
      }
    } else {
      for (size_t k = 0; k < step.outs.size() && k < stack.size(); ++k) {
        if (step.outs[k] >= 0) slots[step.outs[k]] = std::move(stack[k]);
      }
    }
    for (int32_t s : step.free_after) slots[s] = c10::IValue();
  }

  if (gpu.status && b.gpu_checks_bounds) {  // one synchronizing read per run, only if needed
    try {
      gpu.status->check(b.gpu_kernels);
    } catch (...) {
      std::throw_with_nested(StepError("inductor_cpp: while running the graph's GPU kernels"));
    }
  }
  std::vector<c10::IValue> outputs;
  outputs.reserve(b.outputs.size());
  for (const Operand& o : b.outputs)
    outputs.push_back(o.kind == Operand::Kind::Slot ? slots[o.slot] : o.constant);
  return outputs;
}

}  // namespace inductor_cpp::runtime
