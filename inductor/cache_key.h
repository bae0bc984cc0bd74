/// \file
/// The cache key of a graph: sha256 over everything that decides the compiled artifact.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "knobs/knobs.h"

namespace inductor_cpp::inductor {

struct KeyInputs {
  nlohmann::json canonical_graph;  ///< graph_to_json(graph, /*with_sources=*/false)
  nlohmann::json codegen_options;  ///< CompileOptions::codegen
  nlohmann::json environment;      ///< from Python: torch version, Python ABI tag
  std::string build_id;            ///< fingerprint.h
  nlohmann::json toolchain;        ///< fingerprint.h
  /// The environment's knobs that change generated code (knobs::codegen_values()), read when
  /// the inputs are made; "" when all are at their defaults.
  std::string codegen_knobs = knobs::codegen_values();
};

/// 64 lowercase hex characters. Stable: the same inputs give the same key in every process
/// (JSON objects serialize with sorted keys).
std::string cache_key(const KeyInputs& in);

}  // namespace inductor_cpp::inductor
