/// \file conv_backward_input.cpp
/// \brief The input gradient of the NHWC convolution (see conv_backward.h): a stride-1 forward
/// convolution with the flipped, channel-transposed filter, or for 1×1 filters GEMMs.
#include <algorithm>
#include <stdexcept>

#include "runtime/matrix/conv_backward.h"
#include "runtime/matrix/gemm_config.h"
#include "runtime/matrix/pack.h"

namespace inductor_cpp::matrix {
namespace {

bool is_pointwise(const Conv2dParams& q) {
  return q.kh == 1 && q.kw == 1 && q.pad_h == 0 && q.pad_w == 0;
}

/// The stride-1 forward convolution whose output is q's input gradient: input dy (OC channels,
/// OH × OW), output dx (C channels, H × W), the same filter size and dilation, padding
/// dilation·(K−1) − padding.
Conv2dParams transposed_problem(const Conv2dParams& q) {
  Conv2dParams t;
  t.n = q.n, t.h = q.out_h(), t.w = q.out_w(), t.c = q.oc, t.oc = q.c, t.kh = q.kh, t.kw = q.kw;
  t.pad_h = q.dilation_h * (q.kh - 1) - q.pad_h, t.pad_w = q.dilation_w * (q.kw - 1) - q.pad_w;
  t.dilation_h = q.dilation_h, t.dilation_w = q.dilation_w;
  t.flush_denormals = q.flush_denormals;
  return t;
}

}  // namespace

bool conv2d_backward_input_supported(const Conv2dParams& q) {
  if (!conv2d_supported(q)) return false;
  if (is_pointwise(q)) return true;
  if (q.stride_h != 1 || q.stride_w != 1) return false;
  const Conv2dParams t = transposed_problem(q);
  return t.pad_h >= 0 && t.pad_w >= 0 && t.out_h() == q.h && t.out_w() == q.w &&
         conv2d_supported(t);
}

void conv2d_backward_input_nhwc_f32(const float* dy, const float* weight_ohwi, float* dx,
                                    const Conv2dParams& q, int num_threads) {
  if (!conv2d_backward_input_supported(q))
    throw std::invalid_argument("conv2d_backward_input_nhwc_f32: unsupported parameters");
  const int64_t oh = q.out_h(), ow = q.out_w();
  if (is_pointwise(q)) {  // dx at the strided pixels = dy · w, [N·OH·OW, OC] × [OC, C]
    GemmProblem p;
    p.m = q.n * oh * ow, p.n = q.c, p.k = q.oc;
    p.a = dy, p.lda = q.oc, p.b = weight_ohwi, p.ldb = q.c, p.c = dx, p.ldc = q.c;
    p.flush_denormals = q.flush_denormals;
    if (q.stride_h == 1 && q.stride_w == 1) return gemm_f32(p, num_threads);
    // Strided: each input row once, in parallel: zeros, or zeros between the strided pixels
    // and a one-thread GEMM of the output row writing them (ldc = stride · C) with w packed
    // once. (A GEMM into a scratch matrix scattered afterwards ran 0.59x eager at 16 threads,
    // 64->128 @56 batch 8: eager's whole call is one pass over dx.)
    const PackedB packed = pack_b_f32(weight_ohwi, q.oc, q.c, q.c, false);
    const int64_t image_rows = q.n * q.h;
    int threads = int(std::max<int64_t>(1, std::min<int64_t>(num_threads, image_rows)));
    if (q.n * oh * ow * q.c * q.oc < gemm_blocking().serial_macs) threads = 1;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t r = 0; r < image_rows; ++r) {
      const int64_t img = r / q.h, iy = r % q.h;
      float* out = dx + r * q.w * q.c;
      if (iy % q.stride_h != 0) {
        std::fill(out, out + q.w * q.c, 0.0f);
        continue;
      }
      for (int64_t ix = 0; ix < q.w; ++ix)
        if (ix % q.stride_w != 0) std::fill(out + ix * q.c, out + (ix + 1) * q.c, 0.0f);
      GemmProblem row = p;
      row.m = ow, row.a = dy + (img * oh + iy / q.stride_h) * ow * q.oc;
      row.c = out, row.ldc = q.stride_w * q.c;
      gemm_f32_packed(row, packed, 1);
    }
    return;
  }
  // Stride 1: the forward convolution of dy with w flipped in space, channels transposed. Its
  // B matrix, row (tap t, channel o) × column c, is w[o][KH·KW−1−t][c]: per tap, OC rows of
  // the OHWI weight KH·KW·C apart, packed straight into their rows of every panel.
  const Conv2dParams t = transposed_problem(q);
  const int64_t taps = q.kh * q.kw;
  const int nr = gemm_blocking().nr;
  PackedConvWeight packed{t.oc, t.kh, t.kw, t.c, PackedB(taps * q.oc, q.c, nr)};
  for (int64_t tap = 0; tap < taps; ++tap)
    pack_b_panels(weight_ohwi + (taps - 1 - tap) * q.c, taps * q.c, false, 0, q.oc, 0, q.c, nr,
                  taps * q.oc * nr, packed.packed.mutable_panel(0) + tap * q.oc * nr);
  conv2d_nhwc_f32(dy, packed, dx, t, num_threads);
}

}  // namespace inductor_cpp::matrix
