/// \file
/// Graph description import: valid descriptions round-trip, invalid ones are rejected with
/// the JSON path of the problem; the text form is what we expect.
#include <gtest/gtest.h>

#include "inductor/graph_json.h"

namespace inductor_cpp::inductor {
namespace {

using nlohmann::json;

json meta(std::vector<int64_t> sizes, std::vector<int64_t> strides, const char* dtype = "float32") {
  return json{
      {"sizes", sizes}, {"strides", strides}, {"offset", 0}, {"dtype", dtype}, {"device", "cpu"}};
}

/// relu(x) + y * 2, with a two-output op (aten::max.dim) and getitem-style references.
json sample_description() {
  return json{
      {"schema", "inductor_cpp.graph"},
      {"version", 1},
      {"kind", "inference"},
      {"inputs", {meta({2, 3}, {3, 1}), meta({2, 3}, {3, 1})}},
      {"constants", json::array()},
      {"nodes",
       {
           {{"op", "aten::relu"},
            {"args", {{{"in", 0}}}},
            {"outputs", {meta({2, 3}, {3, 1})}},
            {"source", "m.py:3 in f: relu(x)"}},
           {{"op", "aten::mul.Tensor"},
            {"args", {{{"in", 1}}, {{"float", 2.0}}}},
            {"outputs", {meta({2, 3}, {3, 1})}}},
           {{"op", "aten::add.Tensor"},
            {"args", {{{"val", {0, 0}}}, {{"val", {1, 0}}}}},
            {"kwargs", {{"alpha", {{"int", 1}}}}},
            {"outputs", {meta({2, 3}, {3, 1})}}},
           {{"op", "aten::max.dim"},
            {"args", {{{"val", {2, 0}}}, {{"int", 1}}}},
            {"outputs", {meta({2}, {1}), meta({2}, {1}, "int64")}}},
       }},
      {"outputs", {{{"val", {3, 0}}}, {{"val", {3, 1}}}, nullptr}},
  };
}

TEST(GraphImport, ReadsEveryPart) {
  ir::Graph g = graph_from_json(sample_description());
  EXPECT_EQ(g.kind, "inference");
  ASSERT_EQ(g.inputs.size(), 2u);
  ASSERT_EQ(g.nodes.size(), 4u);
  EXPECT_EQ(g.nodes[0].source, "m.py:3 in f: relu(x)");
  EXPECT_EQ(g.nodes[2].kwargs.at(0).first, "alpha");
  EXPECT_EQ(g.nodes[3].outputs[1]->dtype, "int64");
  EXPECT_EQ(g.outputs[1], ir::Arg::value(3, 1));
  EXPECT_EQ(g.outputs[2].kind, ir::Arg::Kind::None);
}

TEST(GraphImport, TextForm) {
  const std::string expected =
      "graph inference(%in0: float32[2, 3]{3, 1} cpu, %in1: float32[2, 3]{3, 1} cpu) {\n"
      "  %0 = aten::relu(%in0) -> (float32[2, 3]{3, 1} cpu)\n"
      "  %1 = aten::mul.Tensor(%in1, 2.0) -> (float32[2, 3]{3, 1} cpu)\n"
      "  %2 = aten::add.Tensor(%0, %1, alpha=1) -> (float32[2, 3]{3, 1} cpu)\n"
      "  %3 = aten::max.dim(%2, 1) -> (float32[2]{1} cpu, int64[2]{1} cpu)\n"
      "  return (%3, %3#1, None)\n"
      "}\n";
  EXPECT_EQ(ir::to_text(graph_from_json(sample_description())), expected);
}

TEST(GraphImport, RoundTripsThroughJson) {
  const ir::Graph g = graph_from_json(sample_description());
  const json again = graph_to_json(g, /*with_sources=*/true);
  EXPECT_EQ(ir::to_text(graph_from_json(again)), ir::to_text(g));
  EXPECT_EQ(graph_to_json(graph_from_json(again), true), again);
}

TEST(GraphImport, CanonicalFormDropsSources) {
  const json canonical =
      graph_to_json(graph_from_json(sample_description()), /*with_sources=*/false);
  EXPECT_EQ(canonical.dump().find("m.py"), std::string::npos);
}

TEST(GraphImport, LiteralsOfEveryKind) {
  const json literals = {nullptr,
                         {{"int", -7}},
                         {{"float", "inf"}},
                         {{"float", "-inf"}},
                         {{"float", "nan"}},
                         {{"bool", true}},
                         {{"str", "mean"}},
                         {{"dtype", "bfloat16"}},
                         {{"device", "cuda:0"}},
                         {{"layout", "strided"}},
                         {{"memory_format", "channels_last"}},
                         {{"list", {{{"int", 1}}, nullptr}}}};
  for (const json& lit : literals) {
    const ir::Arg a = arg_from_json(lit, "x");
    EXPECT_EQ(arg_to_json(a), lit) << lit.dump();
  }
}

void expect_rejected(const json& desc, const std::string& fragment) {
  try {
    graph_from_json(desc);
    FAIL() << "accepted an invalid description; expected an error mentioning " << fragment;
  } catch (const GraphSchemaError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(GraphImport, RejectsInvalidDescriptions) {
  json d = sample_description();
  d["version"] = 99;
  expect_rejected(d, "$.version");

  d = sample_description();
  d["nodes"][1]["args"][0] = {{"val", {2, 0}}};  // forward reference
  expect_rejected(d, "nodes[1].args[0]: reference to node 2");

  d = sample_description();
  d["outputs"][0] = {{"val", {0, 5}}};
  expect_rejected(d, "outputs[0]: node 0 has no output 5");

  d = sample_description();
  d["nodes"][0]["args"][0] = {{"in", 9}};
  expect_rejected(d, "input 9 does not exist");

  d = sample_description();
  d["nodes"][0]["args"][0] = {{"complex", 1}};
  expect_rejected(d, "unknown argument tag 'complex'");

  d = sample_description();
  d["inputs"][0].erase("strides");
  expect_rejected(d, "inputs[0]: missing field 'strides'");

  d = sample_description();
  d["nodes"][0]["op"] = "relu";
  expect_rejected(d, "nodes[0].op");
}

TEST(GraphImport, SymbolicSizesAndNumberInputs) {
  const json desc = {
      {"schema", "inductor_cpp.graph"},
      {"version", 1},
      {"kind", "forward"},
      {"inputs",
       {{{"scalar", "int"}, {"expr", "s0"}},
        {{"sizes", {"s0", 6}},
         {"strides", {6, 1}},
         {"offset", 0},
         {"dtype", "float32"},
         {"device", "cpu"},
         {"requires_grad", false}}}},
      {"constants", json::array()},
      {"nodes",
       {{{"op", "sym::mul"}, {"args", {{{"in", 0}}, {{"int", 2}}}}, {"outputs", {nullptr}}},
        {{"op", "aten::view"},
         {"args", {{{"in", 1}}, {{"list", {{{"int", -1}}, {{"val", {0, 0}}}}}}}},
         {"outputs",
          {{{"sizes", {"((s0*3)//s0)", "2*s0"}},
            {"strides", {"2*s0", 1}},
            {"offset", 0},
            {"dtype", "float32"},
            {"device", "cpu"}}}}}}},
      {"outputs", {{{"val", {1, 0}}}, {{"val", {0, 0}}}}},
  };
  const ir::Graph g = graph_from_json(desc);
  EXPECT_EQ(g.inputs[0].scalar_type, "int");
  EXPECT_EQ(g.inputs[0].expr, "s0");
  EXPECT_TRUE(ir::is_scalar_op(g.nodes[0].op));
  EXPECT_FALSE(ir::is_scalar_op(g.nodes[1].op));
  EXPECT_EQ(ir::to_text(g),
            "graph forward(%in0: int s0, %in1: float32[s0, 6]{6, 1} cpu) {\n"
            "  %0 = sym::mul(%in0, 2) -> (_)\n"
            "  %1 = aten::view(%in1, [-1, %0]) -> (float32[((s0*3)//s0), 2*s0]{2*s0, 1} cpu)\n"
            "  return (%1, %0)\n"
            "}\n");
  const json again = graph_to_json(g, /*with_sources=*/true);
  EXPECT_EQ(again.at("inputs"), desc.at("inputs"));
  EXPECT_EQ(graph_to_json(graph_from_json(again), true), again);
}

TEST(GraphImport, SplitsOpNames) {
  EXPECT_EQ(ir::split_op_name("aten::add.Tensor"),
            std::make_pair(std::string("aten::add"), std::string("Tensor")));
  EXPECT_EQ(ir::split_op_name("aten::relu"),
            std::make_pair(std::string("aten::relu"), std::string()));
  EXPECT_EQ(ir::split_op_name("prims::convert_element_type.default").second, "default");
}

}  // namespace
}  // namespace inductor_cpp::inductor
