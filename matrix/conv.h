/// \file conv.h
/// \brief 2-D convolution, channels-last (NHWC), float32, on the GEMM micro-kernels.
///
/// Direct method: an output tile is up to mr consecutive output pixels of one output row × nr
/// output channels, or on AVX-512 6 pixels × two adjacent nr-channel panels (conv2d_tile); the
/// micro-kernel batch-reduces over the filter rows kh (each a K = KW·C contiguous
/// run of the input row when dilation_w = 1, else over all KH·KW taps with K = C). Padding is
/// handled by zero-padded copies of the input rows each block of output rows reads, made per
/// call by the thread computing the block (L2-sized). 1×1 / stride 1 / no padding runs as
/// one GEMM (M = N·H·W). groups > 1 is not supported: conv2d_nhwc_f32 throws
/// std::invalid_argument (callers should check conv2d_supported first and fall back).
///
/// Epilogue ops see the output as the matrix (N·OH·OW) × OC (row = output pixel, column =
/// output channel): BiasCol is the per-channel bias, AddResidual reads an NHWC residual with
/// ld = OC (or the residual's own channel stride).
#pragma once

#include <cstdint>
#include <vector>

#include "matrix/gemm.h"

namespace inductor_cpp::matrix {

struct Conv2dParams {
  int64_t n = 1, h = 0, w = 0, c = 0;  ///< Input NHWC.
  int64_t oc = 0, kh = 1, kw = 1;      ///< Filter.
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1;
  int64_t groups = 1;                ///< Only 1 is supported.
  std::vector<EpilogueOp> epilogue;  ///< Applied to the (N·OH·OW) × OC output matrix.
  bool flush_denormals = false;
  /// Where output pixel (img, oy, ox) starts, in floats: img·out_image_stride +
  /// oy·out_row_stride + ox·out_pixel_stride (0: dense NHWC, i.e. OC, OW·OC, OH·OW·OC). Only
  /// without epilogue ops: the input gradient's phases (conv_backward.h) write their pixels
  /// of dx in place this way.
  int64_t out_pixel_stride = 0, out_row_stride = 0, out_image_stride = 0;

  /// Zero rows below / columns right of the input when they differ from pad_h / pad_w (−1: the
  /// same). Only conv2d_nhwc_f32 takes them (the input gradient's phases, conv_backward.h).
  int64_t pad_bottom = -1, pad_right = -1;

  int64_t pad_h_end() const { return pad_bottom < 0 ? pad_h : pad_bottom; }
  int64_t pad_w_end() const { return pad_right < 0 ? pad_w : pad_right; }
  int64_t out_h() const {
    return (h + pad_h + pad_h_end() - dilation_h * (kh - 1) - 1) / stride_h + 1;
  }
  int64_t out_w() const {
    return (w + pad_w + pad_w_end() - dilation_w * (kw - 1) - 1) / stride_w + 1;
  }
};

/// Weights packed for conv2d_nhwc_f32: B = (KH·KW·C) × OC, row (kh, kw, c), in GEMM panels.
struct PackedConvWeight {
  int64_t oc = 0, kh = 0, kw = 0, c = 0;
  PackedB packed;
};

/// True when conv2d_nhwc_f32 handles these parameters (groups == 1, positive sizes).
bool conv2d_supported(const Conv2dParams& q);

/// Packs OIHW weights (torch's default contiguous layout) for the parameters' filter shape.
PackedConvWeight pack_conv_weight_f32(const float* weight_oihw, const Conv2dParams& q);

/// The same from OHWI weights ([OC][KH][KW][C]: a channels-last weight tensor's memory), which
/// are B's transpose: one transposing pack, no reordering pass first; on up to num_threads
/// OpenMP threads when the weight is large, into `storage` when given (see pack_b_f32).
PackedConvWeight pack_conv_weight_ohwi_f32(const float* weight_ohwi, const Conv2dParams& q,
                                           int num_threads = 1, const PackedStorage& storage = {});

/// The direct method's register tile: up to `pixels` consecutive output pixels of one output row
/// × `panels` adjacent weight panels (2 on AVX-512 where an output row splits into near-full
/// 6-pixel tiles: docs/matrix/convolution.md). 1×1 stride-1 unpadded convolutions run
/// as one GEMM instead. Knob INDUCTOR_CPP_MATRIX_CONV_TILE="pixels[,panels]" (tuning).
struct Conv2dTile {
  int pixels = 0;
  int panels = 1;
};
Conv2dTile conv2d_tile(const Conv2dParams& q, int num_threads);

/// y[N][OH][OW][OC] = epilogue(conv(x[N][H][W][C], w)). Throws std::invalid_argument when
/// !conv2d_supported(q) or the weights do not match.
void conv2d_nhwc_f32(const float* x, const PackedConvWeight& w, float* y, const Conv2dParams& q,
                     int num_threads);

}  // namespace inductor_cpp::matrix
