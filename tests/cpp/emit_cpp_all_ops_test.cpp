/// \file
/// CPU emitter, differential: every unary and binary op and every cast the IR accepts, on
/// each element type, on the vector targets (Sleef, intrinsics, lane loops) against the scalar
/// target (libm, plain C++).
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <stdexcept>

#include "tests/cpp/emit_cpp_test_util.h"

namespace inductor_cpp::codegen::emit_test {
namespace {

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

}  // namespace

std::vector<ir::Kernel> all_ops_kernels() {
  std::vector<ir::Kernel> kernels;
  for (ir::DType t : kOpTypes) kernels.push_back(all_ops_kernel(t));
  for (ir::DType t : kOpTypes) kernels.push_back(all_casts_kernel(t));
  return kernels;
}

}  // namespace inductor_cpp::codegen::emit_test
