/// \file
/// Vertical fusion by inlining: pointwise producers and views are substituted into the bodies
/// of the computes that read them, so their values never touch memory.
///
/// A pointwise compute is kept in memory ("realized") when an extern step or the graph output
/// needs it, or when several computes read it and its body is not cheap (recomputing it
/// would cost more than a store and loads), or when one compute loads it at several indices
/// (a pooling backward reads its gradient once per window) and its body with what it carries
/// inlined is not cheap. Reductions are always realized here; grouping
/// them with their readers is fuse_kernels' job. Views are always inlined into generated
/// readers; a view an extern or the graph output needs is produced by an extern step running
/// the ATen view op on its (realized) source, inserted before its first use, so aliasing is
/// exactly eager's. Inlining under a masked load ANDs the mask into the inlined loads (where
/// the mask is off the inlined value is unspecified: readers of masked loads select another).
#pragma once

#include "ir/loop_ir.h"

namespace inductor_cpp::ir {

struct InlineOptions {
  /// A producer read by several computes is still inlined when its body has at most this
  /// many nodes; one loaded at several indices by one compute, when its body with the
  /// producers it carries inlined has at most this many (max_pool2d's backward gathered a
  /// chain of relu backwards and residual adds from the pooled gradient once per window:
  /// 4 windows x 5 loads per pixel, 15 ms a call at 16 threads).
  int64_t max_shared_inline_nodes = 6;
  /// ...and when its body together with the producers it would carry inlined (each counted
  /// once) has at most this many nodes. Without it a small shared body can carry a long chain
  /// of single-use producers into every reader: swin_t's shifted-window mask (nine
  /// slice_scatters, ~500 nodes) was recomputed in each softmax pass and loop copy, and its
  /// five attention kernels took 13 s each to compile (the whole model 74 s; 14.6 s with
  /// this cap). 128 keeps every fusion of resnet18, mobilenet_v3_small, efficientnet_b0,
  /// convnext_tiny, regnet_y_400mf and densenet121 as it was (64 would realize 8 more
  /// mobilenet buffers; same speed within this machine's noise).
  int64_t max_shared_inline_expanded_nodes = 128;
  /// A producer whose readers iterate at least this many times more points than it has is
  /// realized (computed once, then loaded) when its body with what it carries inlined has at
  /// least broadcast_realize_min_nodes nodes or loads through indices: swin_t's window mask
  /// [64, 49, 49] and relative-position bias (a gather from a table), broadcast over batch and
  /// heads into each attention softmax, were recomputed per score (those kernels: 3x eager's
  /// softmax time). Small bodies (batch-norm's per-channel rsqrt(var + eps)) stay inlined, and
  /// so do 0-dim ones (emitted as scalars once per vector step; Adam's bias corrections, whose
  /// step counter a kernel then updates in place).
  int64_t broadcast_realize_factor = 8;
  int64_t broadcast_realize_min_nodes = 16;
  /// A producer with R > 1 readers whose body, with what it carries inlined, reads S buffers of
  /// at least its own size (memory streams) is realized when inlining moves more memory than
  /// realizing: R * S > S + 1 + R. A residual stream (x + a1 + a2 + ...) then stops growing
  /// with depth: inlined, layer k's layer norm read k + 1 tensors, and no two layers' kernels
  /// were alike (GPT-2's forward: 19 distinct kernels of 36). On for the GPU (run_pipeline's
  /// caller sets it); the CPU's fusions were tuned without it.
  bool realize_by_streams = false;
};

LoopProgram inline_producers(const LoopProgram& program, const InlineOptions& options = {});

}  // namespace inductor_cpp::ir
