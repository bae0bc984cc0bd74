/// \file
/// CPU emitter, loops of constant extent: every reduction, load and store at each length up
/// to a few vectors and around the unrolled groups, where the tail's lane mask is a
/// compile-time constant (GCC 12 miscompiled such constant vectors; see "Moving vectors" in
/// ic_runtime_vec.h), and the unrolled accumulators' combine order.
#include <algorithm>
#include <cmath>

#include "ir/ir_text.h"
#include "tests/cpp/emit_cpp_test_util.h"

namespace inductor_cpp::codegen::emit_test {
namespace {

const char* const kVariance6 = R"(kernel variance6(%in0: float32 in, %0: float32 out) {
  t0 = accumulator welford_m2 float32
  for y0 in 0..6 vector(16) {
    t0 += load(%in0, [y0])
  }
  %0[0] = div(local(t0, float32), 6.0:float32)
})";

/// Constant-extent loops of every length 1..kMaxReduceLength (reductions) and
/// 1..kMaxPointwiseLength (loads and stores): with a constant extent the tail's lane mask, and
/// so the accumulators' inactive lanes, are compile-time constants. GCC 12 miscompiled such
/// constant vectors when the header moved them as 256/512-bit integers (memcpy, lane-copy
/// loops); see "Moving vectors" in ic_runtime_vec.h.
constexpr int64_t kMaxReduceLength = 20, kMaxPointwiseLength = 40;

/// Constant lengths around multiples of the emitter's unrolled groups of vectors (4 copies of
/// 16 float lanes, or of 8 lanes for argmax/argmin): no remainder, a remainder of full
/// vectors, a tail, both (emit_reduction_loop.cpp).
const std::vector<int64_t> kUnrolledLengths = {31, 32, 33, 63, 64, 65, 80, 129, 200};

std::vector<int64_t> lengths_up_to(int64_t n) {
  std::vector<int64_t> lengths;
  for (int64_t len = 1; len <= n; ++len) lengths.push_back(len);
  return lengths;
}

/// The reductions checked at every constant length, by input and output buffer.
struct TailReduction {
  const char* op;
  char input;   ///< 'f' float32, 'd' float64, 'q' bool
  char output;  ///< 'f' float32, 'd' float64, 'i' int64, 'b' bool
  int slot;     ///< results at %o<output>[slot * lengths + index of the length]
};
const TailReduction kTailReductions[] = {
    {"sum", 'f', 'f', 0},    {"prod", 'f', 'f', 1},       {"max", 'f', 'f', 2},
    {"min", 'f', 'f', 3},    {"welford_m2", 'f', 'f', 4}, {"argmax", 'f', 'i', 0},
    {"argmin", 'f', 'i', 1}, {"any", 'q', 'b', 0},        {"all", 'q', 'b', 1},
    {"sum", 'd', 'd', 0},    {"welford_m2", 'd', 'd', 1}};

const char* tail_dtype(char c) {
  switch (c) {
    case 'f':
      return "float32";
    case 'd':
      return "float64";
    case 'i':
      return "int64";
    default:
      return "bool";
  }
}

/// <name>(%f, %d, %q, %of, %od, %oi, %ob): every kTailReductions entry over the first L
/// inputs for each L in `lengths`; per length, one vector loop of constant extent L per input
/// type and vector width (argmax/argmin get 8 lanes).
std::string constant_reductions_kernel(const std::string& name,
                                       const std::vector<int64_t>& lengths) {
  std::string k = "kernel " + name +
                  "(%f: float32 in, %d: float64 in, %q: bool in, %of: float32 out, "
                  "%od: float64 out, %oi: int64 out, %ob: bool out) {\n";
  const int64_t count = static_cast<int64_t>(lengths.size());
  for (int64_t j = 0; j < count; ++j) {
    const std::string n = std::to_string(lengths[j]);
    auto acc = [&](const TailReduction& r) { return std::string("acc_") + r.op + "_" + r.input; };
    auto indexed = [](const TailReduction& r) { return std::string(r.op).rfind("arg", 0) == 0; };
    for (const char* group : {"fv", "fa", "qv", "dv"}) {  // input type, vector or arg loop
      auto in_group = [&](const TailReduction& r) {
        return r.input == group[0] && indexed(r) == (group[1] == 'a');
      };
      std::string body;
      for (const TailReduction& r : kTailReductions) {
        if (!in_group(r)) continue;
        k += "  " + acc(r) + n + " = accumulator " + r.op + " " + tail_dtype(r.input) + "\n";
        body += "    " + acc(r) + n + " += load(%" + r.input + ", [r0])" +
                (indexed(r) ? " at r0" : "") + "\n";
      }
      k += "  for r0 in 0.." + n + " vector(16) {\n" + body + "  }\n";
      for (const TailReduction& r : kTailReductions) {
        if (!in_group(r)) continue;
        k += std::string("  %o") + r.output + "[" + std::to_string(r.slot * count + j) +
             "] = local(" + acc(r) + n + ", " + tail_dtype(r.output) + ")\n";
      }
    }
  }
  return k + "}\n";
}

/// Where length L's outputs start in tail_pointwise's buffers: one unwritten slot after each.
int64_t tail_offset(int64_t len) {
  return (len - 1) * len / 2 + (len - 1);
}

/// tail_pointwise(%f, %d, %pf, %pc, %pm, %pb, %pi, %pd, %pl): for each length L, loads,
/// masked loads, computed and constant stores (an index pattern, a lane-dependent select)
/// of float32, bool, int8 (16 lanes), float64 and int64 (8 lanes) over [0, L).
std::string tail_pointwise_kernel() {
  std::string k =
      "kernel tail_pointwise(%f: float32 in, %d: float64 in, %pf: float32 out, %pc: float32 out, "
      "%pm: float32 out, %pb: bool out, %pi: int8 out, %pd: float64 out, %pl: int64 out) {\n";
  for (int64_t len = 1; len <= kMaxPointwiseLength; ++len) {
    const std::string n = std::to_string(len), at = std::to_string(tail_offset(len)) + " + x0",
                      half = std::to_string(len / 2);
    k += "  for x0 in 0.." + n + " vector(16) {\n";
    k += "    %pf[" + at + "] = add(load(%f, [x0]), 1.0:float32)\n";
    k += "    %pc[" + at + "] = where(lt(index(x0, int64), " + half +
         ":int64), 1.5:float32, cast(index(x0*3 - 5, int32), float32))\n";
    k += "    %pm[" + at + "] = load(%f, [x0], mask=x0 < " + half + ")\n";
    k += "    %pb[" + at + "] = gt(load(%f, [x0]), 0.0:float32)\n";
    k += "    %pi[" + at + "] = cast(mul(load(%f, [x0]), 10.0:float32), int8)\n";
    k += "  }\n";
    k += "  for x0 in 0.." + n + " vector(8) {\n";
    k += "    %pd[" + at + "] = mul(load(%d, [x0]), 2.0:float64)\n";
    k += "    %pl[" + at + "] = index(x0*7 - 3, int64)\n";
    k += "  }\n";
  }
  return k + "}\n";
}

/// kTailReductions entry `op` over x[0, len), in double.
double tail_reference(const std::string& op, const std::vector<double>& x, int64_t len) {
  double r = op == "prod" || op == "all" ? 1 : 0, mean = 0;
  int64_t best = 0;
  for (int64_t i = 0; i < len; ++i) mean += x[i] / static_cast<double>(len);
  for (int64_t i = 0; i < len; ++i) {
    if (op == "sum") r += x[i];
    if (op == "prod") r *= x[i];
    if (op == "welford_m2") r += (x[i] - mean) * (x[i] - mean);
    if (op == "any") r = r || x[i] != 0;
    if (op == "all") r = r && x[i] != 0;
    if ((op == "max" || op == "argmax") && x[i] > x[best]) best = i;
    if ((op == "min" || op == "argmin") && x[i] < x[best]) best = i;
  }
  if (op == "max" || op == "min") return x[best];
  if (op == "argmax" || op == "argmin") return static_cast<double>(best);
  return r;
}

/// Runs kernel `name` (constant_reductions_kernel over `lengths`) on three input sets
/// (mixed signs; all negative, where a stray identity lane would win max; all positive, where
/// it would win min) with magnitudes up to `scale`, against tail_reference.
void check_constant_reductions(const Target& t, const std::string& name,
                               const std::vector<int64_t>& lengths, float scale) {
  const int64_t n = lengths.back(), count = static_cast<int64_t>(lengths.size());
  const float ranges[3][2] = {
      {-scale, scale}, {-1.5f * scale, -scale / 2}, {scale / 2, 1.5f * scale}};
  for (int set = 0; set < 3; ++set) {
    std::vector<float> f = random_floats(n, ranges[set][0], ranges[set][1], 30 + set);
    std::vector<float> f2 = random_floats(n, ranges[set][0], ranges[set][1], 40 + set);
    std::vector<double> d(n);
    for (int64_t i = 0; i < n; ++i) d[i] = f2[i] + f[i] * 1e-9;  // uses double's precision
    std::vector<uint8_t> q(n, set == 0 ? 1 : 0);                 // all true; all false; random
    if (set == 2) {
      for (int64_t i = 0; i < n; ++i) q[i] = static_cast<uint8_t>(f2[i] > scale);
    }
    std::vector<float> of(5 * count, -777);
    std::vector<double> od(2 * count, -777);
    std::vector<int64_t> oi(2 * count, -777);
    std::vector<uint8_t> ob(2 * count, 7);
    ASSERT_EQ(run(t, name, {}, 1, f, d, q, of, od, oi, ob), 0);
    for (const TailReduction& r : kTailReductions) {
      std::vector<double> x(n);
      for (int64_t i = 0; i < n; ++i) x[i] = r.input == 'f' ? f[i] : r.input == 'd' ? d[i] : q[i];
      for (int64_t j = 0; j < count; ++j) {
        const int64_t len = lengths[j], at = r.slot * count + j;
        const double want = tail_reference(r.op, x, len);
        const std::string what = std::string(cpu_isa_name(t.target.isa)) + " " + name + " " + r.op +
                                 "(" + tail_dtype(r.input) + ") length " + std::to_string(len) +
                                 " input set " + std::to_string(set);
        const double atol = 1e-6 * static_cast<double>(std::max<int64_t>(len, 10));
        if (r.output == 'f') {
          expect_close(std::vector<float>{of[at]}, {want}, 1e-5, atol, what);
        } else if (r.output == 'd') {
          expect_close(std::vector<double>{od[at]}, {want}, 1e-12, 1e-12, what);
        } else if (r.output == 'i') {
          EXPECT_EQ(oi[at], static_cast<int64_t>(want)) << what;
        } else {
          EXPECT_EQ(ob[at], static_cast<uint8_t>(want)) << what;
        }
      }
    }
  }
}

// Regression: a welford_m2 over 6 floats (a tail-only loop of constant extent) gave the
// variance of 8 values at -O3, two inactive lanes counted (GCC 12, see ic_runtime_vec.h).
TEST_F(EmitCppTest, ConstantLengthReductionsMaskTheirTails) {
  std::vector<float> six = {1.5410f, -0.2934f, -2.1788f, 0.5684f, -1.0845f, -1.3986f}, var(1);
  double mean = 0, m2 = 0;
  for (float x : six) mean += x / 6.0;
  for (float x : six) m2 += (x - mean) * (x - mean);
  for (const Target& t : *targets_) {
    ASSERT_EQ(run(t, "variance6", {}, 1, six, var), 0);
    expect_close(var, {m2 / 6}, 1e-6, 0, std::string("variance6 ") + cpu_isa_name(t.target.isa));
  }
  for (const Target& t : *targets_) {
    check_constant_reductions(t, "tail_reductions", lengths_up_to(kMaxReduceLength), 2);
  }
}

TEST_F(EmitCppTest, ConstantLengthReductionsAroundTheUnroll) {
  for (const Target& t : *targets_) {
    check_constant_reductions(t, "unrolled_reductions", kUnrolledLengths, 1.2f);
  }
}

TEST_F(EmitCppTest, ConstantLengthLoadsAndStoresStayInTheirTails) {
  const int64_t n = kMaxPointwiseLength, size = tail_offset(n + 1);
  const std::vector<float> f = random_floats(n, -2, 2, 50);
  std::vector<double> d(n);
  for (int64_t i = 0; i < n; ++i) d[i] = f[n - 1 - i] + 1e-10 * i;
  for (const Target& t : *targets_) {
    std::vector<float> pf(size, -777), pc(size, -777), pm(size, -777);
    std::vector<uint8_t> pb(size, 7);
    std::vector<int8_t> pi(size, 77);
    std::vector<double> pd(size, -777);
    std::vector<int64_t> pl(size, -777);
    ASSERT_EQ(run(t, "tail_pointwise", {}, 1, f, d, pf, pc, pm, pb, pi, pd, pl), 0);
    for (int64_t len = 1; len <= n; ++len) {
      const std::string what =
          std::string(cpu_isa_name(t.target.isa)) + " length " + std::to_string(len) + " x0=";
      const int64_t base = tail_offset(len);
      for (int64_t x0 = 0; x0 < len; ++x0) {
        const int64_t at = base + x0;
        const std::string w = what + std::to_string(x0);
        EXPECT_EQ(pf[at], f[x0] + 1.0f) << "load " << w;
        EXPECT_EQ(pc[at], x0 < len / 2 ? 1.5f : static_cast<float>(x0 * 3 - 5)) << "const " << w;
        EXPECT_EQ(pm[at], x0 < len / 2 ? f[x0] : 0.0f) << "masked load " << w;
        EXPECT_EQ(pb[at], f[x0] > 0 ? 1 : 0) << "bool " << w;
        EXPECT_EQ(pi[at], static_cast<int8_t>(static_cast<int32_t>(f[x0] * 10.0f))) << "int8 " << w;
        EXPECT_EQ(pd[at], d[x0] * 2) << "float64 " << w;
        EXPECT_EQ(pl[at], x0 * 7 - 3) << "int64 index " << w;
      }
      // The slot after each length's outputs is never written.
      const int64_t gap = base + len;
      EXPECT_EQ(pf[gap], -777) << what << "past the end";
      EXPECT_EQ(pc[gap], -777) << what << "past the end";
      EXPECT_EQ(pm[gap], -777) << what << "past the end";
      EXPECT_EQ(pb[gap], 7) << what << "past the end";
      EXPECT_EQ(pi[gap], 77) << what << "past the end";
      EXPECT_EQ(pd[gap], -777) << what << "past the end";
      EXPECT_EQ(pl[gap], -777) << what << "past the end";
    }
  }
}

TEST(EmitCppSourceTest, InnerReductionsUseIndependentAccumulators) {
  const std::vector<ir::Kernel> kernels = {
      ir::parse_kernel(row_reduction("max", "float32", "float32")),
      ir::parse_kernel(constant_reductions_kernel("short", {20}))};
  const std::string source = emit_cpp(kernels, CppTarget{});
  // Four copies, combined copy i with copy i + 2, then copy 0 with copy 1.
  EXPECT_NE(source.find("acc_u3 = ic::maximum(acc_u3, "), std::string::npos) << source;
  const size_t first = source.find("acc = ic::maximum(acc, acc_u2);");
  const size_t second = source.find("acc_u1 = ic::maximum(acc_u1, acc_u3);");
  const size_t last = source.find("acc = ic::maximum(acc, acc_u1);");
  ASSERT_NE(first, std::string::npos) << source;
  EXPECT_LT(first, second);
  EXPECT_LT(second, last);
  // A constant extent shorter than one group stays one accumulator.
  EXPECT_EQ(source.find("acc_max_f20_u1"), std::string::npos) << source;
}

}  // namespace

std::vector<ir::Kernel> constant_length_kernels() {
  return {ir::parse_kernel(kVariance6),
          ir::parse_kernel(
              constant_reductions_kernel("tail_reductions", lengths_up_to(kMaxReduceLength))),
          ir::parse_kernel(constant_reductions_kernel("unrolled_reductions", kUnrolledLengths)),
          ir::parse_kernel(tail_pointwise_kernel())};
}

}  // namespace inductor_cpp::codegen::emit_test
