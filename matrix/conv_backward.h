/// \file conv_backward.h
/// \brief Backward of the NHWC float32 convolution (conv.h) on the same GEMM micro-kernels:
/// the input gradient and the weight (and bias) gradients of y = conv(x, w).
///
/// Input gradient, dx = conv_transpose(dy, w):
///  * stride 1 (padding ≤ dilation·(K−1) in each dimension): a stride-1 forward convolution of
///    dy with the filter flipped in space and transposed in channels (w'[c][o][KH−1−i][KW−1−j] =
///    w[o][c][i][j]), padding dilation·(K−1) − padding — conv2d_nhwc_f32 as it is, direct method;
///  * 1×1, no padding, any stride: the GEMM dy · w ([N·OH·OW, OC] × [OC, C]); at stride > 1 one
///    GEMM per output row writing the strided pixels of its input row in place (ldc = stride·C),
///    the pixels between and the rows between zeroed by the same thread.
///  * other strided filters (and stride 1 with more padding than the filter reaches): by
///    phases — dx's pixels with the same remainders modulo the stride form a stride-1 forward
///    convolution of dy with the taps that reach them (3×3 stride 2: 1×1, 1×2, 2×1, 2×2
///    sub-filters, nine taps in all), dy's rows copied with zero borders, each phase written
///    into its pixels of dx in place (conv.h's output strides), dy read in place with the
///    phase's asymmetric zero border as the convolution's padding (a bordered copy only where a
///    phase skips dy's first rows or columns). Resnet's 3×3 stride-2 layers: 1.01-1.10x oneDNN
///    (dev Xeon, 2 threads, batch 8; docs/matrix/convolution.md).
///
/// Weight gradient, dw[o][(i, j, c)] = Σ_pixels dy[p][o] · x[p shifted by tap (i, j)][c], the
/// OC × (KH·KW·C) product dyᵀ · im2col(x) over all N·OH·OW output pixels, by one of two methods
/// (conv_backward_weight.cpp):
///  * direct (output rows of at least 16 pixels): a register tile of dw (output channels × a
///    filter row's contiguous KW·C columns) batch-reduced by the micro-kernel over the output
///    rows, A = dyᵀ and B = the input row read in place — or, where that tile would be mostly
///    padding lanes (a 3-channel stem's 21-column filter rows), a tile of dwᵀ with the operands'
///    roles swapped, transposed into dw at the end — (rows zero-padded along W in a copy of
///    x when there is horizontal padding; rows in the vertical padding skipped), blocks of
///    output rows sized to L2 with every tile of a thread per block;
///  * im2col chunks (shorter rows): chunks of output pixels copied straight into the GEMM's
///    packed-B layout (im2col of the chunk only) and multiplied by the chunk's dyᵀ, accumulating.
/// Threads split the tiles or columns and the pixels (each pixel group into its own partial dw,
/// summed at the end). The bias gradient is the column sum of dy, in double per thread.
/// Tuning knob: INDUCTOR_CPP_CONV_BWD_WEIGHT=direct|direct-by-oc|direct-by-columns|im2col forces a
/// method and tiling (ctest runs each).
///
/// dw is written OHWI ([OC][KH][KW][C], i.e. an [OC, C, KH, KW] tensor with channels-last
/// strides, what a channels-last model's weight gradient is).
#pragma once

#include <cstdint>

#include "matrix/conv.h"

namespace inductor_cpp::matrix {

/// True when conv2d_backward_input_nhwc_f32 handles q (epilogue ignored): conv2d_supported.
bool conv2d_backward_input_supported(const Conv2dParams& q);

/// True when conv2d_backward_weight_nhwc_f32 handles q: conv2d_supported (groups 1).
bool conv2d_backward_weight_supported(const Conv2dParams& q);

/// dx[N][H][W][C] from dy[N][OH][OW][OC] and the weight laid out OHWI ([OC][KH][KW][C], an
/// [OC, C, KH, KW] tensor with channels-last strides: each tap's flipped copy is then packed
/// from contiguous rows). Throws std::invalid_argument when !conv2d_backward_input_supported(q).
/// `storage` holds the flipped weights packed per call (gemm.h's PackedStorage).
void conv2d_backward_input_nhwc_f32(const float* dy, const float* weight_ohwi, float* dx,
                                    const Conv2dParams& q, int num_threads,
                                    const PackedStorage& storage = {});

/// dw[OC][KH][KW][C] and, when db is not null, db[OC] from dy[N][OH][OW][OC] and x[N][H][W][C].
/// Throws std::invalid_argument when !conv2d_backward_weight_supported(q).
void conv2d_backward_weight_nhwc_f32(const float* dy, const float* x, float* dw, float* db,
                                     const Conv2dParams& q, int num_threads);

}  // namespace inductor_cpp::matrix
