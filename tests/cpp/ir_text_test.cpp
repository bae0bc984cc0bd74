/// \file
/// Tests of the IR text form: values, programs and kernels print and parse back exactly
/// (parse(print(x)) == x, print(parse(t)) == t for canonical text), floats round-trip bit for
/// bit, and malformed text fails with the line and what was expected. Also the small loop and
/// kernel IR helpers the round trip rests on (equality, name tables, strides, ranges).
#include "ir/ir_text.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "ir/ir_text_internal.h"

namespace inductor_cpp::ir {
namespace {

using ::testing::HasSubstr;

Expr v(const char* name) {
  return Expr::var(name);
}

/// Expects parse to throw std::invalid_argument whose message contains every needle.
template <typename F>
void expect_parse_error(F parse, std::initializer_list<const char*> needles) {
  try {
    parse();
    ADD_FAILURE() << "parsed without error";
  } catch (const std::invalid_argument& e) {
    for (const char* needle : needles) EXPECT_THAT(e.what(), HasSubstr(needle));
  }
}

void expect_value_round_trip(const Value& value) {
  const std::string text = to_string(value);
  EXPECT_EQ(parse_value(text), value) << text;
  EXPECT_EQ(to_string(parse_value(text)), text);
}

void expect_program_round_trip(const std::string& text) {
  const LoopProgram p = parse_program(text);
  EXPECT_EQ(program_to_text(p), text);
  EXPECT_EQ(parse_program(program_to_text(p)), p);
}

void expect_kernel_round_trip(const std::string& text) {
  const Kernel k = parse_kernel(text);
  EXPECT_EQ(kernel_to_text(k), text);
  EXPECT_EQ(parse_kernel(kernel_to_text(k)), k);
}

// ---- Values -------------------------------------------------------------------------------

TEST(ValueTextTest, PrintsLoadTypesOnlyWithoutContext) {
  Value x = binary(BinaryOp::add, load("%in0", DType::Float32, {v("i0"), v("i1")}),
                   constant_float(1.0, DType::Float32));
  EXPECT_EQ(to_string(x), "add(load(%in0:float32, [i0, i1]), 1.0:float32)");
  EXPECT_EQ(to_string(x, {{"%in0", DType::Float32}}), "add(load(%in0, [i0, i1]), 1.0:float32)");
  // A type that differs from the context's is written out, so nothing is lost.
  EXPECT_EQ(to_string(x, {{"%in0", DType::Float16}}),
            "add(load(%in0:float32, [i0, i1]), 1.0:float32)");
  EXPECT_EQ(parse_value("add(load(%in0, [i0, i1]), 1.0:float32)", {{"%in0", DType::Float32}}), x);
  EXPECT_EQ(to_string(Value()), "<null>");
}

TEST(ValueTextTest, ConstantsRoundTripExactly) {
  const double doubles[] = {0.0,
                            -0.0,
                            1.0,
                            -2.5,
                            0.1,
                            1.0 / 3.0,
                            1e20,
                            1e-300,
                            std::numeric_limits<double>::denorm_min(),
                            std::numeric_limits<double>::max(),
                            static_cast<double>(0.1f),
                            INFINITY,
                            -INFINITY,
                            std::nan("")};
  for (double d : doubles) {
    for (DType t : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
      expect_value_round_trip(constant_float(d, t));
    }
  }
  for (int64_t i : {int64_t{0}, int64_t{-7}, std::numeric_limits<int64_t>::min(),
                    std::numeric_limits<int64_t>::max()}) {
    expect_value_round_trip(constant_int(i, DType::Int64));
  }
  expect_value_round_trip(constant_int(200, DType::UInt8));
  expect_value_round_trip(constant_int(1, DType::Bool));
  expect_value_round_trip(constant_int(0, DType::Bool));
  EXPECT_EQ(to_string(constant_int(1, DType::Bool)), "true:bool");
  EXPECT_EQ(to_string(constant_int(-3, DType::Int32)), "-3:int32");
  EXPECT_EQ(to_string(constant_float(-0.0, DType::Float32)), "-0.0:float32");
  EXPECT_EQ(to_string(constant_float(std::nan(""), DType::Float32)), "nan:float32");
  EXPECT_EQ(to_string(constant_float(-INFINITY, DType::Float64)), "-inf:float64");
  // An integral literal is accepted for a float type and reads as that number.
  EXPECT_EQ(parse_value("2:float32"), constant_float(2.0, DType::Float32));
}

TEST(ValueTextTest, FloatTextIsShortest) {
  EXPECT_EQ(text::float_text(0.1), "0.1");
  EXPECT_EQ(text::float_text(1.0), "1.0");
  EXPECT_EQ(text::float_text(1e20), "1e+20");
  EXPECT_EQ(text::float_text(-1.5e-7), "-1.5e-07");
  EXPECT_EQ(text::float_text(static_cast<double>(0.1f)), "0.10000000149011612");
}

TEST(ValueTextTest, EveryOpRoundTrips) {
  Value f = load("%x", DType::Float32, {v("i0")});
  Value g = load("%y", DType::Float32, {v("i0")});
  Value i = load("%n", DType::Int64, {v("i0")});
#define INDUCTOR_CPP_CHECK_UNARY(op) \
  expect_value_round_trip(           \
      unary(UnaryOp::op,             \
            UnaryOp::op == UnaryOp::bitwise_not || UnaryOp::op == UnaryOp::logical_not ? i : f));
  INDUCTOR_CPP_UNARY_OPS(INDUCTOR_CPP_CHECK_UNARY)
#undef INDUCTOR_CPP_CHECK_UNARY
  int binary_count = 0;
#define INDUCTOR_CPP_CHECK_BINARY(op)                                                          \
  {                                                                                            \
    const bool integer_only = std::string(#op).find("bitwise") == 0 ||                         \
                              std::string(#op).find("shift") != std::string::npos;             \
    expect_value_round_trip(binary(BinaryOp::op, integer_only ? i : f, integer_only ? i : g)); \
    ++binary_count;                                                                            \
  }
  INDUCTOR_CPP_BINARY_OPS(INDUCTOR_CPP_CHECK_BINARY)
#undef INDUCTOR_CPP_CHECK_BINARY
  EXPECT_GT(binary_count, 30);
  Value cond = binary(BinaryOp::lt, f, g);
  expect_value_round_trip(where(cond, f, g));
  expect_value_round_trip(cast(i, DType::Float32));
  expect_value_round_trip(index_value(v("i0") * 8 + v("i1"), DType::Int64));
  expect_value_round_trip(local("acc0", DType::Float32));
  EXPECT_EQ(to_string(where(cond, f, g)),
            "where(lt(load(%x:float32, [i0]), load(%y:float32, [i0])), load(%x:float32, [i0]), "
            "load(%y:float32, [i0]))");
}

TEST(ValueTextTest, MaskedAndIndirectLoads) {
  Value idx = load("%idx", DType::Int64, {v("i0")});
  Value gathered =
      load("%in1", DType::Float32, {v("%ind0"), v("i1")}, lt(v("i0"), 5), {idx}, {Expr(10)});
  const std::string text =
      "load(%in1:float32, [%ind0, i1], mask=i0 < 5, indirect=[load(%idx:int64, [i0])], "
      "bounds=[10])";
  EXPECT_EQ(to_string(gathered), text);
  expect_value_round_trip(gathered);
  expect_value_round_trip(
      load("%p", DType::Float16, {min(v("i0"), 3), mod(v("i1") + 1, 8)}, le(v("i0") * 2, v("s0"))));
  expect_value_round_trip(load("%scalar", DType::Float64, {}));
}

TEST(ValueTextTest, ParseErrorsSayWhere) {
  expect_parse_error([] { parse_value("load(%x, [i0])"); }, {"column 6", "needs its dtype"});
  expect_parse_error([] { parse_value("frobnicate(1.0:float32)"); },
                     {"column 1", "unknown value op 'frobnicate'"});
  expect_parse_error([] { parse_value("1.0:float33"); }, {"unknown dtype 'float33'"});
  expect_parse_error([] { parse_value("add(1.0:float32, 2:int64)"); }, {"column"});
  expect_parse_error([] { parse_value("load(%x:float32, [i0 +])"); }, {"bad index expression"});
  expect_parse_error([] { parse_value("neg(1.0:float32) extra"); }, {"unexpected text"});
  expect_parse_error([] { parse_value("maybe:bool"); }, {"column 1", "unknown literal 'maybe'"});
  expect_parse_error([] { parse_value("2:bool"); }, {"true or false"});
  expect_parse_error([] { parse_value("1.5:int32"); }, {"bad integer literal '1.5'"});
  expect_parse_error([] { parse_value("load(%x:float32, [i0], colour=1)"); },
                     {"unknown load argument 'colour'"});
}

// ---- Programs -----------------------------------------------------------------------------

const char* const kPointwiseAndReduction =
    "program {\n"
    "  buffer %in0: float32[8, 16]{16, 1} input 0 cpu\n"
    "  buffer %2: float32[8, 16]{16, 1} computed cpu\n"
    "  buffer %3: float32[8]{1} computed cpu\n"
    "  buffer %4: float32[16, 8]{1, 16} computed cpu\n"
    "  buffer %5: float32[8]{1} extern cpu\n"
    "  buffer %6: float32[16, 8]{1, 16} extern cpu\n"
    "  compute %2 (node 2) pointwise[8, 16] = add(load(%in0, [i0, i1]), 1.0:float32)\n"
    "  compute %3 (node 3) reduce sum[8] over [16] = load(%2, [i0, r0])\n"
    "  compute %4 view pointwise[16, 8] = load(%2, [i1, i0])\n"
    "  kernel %2, %3\n"
    "  extern node 4 (%3) -> (%5, _)\n"
    "  extern view node 6 (%2) -> (%6)\n"
    "  output %3, _, %5\n"
    "}\n";

TEST(ProgramTextTest, PointwiseReductionViewExtern) {
  expect_program_round_trip(kPointwiseAndReduction);
  const LoopProgram p = parse_program(kPointwiseAndReduction);
  ASSERT_EQ(p.buffers.size(), 6u);
  EXPECT_EQ(p.buffer("%in0").origin, BufferOrigin::Input);
  EXPECT_EQ(p.buffer("%in0").index, 0);
  EXPECT_EQ(p.buffer("%4").strides, (std::vector<Expr>{1, 16}));
  const Compute& sum = p.computes.at("%3");
  EXPECT_TRUE(sum.is_reduction());
  EXPECT_EQ(sum.reduce_op, ReduceOp::sum);
  EXPECT_EQ(sum.graph_node, 3);
  EXPECT_EQ(sum.body, load("%2", DType::Float32, {v("i0"), v("r0")}));
  EXPECT_TRUE(p.computes.at("%4").view);
  EXPECT_EQ(p.computes.at("%4").graph_node, -1);
  ASSERT_EQ(p.steps.size(), 3u);
  EXPECT_EQ(p.steps[0].kernel.computes, (std::vector<std::string>{"%2", "%3"}));
  EXPECT_EQ(p.steps[1].kind, Step::Kind::Extern);
  EXPECT_EQ(p.steps[1].call.outputs, (std::vector<std::string>{"%5", ""}));
  EXPECT_TRUE(p.steps[2].call.view);
  EXPECT_EQ(p.outputs, (std::vector<std::string>{"%3", "", "%5"}));
}

TEST(ProgramTextTest, ArgmaxWelfordIndirectAndDynamicShapes) {
  expect_program_round_trip(
      "program {\n"
      "  buffer %in0: float32[s0, 32]{32, 1} input 0 cpu\n"
      "  buffer %in1: int64[4]{1} input 1 cpu\n"
      "  buffer %c0: float16[s0]{1}+(s0 + 2) constant 0 cuda:0\n"
      "  buffer %v: bfloat16[3]{2}+5 computed cpu\n"
      "  buffer %2: int64[s0]{1} computed cpu\n"
      "  buffer %3: float32[s0]{1} computed cpu\n"
      "  buffer %4: float32[4, 32]{32, 1} computed cpu\n"
      "  buffer %5: bool[s0, 32]{32, 1} computed cpu\n"
      "  compute %v pointwise[3] = cast(index(i0*2, int64), bfloat16)\n"
      "  compute %2 reduce argmax[s0] over [32] = load(%in0, [i0, r0])\n"
      "  compute %3 reduce welford_m2[s0] over [32] = load(%in0, [i0, r0])\n"
      "  compute %4 pointwise[4, 32] = load(%in0, [%ind0, i1], indirect=[load(%in1, [i0])], "
      "bounds=[s0])\n"
      "  compute %5 pointwise[s0, 32] = where(isnan(load(%in0, [i0, i1])), true:bool, "
      "lt(cast(load(%c0, [i0], mask=i1 < 16), float32), -inf:float32))\n"
      "  kernel %2\n"
      "  kernel %3\n"
      "  kernel\n"
      "  output %2\n"
      "  symbol s0 in [2, 9223372036854775807]\n"
      "  symbol s1 in [-9223372036854775808, 0]\n"
      "}\n");
}

TEST(ProgramTextTest, PrintsWhatWasBuilt) {
  LoopProgram p;
  Buffer in{"%in0", DType::Float64, {Expr(4)}, {Expr(1)}, Expr(0), BufferOrigin::Input, "cpu", 0};
  Buffer out{"%1", DType::Float64, {Expr(4)}, {Expr(1)}, Expr(0), BufferOrigin::Computed, "cpu"};
  p.buffers = {in, out};
  Compute c;
  c.name = "%1";
  c.ranges = {Expr(4)};
  c.body = unary(UnaryOp::exp, load("%in0", DType::Float64, {v("i0")}));
  c.graph_node = 1;
  p.computes.emplace(c.name, c);
  Step s;
  s.kernel.computes = {"%1"};
  p.steps = {s};
  p.outputs = {"%1"};
  EXPECT_EQ(program_to_text(p),
            "program {\n"
            "  buffer %in0: float64[4]{1} input 0 cpu\n"
            "  buffer %1: float64[4]{1} computed cpu\n"
            "  compute %1 (node 1) pointwise[4] = exp(load(%in0, [i0]))\n"
            "  kernel %1\n"
            "  output %1\n"
            "}\n");
  EXPECT_EQ(parse_program(program_to_text(p)), p);
  // A scalar program: rank-0 buffers print as [] {}.
  LoopProgram scalar;
  scalar.buffers = {{"%in0", DType::Int32, {}, {}, Expr(0), BufferOrigin::Input, "cpu", 0}};
  scalar.outputs = {"%in0"};
  EXPECT_EQ(program_to_text(scalar),
            "program {\n  buffer %in0: int32[]{} input 0 cpu\n  output %in0\n}\n");
  EXPECT_EQ(parse_program(program_to_text(scalar)), scalar);
}

TEST(ProgramTextTest, ReadsNonCanonicalText) {
  // Comments, blank lines, extra spaces and computes before their buffers are all fine;
  // printing gives the canonical form back.
  const LoopProgram p = parse_program(
      "# a comment\n"
      "program {\n"
      "\n"
      "  compute   %1 pointwise[ 4 ] =   neg( load( %in0 , [ i0 ] ) )\n"
      "  buffer %1 : float32 [4] {1} computed cpu\n"
      "    # indented comment\n"
      "  buffer %in0: float32[4]{1} input 0 cpu\n"
      "  kernel %1\n"
      "}\n");
  EXPECT_EQ(program_to_text(p),
            "program {\n"
            "  buffer %1: float32[4]{1} computed cpu\n"
            "  buffer %in0: float32[4]{1} input 0 cpu\n"
            "  compute %1 pointwise[4] = neg(load(%in0, [i0]))\n"
            "  kernel %1\n"
            "}\n");
}

TEST(ProgramTextTest, ParseErrorsNameTheLine) {
  expect_parse_error([] { parse_program(""); }, {"program {"});
  expect_parse_error([] { parse_program("program {\n  buffer %a: float32[1]{1} input 0 cpu\n"); },
                     {"no closing '}'"});
  expect_parse_error([] { parse_program("program {\n  widget %a\n}\n"); },
                     {"line 2", "unknown item 'widget'"});
  expect_parse_error(
      [] { parse_program("program {\n\n  buffer %a: float32[1]{1} sideways 0 cpu\n}\n"); },
      {"line 3", "unknown buffer origin 'sideways'"});
  expect_parse_error(
      [] { parse_program("program {\n  compute %a pointwise[1] = neg(load(%b, [i0]))\n}\n"); },
      {"line 2", "needs its dtype"});
  expect_parse_error(
      [] {
        parse_program(
            "program {\n  buffer %a: float32[1]{1} input 0 cpu\n"
            "  compute %b reduce mean[1] over [2] = load(%a, [i0])\n}\n");
      },
      {"line 3", "unknown reduce op 'mean'"});
  expect_parse_error([] { parse_program("program {\n  output %a\n  output %b\n}\n"); },
                     {"line 3", "a second output line"});
  expect_parse_error([] { parse_program("program {\n}\nprogram {\n}\n"); },
                     {"line 3", "after the end"});
  expect_parse_error(
      [] {
        parse_program(
            "program {\n  buffer %a: float32[1]{1} input 0 cpu\n"
            "  buffer %a: float32[1]{1} input 1 cpu\n}\n");
      },
      {"line 3", "declared twice"});
  expect_parse_error([] { parse_program("program {\n  symbol s0 in [2, x]\n}\n"); },
                     {"line 2", "expected an integer"});
}

// ---- Kernels ------------------------------------------------------------------------------

TEST(KernelTextTest, HeaderExampleRoundTrips) {
  const std::string text =
      "kernel k0(%in0: float32 in, %3: float32 out) {\n"
      "  for i0 in 0..8 parallel(chunk=1) {\n"
      "    acc0 = accumulator sum float32\n"
      "    for r0 in 0..1024 vector(16) {\n"
      "      acc0 += load(%in0, [i0*1024 + r0])\n"
      "    }\n"
      "    %3[i0] = local(acc0, float32)\n"
      "  }\n"
      "}\n";
  expect_kernel_round_trip(text);
  const Kernel k = parse_kernel(text);
  EXPECT_EQ(k.name, "k0");
  ASSERT_EQ(k.params.size(), 2u);
  EXPECT_FALSE(k.params[0].written);
  EXPECT_TRUE(k.params[1].written);
  ASSERT_EQ(k.body.size(), 1u);
  const Stmt& outer = k.body[0];
  EXPECT_EQ(outer.kind, StmtKind::For);
  EXPECT_TRUE(outer.parallel);
  EXPECT_EQ(outer.chunk, 1);
  ASSERT_EQ(outer.body.size(), 3u);
  EXPECT_EQ(outer.body[0], Stmt::define_accumulator("acc0", ReduceOp::sum, DType::Float32));
  EXPECT_EQ(outer.body[1].vector_width, 16);
  EXPECT_EQ(outer.body[1].extent, Expr(1024));
  EXPECT_EQ(outer.body[2], Stmt::store("%3", v("i0"), local("acc0", DType::Float32)));
}

TEST(KernelTextTest, BuiltKernelPrintsAndParses) {
  Kernel k;
  k.name = "k_argmax";
  k.params = {{"%in0", DType::Float16, false},
              {"%idx", DType::Int64, false},
              {"%2", DType::Int64, true},
              {"%3", DType::Float16, true}};
  k.symbols = {"s0"};
  Value x = cast(load("%in0", DType::Float16, {v("i0") * 32 + v("r0")}, lt(v("r0"), v("s0"))),
                 DType::Float32);
  Value gathered = load("%in0", DType::Float16, {v("%ind0")}, Expr(1),
                        {load("%idx", DType::Int64, {v("i0")})}, {v("s0") * 32});
  std::vector<Stmt> reduce_body = {Stmt::let("t0", unary(UnaryOp::abs, x)),
                                   Stmt::accumulate("acc0", local("t0", DType::Float32), v("r0"))};
  std::vector<Stmt> row = {Stmt::define_accumulator("acc0", ReduceOp::argmax, DType::Float32),
                           Stmt::loop("r0", min(Expr(32), v("s0")), reduce_body),
                           Stmt::store("%2", v("i0"), local("acc0", DType::Int64)),
                           Stmt::store("%3", v("i0"), gathered)};
  Stmt outer = Stmt::loop("i0", floordiv(v("s0") + 3, 4), row);
  outer.parallel = true;
  k.body = {outer};
  const std::string text = kernel_to_text(k);
  EXPECT_EQ(text,
            "kernel k_argmax(%in0: float16 in, %idx: int64 in, %2: int64 out, %3: float16 out) "
            "symbols(s0) {\n"
            "  for i0 in 0..(s0 + 3) // 4 parallel {\n"
            "    acc0 = accumulator argmax float32\n"
            "    for r0 in 0..min(32, s0) {\n"
            "      let t0 = abs(cast(load(%in0, [i0*32 + r0], mask=r0 < s0), float32))\n"
            "      acc0 += local(t0, float32) at r0\n"
            "    }\n"
            "    %2[i0] = local(acc0, int64)\n"
            "    %3[i0] = load(%in0, [%ind0], indirect=[load(%idx, [i0])], bounds=[s0*32])\n"
            "  }\n"
            "}\n");
  EXPECT_EQ(parse_kernel(text), k);
  expect_kernel_round_trip(text);
}

TEST(KernelTextTest, EmptyAndAttributeForms) {
  expect_kernel_round_trip("kernel k() {\n}\n");
  expect_kernel_round_trip(
      "kernel k1(%o: float32 out) {\n"
      "  for i0 in 0..4 parallel vector(8) {\n"
      "    for i1 in 0..2 {\n"
      "    }\n"
      "  }\n"
      "  for i2 in 0..3 parallel(chunk=7) {\n"
      "    %o[i2] = 0.5:float32\n"
      "  }\n"
      "}\n");
}

TEST(KernelTextTest, ParseErrorsNameTheLine) {
  expect_parse_error([] { parse_kernel(""); }, {"kernel"});
  expect_parse_error([] { parse_kernel("kernel k(%a: float32 inout) {\n}\n"); },
                     {"line 1", "in or out"});
  expect_parse_error([] { parse_kernel("kernel k() {\n  for i0 in 0..4 {\n}\n"); },
                     {"line 1", "no closing '}'"});
  expect_parse_error([] { parse_kernel("kernel k() {\n  for i0 in 0..4\n  }\n}\n"); },
                     {"line 2", "ends with '{'"});
  expect_parse_error([] { parse_kernel("kernel k() {\n  for i0 in 0..(4 {\n  }\n}\n"); },
                     {"line 2", "bad loop extent"});
  expect_parse_error([] { parse_kernel("kernel k() {\n  acc = accumulator mean float32\n}\n"); },
                     {"line 2", "unknown reduce op 'mean'"});
  expect_parse_error([] { parse_kernel("kernel k() {\n  %x[0] = load(%x, [0])\n}\n"); },
                     {"line 2", "needs its dtype"});
  expect_parse_error([] { parse_kernel("kernel k() {\n}\n}\n"); }, {"line 3", "after the end"});
}

TEST(ProgramTextTest, InvalidProgramsRoundTripToo) {
  // A load whose type differs from its buffer's keeps it written out, and an unknown buffer
  // keeps its type: the text never loses what a broken pass produced.
  expect_program_round_trip(
      "program {\n"
      "  buffer %in0: float32[4]{1} input 0 cpu\n"
      "  buffer %1: float64[4]{1} computed cpu\n"
      "  compute %1 pointwise[4] = add(load(%in0:float64, [i0]), load(%ghost:float64, [i0]))\n"
      "  kernel %1, %nothing\n"
      "  output %nothing\n"
      "}\n");
}

// ---- Loop and kernel IR helpers -----------------------------------------------------------

TEST(LoopIrTest, NameTables) {
#define INDUCTOR_CPP_CHECK_REDUCE(op) \
  EXPECT_EQ(reduce_op_from_name(reduce_op_name(ReduceOp::op)), ReduceOp::op);
  INDUCTOR_CPP_REDUCE_OPS(INDUCTOR_CPP_CHECK_REDUCE)
#undef INDUCTOR_CPP_CHECK_REDUCE
  EXPECT_STREQ(reduce_op_name(ReduceOp::welford_m2), "welford_m2");
  EXPECT_EQ(reduce_op_from_name("mean"), std::nullopt);
  EXPECT_STREQ(buffer_origin_name(BufferOrigin::Extern), "extern");
  EXPECT_STREQ(stmt_kind_name(StmtKind::DefineAccumulator), "DefineAccumulator");
  EXPECT_EQ(range_var(2), "i2");
  EXPECT_EQ(reduce_var(0), "r0");
}

TEST(LoopIrTest, ReduceResultTypes) {
  EXPECT_EQ(reduce_result_type(ReduceOp::argmax, DType::Float16), DType::Int64);
  EXPECT_EQ(reduce_result_type(ReduceOp::argmin, DType::Int32), DType::Int64);
  EXPECT_EQ(reduce_result_type(ReduceOp::any, DType::Float32), DType::Bool);
  EXPECT_EQ(reduce_result_type(ReduceOp::welford_m2, DType::Float64), DType::Float64);
  EXPECT_EQ(reduce_result_type(ReduceOp::sum, DType::Int32), DType::Int32);
  Compute c;
  c.name = "%1";
  c.ranges = {Expr(4)};
  c.body = load("%in0", DType::Float32, {v("i0"), v("r0")});
  EXPECT_EQ(c.dtype(), DType::Float32);
  c.reduce_ranges = {Expr(8)};
  c.reduce_op = ReduceOp::argmax;
  EXPECT_EQ(c.dtype(), DType::Int64);
  EXPECT_THROW(Compute().dtype(), std::logic_error);
}

TEST(LoopIrTest, EqualityComparesWhatMatters) {
  Compute a;
  a.name = "%1";
  a.ranges = {Expr(4)};
  a.body = constant_float(1.0, DType::Float32);
  Compute b = a;
  b.reduce_op = ReduceOp::max;  // meaningless for a pointwise compute
  EXPECT_EQ(a, b);
  a.reduce_ranges = b.reduce_ranges = {Expr(2)};
  EXPECT_FALSE(a == b);
  b.reduce_op = a.reduce_op;
  EXPECT_EQ(a, b);
  b.graph_node = 7;
  EXPECT_FALSE(a == b);

  Stmt l1 = Stmt::loop("i0", Expr(8), {});
  Stmt l2 = l1;
  l2.chunk = 4;  // chunk only matters for parallel loops
  EXPECT_EQ(l1, l2);
  l1.parallel = l2.parallel = true;
  EXPECT_FALSE(l1 == l2);
  EXPECT_FALSE(Stmt::let("t", constant_float(1.0, DType::Float32)) ==
               Stmt::let("u", constant_float(1.0, DType::Float32)));
  EXPECT_EQ(Stmt::let("t", constant_float(1.0, DType::Float32)).dtype, DType::Float32);

  Step k1, k2;
  k1.kernel.computes = {"%1"};
  k2.kernel.computes = {"%1"};
  k2.call.graph_node = 3;  // unused by a kernel step
  EXPECT_EQ(k1, k2);
  k2.kind = Step::Kind::Extern;
  EXPECT_FALSE(k1 == k2);
}

TEST(LoopIrTest, ContiguousStrides) {
  EXPECT_EQ(contiguous_strides({Expr(8), Expr(16)}), (std::vector<Expr>{16, 1}));
  EXPECT_EQ(contiguous_strides({}), std::vector<Expr>{});
  // As in c10, a size-0 dimension counts as 1.
  EXPECT_EQ(contiguous_strides({Expr(3), Expr(0), Expr(2)}), (std::vector<Expr>{2, 2, 1}));
  EXPECT_EQ(contiguous_strides({v("s0"), Expr(4)}), (std::vector<Expr>{4, 1}));
  EXPECT_EQ(contiguous_strides({Expr(2), v("s0"), Expr(4)}),
            (std::vector<Expr>{v("s0") * 4, 4, 1}));
}

TEST(LoopIrTest, RangesOfCompute) {
  LoopProgram p;
  p.symbol_ranges["s0"] = {2, 100};
  Compute c;
  c.ranges = {Expr(8), v("s0")};
  c.reduce_ranges = {Expr(16)};
  const RangeMap r = ranges_of(c, p);
  EXPECT_EQ(r.at("i0"), (Interval{0, 7}));
  EXPECT_EQ(r.at("i1"), (Interval{0, 99}));
  EXPECT_EQ(r.at("r0"), (Interval{0, 15}));
  EXPECT_EQ(r.at("s0"), (Interval{2, 100}));
  EXPECT_EQ(r.size(), 4u);
}

TEST(LoopIrTest, BufferLookup) {
  const LoopProgram p = parse_program(kPointwiseAndReduction);
  EXPECT_EQ(p.buffer("%3").sizes, std::vector<Expr>{Expr(8)});
  EXPECT_EQ(p.find_buffer("%9"), nullptr);
  EXPECT_THROW(p.buffer("%9"), std::out_of_range);
  LoopProgram q = p;
  EXPECT_EQ(p, q);
  q.symbol_ranges["s0"] = {2, 3};
  EXPECT_FALSE(p == q);
}

}  // namespace
}  // namespace inductor_cpp::ir
