/// \file
/// CPU emitter: kernels written as IR text, emitted, compiled with the system compiler,
/// loaded and run on buffers from std::vector, against references computed here.
///
/// All kernels go into one translation unit per target (AVX-512, AVX2, scalar), compiled once
/// for the whole suite (in parallel), so the suite costs three compiles.
#include <gtest/gtest.h>
#include <immintrin.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <thread>

#include "codegen/cpu/emit_cpp.h"
#include "ir/ir_text.h"
#include "runtime/cpp_compiler.h"
#include "runtime/kernel_library.h"

namespace inductor_cpp::codegen {
namespace {

using runtime::KernelLibrary;

const char* const kKernels[] = {
    R"(kernel pw_f32(%a: float32 in, %b: float32 in, %add: float32 out, %exp: float32 out, %tanh: float32 out, %erf: float32 out, %sig: float32 out, %misc: float32 out) symbols(s0) {
  for x0 in 0..s0 parallel vector(16) {
    %add[x0] = add(load(%a, [x0]), load(%b, [x0]))
    %exp[x0] = exp(load(%a, [x0]))
    %tanh[x0] = tanh(load(%a, [x0]))
    %erf[x0] = erf(load(%a, [x0]))
    %sig[x0] = sigmoid(load(%a, [x0]))
    %misc[x0] = where(gt(load(%a, [x0]), 0.0:float32), maximum(load(%a, [x0]), load(%b, [x0])), floordiv(load(%a, [x0]), load(%b, [x0])))
  }
})",
    R"(kernel pw_f64(%a: float64 in, %exp: float64 out, %log1p: float64 out, %sqrt: float64 out, %round: float64 out, %iota: float64 out) symbols(s0) {
  for x0 in 0..s0 vector(8) {
    %exp[x0] = exp(load(%a, [x0]))
    %log1p[x0] = log1p(abs(load(%a, [x0])))
    %sqrt[x0] = sqrt(abs(load(%a, [x0])))
    %round[x0] = round(mul(load(%a, [x0]), 2.0:float64))
    %iota[x0] = cast(index(x0*3 - 5, int64), float64)
  }
})",
    R"(kernel int_ops(%a: int64 in, %b: int64 in, %fd: int64 out, %rem: int64 out, %td: int64 out, %fm: int64 out) symbols(s0) {
  for x0 in 0..s0 vector(16) {
    %fd[x0] = floordiv(load(%a, [x0]), load(%b, [x0]))
    %rem[x0] = remainder(load(%a, [x0]), load(%b, [x0]))
    %td[x0] = truncdiv(load(%a, [x0]), load(%b, [x0]))
    %fm[x0] = fmod(load(%a, [x0]), load(%b, [x0]))
  }
})",
    R"(kernel div_by_row(%a: float32 in, %s: float32 in, %o: float32 out, %h: bfloat16 in, %ho: bfloat16 out) symbols(s0, s1) {
  for x0 in 0..s1 parallel {
    for x1 in 0..s0 vector(16) {
      %o[x0*s0 + x1] = div(load(%a, [x0*s0 + x1]), load(%s, [x0]))
      %ho[x0*s0 + x1] = cast(div(cast(load(%h, [x0*s0 + x1]), float32), load(%s, [x0])), bfloat16)
    }
  }
})",
    R"(kernel exp_f32(%a: float32 in, %e: float32 out) symbols(s0) {
  for x0 in 0..s0 parallel vector(16) {
    %e[x0] = exp(load(%a, [x0]))
  }
})",
    R"(kernel erf_f32(%a: float32 in, %e: float32 out) symbols(s0) {
  for x0 in 0..s0 parallel vector(16) {
    %e[x0] = erf(load(%a, [x0]))
  }
})",
    R"(kernel tanh_f32(%a: float32 in, %e: float32 out) symbols(s0) {
  for x0 in 0..s0 parallel vector(16) {
    %e[x0] = tanh(load(%a, [x0]))
  }
})",
    R"(kernel small_ints(%a: int8 in, %b: int8 in, %o: int8 out, %l: bool out) symbols(s0) {
  for x0 in 0..s0 vector(16) {
    %o[x0] = add(load(%a, [x0]), load(%b, [x0]))
    %l[x0] = logical_and(gt(load(%a, [x0]), 0:int8), logical_not(eq(load(%b, [x0]), 0:int8)))
  }
})",
    R"(kernel casts(%f: float32 in, %hin: float16 in, %h: float16 out, %hf: float32 out, %bf: bfloat16 out, %bff: float32 out, %i32: int32 out, %u8: uint8 out, %b: bool out, %bfl: float32 out, %h2: float16 out) symbols(s0) {
  for x0 in 0..s0 vector(16) {
    %h[x0] = cast(load(%f, [x0]), float16)
    %hf[x0] = cast(cast(load(%f, [x0]), float16), float32)
    %bf[x0] = cast(load(%f, [x0]), bfloat16)
    %bff[x0] = cast(cast(load(%f, [x0]), bfloat16), float32)
    %i32[x0] = cast(load(%f, [x0]), int32)
    %u8[x0] = cast(load(%f, [x0]), uint8)
    %b[x0] = cast(load(%f, [x0]), bool)
    %bfl[x0] = cast(cast(load(%f, [x0]), bool), float32)
    %h2[x0] = cast(mul(cast(load(%hin, [x0]), float32), 3.0:float32), float16)
  }
})",
    R"(kernel pad(%a: float32 in, %o: float32 out) symbols(s0) {
  for x0 in 0..s0 + 4 vector(16) {
    %o[x0] = add(load(%a, [x0 - 2], mask=(2 <= x0)*(x0 < s0 + 2)), 1.0:float32)
  }
})",
    R"(kernel gather(%src: float32 in, %idx: int64 in, %o: float32 out) symbols(s0, s1) {
  for x0 in 0..s0 vector(16) {
    %o[x0] = load(%src, [%ind0], indirect=[load(%idx, [x0])], bounds=[s1])
  }
})",
    R"(kernel embed(%w: float32 in, %idx: int32 in, %o: float32 out) symbols(s0, s1) {
  for x0 in 0..s0 parallel {
    for x1 in 0..8 vector(16) {
      %o[x0*8 + x1] = load(%w, [%ind0*8 + x1], indirect=[load(%idx, [x0])], bounds=[s1])
    }
  }
})",
    R"(kernel transpose(%a: float32 in, %o: float32 out, %o2: float32 out) symbols(s0) {
  for x1 in 0..37 parallel {
    for x0 in 0..29 vector(16) {
      %o[x0*37 + x1] = load(%a, [x0 + x1*29])
      %o2[x1*29 + x0] = load(%a, [x0*s0 + x1])
    }
  }
})",
    // Loads through x1 // 2 and x1 // 4: each element repeated over lanes (ic::load_repeat),
    // with a tail (37 = 2 * 16 + 5).
    R"(kernel repeat_loads(%a: float32 in, %i: int64 in, %o: float32 out, %o2: int64 out) {
  for x0 in 0..7 parallel {
    for x1 in 0..37 vector(16) {
      %o[x0*37 + x1] = load(%a, [x0*19 + x1 // 2])
      %o2[x0*37 + x1] = load(%i, [x0*10 + x1 // 4])
    }
  }
})",
    R"(kernel outer_sum(%in0: float32 in, %1: float32 out, %2: int64 out, %3: float32 out) symbols(s0, s1) {
  for x0_blk in 0..(s0 + 63) // 64 parallel {
    for x0_in in 0..min(x0_blk*-64 + s0, 64) vector(16) {
      t0 = accumulator sum float32
      t1 = accumulator argmax float32
      t2 = accumulator welford_m2 float32
      for y0 in 0..s1 {
        t0 += load(%in0, [x0_blk*64 + x0_in + y0*s0])
        t1 += load(%in0, [x0_blk*64 + x0_in + y0*s0]) at y0
        t2 += load(%in0, [x0_blk*64 + x0_in + y0*s0])
      }
      %1[x0_blk*64 + x0_in] = local(t0, float32)
      %2[x0_blk*64 + x0_in] = local(t1, int64)
      %3[x0_blk*64 + x0_in] = local(t2, float32)
    }
  }
})",
    R"(kernel layernorm(%in0: float32 in, %3: float32 out, %4: float32 out) {
  for x0 in 0..32 parallel {
    t0 = accumulator sum float32
    t1 = accumulator welford_m2 float32
    for y0 in 0..500 vector(16) {
      t0 += load(%in0, [x0*500 + y0])
      t1 += load(%in0, [x0*500 + y0])
    }
    let t2 = rsqrt(add(div(local(t1, float32), 500.0:float32), 1e-05:float32))
    %3[x0] = local(t2, float32)
    for y0 in 0..500 vector(16) {
      let t3 = mul(sub(load(%in0, [x0*500 + y0]), div(local(t0, float32), 500.0:float32)), local(t2, float32))
      %4[x0*500 + y0] = local(t3, float32)
    }
  }
})",
    R"(kernel mixed(%a: float32 in, %idx: int32 in, %sum: float32 out, %last: float32 out, %rows: float32 out, %nonaffine: float32 out, %iota: float32 out) symbols(s0) {
  acc = accumulator sum float32
  for r0 in 0..s0 vector(16) {
    acc += load(%a, [r0])
  }
  for r1 in 0..3 {
    acc += load(%a, [r1])
  }
  %sum[0] = local(acc, float32)
  for x0 in 0..s0 vector(16) {
    %last[0] = load(%a, [x0])
  }
  for x1 in 0..3 parallel(chunk=2) {
    for x0 in 0..s0 vector(16) {
      let t0 = where(lt(index(x1, int32), 2:int32), load(%a, [x0], mask=x1 < 1), 7.0:float32)
      %rows[x1*s0 + x0] = local(t0, float32)
    }
  }
  for x0 in 0..s0 vector(16) {
    %nonaffine[x0] = add(load(%a, [(x0 - 5) // 3 + 2], mask=2 <= x0), load(%a, [x0 % 5]))
    %iota[x0] = cast(index(x0*2 - 7, int32), float32)
    %last[1] = load(%a, [%ind0], indirect=[load(%idx, [x0])], bounds=[s0])
  }
})",
    R"(kernel softmax_rows(%in0: float32 in, %o: float32 out, %e: float32 out) {
  for x0 in 0..3 parallel {
    t0 = accumulator max float32
    for y0 in 0..100 vector(16) {
      t0 += load(%in0, [x0*100 + y0])
    }
    t1 = accumulator sum float32
    for y0 in 0..100 vector(16) {
      t1 += exp(sub(load(%in0, [x0*100 + y0]), local(t0, float32)))
    }
    for y0 in 0..100 vector(16) {
      let t2 = div(exp(sub(load(%in0, [x0*100 + y0]), local(t0, float32))), local(t1, float32))
      %o[x0*100 + y0] = local(t2, float32)
    }
    for y0 in 0..100 vector(16) {
      %e[x0*100 + y0] = exp(sub(load(%in0, [x0*100 + y0]), local(t0, float32)))
    }
  }
})",
    R"(kernel keep_invalidated(%a: float32 out, %b: float32 in, %s: float32 out, %o1: float32 out, %o2: float32 out) {
  t0 = accumulator sum float32
  for y0 in 0..40 vector(16) {
    t0 += load(%b, [y0])
  }
  t1 = accumulator sum float32
  for y0 in 0..40 vector(16) {
    t1 += exp(sub(load(%a, [y0]), local(t0, float32)))
  }
  %s[0] = local(t1, float32)
  for y0 in 0..40 vector(16) {
    t0 += load(%b, [y0])
  }
  for y0 in 0..40 vector(16) {
    %o1[y0] = exp(sub(load(%a, [y0]), local(t0, float32)))
  }
  t2 = accumulator sum float32
  for y0 in 0..40 vector(16) {
    t2 += exp(load(%a, [y0]))
  }
  %s[1] = local(t2, float32)
  for y0 in 0..40 vector(16) {
    %a[y0] = mul(load(%b, [y0]), 2.0:float32)
  }
  for y0 in 0..40 vector(16) {
    %o2[y0] = exp(load(%a, [y0]))
  }
})",
    R"(kernel variance6(%in0: float32 in, %0: float32 out) {
  t0 = accumulator welford_m2 float32
  for y0 in 0..6 vector(16) {
    t0 += load(%in0, [y0])
  }
  %0[0] = div(local(t0, float32), 6.0:float32)
})",
    // torch.cat of [10, 5] and [5, 5] on dim 0, and of [1, 2, 3] and [1, 2, 3] on dim -2, as
    // scheduled: rows of a masked copy.
    R"(kernel cat_rows_small(%a: float32 in, %b: float32 in, %o: float32 out) {
  for x0 in 0..4 {
    for x1 in 0..3 vector(16) {
      %o[x0*3 + x1] = where(ne(index(x0 < 2, int64), 0:int64), load(%a, [x0*3 + x1], mask=x0 < 2), load(%b, [x0*3 + x1 - 6], mask=2 <= x0))
    }
  }
})",
    R"(kernel cat_rows(%a: float32 in, %b: float32 in, %o: float32 out) {
  for x0 in 0..15 {
    for x1 in 0..5 vector(16) {
      %o[x0*5 + x1] = where(ne(index(x0 < 10, int64), 0:int64), load(%a, [x0*5 + x1], mask=x0 < 10), load(%b, [x0*5 + x1 - 50], mask=10 <= x0))
    }
  }
})",
    R"(kernel affine_cmp(%lt: bool out, %le: bool out, %gt: bool out, %ge: bool out, %eq: bool out, %ne: bool out, %rlt: bool out, %rge: bool out, %cat: float32 out) symbols(s0) {
  for x0 in 0..40 vector(16) {
    %lt[x0] = lt(index(x0*3 - 5, int64), index(s0, int64))
    %le[x0] = le(index(x0*3 - 5, int64), index(s0, int64))
    %gt[x0] = gt(index(x0*3 - 5, int64), index(s0, int64))
    %ge[x0] = ge(index(x0*3 - 5, int64), index(s0, int64))
    %eq[x0] = eq(index(x0*3 - 5, int64), index(s0, int64))
    %ne[x0] = ne(index(x0*3 - 5, int64), index(s0, int64))
    %rlt[x0] = lt(index(s0, int64), index(x0*-2 + 30, int64))
    %rge[x0] = ge(index(s0, int64), index(x0*-2 + 30, int64))
    %cat[x0] = where(lt(index(x0, int64), 7:int64), 1.0:float32, 2.0:float32)
  }
})",
};

/// Row reductions: for each op, `red_<op>` reduces rows of s1 elements.
std::string row_reduction(const std::string& op, const std::string& in_type,
                          const std::string& out_type) {
  const bool indexed = op == "argmax" || op == "argmin";
  return "kernel red_" + op + "(%a: " + in_type + " in, %o: " + out_type +
         " out) symbols(s0, s1) {\n  for x0 in 0..s0 parallel {\n    acc = accumulator " + op +
         " " + in_type + "\n    for r0 in 0..s1 vector(16) {\n      acc += load(%a, [x0*s1 + r0])" +
         (indexed ? " at r0" : "") + "\n    }\n    %o[x0] = local(acc, " + out_type + ")\n  }\n}\n";
}

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

/// Every unary and binary op the IR accepts on each element type (the builders reject the
/// rest), one vector loop per type, into %o_<type>[k*s0 + x0] (%p_<type> for bool results).
const ir::DType kOpTypes[] = {ir::DType::Float32,  ir::DType::Float64, ir::DType::Float16,
                              ir::DType::BFloat16, ir::DType::Int64,   ir::DType::Int32,
                              ir::DType::Int8,     ir::DType::UInt8,   ir::DType::Bool};

struct OpCase {
  std::string name;
  bool bool_result = false;
  int64_t slot = 0;  ///< k in the output index
};

std::vector<OpCase> op_cases(ir::DType t, std::vector<ir::Stmt>* stores) {
  const std::string n = ir::dtype_name(t);
  const ir::Expr x0 = ir::Expr::var("x0"), s0 = ir::Expr::var("s0");
  const ir::Value a = ir::load("%a_" + n, t, {x0}), b = ir::load("%b_" + n, t, {x0});
  std::vector<OpCase> cases;
  int64_t slots[2] = {0, 0};
  auto add = [&](const std::string& name, const std::function<ir::Value()>& build) {
    ir::Value v;
    try {
      v = build();
    } catch (const std::invalid_argument&) {
      return;
    }
    const bool to_bool = v->dtype == ir::DType::Bool && t != ir::DType::Bool;
    OpCase c{name, to_bool, slots[to_bool]++};
    stores->push_back(ir::Stmt::store((to_bool ? "%p_" : "%o_") + n, c.slot * s0 + x0, v));
    cases.push_back(c);
  };
#define INDUCTOR_CPP_TRY_UNARY(op) add(#op, [&] { return ir::unary(ir::UnaryOp::op, a); });
  INDUCTOR_CPP_UNARY_OPS(INDUCTOR_CPP_TRY_UNARY)
#undef INDUCTOR_CPP_TRY_UNARY
#define INDUCTOR_CPP_TRY_BINARY(op) add(#op, [&] { return ir::binary(ir::BinaryOp::op, a, b); });
  INDUCTOR_CPP_BINARY_OPS(INDUCTOR_CPP_TRY_BINARY)
#undef INDUCTOR_CPP_TRY_BINARY
  return cases;
}

/// all_ops_<type>(%a, %b, %o, %p) symbols(s0): op_cases(type) in one vector loop of constant
/// extent kAllOpsLanes (no tail code: keeps this big kernel's compile short).
constexpr int64_t kAllOpsLanes = 48;
ir::Kernel all_ops_kernel(ir::DType t) {
  const std::string n = ir::dtype_name(t);
  ir::Kernel k;
  k.name = "all_ops_" + n;
  k.symbols = {"s0"};
  k.params = {{"%a_" + n, t, false},
              {"%b_" + n, t, false},
              {"%o_" + n, t, true},
              {"%p_" + n, ir::DType::Bool, true}};
  std::vector<ir::Stmt> stores;
  op_cases(t, &stores);
  ir::Stmt loop = ir::Stmt::loop("x0", kAllOpsLanes, stores);
  loop.vector_width = 16;
  k.body.push_back(loop);
  return k;
}

/// all_casts_<type>(%a, %o) : %o[k*48 + x0] = float32(cast(a, kOpTypes[k])).
ir::Kernel all_casts_kernel(ir::DType t) {
  const std::string n = ir::dtype_name(t);
  ir::Kernel k;
  k.name = "all_casts_" + n;
  k.params = {{"%a_" + n, t, false}, {"%c_" + n, ir::DType::Float32, true}};
  const ir::Expr x0 = ir::Expr::var("x0");
  const ir::Value a = ir::load("%a_" + n, t, {x0});
  std::vector<ir::Stmt> stores;
  for (size_t j = 0; j < std::size(kOpTypes); ++j) {
    const ir::Value v = ir::cast(ir::cast(a, kOpTypes[j]), ir::DType::Float32);
    stores.push_back(ir::Stmt::store("%c_" + n, int64_t(j) * kAllOpsLanes + x0, v));
  }
  ir::Stmt loop = ir::Stmt::loop("x0", kAllOpsLanes, stores);
  loop.vector_width = 16;
  k.body.push_back(loop);
  return k;
}

std::vector<ir::Kernel> all_kernels() {
  std::vector<ir::Kernel> kernels;
  for (ir::DType t : kOpTypes) kernels.push_back(all_ops_kernel(t));
  for (ir::DType t : kOpTypes) kernels.push_back(all_casts_kernel(t));
  for (const char* text : kKernels) kernels.push_back(ir::parse_kernel(text));
  for (const char* op : {"sum", "prod", "max", "min", "welford_m2"}) {
    kernels.push_back(ir::parse_kernel(row_reduction(op, "float32", "float32")));
  }
  kernels.push_back(ir::parse_kernel(row_reduction("argmax", "float32", "int64")));
  kernels.push_back(ir::parse_kernel(row_reduction("argmin", "float32", "int64")));
  kernels.push_back(ir::parse_kernel(row_reduction("any", "bool", "bool")));
  kernels.push_back(ir::parse_kernel(row_reduction("all", "bool", "bool")));
  kernels.push_back(ir::parse_kernel(
      constant_reductions_kernel("tail_reductions", lengths_up_to(kMaxReduceLength))));
  kernels.push_back(
      ir::parse_kernel(constant_reductions_kernel("unrolled_reductions", kUnrolledLengths)));
  kernels.push_back(ir::parse_kernel(tail_pointwise_kernel()));
  return kernels;
}

struct Target {
  CppTarget target;
  std::string dir;
  runtime::CppCompileResult compiled;
  std::shared_ptr<KernelLibrary> library;
};

class EmitCppTest : public ::testing::Test {
 protected:
  /// Compiles each target's translation unit, or reuses the library built from the same text
  /// by an earlier run: ctest runs every test in its own process, and this keeps the suite to
  /// three compiles. The cache sits next to the test binary, keyed by a hash of the source
  /// and the compiler flags.
  static void SetUpTestSuite() {
    const std::filesystem::path cache =
        std::filesystem::read_symlink("/proc/self/exe").parent_path() / "emit_cpp_test_kernels";
    std::filesystem::create_directories(cache);
    const std::vector<ir::Kernel> kernels = all_kernels();
    targets_ = new std::vector<Target>();
    for (CpuIsa isa : {CpuIsa::Avx512, CpuIsa::Avx2, CpuIsa::Scalar}) {
      if (isa == CpuIsa::Avx512 && detect_host_isa() != CpuIsa::Avx512) continue;
      if (isa == CpuIsa::Avx2 && detect_host_isa() == CpuIsa::Scalar) continue;
      Target t;
      t.target.isa = isa;
      const std::string source = emit_cpp(kernels, t.target);
      std::string flags;
      for (const std::string& f : runtime::CppCompileOptions{}.flags) flags += " " + f;
      const size_t key = std::hash<std::string>()(source + runtime_header_text() + flags);
      char name[64];
      std::snprintf(name, sizeof(name), "%s_%016zx", cpu_isa_name(isa), key);
      t.dir = (cache / name).string();
      targets_->push_back(t);
    }
    std::vector<std::thread> threads;
    for (Target& t : *targets_) {
      if (std::filesystem::exists(t.dir + "/kernels.so")) {
        t.compiled.ok = true;
        continue;
      }
      threads.emplace_back([&t, &kernels, &cache] {
        // Build in a fresh directory, then publish it with one rename (parallel ctest runs).
        std::string scratch = (cache / "build_XXXXXX").string();
        if (!mkdtemp(scratch.data())) return;
        t.compiled = runtime::compile_shared_library(scratch, emit_cpp(kernels, t.target),
                                                     runtime_header_text());
        std::error_code error;
        std::filesystem::rename(scratch, t.dir, error);
        if (error) std::filesystem::remove_all(scratch, error);  // another process won
        const std::string prefix = std::string(cpu_isa_name(t.target.isa)) + "_";
        for (const auto& old : std::filesystem::directory_iterator(cache, error)) {
          const std::string old_name = old.path().filename().string();
          if (old_name.rfind(prefix, 0) == 0 && old.path().string() != t.dir) {
            std::filesystem::remove_all(old.path(), error);  // built from older sources
          }
        }
        std::printf("%s: compiled in %.2f s\n", cpu_isa_name(t.target.isa), t.compiled.seconds);
      });
    }
    for (std::thread& th : threads) th.join();
    for (Target& t : *targets_) {
      if (t.compiled.ok) t.library = KernelLibrary::open(t.dir + "/kernels.so");
    }
  }
  static void TearDownTestSuite() { delete targets_; }
  void SetUp() override {
    for (const Target& t : *targets_) {
      ASSERT_TRUE(t.compiled.ok) << cpu_isa_name(t.target.isa) << ":\n"
                                 << t.compiled.output.substr(0, 4000);
    }
  }

  static std::vector<Target>* targets_;
};
std::vector<Target>* EmitCppTest::targets_ = nullptr;

/// Runs kernel `name` of library `t` on `bufs` (data pointers) with `symbols`.
template <class... B>
int32_t run(const Target& t, const std::string& name, std::vector<int64_t> symbols, int32_t threads,
            B&... bufs) {
  std::vector<char*> ptrs = {const_cast<char*>(reinterpret_cast<const char*>(bufs.data()))...};
  return t.library->kernel(name)(ptrs.data(), symbols.data(), threads);
}

template <class T>
void expect_close(const std::vector<T>& got, const std::vector<double>& want, double rtol,
                  double atol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = static_cast<double>(got[i]);
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(g)) << what << " [" << i << "]";
      continue;
    }
    EXPECT_NEAR(g, want[i], atol + rtol * std::fabs(want[i])) << what << " [" << i << "]";
  }
}

std::vector<float> random_floats(size_t n, float lo, float hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

const int64_t kSizes[] = {1, 15, 17, 1000};

TEST_F(EmitCppTest, PointwiseFloat32) {
  for (const Target& t : *targets_) {
    for (int64_t n : kSizes) {
      const std::string what = std::string(cpu_isa_name(t.target.isa)) + " n=" + std::to_string(n);
      std::vector<float> a = random_floats(n, -4, 4, 1), b = random_floats(n, -3, 3, 2);
      if (n > 3) b[3] = std::numeric_limits<float>::quiet_NaN();
      std::vector<float> add(n), exp(n), tanh(n), erf(n), sig(n), misc(n);
      ASSERT_EQ(run(t, "pw_f32", {n}, 2, a, b, add, exp, tanh, erf, sig, misc), 0);
      std::vector<double> r_add(n), r_exp(n), r_tanh(n), r_erf(n), r_sig(n), r_misc(n);
      for (int64_t i = 0; i < n; ++i) {
        const double x = a[i], y = b[i];
        r_add[i] = static_cast<float>(a[i] + b[i]);
        r_exp[i] = std::exp(x);
        r_tanh[i] = std::tanh(x);
        r_erf[i] = std::erf(x);
        r_sig[i] = 1 / (1 + std::exp(-x));
        r_misc[i] = x > 0 ? (std::isnan(y) ? y : std::max(x, y)) : std::floor(x / y);
      }
      expect_close(add, r_add, 0, 0, "add " + what);
      expect_close(exp, r_exp, 2e-6, 0, "exp " + what);
      expect_close(tanh, r_tanh, 2e-6, 1e-7, "tanh " + what);
      expect_close(erf, r_erf, 2e-6, 1e-7, "erf " + what);
      expect_close(sig, r_sig, 2e-6, 0, "sigmoid " + what);
      expect_close(misc, r_misc, 1e-6, 0, "where/maximum/floordiv " + what);
    }
  }
}

/// Inputs for a float function's ulp sweep: `specials`, the 128 floats around each of `edges`,
/// and every 509th float bit pattern within [lo, hi] (NaN patterns too when the range is all).
std::vector<float> ulp_sweep_inputs(std::initializer_list<float> specials,
                                    std::initializer_list<float> edges, float lo, float hi) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> a(specials);
  for (float edge : edges) {
    float x = edge;  // 64 floats either side
    for (int i = 0; i < 64; ++i) x = std::nextafter(x, -inf);
    for (int i = 0; i < 128; ++i, x = std::nextafter(x, inf)) a.push_back(x);
  }
  const bool all = lo == -inf && hi == inf;
  for (uint64_t bits = 0; bits <= 0xFFFFFFFFull; bits += 509) {
    const uint32_t b = static_cast<uint32_t>(bits);
    float x;
    std::memcpy(&x, &b, 4);
    if (all || (x >= lo && x <= hi)) a.push_back(x);
  }
  return a;
}

// float exp is inline code on AVX2 / AVX-512 (ic_runtime_math.h, exp_f32_256 / _512), not
// Sleef: within 1 ulp of the correctly rounded e^x (an exhaustive check of every float in
// [-105, 90] found no more; here every 509th float bit pattern there, and the edges), with
// inf / 0 / NaN and the overflow and subnormal boundaries as e^x gives them.
TEST_F(EmitCppTest, ExpIsWithinOneUlpEverywhere) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> a =
      ulp_sweep_inputs({std::nanf(""), -std::nanf(""), inf, -inf, 0.0f, -0.0f, 1e-45f, -1e-45f,
                        88.0f, 89.0f, 100.0f, -104.0f, -110.0f, 1e30f, -1e30f},
                       {88.72283935546875f, -87.33654022216797f, -103.27892303466797f, 0.0f,
                        -88.72283935546875f, 0.34657359f, -0.34657359f},
                       -105.0f, 90.0f);
  const int64_t n = static_cast<int64_t>(a.size());
  for (const Target& t : *targets_) {
    std::vector<float> e(n);
    ASSERT_EQ(run(t, "exp_f32", {n}, 2, a, e), 0);
    int failures = 0;
    for (int64_t i = 0; i < n && failures < 10; ++i) {
      const float want = static_cast<float>(std::exp(static_cast<double>(a[i])));
      bool ok;
      if (std::isnan(want) || std::isinf(want) || want == 0) {
        ok = std::isnan(want) ? std::isnan(e[i]) : e[i] == want;
      } else if (std::fpclassify(want) == FP_SUBNORMAL) {
        ok = std::fabs(e[i] - want) <= std::ldexp(1.0f, -149);
      } else {
        ok = std::fabs(e[i] - want) <= std::fabs(std::nextafter(want, inf) - want);  // 1 ulp
      }
      if (ok) continue;
      ++failures;
      ADD_FAILURE() << cpu_isa_name(t.target.isa) << " exp(" << a[i] << ") = " << e[i] << ", want "
                    << want;
    }
  }
}

/// Runs kernel `name` (one float32 function of x) on every 509th float bit pattern, ±0, ±inf,
/// NaN, tiny and huge values and the 128 floats around each of `edges`; expects each result
/// within `max_ulp` ulp of the correctly rounded `reference` (float64), with its sign, and NaN
/// for NaN.
void expect_within_ulp(const std::vector<Target>* targets, const std::string& name,
                       double (*reference)(double), int max_ulp,
                       std::initializer_list<float> edges) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> a = ulp_sweep_inputs({std::nanf(""), -std::nanf(""), inf, -inf, 0.0f,
                                                 -0.0f, 1e-45f, -1e-45f, 1e-30f, 1e30f, -1e30f},
                                                edges, -inf, inf);
  const int64_t n = static_cast<int64_t>(a.size());
  for (const Target& t : *targets) {
    std::vector<float> e(n);
    ASSERT_EQ(run(t, name, {n}, 2, a, e), 0);
    int failures = 0;
    for (int64_t i = 0; i < n && failures < 10; ++i) {
      const float want = static_cast<float>(reference(static_cast<double>(a[i])));
      bool ok;
      if (std::isnan(want)) {
        ok = std::isnan(e[i]);
      } else {
        const float ulp = std::fpclassify(want) == FP_SUBNORMAL || want == 0
                              ? std::ldexp(1.0f, -149)
                              : std::fabs(std::nextafter(want, inf) - want);
        ok = std::fabs(e[i] - want) <= max_ulp * ulp && std::signbit(e[i]) == std::signbit(want);
      }
      if (ok) continue;
      ++failures;
      ADD_FAILURE() << cpu_isa_name(t.target.isa) << " " << name << "(" << a[i] << ") = " << e[i]
                    << ", want " << want;
    }
  }
}

// float tanh is inline code on AVX2 / AVX-512 (ic_runtime_math.h, tanh_fast_256 / _512; Sleef
// builds only, as erf): within 2 ulp of the correctly rounded tanh (every 61st float bit
// pattern: at most 1.65 ulp from the exact value, at |x| ≈ 0.628 where the exponential form
// takes over), here every 509th, the branch and saturation edges, ±0, ±inf and NaN.
TEST_F(EmitCppTest, TanhIsWithinTwoUlpEverywhere) {
  expect_within_ulp(targets_, "tanh_f32", [](double x) { return std::tanh(x); }, 2,
                    {0.625f, -0.625f, 9.01f, -9.01f, 10.0f});
}

// float erf is inline code on AVX2 / AVX-512 (ic_runtime_math.h, erf_fast_256 / _512; Sleef
// builds only): Eigen's rational approximation, at most 6.5 ulp from the exact value over every
// 61st float (near |x| = 3.9); here every 509th, the clamp at ±4, ±0, ±inf, NaN.
TEST_F(EmitCppTest, ErfIsWithinSevenUlpEverywhere) {
  expect_within_ulp(targets_, "erf_f32", [](double x) { return std::erf(x); }, 7,
                    {4.0f, -4.0f, 3.9f, 0.5f, 1e-20f});
}

TEST_F(EmitCppTest, PointwiseFloat64AndIndexValues) {
  for (const Target& t : *targets_) {
    const int64_t n = 19;
    std::vector<double> a(n);
    for (int64_t i = 0; i < n; ++i) a[i] = (i - 9) * 0.75 + 0.25 * (i == 4);  // has x.5 cases
    std::vector<double> exp(n), log1p(n), sqrt(n), round(n), iota(n);
    ASSERT_EQ(run(t, "pw_f64", {n}, 1, a, exp, log1p, sqrt, round, iota), 0);
    std::vector<double> r_exp(n), r_log1p(n), r_sqrt(n), r_round(n), r_iota(n);
    for (int64_t i = 0; i < n; ++i) {
      r_exp[i] = std::exp(a[i]);
      r_log1p[i] = std::log1p(std::fabs(a[i]));
      r_sqrt[i] = std::sqrt(std::fabs(a[i]));
      r_round[i] = std::nearbyint(a[i] * 2);
      r_iota[i] = static_cast<double>(i * 3 - 5);
    }
    const std::string what = cpu_isa_name(t.target.isa);
    expect_close(exp, r_exp, 1e-14, 0, "exp " + what);
    expect_close(log1p, r_log1p, 1e-14, 0, "log1p " + what);
    expect_close(sqrt, r_sqrt, 0, 0, "sqrt " + what);
    expect_close(round, r_round, 0, 0, "round " + what);
    expect_close(iota, r_iota, 0, 0, "index " + what);
  }
}

TEST_F(EmitCppTest, IntegerDivisionFollowsPython) {
  const std::vector<int64_t> a = {7, -7, 7, -7, 0, 5, INT64_MIN, 9, -9, 3, -1, 100, 6, -6, 1, 2, 3};
  const std::vector<int64_t> b = {2, 2, -2, -2, 3, 0, -1, 3, 4, -4, 5, 7, 6, -6, 1, 2, 5};
  const int64_t n = static_cast<int64_t>(a.size());
  for (const Target& t : *targets_) {
    std::vector<int64_t> fd(n), rem(n), td(n), fm(n), A = a, B = b;
    ASSERT_EQ(run(t, "int_ops", {n}, 1, A, B, fd, rem, td, fm), 0);
    for (int64_t i = 0; i < n; ++i) {
      const std::string what = std::string(cpu_isa_name(t.target.isa)) + " " +
                               std::to_string(a[i]) + " / " + std::to_string(b[i]);
      if (b[i] == 0) {  // torch raises; a kernel yields 0 instead of trapping
        EXPECT_EQ(fd[i], 0) << what;
        continue;
      }
      if (b[i] == -1) {  // INT64_MIN / -1 wraps
        EXPECT_EQ(fd[i], static_cast<int64_t>(0 - static_cast<uint64_t>(a[i]))) << what;
        EXPECT_EQ(rem[i], 0) << what;
        continue;
      }
      const int64_t q = a[i] / b[i], r = a[i] % b[i];
      const bool adjust = r != 0 && ((r < 0) != (b[i] < 0));
      EXPECT_EQ(fd[i], adjust ? q - 1 : q) << what;
      EXPECT_EQ(rem[i], adjust ? r + b[i] : r) << what;
      EXPECT_EQ(td[i], q) << what;
      EXPECT_EQ(fm[i], r) << what;
    }
  }
}

// A divisor the same for a whole vector loop (softmax's row sum) is one reciprocal and a
// correction step per lane (ic::div_by_invariant): bit-identical to IEEE division wherever
// the quotient is normal, with zero signs, infinities and NaNs as division gives them, and
// division itself for divisors whose reciprocal would lose range.
TEST_F(EmitCppTest, DivisionByARowInvariantDivisorIsCorrectlyRounded) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  const std::vector<float> divisors = {3.0f, -7.3f, 0.1f, 1e30f, -1e-30f, 0.0f, -0.0f, inf, -inf,
                                       nan, 1e-40f, std::ldexp(1.0f, -101), std::ldexp(1.0f, 101),
                                       std::ldexp(1.0f, -100), 1.0f / 3, 255.0f, 65536.5f};
  const int64_t cols = 203;  // 12 vectors and a tail
  const int64_t rows = static_cast<int64_t>(divisors.size());
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(-140, 127);
  std::vector<float> a(rows * cols), s = divisors, o(rows * cols);
  std::vector<uint16_t> h(rows * cols), ho(rows * cols);
  const std::vector<float> specials = {0.0f, -0.0f, inf, -inf, nan, 3.4e38f, -3.4e38f, 1e-45f, 1.0f};
  for (int64_t i = 0; i < rows * cols; ++i) {
    const int64_t col = i % cols;
    a[i] = col < static_cast<int64_t>(specials.size())
               ? specials[col]
               : std::ldexp(mantissa(rng), exponent(rng)) * (col % 2 ? -1.0f : 1.0f);
    float hf = a[i];
    uint32_t bits;
    std::memcpy(&bits, &hf, 4);
    h[i] = static_cast<uint16_t>(bits >> 16);  // truncation: any bfloat16 value will do
  }
  for (const Target& t : *targets_) {
    ASSERT_EQ(run(t, "div_by_row", {cols, rows}, 2, a, s, o, h, ho), 0);
    for (int64_t i = 0; i < rows * cols; ++i) {
      const float want = a[i] / s[i / cols];
      const std::string what = std::string(cpu_isa_name(t.target.isa)) + " " +
                               std::to_string(a[i]) + " / " + std::to_string(s[i / cols]);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(o[i])) << what << " = " << o[i];
      } else if (std::fpclassify(want) == FP_SUBNORMAL) {
        EXPECT_LE(std::fabs(o[i] - want), std::ldexp(1.0f, -149)) << what;  // 1 ulp there
      } else {
        EXPECT_EQ(o[i], want) << what;
        EXPECT_EQ(std::signbit(o[i]), std::signbit(want)) << what;
      }
      // The bfloat16 path (widened to float32, divided, rounded to nearest even).
      uint32_t hb = uint32_t{h[i]} << 16, qb;
      float hf;
      std::memcpy(&hf, &hb, 4);
      const float q = hf / s[i / cols];
      std::memcpy(&qb, &q, 4);
      const uint16_t expected =
          std::isnan(q) ? 0x7FC0 : static_cast<uint16_t>((qb + 0x7FFF + ((qb >> 16) & 1)) >> 16);
      if (std::fpclassify(q) == FP_NORMAL || q == 0 || std::isinf(q)) {
        EXPECT_EQ(ho[i], expected) << what << " (bfloat16)";
      }
    }
  }
}

TEST_F(EmitCppTest, SmallIntegersWrapAndBoolLogic) {
  const int64_t n = 20;
  for (const Target& t : *targets_) {
    std::vector<int8_t> a(n), b(n), o(n);
    std::vector<uint8_t> l(n);  // bool storage
    for (int64_t i = 0; i < n; ++i) {
      a[i] = static_cast<int8_t>(120 - 13 * i);
      b[i] = static_cast<int8_t>(i % 3 == 0 ? 0 : 100 - 7 * i);
    }
    ASSERT_EQ(run(t, "small_ints", {n}, 1, a, b, o, l), 0);
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_EQ(o[i], static_cast<int8_t>(static_cast<uint8_t>(a[i]) + static_cast<uint8_t>(b[i])));
      EXPECT_EQ(l[i], (a[i] > 0 && b[i] != 0) ? 1 : 0) << i;
    }
  }
}

/// float -> binary16 by the F16C instruction (round to nearest even), the reference.
__attribute__((target("f16c"))) uint16_t f16c_half(float f) {
  return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
}
__attribute__((target("f16c"))) float f16c_float(uint16_t h) {
  return _cvtsh_ss(h);
}

/// float -> bfloat16 bits: the nearer of the two neighbours, ties to even.
uint16_t reference_bfloat16(float f) {
  if (std::isnan(f)) return 0x7FC0;
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if (std::isinf(f)) return static_cast<uint16_t>(u >> 16);
  const uint32_t lo = u & 0xFFFF0000u, hi = lo + 0x10000u;
  float flo, fhi;
  std::memcpy(&flo, &lo, 4);
  std::memcpy(&fhi, &hi, 4);
  // Past the largest finite value, the upper neighbour is 2^128 (it rounds to infinity).
  const double dhi_value = std::isinf(fhi) ? std::copysign(std::ldexp(1.0, 128), f) : fhi;
  const double dlo = std::fabs(static_cast<double>(f) - flo);
  const double dhi = std::fabs(dhi_value - f);
  if (dlo < dhi || (dlo == dhi && ((lo >> 16) & 1) == 0)) return static_cast<uint16_t>(lo >> 16);
  return static_cast<uint16_t>(hi >> 16);
}

TEST_F(EmitCppTest, CastsRoundTripThroughReducedFloats) {
  std::vector<float> f = random_floats(40, -300, 300, 3);
  const float specials[] = {0.0f,
                            -0.0f,
                            1.0f + 1.0f / 2048,
                            1.0f + 3.0f / 2048,
                            65504.0f,
                            65520.0f,
                            1e-8f,
                            -2.5f,
                            std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            1.00390625f,
                            1.01171875f,
                            -1.5f,
                            255.9f,
                            3.4e38f};
  f.insert(f.end(), std::begin(specials), std::end(specials));
  const int64_t n = static_cast<int64_t>(f.size());
  std::vector<uint16_t> hin(n);
  for (int64_t i = 0; i < n; ++i) hin[i] = f16c_half(f[i] / 7);
  for (const Target& t : *targets_) {
    std::vector<uint16_t> h(n), bf(n), h2(n);
    std::vector<float> hf(n), bff(n), bfl(n);
    std::vector<int32_t> i32(n);
    std::vector<uint8_t> u8(n), b(n);
    ASSERT_EQ(run(t, "casts", {n}, 1, f, hin, h, hf, bf, bff, i32, u8, b, bfl, h2), 0);
    for (int64_t i = 0; i < n; ++i) {
      const std::string what =
          std::string(cpu_isa_name(t.target.isa)) + " x=" + std::to_string(f[i]);
      if (std::isnan(f[i])) {
        EXPECT_TRUE(std::isnan(f16c_float(h[i]))) << what;
        EXPECT_TRUE(std::isnan(hf[i])) << what;
        EXPECT_EQ(bf[i], 0x7FC0) << what;
        EXPECT_TRUE(std::isnan(bff[i])) << what;
      } else {
        EXPECT_EQ(h[i], f16c_half(f[i])) << what;
        EXPECT_EQ(hf[i], f16c_float(f16c_half(f[i]))) << what;
        EXPECT_EQ(bf[i], reference_bfloat16(f[i])) << what;
        uint32_t bits = static_cast<uint32_t>(reference_bfloat16(f[i])) << 16;
        float expect_bff;
        std::memcpy(&expect_bff, &bits, 4);
        EXPECT_EQ(bff[i], expect_bff) << what;
      }
      if (std::isfinite(f[i]) && std::fabs(f[i]) < 1e9f) {
        EXPECT_EQ(i32[i], static_cast<int32_t>(f[i])) << what;
        EXPECT_EQ(u8[i], static_cast<uint8_t>(static_cast<int64_t>(f[i]))) << what;
      }
      EXPECT_EQ(b[i], f[i] != 0 ? 1 : 0) << what;
      EXPECT_EQ(bfl[i], f[i] != 0 ? 1.0f : 0.0f) << what;
      EXPECT_EQ(h2[i], f16c_half(f16c_float(hin[i]) * 3)) << what;
    }
  }
}

TEST_F(EmitCppTest, MaskedLoadReadsOnlyInside) {
  for (const Target& t : *targets_) {
    for (int64_t n : {int64_t(1), int64_t(13), int64_t(30)}) {
      std::vector<float> a = random_floats(n, -1, 1, 4), o(n + 4);
      ASSERT_EQ(run(t, "pad", {n}, 1, a, o), 0);
      std::vector<double> want(n + 4, 1.0);
      for (int64_t i = 0; i < n; ++i) want[i + 2] = static_cast<float>(a[i] + 1.0f);
      expect_close(o, want, 0, 0, std::string("pad ") + cpu_isa_name(t.target.isa));
    }
  }
}

// GCC 12's loop vectorizer ran these row loops several rows wide and got them wrong on
// AVX2-only hosts (rows of the second input read 0); runtime/cpp_compiler.h turns it off.
TEST_F(EmitCppTest, RowsFromTwoInputsOfAConcatenation) {
  const std::vector<float> a = random_floats(50, -1, 1, 8), b = random_floats(25, -1, 1, 9);
  for (const Target& t : *targets_) {
    std::vector<float> o(75, -777);
    ASSERT_EQ(run(t, "cat_rows", {}, 1, a, b, o), 0);
    for (int64_t i = 0; i < 75; ++i) {
      EXPECT_EQ(o[i], i < 50 ? a[i] : b[i - 50])
          << cpu_isa_name(t.target.isa) << " row " << i / 5 << " column " << i % 5;
    }
    std::vector<float> small(12, -777);
    ASSERT_EQ(run(t, "cat_rows_small", {}, 1, a, b, small), 0);
    for (int64_t i = 0; i < 12; ++i) {
      EXPECT_EQ(small[i], i < 6 ? a[i] : b[i - 6])
          << cpu_isa_name(t.target.isa) << " small, row " << i / 3 << " column " << i % 3;
    }
  }
}

TEST_F(EmitCppTest, IndirectLoadsCheckBounds) {
  for (const Target& t : *targets_) {
    const int64_t n = 21, src_n = 10;
    std::vector<float> src = random_floats(src_n, 0, 1, 5), o(n);
    std::vector<int64_t> idx(n);
    for (int64_t i = 0; i < n; ++i) idx[i] = (i * 7) % src_n;
    ASSERT_EQ(run(t, "gather", {n, src_n}, 1, src, idx, o), 0);
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(o[i], src[idx[i]]);
    for (int64_t bad : {src_n, int64_t(-1), int64_t(1) << 40}) {
      idx[n - 1] = bad;  // in the tail
      EXPECT_EQ(run(t, "gather", {n, src_n}, 1, src, idx, o), ir::kKernelIndexOutOfBounds);
      idx[n - 1] = 0;
      idx[2] = bad;  // in a full vector
      EXPECT_EQ(run(t, "gather", {n, src_n}, 1, src, idx, o), ir::kKernelIndexOutOfBounds);
      idx[2] = 0;
    }
    // Scalar indices per row (embedding), int32, parallel rows.
    const int64_t rows = 6, vocab = 5;
    std::vector<float> w = random_floats(vocab * 8, -1, 1, 6), e(rows * 8);
    std::vector<int32_t> ids = {4, 0, 3, 3, 1, 2};
    ASSERT_EQ(run(t, "embed", {rows, vocab}, 2, w, ids, e), 0);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < 8; ++c) EXPECT_EQ(e[r * 8 + c], w[ids[r] * 8 + c]);
    }
    ids[5] = 5;
    EXPECT_EQ(run(t, "embed", {rows, vocab}, 2, w, ids, e), ir::kKernelIndexOutOfBounds);
  }
}

TEST_F(EmitCppTest, StridedLoadsAndStores) {
  const int64_t rows = 29, cols = 37;
  std::vector<float> a = random_floats(rows * cols, -1, 1, 7);
  for (const Target& t : *targets_) {
    std::vector<float> o(rows * cols), o2(rows * cols);
    ASSERT_EQ(run(t, "transpose", {cols}, 2, a, o, o2), 0);
    for (int64_t x0 = 0; x0 < rows; ++x0) {
      for (int64_t x1 = 0; x1 < cols; ++x1) {
        EXPECT_EQ(o[x0 * 37 + x1], a[x0 + x1 * 29]);
        EXPECT_EQ(o2[x1 * 29 + x0], a[x0 * cols + x1]);
      }
    }
  }
}

TEST_F(EmitCppTest, LoadsThroughFloorDivisionRepeatElements) {
  std::vector<float> a = random_floats(7 * 19, -1, 1, 11);
  std::vector<int64_t> idx(7 * 10);
  for (size_t k = 0; k < idx.size(); ++k) idx[k] = static_cast<int64_t>(k * 7919 % 1000);
  for (const Target& t : *targets_) {
    std::vector<float> o(7 * 37);
    std::vector<int64_t> o2(7 * 37);
    ASSERT_EQ(run(t, "repeat_loads", {}, 2, a, idx, o, o2), 0);
    for (int64_t x0 = 0; x0 < 7; ++x0) {
      for (int64_t x1 = 0; x1 < 37; ++x1) {
        EXPECT_EQ(o[x0 * 37 + x1], a[x0 * 19 + x1 / 2]) << cpu_isa_name(t.target.isa) << " " << x0 << "," << x1;
        EXPECT_EQ(o2[x0 * 37 + x1], idx[x0 * 10 + x1 / 4]) << cpu_isa_name(t.target.isa) << " " << x0 << "," << x1;
      }
    }
  }
  std::vector<ir::Kernel> repeat;
  for (const ir::Kernel& k : all_kernels()) {
    if (k.name == "repeat_loads") repeat.push_back(k);
  }
  const std::string source = emit_cpp(repeat, CppTarget{CpuIsa::Avx512, true});
  // 8 lanes: the kernel also moves int64 values.
  EXPECT_NE(source.find("ic::load_repeat<8, 2>"), std::string::npos) << source;
  EXPECT_NE(source.find("ic::load_repeat<8, 4>"), std::string::npos) << source;
}

// Unrolled accumulator copies only for small bodies: index arithmetic counts towards the size
// (swin_t's window-mask index expressions made five kernels of 200 KB each).
TEST(EmitCppSource, LargeReductionBodiesAreNotUnrolled) {
  const auto source_of = [](const std::string& index) {
    const ir::Kernel k = ir::parse_kernel(R"(kernel k(%a: float32 in, %o: float32 out) {
  for x0 in 0..4 {
    t0 = accumulator max float32
    for y0 in 0..200 vector(16) {
      t0 += load(%a, [)" + index + R"(])
    }
    %o[x0] = local(t0, float32)
  }
})");
    return emit_cpp({k}, CppTarget{CpuIsa::Avx512, true});
  };
  EXPECT_NE(source_of("x0*200 + y0").find("y0_unrolled"), std::string::npos);
  std::string big = "x0*200 + y0";  // not run: only the text is checked
  for (int k = 2; k < 40; ++k)
    big += " + (y0 // " + std::to_string(k) + ") % " + std::to_string(k + 1);
  const std::string source = source_of(big);
  EXPECT_EQ(source.find("y0_unrolled"), std::string::npos) << source;
}

/// Reference row reductions in double.
struct RowStats {
  double sum = 0, prod = 1, max = -INFINITY, min = INFINITY, m2 = 0;
  int64_t argmax = 0, argmin = 0;
};
RowStats row_stats(const float* x, int64_t n) {
  RowStats s;
  bool max_nan = false, min_nan = false;
  double mean = 0;
  for (int64_t i = 0; i < n; ++i) mean += x[i] / static_cast<double>(n);
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    s.sum += v;
    s.prod *= v;
    s.m2 += (v - mean) * (v - mean);
    if (std::isnan(v)) {
      if (!max_nan) s.argmax = i;
      if (!min_nan) s.argmin = i;
      max_nan = min_nan = true;
      continue;
    }
    if (!max_nan && v > s.max) s.max = v, s.argmax = i;
    if (!min_nan && v < s.min) s.min = v, s.argmin = i;
  }
  if (max_nan) s.max = s.min = NAN;
  return s;
}

TEST_F(EmitCppTest, RowReductions) {
  for (const Target& t : *targets_) {
    for (int64_t len : kSizes) {
      const int64_t rows = 3;
      std::vector<float> a = random_floats(rows * len, 0.5f, 1.5f, 8);
      if (len > 1) a[rows * len - 2] = a[rows * len - 3];  // a tie
      if (len >= 15) a[len + 5] = NAN, a[len + 9] = NAN;   // row 1 has NaNs
      std::vector<float> sum(rows), prod(rows), mx(rows), mn(rows), m2(rows);
      std::vector<int64_t> amax(rows), amin(rows);
      const std::vector<int64_t> sym = {rows, len};
      ASSERT_EQ(run(t, "red_sum", sym, 2, a, sum), 0);
      ASSERT_EQ(run(t, "red_prod", sym, 2, a, prod), 0);
      ASSERT_EQ(run(t, "red_max", sym, 2, a, mx), 0);
      ASSERT_EQ(run(t, "red_min", sym, 2, a, mn), 0);
      ASSERT_EQ(run(t, "red_welford_m2", sym, 2, a, m2), 0);
      ASSERT_EQ(run(t, "red_argmax", sym, 2, a, amax), 0);
      ASSERT_EQ(run(t, "red_argmin", sym, 2, a, amin), 0);
      for (int64_t r = 0; r < rows; ++r) {
        const RowStats s = row_stats(a.data() + r * len, len);
        const std::string what = std::string(cpu_isa_name(t.target.isa)) +
                                 " len=" + std::to_string(len) + " row " + std::to_string(r);
        expect_close(std::vector<float>{sum[r]}, {s.sum}, 1e-5, 0, "sum " + what);
        expect_close(std::vector<float>{prod[r]}, {s.prod}, 1e-4, 0, "prod " + what);
        expect_close(std::vector<float>{mx[r]}, {s.max}, 0, 0, "max " + what);
        expect_close(std::vector<float>{mn[r]}, {s.min}, 0, 0, "min " + what);
        expect_close(std::vector<float>{m2[r]}, {s.m2}, 1e-4, 1e-6, "welford " + what);
        EXPECT_EQ(amax[r], s.argmax) << "argmax " << what;
        EXPECT_EQ(amin[r], s.argmin) << "argmin " << what;
      }
      // Deterministic: one thread or two, bit for bit.
      std::vector<float> sum1(rows);
      ASSERT_EQ(run(t, "red_sum", sym, 1, a, sum1), 0);
      EXPECT_EQ(std::memcmp(sum1.data(), sum.data(), rows * sizeof(float)), 0);
    }
  }
}

/// Runs red_<op> over `rows` rows of a (rows x len) with 1 and 2 threads; the results must be
/// bit for bit the same (the combine order depends only on len). Returns the 2-thread result.
template <class Out>
std::vector<Out> run_deterministic(const Target& t, const std::string& op, std::vector<float>& a,
                                   int64_t rows, int64_t len) {
  std::vector<Out> one(rows), two(rows);
  const std::vector<int64_t> sym = {rows, len};
  EXPECT_EQ(run(t, "red_" + op, sym, 1, a, one), 0);
  EXPECT_EQ(run(t, "red_" + op, sym, 2, a, two), 0);
  EXPECT_EQ(std::memcmp(one.data(), two.data(), rows * sizeof(Out)), 0)
      << op << " len " << len << ": 1 and 2 threads differ";
  return two;
}

// Lengths around multiples of the unrolled groups (64 floats, 32 for argmax/argmin), with a
// remainder of full vectors and a tail, and one long enough for the two-level sum's blocks.
TEST_F(EmitCppTest, UnrolledRowReductions) {
  for (const Target& t : *targets_) {
    for (int64_t len : {31, 32, 33, 63, 64, 65, 127, 128, 129, 200, 4096 + 64 * 3 + 16 + 1}) {
      const int64_t rows = 5;
      std::vector<float> a = random_floats(rows * len, 0.9f, 1.1f, 15);
      a[len + len / 2] = a[len + len - 1] = 1.5f;  // row 1: a tie, the later in the tail
      a[2 * len + len - 1] = 0.5f;                 // row 2: the minimum is the last element
      const std::vector<float> sum = run_deterministic<float>(t, "sum", a, rows, len);
      const std::vector<float> prod = run_deterministic<float>(t, "prod", a, rows, len);
      const std::vector<float> mx = run_deterministic<float>(t, "max", a, rows, len);
      const std::vector<float> mn = run_deterministic<float>(t, "min", a, rows, len);
      const std::vector<float> m2 = run_deterministic<float>(t, "welford_m2", a, rows, len);
      const std::vector<int64_t> amax = run_deterministic<int64_t>(t, "argmax", a, rows, len);
      const std::vector<int64_t> amin = run_deterministic<int64_t>(t, "argmin", a, rows, len);
      for (int64_t r = 0; r < rows; ++r) {
        const RowStats s = row_stats(a.data() + r * len, len);
        const std::string what = std::string(cpu_isa_name(t.target.isa)) +
                                 " len=" + std::to_string(len) + " row " + std::to_string(r);
        expect_close(std::vector<float>{sum[r]}, {s.sum}, 1e-6, 0, "sum " + what);
        expect_close(std::vector<float>{prod[r]}, {s.prod}, 2e-5, 0, "prod " + what);
        expect_close(std::vector<float>{mx[r]}, {s.max}, 0, 0, "max " + what);
        expect_close(std::vector<float>{mn[r]}, {s.min}, 0, 0, "min " + what);
        expect_close(std::vector<float>{m2[r]}, {s.m2}, 1e-4, 1e-6, "welford " + what);
        EXPECT_EQ(amax[r], s.argmax) << "argmax " << what;
        EXPECT_EQ(amin[r], s.argmin) << "argmin " << what;
      }
      std::vector<uint8_t> q(rows * len, 1), any(rows), all(rows);
      q[len - 1] = 0;        // row 0: only the last element false
      q[len + len / 3] = 0;  // row 1: one in the unrolled part
      std::fill(q.begin() + 2 * len, q.begin() + 3 * len, 0);
      q[2 * len + len - 1] = 1;  // row 2: only the last element true
      std::fill(q.begin() + 3 * len, q.begin() + 4 * len, 0);
      q[3 * len + len / 2] = 1;  // row 3: one in the middle true
      ASSERT_EQ(run(t, "red_any", {rows, len}, 2, q, any), 0);
      ASSERT_EQ(run(t, "red_all", {rows, len}, 2, q, all), 0);
      EXPECT_EQ(any, (std::vector<uint8_t>{1, 1, 1, 1, 1})) << len;
      EXPECT_EQ(all, (std::vector<uint8_t>{0, 0, 0, 0, 1})) << len;
    }
  }
}

// NaN anywhere (each unrolled copy, the remainder of full vectors, the tail) makes max/min NaN
// and argmax/argmin its first index, whichever copy holds the earlier one.
TEST_F(EmitCppTest, UnrolledReductionsPropagateNaN) {
  const int64_t len = 64 * 3 + 16 + 5;  // three groups, one more full vector, a tail of 5
  const std::vector<std::vector<int64_t>> nan_sets = {
      {0},       {20}, {40}, {63}, {64 + 50}, {192}, {200}, {len - 1}, {70, 40}, {150, 130, 100},
      {210, 195}};
  for (const Target& t : *targets_) {
    const int64_t rows = static_cast<int64_t>(nan_sets.size());
    std::vector<float> a = random_floats(rows * len, -1, 1, 16);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t at : nan_sets[r]) a[r * len + at] = NAN;
    }
    const std::vector<float> mx = run_deterministic<float>(t, "max", a, rows, len);
    const std::vector<float> mn = run_deterministic<float>(t, "min", a, rows, len);
    const std::vector<int64_t> amax = run_deterministic<int64_t>(t, "argmax", a, rows, len);
    const std::vector<int64_t> amin = run_deterministic<int64_t>(t, "argmin", a, rows, len);
    const std::vector<float> sum = run_deterministic<float>(t, "sum", a, rows, len);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t first = *std::min_element(nan_sets[r].begin(), nan_sets[r].end());
      const std::string what =
          std::string(cpu_isa_name(t.target.isa)) + " first NaN at " + std::to_string(first);
      EXPECT_TRUE(std::isnan(mx[r])) << "max " << what;
      EXPECT_TRUE(std::isnan(mn[r])) << "min " << what;
      EXPECT_TRUE(std::isnan(sum[r])) << "sum " << what;
      EXPECT_EQ(amax[r], first) << "argmax " << what;
      EXPECT_EQ(amin[r], first) << "argmin " << what;
    }
  }
}

// Ties across copies: the first index wins, in whichever copy or lane it sits.
TEST_F(EmitCppTest, UnrolledArgReductionsTakeTheFirstTie) {
  const int64_t len = 32 * 4 + 8 + 3;  // argmax lanes: 8, groups of 32
  for (const Target& t : *targets_) {
    for (int64_t first : {int64_t(0), int64_t(9), int64_t(27), int64_t(33), int64_t(100)}) {
      for (int64_t later : {int64_t(130), int64_t(len - 1), first + 8, first + 1}) {
        if (later >= len || later <= first) continue;
        std::vector<float> a = random_floats(len, -1, 1, 17);
        a[later] = a[first] = 5;
        std::vector<int64_t> amax(1), amin(1);
        ASSERT_EQ(run(t, "red_argmax", {1, len}, 1, a, amax), 0);
        EXPECT_EQ(amax[0], first) << cpu_isa_name(t.target.isa) << " later " << later;
        a[later] = a[first] = -5;
        ASSERT_EQ(run(t, "red_argmin", {1, len}, 1, a, amin), 0);
        EXPECT_EQ(amin[0], first) << cpu_isa_name(t.target.isa) << " later " << later;
      }
    }
  }
}

TEST_F(EmitCppTest, LongSumsStayAccurate) {
  const int64_t n = int64_t(1) << 20;
  const std::vector<float> a = random_floats(n, 0.5f, 1.5f, 13);
  double want = 0;
  for (float x : a) want += x;
  for (const Target& t : *targets_) {
    std::vector<float> sum(1);
    ASSERT_EQ(run(t, "red_sum", {1, n}, 1, a, sum), 0);
    EXPECT_NEAR(sum[0], want, 2e-6 * want) << cpu_isa_name(t.target.isa);
  }
}

TEST_F(EmitCppTest, ArgmaxTiesAndNaNFollowTorch) {
  for (const Target& t : *targets_) {
    std::vector<float> a = {1, NAN, 0, 3, 3, NAN};  // torch: argmax 1, argmin 1
    std::vector<int64_t> amax(1), amin(1);
    ASSERT_EQ(run(t, "red_argmax", {1, 6}, 1, a, amax), 0);
    ASSERT_EQ(run(t, "red_argmin", {1, 6}, 1, a, amin), 0);
    EXPECT_EQ(amax[0], 1);
    EXPECT_EQ(amin[0], 1);
    std::vector<float> ties(40, -INFINITY);
    ASSERT_EQ(run(t, "red_argmax", {1, 40}, 1, ties, amax), 0);
    EXPECT_EQ(amax[0], 0);
    ties[33] = 2, ties[17] = 2;
    ASSERT_EQ(run(t, "red_argmax", {1, 40}, 1, ties, amax), 0);
    EXPECT_EQ(amax[0], 17);
  }
}

TEST_F(EmitCppTest, AnyAll) {
  for (const Target& t : *targets_) {
    for (int64_t len : kSizes) {
      std::vector<uint8_t> a(2 * len, 1), any(2), all(2);
      a[len + len - 1] = 0;  // row 1: last element false
      ASSERT_EQ(run(t, "red_any", {2, len}, 1, a, any), 0);
      ASSERT_EQ(run(t, "red_all", {2, len}, 1, a, all), 0);
      EXPECT_EQ(any, (std::vector<uint8_t>{1, static_cast<uint8_t>(len > 1)}));
      EXPECT_EQ(all, (std::vector<uint8_t>{1, 0}));
      std::fill(a.begin(), a.end(), 0);
      a[len - 1] = 1;
      ASSERT_EQ(run(t, "red_any", {2, len}, 1, a, any), 0);
      EXPECT_EQ(any, (std::vector<uint8_t>{1, 0}));
    }
  }
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

TEST_F(EmitCppTest, OuterDimReductionVectorizesAcrossColumns) {
  for (const Target& t : *targets_) {
    for (int64_t cols : {int64_t(1), int64_t(70), int64_t(1000)}) {
      const int64_t rows = 37;
      std::vector<float> a = random_floats(rows * cols, -1, 1, 9);
      std::vector<float> sum(cols), m2(cols);
      std::vector<int64_t> amax(cols);
      ASSERT_EQ(run(t, "outer_sum", {cols, rows}, 2, a, sum, amax, m2), 0);
      for (int64_t c = 0; c < cols; ++c) {
        std::vector<float> column(rows);
        for (int64_t r = 0; r < rows; ++r) column[r] = a[r * cols + c];
        const RowStats s = row_stats(column.data(), rows);
        expect_close(std::vector<float>{sum[c]}, {s.sum}, 1e-5, 1e-6, "outer sum");
        expect_close(std::vector<float>{m2[c]}, {s.m2}, 1e-5, 1e-6, "outer welford");
        EXPECT_EQ(amax[c], s.argmax) << "outer argmax column " << c;
      }
    }
  }
}

TEST_F(EmitCppTest, LayerNormKernel) {
  std::vector<float> in = random_floats(32 * 500, -2, 2, 10);
  for (const Target& t : *targets_) {
    std::vector<float> rstd(32), out(32 * 500);
    ASSERT_EQ(run(t, "layernorm", {}, 2, in, rstd, out), 0);
    for (int64_t r = 0; r < 32; ++r) {
      const RowStats s = row_stats(in.data() + r * 500, 500);
      const double want_rstd = 1 / std::sqrt(s.m2 / 500 + 1e-5);
      expect_close(std::vector<float>{rstd[r]}, {want_rstd}, 1e-5, 0, "rstd");
      for (int64_t c = 0; c < 500; c += 37) {
        const double want = (in[r * 500 + c] - s.sum / 500) * want_rstd;
        expect_close(std::vector<float>{out[r * 500 + c]}, {want}, 1e-4, 1e-5, "normalized");
      }
    }
  }
}

// exp(x - max) is computed once per element and reloaded by the later loops (kept values).
TEST_F(EmitCppTest, SoftmaxKeepsItsExponentials) {
  const int64_t rows = 3, cols = 100;
  std::vector<float> in = random_floats(rows * cols, -3, 3, 18);
  in[cols + 99] = 7;  // row 1: the maximum in the tail
  for (const Target& t : *targets_) {
    std::vector<float> o(rows * cols), e(rows * cols);
    ASSERT_EQ(run(t, "softmax_rows", {}, 2, in, o, e), 0);
    for (int64_t r = 0; r < rows; ++r) {
      float mx = -INFINITY;
      double sum = 0;
      for (int64_t c = 0; c < cols; ++c) mx = std::max(mx, in[r * cols + c]);
      for (int64_t c = 0; c < cols; ++c) sum += std::exp(double(in[r * cols + c] - mx));
      for (int64_t c = 0; c < cols; ++c) {
        const double want = std::exp(double(in[r * cols + c] - mx));  // float subtraction
        const std::string what = std::string(cpu_isa_name(t.target.isa)) + " row " +
                                 std::to_string(r) + " col " + std::to_string(c);
        expect_close(std::vector<float>{e[r * cols + c]}, {want}, 3e-7, 0, "exp " + what);
        expect_close(std::vector<float>{o[r * cols + c]}, {want / sum}, 2e-6, 0, "softmax " + what);
      }
    }
  }
}

// A value is not kept across a write to what it reads: a store to its buffer, or an update
// of an accumulator it reads.
TEST_F(EmitCppTest, KeptValuesSeeWritesInBetween) {
  const int64_t n = 40;
  const std::vector<float> a0 = random_floats(n, -1, 1, 19), b = random_floats(n, -0.1f, 0.1f, 20);
  double sum_b = 0, s0 = 0, s1 = 0;
  for (float x : b) sum_b += x;
  for (float x : a0) s0 += std::exp(x - static_cast<float>(sum_b)), s1 += std::exp(x);
  for (const Target& t : *targets_) {
    std::vector<float> a = a0, s(2), o1(n), o2(n);
    ASSERT_EQ(run(t, "keep_invalidated", {}, 1, a, b, s, o1, o2), 0);
    const std::string what = cpu_isa_name(t.target.isa);
    expect_close(s, {s0, s1}, 1e-5, 0, "sums " + what);
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_NEAR(o1[i], std::exp(a0[i] - 2 * sum_b), 1e-5) << "new accumulator " << what;
      EXPECT_NEAR(o2[i], std::exp(2.0 * b[i]), 1e-6) << "new buffer " << what;
    }
  }
}

/// Test inputs of type t: a mix of ordinary values and edge cases (NaN, inf, signed zeros,
/// halves, zeros and -1 for division, big shift counts), as raw bytes.
std::vector<uint8_t> op_inputs(ir::DType t, int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> bytes(n * ir::dtype_size(t));
  const double specials[] = {0.0, -0.0, 0.5, -2.5, 1.0, -1.0, NAN, INFINITY, -INFINITY, 3.0, 70.0};
  for (int64_t i = 0; i < n; ++i) {
    const double v =
        i < 11 ? specials[(i + seed) % 11] : std::uniform_real_distribution<double>(-4, 4)(rng);
    uint8_t* p = bytes.data() + i * ir::dtype_size(t);
    switch (t) {
      case ir::DType::Float32: {
        const float f = static_cast<float>(v);
        std::memcpy(p, &f, 4);
        break;
      }
      case ir::DType::Float64:
        std::memcpy(p, &v, 8);
        break;
      case ir::DType::Float16: {
        const uint16_t h = f16c_half(static_cast<float>(v));
        std::memcpy(p, &h, 2);
        break;
      }
      case ir::DType::BFloat16: {
        const uint16_t h = reference_bfloat16(static_cast<float>(v));
        std::memcpy(p, &h, 2);
        break;
      }
      case ir::DType::Bool:
        *p = std::isfinite(v) && v > 0;
        break;
      default: {
        const int64_t k = std::isfinite(v) ? static_cast<int64_t>(std::round(v * 7)) : -1;
        std::memcpy(p, &k, ir::dtype_size(t));  // little endian: the low bytes
      }
    }
  }
  return bytes;
}

double element(ir::DType t, const uint8_t* p) {
  switch (t) {
    case ir::DType::Float32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case ir::DType::Float64: {
      double d;
      std::memcpy(&d, p, 8);
      return d;
    }
    case ir::DType::Float16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return f16c_float(h);
    }
    case ir::DType::BFloat16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      const uint32_t bits = static_cast<uint32_t>(h) << 16;
      float f;
      std::memcpy(&f, &bits, 4);
      return f;
    }
    case ir::DType::Bool:
    case ir::DType::UInt8:
      return *p;
    case ir::DType::Int8:
      return static_cast<int8_t>(*p);
    case ir::DType::Int32: {
      int32_t i;
      std::memcpy(&i, p, 4);
      return i;
    }
    default: {
      int64_t i;
      std::memcpy(&i, p, 8);
      return static_cast<double>(i);
    }
  }
}

// Differential: the vector targets (Sleef, intrinsics, lane loops) against the scalar target
// (libm, plain C++) on every op and element type.
TEST_F(EmitCppTest, AllOpsMatchTheScalarTarget) {
  const Target* scalar = nullptr;
  for (const Target& t : *targets_) {
    if (t.target.isa == CpuIsa::Scalar) scalar = &t;
  }
  ASSERT_NE(scalar, nullptr);
  const int64_t n = kAllOpsLanes;
  std::vector<std::vector<uint8_t>> inputs;
  for (ir::DType t : kOpTypes) {
    inputs.push_back(op_inputs(t, n, 11));
    inputs.push_back(op_inputs(t, n, 5));
  }
  auto run_all = [&](const Target& t, std::vector<std::vector<uint8_t>>* outputs) {
    for (size_t k = 0; k < std::size(kOpTypes); ++k) {
      std::vector<ir::Stmt> ignored;
      const size_t cases = op_cases(kOpTypes[k], &ignored).size();
      outputs->emplace_back(cases * n * 8, 0);
      outputs->emplace_back(cases * n, 0);
      std::vector<char*> ptrs = {reinterpret_cast<char*>(inputs[2 * k].data()),
                                 reinterpret_cast<char*>(inputs[2 * k + 1].data()),
                                 reinterpret_cast<char*>((*outputs)[2 * k].data()),
                                 reinterpret_cast<char*>((*outputs)[2 * k + 1].data())};
      std::vector<int64_t> symbols = {n};
      const std::string name = std::string("all_ops_") + ir::dtype_name(kOpTypes[k]);
      if (t.library->kernel(name)(ptrs.data(), symbols.data(), 1) != 0) return 1;
    }
    return 0;
  };
  std::vector<std::vector<uint8_t>> want;
  ASSERT_EQ(run_all(*scalar, &want), 0);
  for (const Target& t : *targets_) {
    if (&t == scalar) continue;
    std::vector<std::vector<uint8_t>> got;
    ASSERT_EQ(run_all(t, &got), 0);
    for (size_t k = 0; k < std::size(kOpTypes); ++k) {
      const ir::DType type = kOpTypes[k];
      std::vector<ir::Stmt> ignored;
      for (const OpCase& c : op_cases(type, &ignored)) {
        const ir::DType out = c.bool_result ? ir::DType::Bool : type;
        const size_t buffer = 2 * k + (c.bool_result ? 1 : 0);
        const double rtol = type == ir::DType::Float32   ? 1e-5
                            : type == ir::DType::Float64 ? 1e-13
                            : ir::is_reduced_float(type) ? 1e-2
                                                         : 0;
        for (int64_t i = 0; i < n; ++i) {
          const size_t at = (c.slot * n + i) * ir::dtype_size(out);
          const double g = element(out, got[buffer].data() + at);
          const double w = element(out, want[buffer].data() + at);
          const std::string what =
              std::string(cpu_isa_name(t.target.isa)) + " " + c.name + "(" + ir::dtype_name(type) +
              ") element " + std::to_string(i) + " a=" +
              std::to_string(element(type, inputs[2 * k].data() + i * ir::dtype_size(type))) +
              " b=" +
              std::to_string(element(type, inputs[2 * k + 1].data() + i * ir::dtype_size(type)));
          if (std::isnan(w)) {
            EXPECT_TRUE(std::isnan(g)) << what << " got " << g;
          } else if (std::isinf(w) || rtol == 0) {
            EXPECT_EQ(g, w) << what;
          } else {
            EXPECT_NEAR(g, w, rtol * std::fabs(w) + rtol * 0.1) << what;
          }
        }
      }
    }
  }
}

TEST_F(EmitCppTest, MixedLoopStructures) {
  for (const Target& t : *targets_) {
    for (int64_t n : {int64_t(3), int64_t(17), int64_t(40)}) {
      const std::string what = std::string(cpu_isa_name(t.target.isa)) + " n=" + std::to_string(n);
      std::vector<float> a = random_floats(n, -1, 1, 12);
      std::vector<int32_t> idx(n);
      for (int64_t i = 0; i < n; ++i) idx[i] = static_cast<int32_t>((i * 5) % n);
      std::vector<float> sum(1), last(2), rows(3 * n), nonaffine(n), iota(n);
      ASSERT_EQ(run(t, "mixed", {n}, 2, a, idx, sum, last, rows, nonaffine, iota), 0) << what;
      double want_sum = a[0] + a[1] + a[2];
      for (float x : a) want_sum += x;
      expect_close(sum, {want_sum}, 1e-5, 1e-6, "vector then serial accumulation " + what);
      EXPECT_EQ(last[0], a[n - 1]) << "last lane wins " << what;
      EXPECT_EQ(last[1], a[idx[n - 1]]) << "indirect, last lane wins " << what;
      for (int64_t x1 = 0; x1 < 3; ++x1) {
        for (int64_t x0 = 0; x0 < n; ++x0) {
          EXPECT_EQ(rows[x1 * n + x0], x1 == 0 ? a[x0] : (x1 == 1 ? 0.0f : 7.0f)) << what;
        }
      }
      for (int64_t x0 = 0; x0 < n; ++x0) {
        const int64_t q = static_cast<int64_t>(std::floor((x0 - 5) / 3.0)) + 2;
        const float masked = x0 >= 2 ? a[q] : 0.0f;
        EXPECT_EQ(nonaffine[x0], masked + a[x0 % 5]) << what << " x0=" << x0;
        EXPECT_EQ(iota[x0], static_cast<float>(x0 * 2 - 7)) << what;
      }
    }
  }
}

// A column reduction the scheduler asks 64 lanes of (four registers side by side) gets them
// when its vectors hold float32 only; one reading int64 argmax indices (max_pool2d's backward
// fused with batch norm's sums) gets one register's worth: int64 vectors and their masks four
// registers wide ran 7x slower on AVX-512 (codegen/cpu/loop_plan.cpp).
TEST_F(EmitCppTest, WideColumnReductionsKeepInt64LanesInOneRegister) {
  const char* const text = R"(kernel column_sums(%x: float32 in, %idx: int64 in, %1: float32 out, %2: float32 out) {
  for x0 in 0..64 vector(64) {
    t0 = accumulator sum float32
    for y0 in 0..1000 {
      t0 += load(%x, [x0 + y0*64])
    }
    %1[x0] = local(t0, float32)
  }
  for x0 in 0..64 vector(64) {
    t1 = accumulator sum float32
    for y0 in 0..1000 {
      t1 += where(eq(load(%idx, [x0 + y0*64]), index(y0, int64)), load(%x, [x0 + y0*64]), 0.0:float32)
    }
    %2[x0] = local(t1, float32)
  }
})";
  const std::vector<ir::Kernel> kernels = {ir::parse_kernel(text)};
  const std::string avx512 = emit_cpp(kernels, CppTarget{CpuIsa::Avx512, true});
  const std::string avx2 = emit_cpp(kernels, CppTarget{CpuIsa::Avx2, true});
  EXPECT_NE(avx512.find("ic::Vec<float, 64> t0"), std::string::npos) << avx512;
  EXPECT_NE(avx512.find("ic::Vec<float, 8> t1"), std::string::npos) << avx512;
  EXPECT_EQ(avx512.find("ic::Vec<int64_t, 32>"), std::string::npos) << avx512;
  EXPECT_NE(avx2.find("ic::Vec<float, 32> t0"), std::string::npos) << avx2;
  EXPECT_NE(avx2.find("ic::Vec<float, 4> t1"), std::string::npos) << avx2;
}

TEST_F(EmitCppTest, IndexComparisonsAreLaneMasks) {
  const std::vector<ir::Kernel> kernels = {ir::parse_kernel(kKernels[std::size(kKernels) - 1])};
  const std::string source = emit_cpp(kernels, CppTarget{});
  EXPECT_NE(source.find("ic::affine_lt<16>"), std::string::npos) << source;  // no int64 lanes
  EXPECT_EQ(source.find("ic::Vec<int64_t"), std::string::npos) << source;
  for (const Target& t : *targets_) {
    for (int64_t s0 : {int64_t(7), int64_t(10), int64_t(-3), int64_t(1) << 40}) {
      std::vector<std::vector<uint8_t>> out(8, std::vector<uint8_t>(40));
      std::vector<float> cat(40);
      ASSERT_EQ(run(t, "affine_cmp", {s0}, 1, out[0], out[1], out[2], out[3], out[4], out[5],
                    out[6], out[7], cat),
                0);
      for (int64_t x = 0; x < 40; ++x) {
        const int64_t i = x * 3 - 5, j = 30 - 2 * x;
        const bool want[8] = {i<s0, i <= s0, i> s0, i >= s0, i == s0, i != s0, s0 < j, s0 >= j};
        for (int k = 0; k < 8; ++k) {
          EXPECT_EQ(out[k][x], want[k])
              << cpu_isa_name(t.target.isa) << " s0=" << s0 << " x=" << x << " comparison " << k;
        }
        EXPECT_EQ(cat[x], x < 7 ? 1.0f : 2.0f);
      }
    }
  }
}

TEST_F(EmitCppTest, AllCastsMatchTheScalarTarget) {
  const Target* scalar = nullptr;
  for (const Target& t : *targets_) {
    if (t.target.isa == CpuIsa::Scalar) scalar = &t;
  }
  ASSERT_NE(scalar, nullptr);
  const int64_t n = kAllOpsLanes, types = std::size(kOpTypes);
  for (ir::DType from : kOpTypes) {
    std::vector<uint8_t> a = op_inputs(from, n, 21);
    const std::string name = std::string("all_casts_") + ir::dtype_name(from);
    std::vector<float> want(types * n);
    ASSERT_EQ(run(*scalar, name, {}, 1, a, want), 0);
    for (const Target& t : *targets_) {
      std::vector<float> got(types * n);
      ASSERT_EQ(run(t, name, {}, 1, a, got), 0);
      for (int64_t k = 0; k < types * n; ++k) {
        const bool same = got[k] == want[k] || (std::isnan(got[k]) && std::isnan(want[k]));
        EXPECT_TRUE(same) << cpu_isa_name(t.target.isa) << " " << ir::dtype_name(from) << " -> "
                          << ir::dtype_name(kOpTypes[k / n]) << " element " << k % n << ": "
                          << got[k] << " vs " << want[k] << " (input "
                          << element(from, a.data() + (k % n) * ir::dtype_size(from)) << ")";
      }
    }
  }
}

TEST_F(EmitCppTest, EmittedSourceUsesTheTargetsVectorForms) {
  const std::vector<ir::Kernel> kernels = {ir::parse_kernel(kKernels[0])};
  const std::string avx512 = emit_cpp(kernels, CppTarget{CpuIsa::Avx512, true});
  EXPECT_NE(avx512.find("#define IC_TARGET_ISA 2"), std::string::npos);
  EXPECT_NE(avx512.find("ic::loadu<16>(buf0 + x0)"), std::string::npos) << avx512;
  EXPECT_NE(avx512.find("ic::loadu_n<16>"), std::string::npos);
  EXPECT_NE(avx512.find("#pragma omp parallel for num_threads(num_threads)"), std::string::npos);
  EXPECT_NE(avx512.find("if(num_threads > 1)"), std::string::npos);
  const std::string scalar = emit_cpp(kernels, CppTarget{CpuIsa::Scalar, true});
  EXPECT_EQ(scalar.find("ic::Vec<"), std::string::npos) << scalar;
  EXPECT_NE(scalar.find("#define IC_TARGET_ISA 0"), std::string::npos);
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

const char* kernel_text(const std::string& name) {
  for (const char* text : kKernels) {
    if (std::string(text).find("kernel " + name + "(") != std::string::npos) return text;
  }
  throw std::invalid_argument("no kernel " + name);
}

TEST(EmitCppSourceTest, LaterLoopsReloadKeptValues) {
  const std::string kept = emit_cpp({ir::parse_kernel(kernel_text("softmax_rows"))}, CppTarget{});
  EXPECT_NE(kept.find("alignas(64) float y0_keep[100];"), std::string::npos) << kept;
  EXPECT_NE(kept.find("ic::storeu(y0_keep + y0, "), std::string::npos) << kept;
  EXPECT_NE(kept.find("ic::loadu_n<16>(y0_keep + y0, "), std::string::npos) << kept;
  // The second and third loops reload: the first stores once, with no second array.
  EXPECT_EQ(kept.find("y0_keep_"), std::string::npos) << kept;
  const std::string fresh =
      emit_cpp({ir::parse_kernel(kernel_text("keep_invalidated"))}, CppTarget{});
  EXPECT_EQ(fresh.find("_keep"), std::string::npos) << fresh;
}

TEST(CppCompilerTest, OneCompileIsFastAndErrorsAreReported) {
  char pattern[] = "/tmp/emit_cpp_compile_XXXXXX";
  const std::string dir = mkdtemp(pattern);
  const std::vector<ir::Kernel> kernels = {ir::parse_kernel(kKernels[0])};
  const auto start = std::chrono::steady_clock::now();
  const runtime::CppCompileResult r =
      runtime::compile_shared_library(dir, emit_cpp(kernels, CppTarget{}), runtime_header_text());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(r.ok) << r.output;
  std::printf("one-kernel compile: %.2f s (compiler reports %.2f s)\n", seconds, r.seconds);
  EXPECT_LT(seconds, 30.0);
  EXPECT_NE(r.command.find("-fopenmp"), std::string::npos);
  auto library = KernelLibrary::open(dir + "/kernels.so");
  EXPECT_NE(library->kernel("pw_f32"), nullptr);
  // Without Sleef: libm per lane (but for the inline float exp).
  const std::string no_sleef_dir = dir + "/no_sleef";
  std::filesystem::create_directories(no_sleef_dir);
  const runtime::CppCompileResult libm = runtime::compile_shared_library(
      no_sleef_dir, emit_cpp(kernels, CppTarget{CpuIsa::Avx512, false}), runtime_header_text());
  ASSERT_TRUE(libm.ok) << libm.output;
  auto libm_library = KernelLibrary::open(no_sleef_dir + "/kernels.so");
  std::vector<float> a = random_floats(20, -3, 3, 14), b(20, 1.0f), out(20 * 6);
  std::vector<char*> ptrs = {reinterpret_cast<char*>(a.data()), reinterpret_cast<char*>(b.data())};
  for (int k = 0; k < 6; ++k) ptrs.push_back(reinterpret_cast<char*>(out.data() + 20 * k));
  const int64_t twenty = 20;
  ASSERT_EQ(libm_library->kernel("pw_f32")(ptrs.data(), &twenty, 1), 0);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(out[40 + i], std::tanh(a[i])) << "libm tanh";
    // float exp is inline vector code with or without Sleef (ExpIsWithinOneUlpEverywhere)
    EXPECT_NEAR(out[20 + i], std::exp(a[i]), 2.4e-7f * std::exp(a[i])) << "inline exp";
  }
  EXPECT_THROW(library->kernel("no_such_kernel"), std::runtime_error);
  EXPECT_THROW(KernelLibrary::open(dir + "/missing.so"), std::runtime_error);

  const runtime::CppCompileResult bad =
      runtime::compile_shared_library(dir, "int broken(", runtime_header_text());
  EXPECT_FALSE(bad.ok);
  EXPECT_NE(bad.output.find("error"), std::string::npos) << bad.output;
  runtime::CppCompileOptions missing;
  missing.compiler = "/nonexistent/compiler";
  EXPECT_THROW(runtime::compile_shared_library(dir, "", "", missing), std::runtime_error);
  const std::string identity = runtime::compiler_identity();
  EXPECT_NE(identity.find('.'), std::string::npos) << identity;  // a version number
  std::printf("compiler identity: %s\n", identity.c_str());
  // A compiler with flags (as $CXX may give it): the flags reach the compile and the identity,
  // and the version is asked of the compiler, not of a flag.
  runtime::CppCompileOptions with_flags;
  with_flags.compiler = "g++ -DIC_FROM_CXX=7";
  with_flags.flags = {"-shared", "-fPIC"};
  const runtime::CppCompileResult flagged = runtime::compile_shared_library(
      dir, "#if IC_FROM_CXX != 7\n#error flag lost\n#endif\nint f() { return 1; }\n", "",
      with_flags);
  EXPECT_TRUE(flagged.ok) << flagged.output;
  const std::string flagged_identity = runtime::compiler_identity(with_flags);
  EXPECT_EQ(flagged_identity.rfind("g++ ", 0), 0u) << flagged_identity;
  EXPECT_NE(flagged_identity.find('.'), std::string::npos) << flagged_identity;
  EXPECT_NE(flagged_identity.find("-DIC_FROM_CXX=7"), std::string::npos) << flagged_identity;
  EXPECT_NE(flagged_identity, identity);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace inductor_cpp::codegen
