/// \file
/// The graph description's serialized form (JSON, schema in docs/graph_schema.md) to and from
/// `ir::Graph`. Import validates everything it reads and names the offending path in errors,
/// because the description crosses a language boundary and may come from a newer or older
/// Python side.
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "ir/aten_graph.h"

namespace inductor_cpp::inductor {

/// A description that does not follow the schema. `what()` names the JSON path, e.g.
/// "graph description: nodes[3].args[1]: reference to node 7, which comes later".
class GraphSchemaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Parses and validates a description (schema "inductor_cpp.graph", version 1).
ir::Graph graph_from_json(const nlohmann::json& desc);

/// Serializes a graph. Without sources, the result is canonical: value names are positions,
/// object keys are sorted, nothing about where the user wrote it. That form is what the cache
/// key hashes.
nlohmann::json graph_to_json(const ir::Graph& graph, bool with_sources);

/// One argument in the tagged encoding: null, {"in": i}, {"const": i}, {"val": [n, k]},
/// {"int": v}, {"float": v}, {"bool": b}, {"str": s}, {"dtype": s}, {"device": s},
/// {"layout": s}, {"memory_format": s}, {"list": [...]}. Non-finite floats are the strings
/// "inf", "-inf", "nan".
nlohmann::json arg_to_json(const ir::Arg& arg);
ir::Arg arg_from_json(const nlohmann::json& j, const std::string& path);

nlohmann::json meta_to_json(const ir::TensorMeta& meta);
ir::TensorMeta meta_from_json(const nlohmann::json& j, const std::string& path);

}  // namespace inductor_cpp::inductor
