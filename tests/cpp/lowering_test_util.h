/// \file
/// Shared by the lowering tests (lowering_test.cpp, pooling_lowering_test.cpp): ATen-level
/// graphs built in their JSON form (inductor/graph_json.h) from tensor metadata, argument
/// values and nodes, and their lowering with the program verified.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "inductor/graph_json.h"
#include "inductor/lower/lower_graph.h"
#include "ir/verify.h"

namespace inductor_cpp::inductor::lowering_test {

using nlohmann::json;

inline std::vector<int64_t> contiguous(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> s(sizes.size(), 1);
  for (size_t k = sizes.size(); k-- > 1;) s[k - 1] = s[k] * sizes[k];
  return s;
}

/// A tensor's metadata on the CPU (contiguous unless `strides` are given).
inline json meta(const std::vector<int64_t>& sizes, const char* dtype = "float32",
                 std::optional<std::vector<int64_t>> strides = std::nullopt) {
  return json{{"sizes", sizes},
              {"strides", strides ? *strides : contiguous(sizes)},
              {"offset", 0},
              {"dtype", dtype},
              {"device", "cpu"}};
}

// Arguments: graph input k, output k of node n, and constants.
inline json in(int k) {
  return json{{"in", k}};
}
inline json val(int n, int k = 0) {
  return json{{"val", {n, k}}};
}
inline json i(int64_t v) {
  return json{{"int", v}};
}
inline json f(double v) {
  return json{{"float", v}};
}
inline json b(bool v) {
  return json{{"bool", v}};
}
inline json ints(const std::vector<int64_t>& v) {
  json l = json::array();
  for (int64_t x : v) l.push_back(i(x));
  return json{{"list", l}};
}

inline json node(const char* op, json args, std::vector<json> outputs,
                 json kwargs = json::object()) {
  return json{{"op", op}, {"args", args}, {"kwargs", kwargs}, {"outputs", outputs}};
}

/// A graph of `inputs` and `nodes` returning `outputs` (by default the last node's first output).
inline ir::Graph graph(std::vector<json> inputs, std::vector<json> nodes, json outputs = nullptr) {
  if (outputs.is_null()) outputs = json::array({val(static_cast<int>(nodes.size()) - 1)});
  return graph_from_json(json{{"schema", "inductor_cpp.graph"},
                              {"version", 1},
                              {"kind", "inference"},
                              {"inputs", inputs},
                              {"constants", json::array()},
                              {"nodes", nodes},
                              {"outputs", outputs}});
}

/// The lowered graph, after checking that its program verifies.
inline LoweredGraph lower(const ir::Graph& g) {
  LoweredGraph l = lower_graph(g);
  ir::verify(l.program);
  return l;
}

/// lower(g), expecting every node to be generated.
inline LoweredGraph lower_all_generated(const ir::Graph& g) {
  LoweredGraph l = lower(g);
  for (const LoweringDecision& d : l.decisions)
    EXPECT_TRUE(d.generated) << "node " << d.node << " (" << g.nodes[d.node].op
                             << "): " << d.reason;
  return l;
}

/// The reason node `n` fell back ("" when it was generated).
inline std::string reason_of(const ir::Graph& g, size_t n = 0) {
  const LoweredGraph l = lower(g);
  EXPECT_EQ(l.decisions.size(), g.nodes.size());
  return l.decisions.at(n).reason;
}

/// The extern step of graph node `node`.
inline const ir::ExternCall& extern_of(const LoweredGraph& l, int32_t node) {
  for (const ir::Step& s : l.program.steps)
    if (s.kind == ir::Step::Kind::Extern && s.call.graph_node == node) return s.call;
  throw std::runtime_error("no extern step for node " + std::to_string(node));
}

}  // namespace inductor_cpp::inductor::lowering_test
