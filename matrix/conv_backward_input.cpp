/// \file conv_backward_input.cpp
/// \brief The input gradient of the NHWC convolution (see conv_backward.h): a stride-1 forward
/// convolution with the flipped, channel-transposed filter, or for 1×1 filters GEMMs.
#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

#include "matrix/conv_backward.h"
#include "matrix/gemm_config.h"
#include "matrix/pack.h"
#include "matrix/scratch.h"

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

/// True when the stride-1 transposed problem computes q's input gradient as it is.
bool transposes_directly(const Conv2dParams& q) {
  if (q.stride_h != 1 || q.stride_w != 1) return false;
  const Conv2dParams t = transposed_problem(q);
  return t.pad_h >= 0 && t.pad_w >= 0 && t.out_h() == q.h && t.out_w() == q.w &&
         conv2d_supported(t);
}

/// One dimension of one phase of a strided input gradient: the input positions phase +
/// stride·t (t < count) receive dy at t + first + step·j through filter tap taps[j] (taps in
/// order of increasing dy offset; step: the sub-filter's dilation).
struct PhaseDim {
  int64_t count = 0, first = 0, step = 1;
  std::vector<int64_t> taps;
};

PhaseDim phase_dim(int64_t phase, int64_t in, int64_t k, int64_t stride, int64_t pad,
                   int64_t dilation) {
  PhaseDim r;
  r.count = phase < in ? (in - phase + stride - 1) / stride : 0;
  std::vector<int64_t> offsets;
  for (int64_t tap = k - 1; tap >= 0;
       --tap) {  // input phase + stride·t = out·stride - pad + tap·dilation
    const int64_t num = phase + pad - tap * dilation;
    if (((num % stride) + stride) % stride != 0) continue;
    r.taps.push_back(tap);
    offsets.push_back(num / stride);  // exact
  }
  if (!offsets.empty()) r.first = offsets[0];
  if (offsets.size() > 1) r.step = offsets[1] - offsets[0];
  return r;
}

/// Strided filters: dx splits into stride_h · stride_w phases (input positions with the same
/// remainders), each a stride-1 forward convolution of dy with the taps that reach it (3×3
/// stride 2: 1×1, 1×2, 2×1 and 2×2 sub-filters, nine taps in all, no multiply by an inserted
/// zero). Per phase: dy itself with the sub-problem's asymmetric zero border as the
/// convolution's padding (pad_h / pad_bottom, pad_w / pad_right; when the phase would crop dy
/// instead, its rows and columns copied with zero borders into a per-thread scratch), and the
/// convolution written straight into the phase's pixels of dx (output strides stride_w·C
/// between pixels, stride_h·W·C between rows); a phase no tap reaches is zero. Every pixel of dx
/// belongs to exactly one phase. (Until 2026-11-28 each phase copied dy with its border through
/// memory and went into a fresh scratch tensor scattered into dx afterwards.)
void input_gradient_by_phases(const float* dy, const float* weight_ohwi, float* dx,
                              const Conv2dParams& q, int num_threads,
                              const PackedStorage& storage) {
  const int64_t oh = q.out_h(), ow = q.out_w(), taps = q.kh * q.kw;
  const int nr = gemm_blocking().nr;
  thread_local ScratchVector<float> dy_rows;  // a cropping phase's rows of dy, zero-bordered
  for (int64_t py = 0; py < q.stride_h; ++py)
    for (int64_t px = 0; px < q.stride_w; ++px) {
      const PhaseDim y = phase_dim(py, q.h, q.kh, q.stride_h, q.pad_h, q.dilation_h);
      const PhaseDim x = phase_dim(px, q.w, q.kw, q.stride_w, q.pad_w, q.dilation_w);
      if (!y.count || !x.count) continue;
      const int64_t jy = int64_t(y.taps.size()), jx = int64_t(x.taps.size());
      float* phase_dx = dx + (py * q.w + px) * q.c;
      if (!jy || !jx) {  // no tap reaches these pixels
        const int64_t rows = q.n * y.count;
#pragma omp parallel for num_threads(num_threads) schedule(static)
        for (int64_t r = 0; r < rows; ++r) {
          float* row = phase_dx + (r / y.count * q.h + q.stride_h * (r % y.count)) * q.w * q.c;
          for (int64_t u = 0; u < x.count; ++u)
            std::fill(row + q.stride_w * u * q.c, row + (q.stride_w * u + 1) * q.c, 0.0f);
        }
        continue;
      }
      // The sub-problem reads dy's rows first + r and columns first + c (zero outside dy).
      Conv2dParams t;
      t.n = q.n, t.c = q.oc, t.oc = q.c, t.kh = jy, t.kw = jx;
      t.dilation_h = y.step, t.dilation_w = x.step;
      t.flush_denormals = q.flush_denormals;
      t.out_pixel_stride = q.stride_w * q.c;
      t.out_row_stride = q.stride_h * q.w * q.c;
      t.out_image_stride = q.h * q.w * q.c;
      const int64_t th = y.count + y.step * (jy - 1), tw = x.count + x.step * (jx - 1);
      const int64_t bottom = th - oh + y.first, right = tw - ow + x.first;
      const float* in = dy;
      if (y.first <= 0 && x.first <= 0 && bottom >= 0 && right >= 0) {
        // dy itself, its zero border as the convolution's own (asymmetric) padding: added per
        // block of rows in cache, no copy of dy through memory per phase.
        t.h = oh, t.w = ow, t.pad_h = -y.first, t.pad_w = -x.first;
        t.pad_bottom = bottom, t.pad_right = right;
      } else {  // dy cropped too: a bordered copy
        t.h = th, t.w = tw;
        float* copy = dy_rows.get(size_t(t.n * t.h * t.w * t.c));
        in = copy;
        const int64_t rows = t.n * t.h;
#pragma omp parallel for num_threads(num_threads) schedule(static)
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t img = r / t.h, sy = y.first + r % t.h;
          float* dst = copy + r * t.w * t.c;
          for (int64_t c = 0; c < t.w; ++c) {
            const int64_t sx = x.first + c;
            if (sy < 0 || sy >= oh || sx < 0 || sx >= ow)
              std::fill(dst + c * t.c, dst + (c + 1) * t.c, 0.0f);
            else
              std::memcpy(dst + c * t.c, dy + ((img * oh + sy) * ow + sx) * q.oc,
                          size_t(q.oc) * sizeof(float));
          }
        }
      }
      // B row (j_y, j_x, o) × column c = w[o][taps_y[j_y]][taps_x[j_x]][c], OC rows per tap.
      PackedConvWeight packed{t.oc, t.kh, t.kw, t.c, PackedB(jy * jx * q.oc, q.c, nr, storage)};
      for_panel_ranges(packed.packed.num_panels(), jy * jx * q.oc * q.c, num_threads,
                       [&](int64_t p0, int64_t p1) {
                         for (int64_t a = 0; a < jy; ++a)
                           for (int64_t b = 0; b < jx; ++b)
                             pack_b_panels(
                                 weight_ohwi + (y.taps[a] * q.kw + x.taps[b]) * q.c, taps * q.c,
                                 false, 0, q.oc, p0 * nr, std::min(q.c, p1 * nr) - p0 * nr, nr,
                                 jy * jx * q.oc * nr,
                                 packed.packed.mutable_panel(p0) + (a * jx + b) * q.oc * nr);
                       });
      conv2d_nhwc_f32(in, packed, phase_dx, t, num_threads);
    }
}

}  // namespace

bool conv2d_backward_input_supported(const Conv2dParams& q) {
  return conv2d_supported(q);
}

void conv2d_backward_input_nhwc_f32(const float* dy, const float* weight_ohwi, float* dx,
                                    const Conv2dParams& q, int num_threads,
                                    const PackedStorage& storage) {
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
    const PackedB packed = pack_b_f32(weight_ohwi, q.oc, q.c, q.c, false, num_threads, storage);
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
  if (!transposes_directly(q))
    return input_gradient_by_phases(dy, weight_ohwi, dx, q, num_threads, storage);
  // Stride 1: the forward convolution of dy with w flipped in space, channels transposed. Its
  // B matrix, row (tap t, channel o) × column c, is w[o][KH·KW−1−t][c]: per tap, OC rows of
  // the OHWI weight KH·KW·C apart, packed straight into their rows of every panel.
  const Conv2dParams t = transposed_problem(q);
  const int64_t taps = q.kh * q.kw;
  const int nr = gemm_blocking().nr;
  PackedConvWeight packed{t.oc, t.kh, t.kw, t.c, PackedB(taps * q.oc, q.c, nr, storage)};
  for_panel_ranges(
      packed.packed.num_panels(), taps * q.oc * q.c, num_threads, [&](int64_t p0, int64_t p1) {
        for (int64_t tap = 0; tap < taps; ++tap)
          pack_b_panels(weight_ohwi + (taps - 1 - tap) * q.c, taps * q.c, false, 0, q.oc, p0 * nr,
                        std::min(q.c, p1 * nr) - p0 * nr, nr, taps * q.oc * nr,
                        packed.packed.mutable_panel(p0) + tap * q.oc * nr);
      });
  conv2d_nhwc_f32(dy, packed, dx, t, num_threads);
}

}  // namespace inductor_cpp::matrix
