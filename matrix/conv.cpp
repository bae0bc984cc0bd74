/// \file conv.cpp
/// \brief Direct NHWC convolution on the batch-reduce micro-kernels (see conv.h).
#include "matrix/conv.h"

#include <omp.h>
#include <xmmintrin.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "matrix/epilogue.h"
#include "matrix/gemm_config.h"
#include "matrix/jit/cpu_features.h"
#include "matrix/jit/microkernel.h"
#include "matrix/scratch.h"

namespace inductor_cpp::matrix {
namespace {

using xbyak::MicroKernelArgs;
using xbyak::MicroKernelDesc;
using xbyak::MicroKernelFn;

constexpr int kMaxTaps = 64;

/// Rows [first, first + count) of the zero-padded image `img` (padded row i is input row
/// i - pad_h) into `out`, each wp·C floats (wp = pad_w + W + pad_w_end()).
void pad_rows(const float* x, const Conv2dParams& q, int64_t img, int64_t first, int64_t count,
              float* out) {
  const int64_t wp = q.pad_w + q.w + q.pad_w_end();
  const int64_t row = wp * q.c, left = q.pad_w * q.c, body = q.w * q.c;
  for (int64_t i = 0; i < count; ++i) {
    float* dst = out + i * row;
    const int64_t src_row = first + i - q.pad_h;
    if (src_row < 0 || src_row >= q.h) {
      std::fill(dst, dst + row, 0.0f);
      continue;
    }
    std::fill(dst, dst + left, 0.0f);
    std::memcpy(dst + left, x + (img * q.h + src_row) * body, body * sizeof(float));
    std::fill(dst + left + body, dst + row, 0.0f);
  }
}

void conv_as_gemm(const float* x, const PackedConvWeight& w, float* y, const Conv2dParams& q,
                  int threads) {
  GemmProblem p;
  p.m = q.n * q.h * q.w, p.n = q.oc, p.k = q.c;
  p.a = x, p.lda = q.c, p.c = y, p.ldc = q.oc;
  p.epilogue = q.epilogue;
  p.flush_denormals = q.flush_denormals;
  gemm_f32_packed(p, w.packed, threads);
}

/// The wide tile's two-panel kernel (pair_mr pixels × 2·nr channels: per k step 4 weight
/// loads and 6 broadcasts feed 24 FMAs, each pixel's input loaded once for 64 channels) against
/// the 14 × 32 tile. H200 host, 16 threads, batch 32, kernel time against oneDNN in alternating
/// processes (`bench ab ... INDUCTOR_CPP_MATRIX_CONV_TILE`, two rounds): 3×3 64 @56² 0.97 → 1.01x,
/// 128
/// @28² 0.98 → 1.00x, where an output row splits into 6- and 5-pixel tiles; 256 @14² 0.99 →
/// 0.97x and 512 @7² 1.00 → 0.94x, where the row's tiles have 5 and 4 or 4 and 3 pixels
/// (too few accumulators), so it is used only where the tiles average ≥ 0.9 · pair_mr pixels.
/// It needs AVX-512 (AVX2 has no registers for it), ≥ 2 panels, and enough tiles that the
/// coarser column split still shares out over the threads.
bool two_panel_tiles_pay(const Conv2dParams& q, int threads) {
  const GemmBlocking& blk = gemm_blocking();
  if (blk.isa != xbyak::Isa::Avx512 || blk.pair_min_rows == 0 || q.oc < 2 * blk.nr) return false;
  const int64_t ow = q.out_w(), row_tiles = (ow + blk.pair_mr - 1) / blk.pair_mr;
  const int64_t pairs = (q.oc + 2 * blk.nr - 1) / (2 * blk.nr);
  return ow * 10 >= row_tiles * blk.pair_mr * 9 && q.n * q.out_h() * pairs >= 8 * int64_t(threads);
}

}  // namespace

Conv2dTile conv2d_tile(const Conv2dParams& q, int num_threads) {
  const GemmBlocking& blk = gemm_blocking();
  Conv2dTile t;
  t.panels = blk.conv_panels ? blk.conv_panels : two_panel_tiles_pay(q, num_threads) ? 2 : 1;
  t.pixels = std::min(blk.conv_mr > 0 ? blk.conv_mr
                      : t.panels == 2 ? blk.pair_mr
                                      : blk.mr,
                      xbyak::max_rows(blk.isa, t.panels * blk.nr));
  return t;
}

bool conv2d_supported(const Conv2dParams& q) {
  return q.groups == 1 && q.n > 0 && q.c > 0 && q.oc > 0 && q.kh > 0 && q.kw > 0 &&
         q.stride_h > 0 && q.stride_w > 0 && q.dilation_h > 0 && q.dilation_w > 0 && q.pad_h >= 0 &&
         q.pad_w >= 0 && q.pad_bottom >= -1 && q.pad_right >= -1 && q.out_h() > 0 &&
         q.out_w() > 0 && q.kh * (q.dilation_w == 1 ? 1 : q.kw) <= kMaxTaps &&
         (xbyak::cpu_features().avx512 || xbyak::cpu_features().avx2);
}

PackedConvWeight pack_conv_weight_f32(const float* weight_oihw, const Conv2dParams& q) {
  const int64_t k = q.kh * q.kw * q.c;
  std::vector<float> ohwi(size_t(q.oc * k));
  for (int64_t o = 0; o < q.oc; ++o)
    for (int64_t ci = 0; ci < q.c; ++ci)
      for (int64_t t = 0; t < q.kh * q.kw; ++t)
        ohwi[o * k + t * q.c + ci] = weight_oihw[(o * q.c + ci) * q.kh * q.kw + t];
  return pack_conv_weight_ohwi_f32(ohwi.data(), q);
}

PackedConvWeight pack_conv_weight_ohwi_f32(const float* weight_ohwi, const Conv2dParams& q,
                                           int num_threads, const PackedStorage& storage) {
  const int64_t k = q.kh * q.kw * q.c;
  return PackedConvWeight{q.oc, q.kh, q.kw, q.c,
                          pack_b_f32(weight_ohwi, k, q.oc, k, true, num_threads, storage)};
}

void conv2d_nhwc_f32(const float* x, const PackedConvWeight& w, float* y, const Conv2dParams& q,
                     int num_threads) {
  if (!conv2d_supported(q))
    throw std::invalid_argument("conv2d_nhwc_f32: unsupported parameters (groups > 1?)");
  if (w.oc != q.oc || w.kh != q.kh || w.kw != q.kw || w.c != q.c)
    throw std::invalid_argument("conv2d_nhwc_f32: weights packed for another shape");
  const int64_t oh = q.out_h(), ow = q.out_w();
  const int64_t pixel_stride = q.out_pixel_stride ? q.out_pixel_stride : q.oc;
  const int64_t row_stride = q.out_row_stride ? q.out_row_stride : ow * pixel_stride;
  const int64_t image_stride = q.out_image_stride ? q.out_image_stride : oh * row_stride;
  const bool dense_out =
      pixel_stride == q.oc && row_stride == ow * q.oc && image_stride == oh * ow * q.oc;
  if (!dense_out && (!q.epilogue.empty() || pixel_stride < q.oc))
    throw std::invalid_argument("conv2d_nhwc_f32: a strided output takes no epilogue ops");
  const bool padded = q.pad_h || q.pad_w || q.pad_h_end() || q.pad_w_end();
  if (dense_out && !padded && q.kh == 1 && q.kw == 1 && q.stride_h == 1 && q.stride_w == 1)
    return conv_as_gemm(x, w, y, q, num_threads);
  if (q.epilogue.size() > 16)
    throw std::invalid_argument("conv2d_nhwc_f32: more than 16 epilogue ops");
  for (const EpilogueOp& op : q.epilogue)
    if (epilogue_needs_data(op.kind) && !op.data)
      throw std::invalid_argument("conv2d_nhwc_f32: epilogue op without data");

  const GemmBlocking& blk = gemm_blocking();
  const int64_t hp = q.pad_h + q.h + q.pad_h_end(), wp = q.pad_w + q.w + q.pad_w_end();
  // A tile is up to mr pixels of one output row × `group` adjacent weight panels.
  const Conv2dTile tile_shape = conv2d_tile(q, num_threads);
  const int nr = blk.nr, group = tile_shape.panels, mr = tile_shape.pixels;

  // Filter rows as batch entries with K = KW·C (contiguous when dilation_w = 1), else every tap.
  const bool merged = q.dilation_w == 1;
  const int64_t k_per_entry = merged ? q.kw * q.c : q.c;
  const int64_t taps = merged ? q.kh : q.kh * q.kw;
  const size_t jit_ops = jit_epilogue_prefix(q.epilogue);
  // An output row's pixels in the fewest tiles of at most mr rows, of balanced sizes
  // (tile_rows or tile_rows - 1): with 6-row tiles, a 7-pixel row is 4 + 3, not 6 + 1, whose
  // one-row tile has too few accumulators to hide the FMA latency (it ran at half speed).
  const int64_t row_tiles = (ow + mr - 1) / mr;
  const int tile_rows = int((ow + row_tiles - 1) / row_tiles);
  const int64_t full_tiles = ow - (tile_rows - 1) * row_tiles;  // tiles of tile_rows rows
  const int64_t panels = w.packed.num_panels(), groups = (panels + group - 1) / group;
  const int full_cols = int(std::min<int64_t>(int64_t(group) * nr, q.oc));
  const int last_cols = int(q.oc - (groups - 1) * group * nr);
  MicroKernelFn kernels[2][2] = {};
  for (int rt = 0; rt < 2; ++rt)
    for (int ct = 0; ct < 2; ++ct) {
      const int rows = rt ? (full_tiles < row_tiles ? tile_rows - 1 : 0) : tile_rows;
      const int cols = ct ? (last_cols != full_cols ? last_cols : 0) : full_cols;
      if (!rows || !cols) continue;
      MicroKernelDesc d;
      d.isa = blk.isa;
      d.mr = rows, d.nr = cols, d.k = k_per_entry;
      d.a_row_stride = q.stride_w * q.c, d.ldb = nr, d.ldc = pixel_stride;
      if (cols > nr) d.b_panel_cols = nr;
      d.epilogue = kernel_epilogue(q.epilogue, jit_ops);
      kernels[rt][ct] = xbyak::get_microkernel(d);
    }

  const int64_t rows_total = q.n * oh;
  int threads = int(std::max<int64_t>(1, std::min<int64_t>(num_threads, rows_total * groups)));
  if (rows_total * ow * q.oc * q.kh * q.kw * q.c < blk.serial_macs) threads = 1;
  int tm = 1, tn = 1;
  choose_grid(rows_total, groups, threads, tm, tn);
  // Output rows per cache block (across images): the new input rows and the output row of
  // each, ~512 KiB. (Sized to one core's L2 less the streaming weight panel instead, 3×3
  // 256->256 @14² and 512->512 @7² at batch 32 ran 7 and 2 rows per block on a 512 KiB L2 and
  // lost 7 % and 20 %: every block streams all the weights once, which outweighs keeping its
  // input in L2.)
  const int64_t bytes_per_row = int64_t(sizeof(float)) * (q.stride_h * wp * q.c + ow * q.oc);
  int64_t rows_per_block = std::max<int64_t>(1, (int64_t(512) << 10) / bytes_per_row);
  // Whole images where one fits: a block cut inside an image copies that image's halo twice.
  if (rows_per_block > oh) rows_per_block -= rows_per_block % oh;

  auto worker = [&](int t) {
    const unsigned saved_csr = _mm_getcsr();
    if (q.flush_denormals) _mm_setcsr(saved_csr | 0x8040);
    const int64_t ti = t / tn, tj = t % tn;
    const float* a_ptrs[kMaxTaps];
    const float* b_ptrs[kMaxTaps];
    const float* epilogue_data[16] = {};
    // Blocks of output rows outer, column panels, rows of the block: a block's input rows and
    // output stay in L2 across the panels, so activations are read / written from memory
    // about once, and each weight panel is read once per block (all rows inside each panel
    // streamed the whole input once per panel: 0.76x eager at batch 32, 64 channels @56²). A
    // block may span images (7×7 or 14×14 maps at a large batch), so a small map does not
    // stream all the weights once per image. With padding, each image's share of the block is
    // copied zero-padded (with its halo) into a per-thread buffer (a padded copy of the whole
    // input cost a pass over memory).
    thread_local ScratchVector<float> padded_rows;
    std::vector<const float*> image_base;  // per image of the block: its (padded) row 0
    const int64_t r_begin = ti * rows_total / tm, r_end = (ti + 1) * rows_total / tm;
    for (int64_t block = r_begin; block < r_end;) {
      const int64_t block_end = std::min(block + rows_per_block, r_end);
      const int64_t first_img = block / oh, last_img = (block_end - 1) / oh;
      image_base.assign(size_t(last_img - first_img + 1), nullptr);
      // Input rows (padded coordinates) of image img's output rows [begin, end) of the block.
      auto input_rows = [&](int64_t img, int64_t& iy0, int64_t& count) {
        const int64_t begin = std::max(block, img * oh), end = std::min(block_end, (img + 1) * oh);
        iy0 = (begin - img * oh) * q.stride_h;
        count = (end - 1 - begin) * q.stride_h + (q.kh - 1) * q.dilation_h + 1;
      };
      if (padded) {
        int64_t total = 0, iy0, count;
        for (int64_t img = first_img; img <= last_img; ++img, total += count * wp * q.c)
          input_rows(img, iy0, count);
        float* out = padded_rows.get(size_t(total));
        for (int64_t img = first_img; img <= last_img; ++img, out += count * wp * q.c) {
          input_rows(img, iy0, count);
          pad_rows(x, q, img, iy0, count, out);
          image_base[img - first_img] = out - iy0 * wp * q.c;  // indexed by padded row
        }
      } else {
        for (int64_t img = first_img; img <= last_img; ++img)
          image_base[img - first_img] = x + img * hp * wp * q.c;  // unpadded: hp = H, wp = W
      }
      for (int64_t gi = tj * groups / tn; gi < (tj + 1) * groups / tn; ++gi) {
        const int64_t pi = gi * group, j = pi * nr;
        const int cols = int(std::min<int64_t>(full_cols, q.oc - j));
        const float* panel = w.packed.panel(pi);
        const int64_t b_panel_stride =
            cols > nr ? (w.packed.panel(pi + 1) - panel) * int64_t(sizeof(float)) : 0;
        for (int64_t e = 0; e < taps; ++e) b_ptrs[e] = panel + e * k_per_entry * nr;
        for (int64_t r = block; r < block_end; ++r) {
          const int64_t oy = r % oh;
          const float* base = image_base[r / oh - first_img];
          for (int64_t tile = 0, ox = 0; tile < row_tiles; ++tile) {
            const int rows = tile < full_tiles ? tile_rows : tile_rows - 1;
            for (int64_t e = 0; e < taps; ++e) {
              const int64_t fy = merged ? e : e / q.kw, fx = merged ? 0 : e % q.kw;
              const int64_t iy = oy * q.stride_h + fy * q.dilation_h,
                            ix = ox * q.stride_w + fx * q.dilation_w;
              a_ptrs[e] = base + (iy * wp + ix) * q.c;
            }
            const int64_t pixel = r * ow + ox;
            float* c_ptr = y + r / oh * image_stride + oy * row_stride + ox * pixel_stride + j;
            for (size_t o = 0; o < jit_ops; ++o)
              epilogue_data[o] = epilogue_tile_data(q.epilogue[o], pixel, j);
            MicroKernelArgs args;
            args.a = a_ptrs, args.b = b_ptrs, args.batch = taps, args.c = c_ptr;
            args.epilogue_data = epilogue_data;
            args.b_panel_stride = b_panel_stride;
            kernels[rows != tile_rows][cols != full_cols](&args);
            if (jit_ops < q.epilogue.size())
              apply_epilogue_tile(c_ptr, q.oc, rows, cols, pixel, j, q.epilogue, jit_ops,
                                  /*tile_kernel=*/false);
            ox += rows;
          }
        }
      }
      // A generated tile kernel once over the block's pixels × this thread's channels (as
      // the GEMM driver calls it per block).
      const int64_t j0 = tj * groups / tn * group * nr,
                    j1 = std::min(q.oc, (tj + 1) * groups / tn * group * nr);
      apply_tile_kernel(q.epilogue, block * ow, (block_end - block) * ow, j0, j1 - j0);
      block = block_end;
    }
    _mm_setcsr(saved_csr);
  };
  if (threads == 1) return worker(0);
#pragma omp parallel num_threads(std::max(num_threads, threads))  // the whole team
  for_each_worker(threads, worker);
}

}  // namespace inductor_cpp::matrix
