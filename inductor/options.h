/// \file
/// Compile options as the compiler sees them (validated and defaulted on the Python side,
/// python/inductor_cpp/options.py, which also reads the INDUCTOR_CPP_* environment variables).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace inductor_cpp::inductor {

enum class Strict {
  Off,        ///< fall back and log
  Graphs,     ///< "strict": True — a graph that cannot be compiled is an error
  Everything  ///< "strict": "all" — also every op that runs as an ATen fallback
};

struct CompileOptions {
  Strict strict = Strict::Off;
  bool use_cache = true;
  /// "freezing": True — parameters are constants (stock Inductor's freezing contract): packed
  /// weight copies are trusted by version counter, with no per-call content check. True also
  /// enters `codegen` (and so the cache key): bf16 mm / addmm are planned on the AMX GEMM only
  /// then (inductor/lower/library_calls.cpp).
  bool freezing = false;
  /// Options that change what is generated; exactly these enter the cache key.
  nlohmann::json codegen = nlohmann::json::object();

  /// From the JSON the Python side sends: {"strict": false|true|"all", "cache": bool, ...};
  /// every other key is a code generation option.
  static CompileOptions from_json(const nlohmann::json& j);
};

}  // namespace inductor_cpp::inductor
