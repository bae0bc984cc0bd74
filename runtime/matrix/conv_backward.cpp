/// \file conv_backward.cpp
/// \brief Input, weight and bias gradients of the NHWC convolution (see conv_backward.h).
#include "runtime/matrix/conv_backward.h"

#include <omp.h>
#include <xmmintrin.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <vector>

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

/// db[o] = Σ_p dy[p][o], summed in double: per thread over its pixels, then in thread order.
void bias_gradient(const float* dy, int64_t pixels, int64_t oc, float* db, int threads) {
  threads = int(std::max<int64_t>(1, std::min<int64_t>(threads, pixels / 64)));
  std::vector<double> partial(size_t(threads * oc), 0.0);
  auto worker = [&](int t) {
    double* sum = partial.data() + t * oc;
    for (int64_t p = t * pixels / threads; p < (t + 1) * pixels / threads; ++p)
      for (int64_t o = 0; o < oc; ++o) sum[o] += dy[p * oc + o];
  };
  if (threads == 1) {
    worker(0);
  } else {
#pragma omp parallel num_threads(threads)
    worker(omp_get_thread_num());
  }
  for (int64_t o = 0; o < oc; ++o) {
    double total = 0;
    for (int t = 0; t < threads; ++t) total += partial[t * oc + o];
    db[o] = float(total);
  }
}

/// Copies im2col(x) rows [pixel0, pixel0 + rows) × columns [col0, col0 + cols) into `dst` in
/// the packed-B layout (panels of nr columns, each rows × nr floats, panel stride rows · nr,
/// zero lanes past the last column). Column (i, j, c) = (i·KW + j)·C + c of output pixel p reads
/// x at the tap's input position, zero where that falls in the padding. With dilation_w = 1 a
/// filter row's KW·C columns are one contiguous run of the input row (clipped at its ends), so
/// runs are copied per filter row, not per tap (a 3-channel stem has 3-float taps).
void pack_im2col(const float* x, const Conv2dParams& q, int64_t pixel0, int64_t rows,
                 int64_t col0, int64_t cols, int nr, float* dst) {
  const int64_t oh = q.out_h(), ow = q.out_w();
  const int64_t panel_stride = rows * nr, panels = (cols + nr - 1) / nr, tail = cols % nr;
  const bool merged = q.dilation_w == 1;
  // A group of columns read from one place: a filter row (merged) or a tap.
  const int64_t group = merged ? q.kw * q.c : q.c;
  // Copies columns [begin, end) of group g (relative to the group) from src (null: zeros).
  auto copy = [&](float* row, int64_t g, int64_t begin, int64_t end, const float* src) {
    begin = std::max(begin, col0 - g * group), end = std::min(end, col0 + cols - g * group);
    for (int64_t c = begin; c < end;) {
      const int64_t j = g * group + c - col0;  // column within the slice
      const int64_t lane = j % nr, run = std::min<int64_t>(nr - lane, end - c);
      float* out = row + (j / nr) * panel_stride + lane;
      if (src)
        std::memcpy(out, src + c, size_t(run) * sizeof(float));
      else
        std::fill(out, out + run, 0.0f);
      c += run;
    }
  };
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t p = pixel0 + r, img = p / (oh * ow), oy = p / ow % oh, ox = p % ow;
    float* row = dst + r * nr;
    if (tail) {
      float* last = row + (panels - 1) * panel_stride;
      std::fill(last + tail, last + nr, 0.0f);
    }
    for (int64_t g = col0 / group; g * group < col0 + cols; ++g) {
      const int64_t fy = merged ? g : g / q.kw, fx = merged ? 0 : g % q.kw;
      const int64_t iy = oy * q.stride_h - q.pad_h + fy * q.dilation_h,
                    ix = ox * q.stride_w - q.pad_w + fx * q.dilation_w;
      if (iy < 0 || iy >= q.h) {
        copy(row, g, 0, group, nullptr);
        continue;
      }
      const float* line = x + (img * q.h + iy) * q.w * q.c;  // input row iy
      // Taps [lo, hi) of the group fall inside the row: x from column ix + lo on.
      const int64_t taps = merged ? q.kw : 1;
      const int64_t lo = std::clamp<int64_t>(-ix, 0, taps), hi = std::clamp<int64_t>(q.w - ix, lo, taps);
      copy(row, g, 0, lo * q.c, nullptr);
      copy(row, g, lo * q.c, hi * q.c, line + ix * q.c);
      copy(row, g, hi * q.c, group, nullptr);
    }
  }
}

/// Thread grid of the weight gradient: tn column groups (whole panels, at least one each) ×
/// tm pixel groups. Column groups each pack all of dyᵀ (OC × pixels floats) again; pixel
/// groups each add an OC × KKC partial into dw at the end (read and written): the grid with
/// the least of that extra traffic.
int column_groups(int threads, int64_t panels, int64_t pixels, int64_t kkc) {
  int best = 1;
  double best_cost = -1;
  for (int tn = 1; tn <= threads; ++tn) {
    if (threads % tn != 0 || panels < tn) continue;
    const double cost = double(tn - 1) * double(pixels) + 2.0 * double(threads / tn - 1) * double(kkc);
    if (best_cost < 0 || cost < best_cost) best = tn, best_cost = cost;
  }
  return best;
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

bool conv2d_backward_weight_supported(const Conv2dParams& q) { return conv2d_supported(q); }

void conv2d_backward_input_nhwc_f32(const float* dy, const float* weight_ohwi, float* dx,
                                    const Conv2dParams& q, int num_threads) {
  if (!conv2d_backward_input_supported(q))
    throw std::invalid_argument("conv2d_backward_input_nhwc_f32: unsupported parameters");
  const int64_t oh = q.out_h(), ow = q.out_w();
  if (is_pointwise(q)) {  // dx at the strided pixels = dy · w, [N·OH·OW, OC] × [OC, C]
    const bool strided = q.stride_h != 1 || q.stride_w != 1;
    std::vector<float> rows;
    if (strided) rows.resize(size_t(q.n * oh * ow * q.c));
    GemmProblem p;
    p.m = q.n * oh * ow, p.n = q.c, p.k = q.oc;
    p.a = dy, p.lda = q.oc, p.b = weight_ohwi, p.ldb = q.c;
    p.c = strided ? rows.data() : dx, p.ldc = q.c;
    p.flush_denormals = q.flush_denormals;
    gemm_f32(p, num_threads);
    if (!strided) return;
    const int64_t image_rows = q.n * q.h;
    const int threads = int(std::max<int64_t>(1, std::min<int64_t>(num_threads, image_rows / 4)));
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t r = 0; r < image_rows; ++r) {
      const int64_t img = r / q.h, iy = r % q.h;
      float* out = dx + r * q.w * q.c;
      if (iy % q.stride_h != 0) {
        std::fill(out, out + q.w * q.c, 0.0f);
        continue;
      }
      const float* in = rows.data() + (img * oh + iy / q.stride_h) * ow * q.c;
      for (int64_t ix = 0; ix < q.w; ++ix) {
        if (ix % q.stride_w == 0)
          std::memcpy(out + ix * q.c, in + ix / q.stride_w * q.c, size_t(q.c) * sizeof(float));
        else
          std::fill(out + ix * q.c, out + (ix + 1) * q.c, 0.0f);
      }
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

void conv2d_backward_weight_nhwc_f32(const float* dy, const float* x, float* dw, float* db,
                                     const Conv2dParams& q, int num_threads) {
  if (!conv2d_backward_weight_supported(q))
    throw std::invalid_argument("conv2d_backward_weight_nhwc_f32: unsupported parameters");
  const int64_t pixels = q.n * q.out_h() * q.out_w(), kkc = q.kh * q.kw * q.c;
  if (db) bias_gradient(dy, pixels, q.oc, db, num_threads);
  const GemmBlocking& blk = gemm_blocking();
  const int nr = blk.nr;
  const int64_t panels = (kkc + nr - 1) / nr;
  int threads = int(std::max<int64_t>(1, std::min<int64_t>(num_threads, panels * pixels / 64)));
  if (pixels * q.oc * kkc < blk.serial_macs) threads = 1;
  // Pixel groups accumulate into their own partial dw (group 0's is dw itself).
  const int tn = column_groups(threads, panels, pixels, kkc), tm = threads / tn;
  std::vector<float> partials(size_t(tm - 1) * size_t(q.oc * kkc));
  auto worker = [&](int t) {
    const unsigned saved_csr = _mm_getcsr();
    if (q.flush_denormals) _mm_setcsr(saved_csr | 0x8040);
    const int ti = t / tn, tj = t % tn;
    const int64_t col0 = tj * panels / tn * nr, col1 = std::min(kkc, (tj + 1) * panels / tn * nr);
    const int64_t p0 = ti * pixels / tm, p1 = (ti + 1) * pixels / tm, cols = col1 - col0;
    float* out = ti == 0 ? dw : partials.data() + size_t(ti - 1) * size_t(q.oc * kkc);
    // Chunk of pixels per GEMM: its packed columns about 1 MiB, K 64-512.
    const int64_t chunk = std::clamp<int64_t>((int64_t(256) << 10) / std::max<int64_t>(cols, 1), 64, 512);
    std::optional<PackedB> packed;
    bool first = true;
    for (int64_t p = p0; p < p1; p += chunk) {
      const int64_t rows = std::min(chunk, p1 - p);
      if (!packed || packed->k() != rows) packed.emplace(rows, cols, nr);
      pack_im2col(x, q, p, rows, col0, cols, nr, packed->mutable_panel(0));
      GemmProblem g;
      g.m = q.oc, g.n = cols, g.k = rows;
      g.a = dy + p * q.oc, g.lda = q.oc, g.trans_a = true;
      g.c = out + col0, g.ldc = kkc, g.accumulate = !first;
      gemm_f32_packed(g, *packed, 1);
      first = false;
    }
    if (first)  // no pixels: a zero partial
      for (int64_t o = 0; o < q.oc; ++o) std::fill(out + o * kkc + col0, out + o * kkc + col1, 0.0f);
    _mm_setcsr(saved_csr);
  };
  auto reduce = [&](int t) {  // dw += partials, in group order, thread t's slice of elements
    const int64_t total = q.oc * kkc, begin = t * total / threads, end = (t + 1) * total / threads;
    for (int g = 0; g + 1 < tm; ++g) {
      const float* part = partials.data() + size_t(g) * size_t(total);
      for (int64_t e = begin; e < end; ++e) dw[e] += part[e];
    }
  };
  if (threads == 1) return worker(0);
#pragma omp parallel num_threads(threads)
  {
    worker(omp_get_thread_num());
    if (tm > 1) {
#pragma omp barrier
      reduce(omp_get_thread_num());
    }
  }
}

}  // namespace inductor_cpp::matrix
