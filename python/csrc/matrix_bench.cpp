/// \file
/// `inductor_cpp._C.matrix`: what `python -m inductor_cpp.bench matrix` needs from the matrix
/// library (matrix, matrix/jit) and torch cannot tell it.
///
///   * cpu_features(): which matrix ISAs the library will use here (AVX-512 / AVX2 / AMX);
///   * fma_peak_gflops(threads): the float32 FMA peak, measured with a register-only JIT loop
///     (matrix/jit/fma_peak_loop.h: independent FMA chains, no memory traffic) on `threads`
///     OpenMP threads at once — the same loop as tests/cpp/matrix_bench.cpp times;
///   * amx_peak_gflops(threads): the bf16 AMX peak, a register-only TDPBF16PS loop on the
///     library's tile configuration (raises without usable AMX);
///   * gemm_bf16(a, b, threads): the library's bf16 GEMM (fp32 result) called on
///     torch tensors, for the AMX row (compiled graphs do not route bf16 matmuls to it);
///   * pack_b_f32(b) / gemm_f32(a, b, threads, bias, relu, packed): the float32 GEMM called
///     directly (no Dynamo, no plan), as a compiled graph's matrix step calls it — with B
///     packed once, as its packed-weight cache does — so `bench matrix` can tell the kernels'
///     speed apart from torch.compile's per-call cost (the "library" variant);
///   * conv2d_f32(x, w, ...): the convolution with its weight packed per call, timed in parts;
///   * conv2d_backward_f32(dy, x, w, ...): the convolution backward (conv_backward.h) on
///     channels-last tensors, the same way (the `conv_bwd` rows' "library" variant).
///
/// Benchmark support only: nothing in the compiler or runtime calls these.
#include <ATen/ATen.h>
#include <omp.h>
#include <torch/csrc/utils/pybind.h>
#include <xbyak/xbyak.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "matrix/jit/amx_kernel.h"
#include "matrix/jit/fma_peak_loop.h"
#include "matrix/matrix.h"

namespace py = pybind11;

namespace inductor_cpp::python {
namespace {

/// rdi = iterations; four independent TDPBF16PS per iteration on zeroed tiles (tmm0–3 the
/// 16×16 fp32 accumulators, tmm4–5 A, tmm6–7 B, as amx_configure_tiles sets them up): each
/// is 16×16 outputs × 32 products = 16384 flops. No tile loads or stores inside the loop.
class AmxPeakLoop : public Xbyak::CodeGenerator {
 public:
  AmxPeakLoop() : CodeGenerator(4096, Xbyak::DontSetProtectRWE) {
    using namespace Xbyak;
    for (const Tmm& t : {tmm0, tmm1, tmm2, tmm3, tmm4, tmm5, tmm6, tmm7}) tilezero(t);
    Label loop;
    L(loop);
    tdpbf16ps(tmm0, tmm4, tmm6);
    tdpbf16ps(tmm1, tmm4, tmm7);
    tdpbf16ps(tmm2, tmm5, tmm6);
    tdpbf16ps(tmm3, tmm5, tmm7);
    dec(rdi);
    jnz(loop);
    ret();
    ready();
    setProtectModeRE();
  }
  static constexpr double kFlopsPerIteration = 4 * 16.0 * 16 * 32 * 2;
};

/// Best of `reps` timed runs of body() (after one warm-up run), in seconds.
template <typename Body>
double best_seconds(Body&& body, int reps) {
  body();
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto start = std::chrono::steady_clock::now();
    body();
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

void check_threads(int threads) {
  if (threads < 1) throw std::invalid_argument("threads must be >= 1");
}

double fma_peak_gflops(int threads, int64_t iterations, int reps) {
  check_threads(threads);
  const auto& features = xbyak::cpu_features();
  if (!features.avx2) throw std::runtime_error("FMA peak: the CPU has neither AVX-512 nor AVX2");
  const xbyak::FmaPeakLoop loop = xbyak::fma_peak_loop(features.avx512);
  const auto fn = loop.fn;
  py::gil_scoped_release no_gil;
  const double seconds = best_seconds(
      [&] {
#pragma omp parallel num_threads(threads)
        fn(iterations);
      },
      reps);
  return double(iterations) * loop.flops_per_iteration * threads / seconds / 1e9;
}

double amx_peak_gflops(int threads, int64_t iterations, int reps) {
  check_threads(threads);
  if (!xbyak::cpu_features().amx_usable)
    throw std::runtime_error("AMX peak: AMX bf16 is not usable on this machine (" +
                             xbyak::cpu_features().describe() + ")");
  static const AmxPeakLoop loop;
  const auto fn = loop.getCode<void (*)(int64_t)>();
  py::gil_scoped_release no_gil;
  const double seconds = best_seconds(
      [&] {
#pragma omp parallel num_threads(threads)
        {
          xbyak::amx_configure_tiles();
          fn(iterations);
          xbyak::amx_release_tiles();
        }
      },
      reps);
  return double(iterations) * AmxPeakLoop::kFlopsPerIteration * threads / seconds / 1e9;
}

/// C (fp32, m×n) = A (bf16, m×k) · B (bf16, k×n), both row-major contiguous.
at::Tensor gemm_bf16(const at::Tensor& a, const at::Tensor& b, int threads) {
  check_threads(threads);
  if (a.scalar_type() != at::kBFloat16 || b.scalar_type() != at::kBFloat16 || a.dim() != 2 ||
      b.dim() != 2 || a.size(1) != b.size(0) || !a.device().is_cpu() || !b.device().is_cpu())
    throw std::invalid_argument("gemm_bf16: expects CPU bfloat16 matrices A (m×k) and B (k×n)");
  const at::Tensor ac = a.contiguous(), bc = b.contiguous();
  at::Tensor c = at::empty({a.size(0), b.size(1)}, a.options().dtype(at::kFloat));
  matrix::GemmBf16Problem p;
  p.m = a.size(0), p.n = b.size(1), p.k = a.size(1);
  p.a = reinterpret_cast<const uint16_t*>(ac.data_ptr()), p.lda = p.k;
  p.b = reinterpret_cast<const uint16_t*>(bc.data_ptr()), p.ldb = p.n;
  p.c = c.data_ptr<float>(), p.ldc = p.n;
  py::gil_scoped_release no_gil;
  matrix::gemm_bf16(p, threads);
  return c;
}

/// A float32 matrix operand as the library takes it: plain (unit column stride), transposed
/// (unit row stride) or, for anything else, a contiguous copy kept alive by `keep`.
struct Operand {
  const float* data;
  int64_t ld;
  bool trans;
};
Operand float32_operand(const at::Tensor& x, at::Tensor& keep, const char* name) {
  if (x.scalar_type() != at::kFloat || x.dim() != 2 || !x.device().is_cpu())
    throw std::invalid_argument(std::string("gemm_f32: ") + name +
                                " must be a 2-D float32 CPU tensor");
  if (x.stride(1) == 1 && x.stride(0) >= std::max<int64_t>(1, x.size(1)))
    return {x.data_ptr<float>(), x.stride(0), false};
  if (x.stride(0) == 1 && x.stride(1) >= std::max<int64_t>(1, x.size(0)))
    return {x.data_ptr<float>(), x.stride(1), true};
  keep = x.contiguous();
  return {keep.data_ptr<float>(), std::max<int64_t>(1, keep.size(1)), false};
}

/// B (k×n, any strides) packed once into the kernels' layout (matrix::pack_b_f32).
struct PackedBHandle {
  std::shared_ptr<const matrix::PackedB> packed;
};
PackedBHandle pack_b_f32(const at::Tensor& b) {
  at::Tensor keep;
  const Operand op = float32_operand(b, keep, "B");
  py::gil_scoped_release no_gil;
  return {std::make_shared<const matrix::PackedB>(
      matrix::pack_b_f32(op.data, b.size(0), b.size(1), op.ld, op.trans))};
}

/// C (m×n) = [relu](A·B [+ bias]) on the library's gemm_f32 (gemm_f32_packed with `packed`).
at::Tensor gemm_f32(const at::Tensor& a, const at::Tensor& b, int threads,
                    const std::optional<at::Tensor>& bias, bool relu,
                    const std::optional<PackedBHandle>& packed) {
  check_threads(threads);
  at::Tensor keep_a, keep_b, keep_bias;
  const Operand oa = float32_operand(a, keep_a, "A"), ob = float32_operand(b, keep_b, "B");
  if (a.size(1) != b.size(0)) throw std::invalid_argument("gemm_f32: A's columns != B's rows");
  matrix::GemmProblem p;
  p.m = a.size(0), p.n = b.size(1), p.k = a.size(1);
  p.a = oa.data, p.lda = oa.ld, p.trans_a = oa.trans;
  p.b = ob.data, p.ldb = ob.ld, p.trans_b = ob.trans;
  if (bias) {
    if (bias->scalar_type() != at::kFloat || bias->numel() != p.n)
      throw std::invalid_argument("gemm_f32: bias must be n float32 values");
    keep_bias = bias->contiguous();
    p.epilogue.push_back({matrix::EpilogueKind::BiasCol, keep_bias.data_ptr<float>()});
  }
  if (relu) p.epilogue.push_back({matrix::EpilogueKind::Relu});
  at::Tensor c = at::empty({p.m, p.n}, a.options());
  p.c = c.data_ptr<float>(), p.ldc = p.n;
  if (packed && (packed->packed->k() != p.k || packed->packed->n() != p.n))
    throw std::invalid_argument("gemm_f32: the packed B was packed for another shape");
  py::gil_scoped_release no_gil;
  if (packed)
    matrix::gemm_f32_packed(p, *packed->packed, threads);
  else
    matrix::gemm_f32(p, threads);
  return c;
}

/// The library's parameters of conv2d(x, w, stride, padding, dilation), x and w 4-D float32.
matrix::Conv2dParams conv_params_of(const at::Tensor& x, const at::Tensor& w,
                                    std::array<int64_t, 2> stride, std::array<int64_t, 2> padding,
                                    std::array<int64_t, 2> dilation) {
  for (const at::Tensor* t : {&x, &w}) {
    if (t->scalar_type() != at::kFloat || t->dim() != 4 || !t->device().is_cpu())
      throw std::invalid_argument("conv2d: 4-D float32 CPU tensors expected");
  }
  matrix::Conv2dParams q;
  q.n = x.size(0), q.c = x.size(1), q.h = x.size(2), q.w = x.size(3);
  q.oc = w.size(0), q.kh = w.size(2), q.kw = w.size(3);
  q.stride_h = stride[0], q.stride_w = stride[1], q.pad_h = padding[0], q.pad_w = padding[1];
  q.dilation_h = dilation[0], q.dilation_w = dilation[1];
  return q;
}

/// (y, pack seconds, convolution seconds) of y = conv2d(x, w, ...) on the library, the weight
/// packed in the call on `threads` threads as a compiled training step packs a weight that
/// changes every step: x channels-last float32, w any layout; y channels-last.
py::tuple conv2d_f32(const at::Tensor& x, const at::Tensor& w, std::array<int64_t, 2> stride,
                     std::array<int64_t, 2> padding, std::array<int64_t, 2> dilation, int threads) {
  check_threads(threads);
  const matrix::Conv2dParams q = conv_params_of(x, w, stride, padding, dilation);
  if (!matrix::conv2d_supported(q)) throw std::invalid_argument("conv2d_f32: not supported here");
  const at::Tensor xs = x.contiguous(at::MemoryFormat::ChannelsLast),
                   ws = w.contiguous(at::MemoryFormat::ChannelsLast);
  at::Tensor y = at::empty({q.n, q.oc, q.out_h(), q.out_w()},
                           x.options().memory_format(at::MemoryFormat::ChannelsLast));
  double pack_s = 0, conv_s = 0;
  {
    py::gil_scoped_release no_gil;
    const auto t0 = std::chrono::steady_clock::now();
    const matrix::PackedConvWeight packed =
        matrix::pack_conv_weight_ohwi_f32(ws.data_ptr<float>(), q, threads);
    const auto t1 = std::chrono::steady_clock::now();
    matrix::conv2d_nhwc_f32(xs.data_ptr<float>(), packed, y.data_ptr<float>(), q, threads);
    const auto t2 = std::chrono::steady_clock::now();
    pack_s = std::chrono::duration<double>(t1 - t0).count();
    conv_s = std::chrono::duration<double>(t2 - t1).count();
  }
  return py::make_tuple(y, pack_s, conv_s);
}

/// (dx, dw, db), each None unless asked for (db only with dw), of y = conv2d(x, w, stride,
/// padding, dilation) for output
/// gradient dy, on the library (conv_backward.h): x and dy channels-last float32, w any layout;
/// dx and dw come back channels-last.
py::tuple conv2d_backward_f32(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& w,
                              std::array<int64_t, 2> stride, std::array<int64_t, 2> padding,
                              std::array<int64_t, 2> dilation, int threads, bool input, bool weight,
                              bool bias) {
  check_threads(threads);
  const matrix::Conv2dParams q = conv_params_of(x, w, stride, padding, dilation);
  if (dy.scalar_type() != at::kFloat || dy.dim() != 4 || !dy.device().is_cpu())
    throw std::invalid_argument("conv2d_backward_f32: 4-D float32 CPU tensors expected");
  const at::Tensor xs = x.contiguous(at::MemoryFormat::ChannelsLast),
                   dys = dy.contiguous(at::MemoryFormat::ChannelsLast),
                   ws = w.contiguous(at::MemoryFormat::ChannelsLast);
  if (dy.size(0) != q.n || dy.size(1) != q.oc || dy.size(2) != q.out_h() || dy.size(3) != q.out_w())
    throw std::invalid_argument("conv2d_backward_f32: dy does not match the convolution");
  if (input && !matrix::conv2d_backward_input_supported(q))
    throw std::invalid_argument("conv2d_backward_f32: input gradient not supported here");
  const auto cl = x.options().memory_format(at::MemoryFormat::ChannelsLast);
  at::Tensor dx = input ? at::empty(x.sizes(), cl) : at::Tensor();
  at::Tensor dw = weight ? at::empty(w.sizes(), cl) : at::Tensor();
  at::Tensor db = bias ? at::empty({q.oc}, x.options()) : at::Tensor();
  {
    py::gil_scoped_release no_gil;
    if (input)
      matrix::conv2d_backward_input_nhwc_f32(dys.data_ptr<float>(), ws.data_ptr<float>(),
                                             dx.data_ptr<float>(), q, threads);
    if (weight)
      matrix::conv2d_backward_weight_nhwc_f32(dys.data_ptr<float>(), xs.data_ptr<float>(),
                                              dw.data_ptr<float>(),
                                              bias ? db.data_ptr<float>() : nullptr, q, threads);
  }
  const auto or_none = [](const at::Tensor& t) { return t.defined() ? py::cast(t) : py::none(); };
  return py::make_tuple(or_none(dx), or_none(dw), or_none(db));
}

py::dict cpu_features_dict() {
  const auto& f = xbyak::cpu_features();
  py::dict d;
  d["avx2"] = f.avx2;
  d["avx512"] = f.avx512;
  d["avx512_bf16"] = f.avx512_bf16;
  d["amx_bf16"] = f.amx_bf16;
  d["amx_usable"] = f.amx_usable;
  d["describe"] = f.describe();
  return d;
}

}  // namespace

void register_matrix_bench_bindings(py::module_& parent) {
  py::module_ m = parent.def_submodule(
      "matrix", "Matrix-library measurements for `python -m inductor_cpp.bench matrix`");
  m.def("cpu_features", &cpu_features_dict,
        "Matrix ISAs the library uses here: avx2, avx512, avx512_bf16, amx_bf16, amx_usable");
  m.def("fma_peak_gflops", &fma_peak_gflops, py::arg("threads"), py::arg("iterations") = 20'000'000,
        py::arg("reps") = 5,
        "float32 FMA peak (register-only JIT loop, zmm or ymm), best of reps, GFLOP/s");
  m.def("amx_peak_gflops", &amx_peak_gflops, py::arg("threads"), py::arg("iterations") = 4'000'000,
        py::arg("reps") = 5,
        "bf16 AMX peak (register-only TDPBF16PS loop), best of reps, GFLOP/s; raises without AMX");
  m.def("gemm_bf16", &gemm_bf16, py::arg("a"), py::arg("b"), py::arg("threads"),
        "float32 A·B of bfloat16 matrices on the library's gemm_bf16 (AMX where usable)");
  py::class_<PackedBHandle>(m, "PackedB", "A float32 B packed once for gemm_f32");
  m.def("pack_b_f32", &pack_b_f32, py::arg("b"), "B (k×n float32, any strides) packed once");
  m.def("gemm_f32", &gemm_f32, py::arg("a"), py::arg("b"), py::arg("threads"),
        py::arg("bias") = std::nullopt, py::arg("relu") = false, py::arg("packed") = std::nullopt,
        "[relu](A·B [+ bias]) on the library's float32 GEMM (B pre-packed with `packed`)");
  m.def("conv2d_f32", &conv2d_f32, py::arg("x"), py::arg("w"), py::arg("stride"),
        py::arg("padding"), py::arg("dilation"), py::arg("threads"),
        "(y, pack seconds, convolution seconds) of conv2d on the library, the weight packed in "
        "the call");
  m.def("conv2d_backward_f32", &conv2d_backward_f32, py::arg("dy"), py::arg("x"), py::arg("w"),
        py::arg("stride"), py::arg("padding"), py::arg("dilation"), py::arg("threads"),
        py::arg("input") = true, py::arg("weight") = true, py::arg("bias") = false,
        "(dx, dw, db), each None unless asked for (bias: with weight), of conv2d on the "
        "library's convolution backward");
}

}  // namespace inductor_cpp::python
