/// \file
/// Library calls (ir/library_call.h) in the IR text: an extern step's library clause prints and
/// parses back exactly, with every optional part and with none, the schedule's text prints
/// the same clause, and malformed clauses fail saying where. (The verifier, CSE and DCE rules
/// about library calls are tested in verify_test, cse_test and dce_test.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "ir/ir_text.h"
#include "ir/ir_text_internal.h"
#include "ir/library_call.h"
#include "ir/passes/schedule.h"
#include "ir/verify.h"

namespace inductor_cpp::ir {
namespace {

using ::testing::HasSubstr;

void expect_program_round_trip(const std::string& text) {
  const LoopProgram p = parse_program(text);
  EXPECT_EQ(program_to_text(p), text);
  EXPECT_EQ(parse_program(program_to_text(p)), p);
}

/// An addmm whose epilogue adds a bias and clamps at 0, then a tile compute squaring the
/// result: every clause of the library form. The attributes cover an integer, a fraction, a
/// negative zero (which must not print as "0"), and a value too large to print as an integer.
const char* const kEveryClause =
    "program {\n"
    "  buffer %in0: float32[8, 16]{16, 1} input 0 cpu\n"
    "  buffer %in1: float32[16, 4]{4, 1} input 1 cpu\n"
    "  buffer %c2: float32[4]{1} constant 0 cpu\n"
    "  buffer %5: float32[8, 4]{4, 1} extern cpu\n"
    "  buffer %8: float32[8, 4]{4, 1} computed cpu\n"
    "  compute %8 pointwise[8, 4] = mul(load(%5, [i0, i1]), load(%5, [i0, i1]))\n"
    "  extern node 5 (%in0, %in1, %c2) -> (%8) library addmm(%in0, %in1) {alpha=0.5, beta=2, "
    "huge=3e+20, zero=-0.0} epilogue=maximum(add(local(acc, float32), load(%c2, [i1])), "
    "0.0:float32) tile=%8 from %5 absorbs [6, 7]\n"
    "  output %8\n"
    "}\n";

TEST(LibraryCallTextTest, EveryClauseRoundTrips) {
  expect_program_round_trip(kEveryClause);
  const LoopProgram p = parse_program(kEveryClause);
  EXPECT_NO_THROW(verify(p));
  ASSERT_EQ(p.steps.size(), 1u);
  ASSERT_TRUE(p.steps[0].call.library.has_value());
  const LibraryCall& call = *p.steps[0].call.library;
  EXPECT_EQ(call.op, LibraryOp::addmm);
  EXPECT_EQ(call.operands, (std::vector<std::string>{"%in0", "%in1"}));
  EXPECT_EQ(call.attr("alpha", 1.0), 0.5);
  EXPECT_EQ(call.attr("huge", 0.0), 3e20);
  EXPECT_TRUE(std::signbit(call.attr("zero", 1.0)));
  const Value bias = load("%c2", DType::Float32, {Expr::var("i1")});
  EXPECT_EQ(call.epilogue, binary(BinaryOp::maximum,
                                  binary(BinaryOp::add, epilogue_accumulator(DType::Float32), bias),
                                  constant_float(0.0, DType::Float32)));
  EXPECT_EQ(call.tile_compute, "%8");
  EXPECT_EQ(call.tile_input, "%5");
  // Not part of equality, so the round trip above does not cover it.
  EXPECT_EQ(call.absorbed_nodes, (std::vector<int32_t>{6, 7}));
}

TEST(LibraryCallTextTest, NoOptionalClausesAndAbsentOperands) {
  const std::string text =
      "program {\n"
      "  buffer %q: float16[2, 4, 16, 8]{512, 128, 8, 1} input 0 cpu\n"
      "  buffer %k: float16[2, 4, 16, 8]{512, 128, 8, 1} input 1 cpu\n"
      "  buffer %v: float16[2, 4, 16, 8]{512, 128, 8, 1} input 2 cpu\n"
      "  buffer %3: float16[2, 4, 16, 8]{512, 128, 8, 1} extern cpu\n"
      "  extern node 3 (%q, %k, %v) -> (%3, _) library attention(%q, %k, %v, _)\n"
      "  output %3\n"
      "}\n";
  expect_program_round_trip(text);
  const LoopProgram p = parse_program(text);
  EXPECT_NO_THROW(verify(p));
  const LibraryCall& call = *p.steps[0].call.library;
  EXPECT_EQ(call.operands, (std::vector<std::string>{"%q", "%k", "%v", ""}));
  EXPECT_TRUE(call.attrs.empty());
  EXPECT_FALSE(call.epilogue);
  EXPECT_TRUE(call.tile_compute.empty() && call.tile_input.empty());
  EXPECT_TRUE(call.absorbed_nodes.empty());
  // An extern step without a clause stays one.
  EXPECT_FALSE(parse_program("program {\n  extern node 1 (%a) -> (%b)\n}\n").steps[0].call.library);
}

// A node a library call took over (a symbolic plan's activation): its value is the buffer it
// read, no op runs (loop_ir.h ExternCall::alias).
TEST(LibraryCallTextTest, AliasStepsRoundTrip) {
  const std::string text =
      "program {\n"
      "  buffer %in0: float32[s0, 16]{16, 1} input 0 cpu\n"
      "  buffer %in1: float32[16, 32]{32, 1} input 1 cpu\n"
      "  buffer %1: float32[s0, 32]{32, 1} extern cpu\n"
      "  buffer %2: float32[s0, 32]{32, 1} extern cpu\n"
      "  extern node 1 (%in0, %in1) -> (%1) library mm(%in0, %in1) epilogue=tanh(local(acc, float32)) absorbs [2]\n"
      "  extern view alias node 2 (%1) -> (%2)\n"
      "  output %2\n"
      "  symbol s0 in [2, 9223372036854775807]\n"
      "}\n";
  expect_program_round_trip(text);
  const LoopProgram p = parse_program(text);
  EXPECT_NO_THROW(verify(p));
  EXPECT_TRUE(p.steps[1].call.view && p.steps[1].call.alias);
}

TEST(LibraryCallTextTest, BuiltCallPrintsAndParses) {
  LibraryCall call;
  call.op = LibraryOp::conv2d;
  call.operands = {"%x", "%w"};
  call.attrs = {{"stride_h", 2}, {"padding_w", 1}, {"scale", 0.1}};
  call.epilogue = cast(epilogue_accumulator(DType::Float64), DType::Float32);
  EXPECT_EQ(library_text(call, {}),
            "library conv2d(%x, %w) {padding_w=1, scale=0.1, stride_h=2} "
            "epilogue=cast(local(acc, float64), float32)");
  text::Cursor c(library_text(call, {}).substr(std::string("library ").size()));
  EXPECT_EQ(text::parse_library_at(c, {}), call);
  EXPECT_TRUE(c.at_end());
}

TEST(LibraryCallTextTest, ScheduleTextPrintsTheSameClause) {
  const LoopProgram p = parse_program(kEveryClause);
  const std::string line = kEveryClause;
  const std::string clause = library_text(*p.steps[0].call.library, buffer_types(p));
  EXPECT_THAT(line, HasSubstr(clause));
  EXPECT_EQ(scheduled_to_text(schedule(p)),
            "extern node 5 (%in0, %in1, %c2) -> (%8) " + clause + "\n");
}

TEST(LibraryCallTextTest, ParseErrorsSayWhere) {
  const auto parse_step = [](const std::string& step) {
    return [step] {
      parse_program("program {\n  buffer %a: float32[4]{1} input 0 cpu\n  " + step + "\n}\n");
    };
  };
  const auto expect_error = [](auto parse, std::initializer_list<const char*> needles) {
    try {
      parse();
      ADD_FAILURE() << "parsed without error";
    } catch (const std::invalid_argument& e) {
      for (const char* needle : needles) EXPECT_THAT(e.what(), HasSubstr(needle));
    }
  };
  expect_error(parse_step("extern node 1 (%a) -> (%b) library gemm(%a, %a)"),
               {"line 3", "unknown library op 'gemm'"});
  expect_error(parse_step("extern node 1 (%a) -> (%b) library mm(%a, %a) {alpha=x}"),
               {"line 3", "expected a number"});
  expect_error(parse_step("extern node 1 (%a) -> (%b) library mm(%a, %a) {alpha=1, alpha=2}"),
               {"attribute alpha is given twice"});
  expect_error(parse_step("extern node 1 (%a) -> (%b) library mm(%a, %a) tile=%b"),
               {"expected 'from'"});
  expect_error(parse_step("extern node 1 (%a) -> (%b) library mm(%a, %a) absorbs [6] extra"),
               {"unexpected text"});
}

}  // namespace
}  // namespace inductor_cpp::ir
