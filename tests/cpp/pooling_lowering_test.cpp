/// \file
/// Lowering of 2-D pooling (max_pool2d_with_indices, avg_pool2d, _adaptive_avg_pool2d and
/// their backward ops): the IR of a small case, the declines, and what the lowered programs
/// compute (run by the reference IR interpreter) against plain C++ transcriptions of ATen's
/// CPU loops, over padding, dilation, ceil_mode, overlapping windows, ties, NaN and -inf.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ir/ir_text.h"
#include "ir_interpreter.h"
#include "tests/cpp/lowering_test_util.h"

namespace inductor_cpp::inductor {
namespace {

using namespace lowering_test;
namespace interp = ir::interp;

// ---- pooling parameters and ATen's loops, in plain C++ ----

struct Params {
  int64_t kh, kw, sh, sw, ph, pw, dh = 1, dw = 1;
  bool ceil_mode = false;
};

int64_t pooled(int64_t in, int64_t k, int64_t p, int64_t s, int64_t d, bool ceil_mode) {
  const int64_t num = in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  int64_t out = num / s + 1;  // num >= 0 in these tests
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

/// A (planes, H, W) tensor of doubles, row-major.
struct Planes {
  int64_t planes, h, w;
  std::vector<double> v;
  double& at(int64_t c, int64_t y, int64_t x) { return v[(c * h + y) * w + x]; }
  double at(int64_t c, int64_t y, int64_t x) const { return v[(c * h + y) * w + x]; }
};

Planes make_planes(int64_t planes, int64_t h, int64_t w, double fill = 0) {
  return Planes{planes, h, w, std::vector<double>(planes * h * w, fill)};
}

/// ATen's cpu_max_pool: `val > max || isnan(val)`, index starting at the first in-bounds one.
std::pair<Planes, std::vector<int64_t>> max_pool_ref(const Planes& x, const Params& p) {
  const int64_t oh = pooled(x.h, p.kh, p.ph, p.sh, p.dh, p.ceil_mode);
  const int64_t ow = pooled(x.w, p.kw, p.pw, p.sw, p.dw, p.ceil_mode);
  Planes out = make_planes(x.planes, oh, ow);
  std::vector<int64_t> idx;
  for (int64_t c = 0; c < x.planes; ++c)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t z = 0; z < ow; ++z) {
        int64_t h0 = y * p.sh - p.ph, w0 = z * p.sw - p.pw;
        const int64_t h1 = std::min(h0 + (p.kh - 1) * p.dh + 1, x.h);
        const int64_t w1 = std::min(w0 + (p.kw - 1) * p.dw + 1, x.w);
        while (h0 < 0) h0 += p.dh;
        while (w0 < 0) w0 += p.dw;
        int64_t best_i = h0 * x.w + w0;
        double best = -std::numeric_limits<double>::infinity();
        for (int64_t ih = h0; ih < h1; ih += p.dh)
          for (int64_t iw = w0; iw < w1; iw += p.dw) {
            const double v = x.at(c, ih, iw);
            if (v > best || std::isnan(v)) {
              best = v;
              best_i = ih * x.w + iw;
            }
          }
        out.at(c, y, z) = best;
        idx.push_back(best_i);
      }
  return {out, idx};
}

Planes max_pool_backward_ref(const Planes& grad, const std::vector<int64_t>& idx, int64_t h,
                             int64_t w) {
  Planes gi = make_planes(grad.planes, h, w);
  for (int64_t c = 0; c < grad.planes; ++c)
    for (int64_t k = 0; k < grad.h * grad.w; ++k)
      gi.v[c * h * w + idx[c * grad.h * grad.w + k]] += grad.v[c * grad.h * grad.w + k];
  return gi;
}

/// ATen's avg_pool2d window and divisor.
struct AvgWindow {
  int64_t h0, h1, w0, w1, divisor;
};
AvgWindow avg_window(int64_t y, int64_t z, int64_t H, int64_t W, const Params& p, bool include_pad,
                     int64_t divisor_override) {
  int64_t h0 = y * p.sh - p.ph, w0 = z * p.sw - p.pw;
  int64_t h1 = std::min(h0 + p.kh, H + p.ph), w1 = std::min(w0 + p.kw, W + p.pw);
  const int64_t pool = (h1 - h0) * (w1 - w0);
  h0 = std::max<int64_t>(h0, 0);
  w0 = std::max<int64_t>(w0, 0);
  h1 = std::min(h1, H);
  w1 = std::min(w1, W);
  const int64_t divisor = divisor_override ? divisor_override
                          : include_pad    ? pool
                                           : (h1 - h0) * (w1 - w0);
  return {h0, h1, w0, w1, divisor};
}

Planes avg_pool_ref(const Planes& x, const Params& p, bool include_pad, int64_t override_) {
  const int64_t oh = pooled(x.h, p.kh, p.ph, p.sh, 1, p.ceil_mode);
  const int64_t ow = pooled(x.w, p.kw, p.pw, p.sw, 1, p.ceil_mode);
  Planes out = make_planes(x.planes, oh, ow);
  for (int64_t c = 0; c < x.planes; ++c)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t z = 0; z < ow; ++z) {
        const AvgWindow a = avg_window(y, z, x.h, x.w, p, include_pad, override_);
        double sum = 0;
        for (int64_t ih = a.h0; ih < a.h1; ++ih)
          for (int64_t iw = a.w0; iw < a.w1; ++iw) sum += x.at(c, ih, iw);
        out.at(c, y, z) = sum / a.divisor;
      }
  return out;
}

Planes avg_pool_backward_ref(const Planes& grad, int64_t H, int64_t W, const Params& p,
                             bool include_pad, int64_t override_) {
  Planes gi = make_planes(grad.planes, H, W);
  for (int64_t c = 0; c < grad.planes; ++c)
    for (int64_t y = 0; y < grad.h; ++y)
      for (int64_t z = 0; z < grad.w; ++z) {
        const AvgWindow a = avg_window(y, z, H, W, p, include_pad, override_);
        const double delta = grad.at(c, y, z) / a.divisor;
        for (int64_t ih = a.h0; ih < a.h1; ++ih)
          for (int64_t iw = a.w0; iw < a.w1; ++iw) gi.at(c, ih, iw) += delta;
      }
  return gi;
}

int64_t adaptive_start(int64_t o, int64_t out, int64_t in) {
  return o * in / out;
}
int64_t adaptive_end(int64_t o, int64_t out, int64_t in) {
  return ((o + 1) * in + out - 1) / out;
}

Planes adaptive_ref(const Planes& x, int64_t oh, int64_t ow) {
  Planes out = make_planes(x.planes, oh, ow);
  for (int64_t c = 0; c < x.planes; ++c)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t z = 0; z < ow; ++z) {
        const int64_t h0 = adaptive_start(y, oh, x.h), h1 = adaptive_end(y, oh, x.h);
        const int64_t w0 = adaptive_start(z, ow, x.w), w1 = adaptive_end(z, ow, x.w);
        double sum = 0;
        for (int64_t ih = h0; ih < h1; ++ih)
          for (int64_t iw = w0; iw < w1; ++iw) sum += x.at(c, ih, iw);
        out.at(c, y, z) = sum / (h1 - h0) / (w1 - w0);
      }
  return out;
}

Planes adaptive_backward_ref(const Planes& grad, int64_t H, int64_t W) {
  Planes gi = make_planes(grad.planes, H, W);
  for (int64_t c = 0; c < grad.planes; ++c)
    for (int64_t y = 0; y < grad.h; ++y)
      for (int64_t z = 0; z < grad.w; ++z) {
        const int64_t h0 = adaptive_start(y, grad.h, H), h1 = adaptive_end(y, grad.h, H);
        const int64_t w0 = adaptive_start(z, grad.w, W), w1 = adaptive_end(z, grad.w, W);
        const double delta = grad.at(c, y, z) / (h1 - h0) / (w1 - w0);
        for (int64_t ih = h0; ih < h1; ++ih)
          for (int64_t iw = w0; iw < w1; ++iw) gi.at(c, ih, iw) += delta;
      }
  return gi;
}

// ---- running lowered programs ----

/// Values with ties (small integers), plus NaN and -inf at a few positions when `specials`.
Planes test_values(int64_t planes, int64_t h, int64_t w, uint64_t seed, bool specials) {
  Planes x = make_planes(planes, h, w);
  uint64_t s = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  for (double& v : x.v) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    v = static_cast<double>(static_cast<int64_t>((s >> 33) % 7) - 3);
  }
  if (specials) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    x.v[1] = nan;
    x.v[2] = nan;  // two NaNs in one window: the last one is the index
    x.v[x.v.size() / 2] = nan;
    // a plane corner of -inf: windows over it that also reach padding
    x.at(planes - 1, 0, 0) = -inf;
    x.at(planes - 1, 0, 1) = -inf;
    x.at(planes - 1, 1, 0) = -inf;
    x.at(planes - 1, 1, 1) = -inf;
  }
  return x;
}

/// Storage of a (N=1, C, H, W) input with `strides` from logical planes.
interp::Elements storage_of(const Planes& x, const std::vector<int64_t>& strides) {
  interp::Elements e(ir::DType::Float64, x.v.size());
  for (int64_t c = 0; c < x.planes; ++c)
    for (int64_t y = 0; y < x.h; ++y)
      for (int64_t z = 0; z < x.w; ++z)
        e.set(c * strides[1] + y * strides[2] + z * strides[3], interp::Scalar{x.at(c, y, z), 0});
  return e;
}

void expect_floats(const std::optional<interp::Tensor>& got, const Planes& want,
                   const std::string& what) {
  ASSERT_TRUE(got.has_value()) << what;
  ASSERT_EQ(got->elements.floats.size(), want.v.size()) << what;
  for (size_t k = 0; k < want.v.size(); ++k) {
    const double g = got->elements.floats[k], w = want.v[k];
    if (std::isnan(w) || std::isinf(w)) {
      EXPECT_TRUE(std::isnan(w) ? std::isnan(g) : g == w) << what << " element " << k << ": " << g;
      continue;
    }
    EXPECT_NEAR(g, w, 1e-9 * std::max(1.0, std::fabs(w))) << what << " element " << k;
  }
}

std::string name_of(const Params& p) {
  return "k" + std::to_string(p.kh) + "x" + std::to_string(p.kw) + " s" + std::to_string(p.sh) +
         "x" + std::to_string(p.sw) + " p" + std::to_string(p.ph) + "x" + std::to_string(p.pw) +
         " d" + std::to_string(p.dh) + "x" + std::to_string(p.dw) + (p.ceil_mode ? " ceil" : "");
}

const std::vector<Params> kWindows = {
    {2, 2, 2, 2, 0, 0},               // plain, non-overlapping
    {3, 3, 2, 2, 1, 1, 1, 1, true},   // overlapping, padding, ceil_mode
    {3, 2, 1, 2, 1, 0},               // stride 1 rows, uneven
    {2, 3, 3, 1, 1, 1, 2, 2, false},  // dilation, stride > kernel rows
    {3, 3, 2, 3, 1, 1, 2, 1, true},   // dilation with ceil_mode
    {4, 4, 3, 3, 2, 2, 1, 1, true},   // ceil_mode window past the input
    {6, 5, 2, 3, 3, 2, 1, 1, true},   // more than 25 positions: reductions
    {6, 6, 1, 1, 3, 3},               // 36 windows per input position: a backward reduction
};

TEST(PoolingLowering, MaxPoolForwardAndBackwardMatchAtenLoops) {
  const int64_t C = 3, H = 7, W = 8;
  for (bool channels_last : {false, true}) {
    for (const Params& p : kWindows) {
      const std::string what = name_of(p) + (channels_last ? " channels_last" : "");
      const int64_t oh = pooled(H, p.kh, p.ph, p.sh, p.dh, p.ceil_mode);
      const int64_t ow = pooled(W, p.kw, p.pw, p.sw, p.dw, p.ceil_mode);
      const std::vector<int64_t> in_strides =
          channels_last ? std::vector<int64_t>{H * W * C, 1, W * C, C} : contiguous({1, C, H, W});
      const json args = {in(0),
                         ints({p.kh, p.kw}),
                         ints({p.sh, p.sw}),
                         ints({p.ph, p.pw}),
                         ints({p.dh, p.dw}),
                         b(p.ceil_mode)};
      json back_args = {in(1),
                        in(0),
                        ints({p.kh, p.kw}),
                        ints({p.sh, p.sw}),
                        ints({p.ph, p.pw}),
                        ints({p.dh, p.dw}),
                        b(p.ceil_mode),
                        val(0, 1)};
      const auto g =
          graph({meta({1, C, H, W}, "float64", in_strides), meta({1, C, oh, ow}, "float64")},
                {node("aten::max_pool2d_with_indices", args,
                      {meta({1, C, oh, ow}, "float64"), meta({1, C, oh, ow}, "int64")}),
                 node("aten::max_pool2d_with_indices_backward", back_args,
                      {meta({1, C, H, W}, "float64")})},
                json::array({val(0, 0), val(0, 1), val(1)}));
      const LoweredGraph l = lower_all_generated(g);
      const Planes x = test_values(C, H, W, 7, /*specials=*/true);
      Planes dy = test_values(C, oh, ow, 11, false);
      for (double& v : dy.v) v += 0.25;
      interp::BufferStorage inputs;
      inputs["%in0"] = storage_of(x, in_strides);
      inputs["%in1"] = storage_of(dy, contiguous({1, C, oh, ow}));
      const interp::Outputs outs = interp::run_loop_program(l.program, inputs);
      const auto [want, want_idx] = max_pool_ref(x, p);
      expect_floats(outs[0], want, what + " values");
      ASSERT_TRUE(outs[1].has_value());
      EXPECT_EQ(outs[1]->elements.ints, want_idx) << what;
      expect_floats(outs[2], max_pool_backward_ref(dy, want_idx, H, W), what + " backward");
    }
  }
}

TEST(PoolingLowering, AvgPoolForwardAndBackwardMatchAtenLoops) {
  const int64_t C = 2, H = 7, W = 6;
  for (const Params& p : kWindows) {
    if (p.dh != 1 || p.dw != 1) continue;
    for (bool include_pad : {true, false})
      for (int64_t divisor : {0, 5}) {
        const std::string what =
            name_of(p) + (include_pad ? " include_pad" : "") + (divisor ? " divisor 5" : "");
        const int64_t oh = pooled(H, p.kh, p.ph, p.sh, 1, p.ceil_mode);
        const int64_t ow = pooled(W, p.kw, p.pw, p.sw, 1, p.ceil_mode);
        json common = {ints({p.kh, p.kw}), ints({p.sh, p.sw}),
                       ints({p.ph, p.pw}), b(p.ceil_mode),
                       b(include_pad),     divisor ? i(divisor) : json(nullptr)};
        json fwd = {in(0)}, bwd = {in(1), in(0)};
        for (const json& a : common) {
          fwd.push_back(a);
          bwd.push_back(a);
        }
        const auto g =
            graph({meta({1, C, H, W}, "float64"), meta({1, C, oh, ow}, "float64")},
                  {node("aten::avg_pool2d", fwd, {meta({1, C, oh, ow}, "float64")}),
                   node("aten::avg_pool2d_backward", bwd, {meta({1, C, H, W}, "float64")})},
                  json::array({val(0), val(1)}));
        const LoweredGraph l = lower_all_generated(g);
        const Planes x = test_values(C, H, W, 3, false);
        const Planes dy = test_values(C, oh, ow, 5, false);
        interp::BufferStorage inputs;
        inputs["%in0"] = storage_of(x, contiguous({1, C, H, W}));
        inputs["%in1"] = storage_of(dy, contiguous({1, C, oh, ow}));
        const interp::Outputs outs = interp::run_loop_program(l.program, inputs);
        expect_floats(outs[0], avg_pool_ref(x, p, include_pad, divisor), what);
        expect_floats(outs[1], avg_pool_backward_ref(dy, H, W, p, include_pad, divisor),
                      what + " backward");
      }
  }
}

TEST(PoolingLowering, AdaptiveAvgPoolForwardAndBackwardMatchAtenLoops) {
  const int64_t C = 2, H = 10, W = 7;
  for (const auto& [oh, ow] : std::vector<std::pair<int64_t, int64_t>>{
           {5, 7}, {3, 4}, {4, 3}, {1, 2}, {7, 5}, {10, 1}, {40, 30}}) {
    const std::string what = std::to_string(oh) + "x" + std::to_string(ow);
    const auto g = graph({meta({1, C, H, W}, "float64"), meta({1, C, oh, ow}, "float64")},
                         {node("aten::_adaptive_avg_pool2d", {in(0), ints({oh, ow})},
                               {meta({1, C, oh, ow}, "float64")}),
                          node("aten::_adaptive_avg_pool2d_backward", {in(1), in(0)},
                               {meta({1, C, H, W}, "float64")})},
                         json::array({val(0), val(1)}));
    const LoweredGraph l = lower_all_generated(g);
    const Planes x = test_values(C, H, W, 9, false);
    const Planes dy = test_values(C, oh, ow, 13, false);
    interp::BufferStorage inputs;
    inputs["%in0"] = storage_of(x, contiguous({1, C, H, W}));
    inputs["%in1"] = storage_of(dy, contiguous({1, C, oh, ow}));
    const interp::Outputs outs = interp::run_loop_program(l.program, inputs);
    expect_floats(outs[0], adaptive_ref(x, oh, ow), what);
    expect_floats(outs[1], adaptive_backward_ref(dy, H, W), what + " backward");
  }
}

TEST(PoolingLowering, SmallWindowsUnrollIntoPointwiseComputes) {
  const auto g = graph({meta({1, 3, 4})},
                       {node("aten::max_pool2d_with_indices", {in(0), ints({1, 2})},
                             {meta({1, 3, 2}), meta({1, 3, 2}, "int64")})},
                       json::array({val(0, 0), val(0, 1)}));
  const LoweredGraph l = lower_all_generated(g);
  const auto types = ir::buffer_types(l.program);
  EXPECT_FALSE(l.program.computes.at("%0").is_reduction());
  EXPECT_EQ(ir::to_string(l.program.computes.at("%0").body, types),
            "maximum(load(%in0, [0, i1, i2*2]), load(%in0, [0, i1, i2*2 + 1]))");
  // ATen's loop: take = x > best || isnan(x), from -inf and the first position.
  EXPECT_EQ(ir::to_string(l.program.computes.at("%0.1").body, types),
            "where(logical_or(gt(load(%in0, [0, i1, i2*2 + 1]), where(logical_or(gt(load(%in0, "
            "[0, i1, i2*2]), -inf:float32), isnan(load(%in0, [0, i1, i2*2]))), load(%in0, [0, i1, "
            "i2*2]), -inf:float32)), isnan(load(%in0, [0, i1, i2*2 + 1]))), index(i1*4 + i2*2 + 1, "
            "int64), index(i1*4 + i2*2, int64))");
}

TEST(PoolingLowering, LargeWindowsAreMaskedWindowReductions) {
  const auto g =
      graph({meta({2, 7, 7})},
            {node("aten::max_pool2d_with_indices", {in(0), ints({6}), ints({}), ints({1})},
                  {meta({2, 1, 1}), meta({2, 1, 1}, "int64")})},
            json::array({val(0, 0), val(0, 1)}));
  const LoweredGraph l = lower_all_generated(g);
  const auto types = ir::buffer_types(l.program);
  const ir::Compute& values = l.program.computes.at("%0");
  EXPECT_EQ(values.reduce_op, ir::ReduceOp::max);
  EXPECT_EQ(ir::to_string(values.body, types),
            "where(ne(index((0 <= r0 - 1)*(0 <= r1 - 1), int64), 0:int64), load(%in0, [i0, r0 - "
            "1, r1 - 1], mask=(0 <= r0 - 1)*(0 <= r1 - 1)), -inf:float32)");
  EXPECT_EQ(l.program.computes.at("%0.argmax").reduce_op, ir::ReduceOp::argmax);
  EXPECT_EQ(l.program.computes.at("%0.last_nan").reduce_op, ir::ReduceOp::max);
  EXPECT_FALSE(l.program.computes.at("%0.1").is_reduction());
}

TEST(PoolingLowering, IntegerMaxPoolPadsWithTheLowestValueAndSkipsNaNs) {
  const auto g =
      graph({meta({1, 4, 4}, "int32")},
            {node("aten::max_pool2d_with_indices", {in(0), ints({3}), ints({2}), ints({1})},
                  {meta({1, 2, 2}, "int32"), meta({1, 2, 2}, "int64")})},
            json::array({val(0, 0), val(0, 1)}));
  const LoweredGraph l = lower_all_generated(g);
  const std::string body =
      ir::to_string(l.program.computes.at("%0").body, ir::buffer_types(l.program));
  EXPECT_NE(body.find("-2147483648:int32"), std::string::npos) << body;
  EXPECT_EQ(l.program.computes.count("%0.last_nan"), 0u);
}

TEST(PoolingLowering, DeclinesWhatAtenRejectsOrWeCannotExpress) {
  const auto max_pool = [](json input, json kernel, json out_meta) {
    return graph({input},
                 {node("aten::max_pool2d_with_indices", {in(0), kernel}, {out_meta, out_meta})},
                 json::array({val(0, 0)}));
  };
  EXPECT_EQ(reason_of(max_pool(meta({2, 2}), ints({1}), meta({2, 2}))), "pooling of a 2-D input");
  EXPECT_EQ(reason_of(max_pool(meta({1, 4, 4}, "bool"), ints({2}), meta({1, 2, 2}, "bool"))),
            "max_pool2d of bool (ATen has no kernel)");
  EXPECT_EQ(reason_of(max_pool(meta({1, 4, 4}), ints({0}), meta({1, 2, 2}))),
            "invalid pooling parameters (ATen raises)");
  EXPECT_EQ(reason_of(max_pool(meta({1, 4, 4}), ints({5}), meta({1, 1, 1}))),
            "pooling output would be empty (ATen raises)");
  json sym = meta({1, 4, 4});
  sym["sizes"] = {1, "s0", 4};
  sym["strides"] = {json("4*s0"), 4, 1};
  EXPECT_EQ(reason_of(max_pool(sym, ints({2}), meta({1, 2, 2}))),
            "symbolic sizes not generated yet");
  EXPECT_EQ(
      reason_of(graph({meta({1, 4, 4}, "int32")},
                      {node("aten::avg_pool2d", {in(0), ints({2})}, {meta({1, 2, 2}, "int32")})},
                      json::array({val(0)}))),
      "avg_pool2d of int32 (ATen has no kernel)");
  EXPECT_EQ(reason_of(graph({meta({1, 4, 4})},
                            {node("aten::avg_pool2d",
                                  {in(0), ints({2}), ints({}), ints({0}), b(false), b(true), i(0)},
                                  {meta({1, 2, 2})})},
                            json::array({val(0)}))),
            "divisor_override 0 (ATen raises)");
  EXPECT_EQ(reason_of(graph(
                {meta({1, 4, 4})},
                {node("aten::_adaptive_avg_pool2d", {in(0), ints({2, 2})}, {meta({1, 3, 3})})},
                json::array({val(0)}))),
            "adaptive_avg_pool2d gives shape [1, 2, 2] but the graph says [1, 3, 3]");
}

}  // namespace
}  // namespace inductor_cpp::inductor
