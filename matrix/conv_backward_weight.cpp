/// \file conv_backward_weight.cpp
/// \brief The weight and bias gradients of the NHWC convolution (see conv_backward.h).
#include <omp.h>
#include <xmmintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "knobs/knobs.h"
#include "matrix/jit/microkernel.h"
#include "matrix/conv_backward.h"
#include "matrix/gemm_config.h"

namespace inductor_cpp::matrix {
namespace {

/// db[o] = Σ_p dy[p][o], summed in double: per thread over its pixels, then in thread order.
void bias_gradient(const float* dy, int64_t pixels, int64_t oc, float* db, int team) {
  const int threads = int(std::max<int64_t>(1, std::min<int64_t>(team, pixels / 64)));
  std::vector<double> partial(size_t(threads * oc), 0.0);
  auto worker = [&](int t) {
    double* sum = partial.data() + t * oc;
    for (int64_t p = t * pixels / threads; p < (t + 1) * pixels / threads; ++p)
      for (int64_t o = 0; o < oc; ++o) sum[o] += dy[p * oc + o];
  };
  if (threads == 1) {
    worker(0);
  } else {
#pragma omp parallel num_threads(team)  // the whole team (for_each_worker)
    for_each_worker(threads, worker);
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
void pack_im2col(const float* x, const Conv2dParams& q, int64_t pixel0, int64_t rows, int64_t col0,
                 int64_t cols, int nr, float* dst) {
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
      const int64_t lo = std::clamp<int64_t>(-ix, 0, taps),
                    hi = std::clamp<int64_t>(q.w - ix, lo, taps);
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
    const double cost =
        double(tn - 1) * double(pixels) + 2.0 * double(threads / tn - 1) * double(kkc);
    if (best_cost < 0 || cost < best_cost) best = tn, best_cost = cost;
  }
  return best;
}

/// Floats aligned for the kernels, uninitialised.
struct AlignedFloats {
  explicit AlignedFloats(size_t n)
      : data(static_cast<float*>(
            std::aligned_alloc(64, (std::max<size_t>(n, 1) * sizeof(float) + 63) / 64 * 64))) {
    if (!data) throw std::bad_alloc();
  }
  ~AlignedFloats() { std::free(data); }
  AlignedFloats(const AlignedFloats&) = delete;
  AlignedFloats& operator=(const AlignedFloats&) = delete;
  float* data;
};

/// dw += each of the `count` partials (in order), thread t's slice of the `total` elements.
void add_partials(float* dw, const float* partials, int count, int64_t total, int t, int threads) {
  const int64_t begin = t * total / threads, end = (t + 1) * total / threads;
  for (int g = 0; g < count; ++g) {
    const float* part = partials + size_t(g) * size_t(total);
    for (int64_t e = begin; e < end; ++e) dw[e] += part[e];
  }
}

/// Pixel groups of the direct method: tm (a divisor of threads) splitting the output rows, the
/// threads of each group sharing out the tiles. The fewest tiles × pixels on the busiest
/// thread, within 3 % the smaller tm (each further group adds a partial dw to sum).
int pixel_groups(int threads, int64_t tiles, int64_t rows) {
  int best = 1;
  double best_work = -1;
  for (int tm = 1; tm <= threads && tm <= rows; ++tm) {
    if (threads % tm != 0) continue;
    const int64_t per_thread = (tiles + threads / tm - 1) / (threads / tm);
    const double work = double(per_thread) / tm;
    if (best_work < 0 || work < best_work * 0.97) best = tm, best_work = work;
  }
  return best;
}

/// Which way round the direct method's register tile lies over dw.
///  * by output channels: tile rows are output channels (dy's values broadcast), tile columns
///    a filter row's KW·C columns (the input row's vectors); the tile is a block of dw.
///  * by filter columns: tile rows are a filter row's columns (the input's values broadcast),
///    tile columns output channels (dy's vectors); the tile is a block of dwᵀ, kept per pixel
///    group in a KH·KW·C × OC buffer and transposed into dw at the end.
/// The micro-kernel is the same either way: A's k stride and B's row stride trade places.
struct DirectTiling {
  bool by_filter_columns = false;
  int mr = 0, nr = 0;
};

/// Share of the vector lanes that hold real columns when `columns` are cut into vectors of
/// `vw` (a last tile of fewer rows costs nothing extra; a last, partly masked vector does).
double lane_use(int64_t columns, int vw) {
  return double(columns) / double((columns + vw - 1) / vw * vw);
}

/// By filter columns (tiles up to 64 output channels wide) when that fills at least 1.25x the
/// vector lanes the blocking's tile by output channels fills; else by output channels. A 7×7
/// stem's filter rows are 21 columns: 21 of 32 lanes by output channels, all 64 lanes of its
/// 64 output channels by filter columns (library calls, batch 8, dev Xeon: 0.85x oneDNN →
/// 1.13-1.28x). Where both fill their lanes the tile by output channels is as fast or faster
/// (3×3 64 @56² 0.97x / 0.98x, 1×1 256→64 @56² 0.87x / 0.81x): per k step its 14 × 32 tile
/// reads 3 cache lines for 28 FMAs, a 6 × 64 tile 5 for 24.
DirectTiling direct_tiling(const Conv2dParams& q, int64_t group) {
  const GemmBlocking& blk = gemm_blocking();
  const int vw = xbyak::vector_floats(blk.isa);
  const DirectTiling by_oc{false, blk.mr, blk.nr};
  const int nr = int(std::min<int64_t>(4 * vw, (q.oc + vw - 1) / vw * vw));
  const DirectTiling by_columns{true, xbyak::max_rows(blk.isa, nr), nr};
  // Tuning knob: INDUCTOR_CPP_CONV_BWD_WEIGHT=direct-by-oc|direct-by-columns forces a tiling.
  static const std::string knob = knobs::get_text(knobs::Knob::ConvBwdWeight);
  if (knob == "direct-by-oc" || knob == "direct-by-columns")
    return knob == "direct-by-oc" ? by_oc : by_columns;
  return lane_use(q.oc, vw) >= 1.25 * lane_use(group, vw) ? by_columns : by_oc;
}

/// The direct method: a register tile of dw (or of dwᵀ, direct_tiling) accumulated by the
/// batch-reduce micro-kernel over output rows (n, oy): per row, one operand is dy read in place
/// (pixel stride OC) and the other the input row that filter row reads, read in place (pixel
/// stride stride·C), rows that fall in the vertical padding skipped. Horizontal padding: a copy
/// of x with zero-padded rows. No im2col: each input element is read from cache, never copied
/// per tap. Threads: the tiles, and pixel groups (pixel_groups) each with its own partial dw
/// (or dwᵀ); output rows in blocks of ~512 KiB of dy and x, every tile of the thread per block.
void weight_gradient_direct(const float* dy, const float* x, float* dw, const Conv2dParams& q,
                            int num_threads) {
  const GemmBlocking& blk = gemm_blocking();
  const int64_t oh = q.out_h(), ow = q.out_w(), kkc = q.kh * q.kw * q.c, rows_total = q.n * oh;
  const bool merged = q.dilation_w == 1;
  const int64_t group = merged ? q.kw * q.c : q.c, groups = merged ? q.kh : q.kh * q.kw;
  const DirectTiling tiling = direct_tiling(q, group);
  const bool transposed = tiling.by_filter_columns;
  const int mr = tiling.mr, nr = tiling.nr;
  // Tile rows × columns: output channels × filter-row columns, or the other way round.
  const int64_t tile_rows = transposed ? group : q.oc, tile_cols = transposed ? q.oc : group;
  const int64_t row_tiles = (tile_rows + mr - 1) / mr, col_tiles = (tile_cols + nr - 1) / nr;
  const int64_t tiles = row_tiles * groups * col_tiles;
  // Input rows zero-padded along W (wp pixels each) when there is horizontal padding.
  const int64_t wp = q.w + 2 * q.pad_w;
  std::optional<AlignedFloats> padded;
  if (q.pad_w) padded.emplace(size_t(q.n * q.h * wp * q.c));
  const float* base = q.pad_w ? padded->data : x;

  int threads = int(std::max<int64_t>(1, std::min<int64_t>(num_threads, tiles * rows_total)));
  if (rows_total * ow * q.oc * kkc < blk.serial_macs) threads = 1;
  const int tm = pixel_groups(threads, tiles, rows_total), tt = threads / tm;
  // Partial sums of pixel groups 1.. (group 0 writes dw itself); by filter columns every group
  // has a dwᵀ buffer, transposed and summed into dw at the end. Filled before use.
  const int64_t total = q.oc * kkc;
  const int buffers = transposed ? tm : tm - 1;
  AlignedFloats partials(size_t(buffers) * size_t(total));
  auto output_of = [&](int group_index) {
    return transposed || group_index > 0
               ? partials.data + size_t(group_index - (transposed ? 0 : 1)) * size_t(total)
               : dw;
  };

  xbyak::MicroKernelFn kernels[2][2] = {};
  for (int rt = 0; rt < 2; ++rt)
    for (int ct = 0; ct < 2; ++ct) {
      const int rows = rt ? int(tile_rows % mr) : int(std::min<int64_t>(mr, tile_rows));
      const int cols = ct ? int(tile_cols % nr) : int(std::min<int64_t>(nr, tile_cols));
      if (!rows || !cols) continue;
      xbyak::MicroKernelDesc d;
      d.isa = blk.isa;
      d.mr = rows, d.nr = cols, d.k = ow;
      d.a_row_stride = 1;
      d.a_k_stride = transposed ? q.stride_w * q.c : q.oc;  // A: x's row, or dy's
      d.ldb = transposed ? q.oc : q.stride_w * q.c;         // B: dy's row, or x's
      d.ldc = transposed ? q.oc : kkc;
      d.b_layout = xbyak::BLayout::Plain;
      d.accumulate = true;
      kernels[rt][ct] = xbyak::get_microkernel(d);
    }
  const int64_t bytes_per_row = int64_t(sizeof(float)) * (ow * q.oc + q.stride_h * wp * q.c);
  const int64_t rows_per_block = std::max<int64_t>(1, (int64_t(512) << 10) / bytes_per_row);

  auto worker = [&](int t) {
    const unsigned saved_csr = _mm_getcsr();
    if (q.flush_denormals) _mm_setcsr(saved_csr | 0x8040);
    const int ti = t / tt, tj = t % tt;
    float* out = output_of(ti);
    const int64_t r0 = ti * rows_total / tm, r1 = (ti + 1) * rows_total / tm;
    const int64_t t0 = tj * tiles / tt, t1 = (tj + 1) * tiles / tt;
    std::vector<const float*> a_ptrs(static_cast<size_t>(rows_per_block)),
        b_ptrs(static_cast<size_t>(rows_per_block));
    for (int64_t block = r0; block < r1; block += rows_per_block) {
      const int64_t block_end = std::min(block + rows_per_block, r1);
      for (int64_t tile = t0; tile < t1; ++tile) {
        // Row tiles innermost: a thread's consecutive tiles read the same column operand.
        const int64_t rt = tile % row_tiles, ct = tile / row_tiles % col_tiles,
                      g = tile / row_tiles / col_tiles;
        const int64_t fy = merged ? g : g / q.kw, fx = merged ? 0 : g % q.kw;
        const int64_t i0 = rt * mr, j0 = ct * nr;
        // The tile's first output channel and first column of the filter row.
        const int64_t o0 = transposed ? j0 : i0, col0 = transposed ? i0 : j0;
        int64_t batch = 0;
        for (int64_t r = block; r < block_end; ++r) {
          const int64_t img = r / oh, oy = r % oh;
          const int64_t iy = oy * q.stride_h - q.pad_h + fy * q.dilation_h;
          if (iy < 0 || iy >= q.h) continue;  // a row of vertical padding: zeros
          const float* dy_row = dy + r * ow * q.oc + o0;
          // Padded column ox·stride + fx·dilation of the row, then the tile's columns.
          const float* x_row = base + ((img * q.h + iy) * wp + fx * q.dilation_w) * q.c + col0;
          a_ptrs[size_t(batch)] = transposed ? x_row : dy_row;
          b_ptrs[size_t(batch)] = transposed ? dy_row : x_row;
          ++batch;
        }
        if (!batch) continue;
        xbyak::MicroKernelArgs args;
        args.a = a_ptrs.data(), args.b = b_ptrs.data(), args.batch = batch;
        args.c =
            transposed ? out + (g * group + col0) * q.oc + o0 : out + o0 * kkc + g * group + col0;
        kernels[i0 + mr > tile_rows][j0 + nr > tile_cols](&args);
      }
    }
    _mm_setcsr(saved_csr);
  };
  auto prepare = [&](int t) {  // zero dw and the partials, pad x's rows: thread t's share
    for (int g = 0; g < tm; ++g) {
      float* buffer = output_of(g);
      std::fill(buffer + t * total / threads, buffer + (t + 1) * total / threads, 0.0f);
    }
    if (!q.pad_w) return;
    const int64_t image_rows = q.n * q.h, left = q.pad_w * q.c, body = q.w * q.c;
    for (int64_t r = t * image_rows / threads; r < (t + 1) * image_rows / threads; ++r) {
      float* dst = padded->data + r * wp * q.c;
      std::fill(dst, dst + left, 0.0f);
      std::memcpy(dst + left, x + r * body, size_t(body) * sizeof(float));
      std::fill(dst + left + body, dst + wp * q.c, 0.0f);
    }
  };
  // dw = Σ of the groups' partials: added in order, or (by filter columns) transposed from
  // their dwᵀ buffers, thread t's output channels.
  auto finish = [&](int t) {
    if (!transposed) return add_partials(dw, partials.data, tm - 1, total, t, threads);
    // Blocks of 16 filter columns: each dwᵀ row read whole, each dw row written 16 at a time.
    const int64_t o_begin = t * q.oc / threads, o_end = (t + 1) * q.oc / threads;
    for (int64_t c0 = 0; c0 < kkc; c0 += 16)
      for (int64_t o = o_begin; o < o_end; ++o)
        for (int64_t col = c0; col < std::min(c0 + 16, kkc); ++col) {
          float sum = 0;
          for (int g = 0; g < tm; ++g)
            sum += partials.data[size_t(g) * size_t(total) + size_t(col * q.oc + o)];
          dw[o * kkc + col] = sum;
        }
  };
  if (threads == 1) {
    prepare(0);
    worker(0);
    if (transposed) finish(0);
    return;
  }
#pragma omp parallel num_threads(std::max(num_threads, threads))  // the whole team
  {
    for_each_worker(threads, prepare);
#pragma omp barrier
    for_each_worker(threads, worker);
    if (tm > 1 || transposed) {
#pragma omp barrier
      for_each_worker(threads, finish);
    }
  }
}

/// dw = dyᵀ · im2col(x) in chunks of output pixels, each chunk's im2col written straight into
/// a packed B (pack_im2col) for one-thread GEMMs (column and pixel groups: column_groups).
void weight_gradient_im2col(const float* dy, const float* x, float* dw, const Conv2dParams& q,
                            int num_threads) {
  const int64_t pixels = q.n * q.out_h() * q.out_w(), kkc = q.kh * q.kw * q.c;
  const GemmBlocking& blk = gemm_blocking();
  const int nr = blk.nr;
  const int64_t panels = (kkc + nr - 1) / nr;
  int threads = int(std::max<int64_t>(1, std::min<int64_t>(num_threads, panels * pixels / 64)));
  if (pixels * q.oc * kkc < blk.serial_macs) threads = 1;
  // Pixel groups accumulate into their own partial dw (group 0's is dw itself).
  const int tn = column_groups(threads, panels, pixels, kkc), tm = threads / tn;
  AlignedFloats partials(size_t(tm - 1) * size_t(q.oc * kkc));  // filled before use
  auto worker = [&](int t) {
    const unsigned saved_csr = _mm_getcsr();
    if (q.flush_denormals) _mm_setcsr(saved_csr | 0x8040);
    const int ti = t / tn, tj = t % tn;
    const int64_t col0 = tj * panels / tn * nr, col1 = std::min(kkc, (tj + 1) * panels / tn * nr);
    const int64_t p0 = ti * pixels / tm, p1 = (ti + 1) * pixels / tm, cols = col1 - col0;
    float* out = ti == 0 ? dw : partials.data + size_t(ti - 1) * size_t(q.oc * kkc);
    // Chunk of pixels per GEMM: its packed columns about 1 MiB, K 64-512.
    const int64_t chunk =
        std::clamp<int64_t>((int64_t(256) << 10) / std::max<int64_t>(cols, 1), 64, 512);
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
      for (int64_t o = 0; o < q.oc; ++o)
        std::fill(out + o * kkc + col0, out + o * kkc + col1, 0.0f);
    _mm_setcsr(saved_csr);
  };
  if (threads == 1) return worker(0);
#pragma omp parallel num_threads(std::max(num_threads, threads))  // the whole team
  {
    for_each_worker(threads, worker);
    if (tm > 1) {
#pragma omp barrier
      for_each_worker(
          threads, [&](int t) { add_partials(dw, partials.data, tm - 1, q.oc * kkc, t, threads); });
    }
  }
}

}  // namespace

bool conv2d_backward_weight_supported(const Conv2dParams& q) {
  return conv2d_supported(q);
}

void conv2d_backward_weight_nhwc_f32(const float* dy, const float* x, float* dw, float* db,
                                     const Conv2dParams& q, int num_threads) {
  if (!conv2d_backward_weight_supported(q))
    throw std::invalid_argument("conv2d_backward_weight_nhwc_f32: unsupported parameters");
  if (db) bias_gradient(dy, q.n * q.out_h() * q.out_w(), q.oc, db, num_threads);
  // The direct method unless output rows are short: each of its micro-kernel calls reduces K =
  // OW per batch entry. Library calls, batch 8, ratio to eager's oneDNN (direct / im2col): dev
  // machine, 2 threads: 3x3 64 @56 1.46 / 1.16, 1x1 256->64 @56 1.03 / 0.97, 3x3 256 @14
  // 1.18 / 1.23; H200 host, 16 threads: 1.04 / 0.85, 1.15 / 0.94, 0.84 / 0.93.
  // Tuning knob: INDUCTOR_CPP_CONV_BWD_WEIGHT=im2col|direct|direct-by-oc|direct-by-columns
  // forces a method (and the direct method's tiling: direct_tiling).
  static const std::optional<std::string> forced = knobs::raw(knobs::Knob::ConvBwdWeight);
  const bool direct = forced ? *forced != "im2col" : q.out_w() >= 16;
  if (direct) return weight_gradient_direct(dy, x, dw, q, num_threads);
  weight_gradient_im2col(dy, x, dw, q, num_threads);
}

}  // namespace inductor_cpp::matrix
