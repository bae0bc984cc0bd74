/// \file
/// The knobs registry: every INDUCTOR_CPP_* environment variable is declared once
/// (knob_list.h) and read only through these functions, from C++ and (through _C) from Python.
/// Values are read from the environment at each call (callers that want a value fixed for the
/// process keep it, as the matrix library does); an empty value is the same as unset.
///
/// The first read also warns, once per process on stderr, about each INDUCTOR_CPP_* variable in
/// the environment that is not a knob, naming the closest known one (a typo would otherwise be
/// silently ignored). Python takes these warnings first, at `import inductor_cpp`, and logs them.
/// Pure C++17; knows nothing of libtorch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "knobs/knob_list.h"

namespace inductor_cpp::knobs {

#define INDUCTOR_CPP_KNOB_ENUM(id, ...) id,
enum class Knob { INDUCTOR_CPP_KNOBS(INDUCTOR_CPP_KNOB_ENUM) };
#undef INDUCTOR_CPP_KNOB_ENUM

enum class Type { Bool, Count, Float, Text, Path };
enum class Scope { Compiler, Runtime, Cache, Logging, MatrixTuning, Bench, Tests, Scripts };

/// One declaration of knob_list.h.
struct KnobInfo {
  Knob knob;
  const char* name;  ///< "INDUCTOR_CPP_..."
  Type type;
  const char* default_value;  ///< "" = none (the reader decides)
  bool codegen;               ///< can change generated code or the plan: part of the cache key
  Scope scope;
  const char* option;  ///< the torch.compile option it backs, or ""
  const char* doc;     ///< one line
};

/// Every knob, in declaration order.
const std::vector<KnobInfo>& all();
const KnobInfo& info(Knob knob);
/// The knob named `name`, or nullopt.
std::optional<Knob> find(std::string_view name);
/// Lowercase names of Type and Scope values, as the docs spell them ("count", "matrix-tuning").
const char* type_name(Type type);
const char* scope_name(Scope scope);

/// The variable's value, if set and not empty.
std::optional<std::string> raw(Knob knob);
/// raw(), else the declared default.
std::string get_text(Knob knob);
/// A Bool knob: false for "0", "false", "off", "no" (any case), true for any other value.
bool get_bool(Knob knob);
/// A Count knob: the value if it is a decimal integer, else the default's (nullopt if none).
std::optional<uint64_t> get_count(Knob knob);
/// A Float knob: the value if it is a number, else the default's (nullopt if none).
std::optional<double> get_float(Knob knob);
/// Set to something its type cannot read (a Count that is not a decimal integer, a Float that
/// is not a number), for readers that refuse such values rather than use the default.
bool malformed(Knob knob);

/// "NAME=value\n" for every codegen knob whose value differs from its default (Bool values
/// normalized to 0/1), in declaration order; "" when all are at their defaults. The cache key
/// takes it whole (inductor/cache_key.h).
std::string codegen_values();

/// A variable outside the registry that the code needs (PATH, HOME, CXX, CUDA_HOME,
/// CUDA_LAUNCH_BLOCKING), or nullopt when unset. Knobs are read through the functions above.
std::optional<std::string> host_env(const char* name);

/// One message per INDUCTOR_CPP_* variable in the environment that is not a knob, sorted
/// ("INDUCTOR_CPP_CACHE_DRI is not a known knob; did you mean INDUCTOR_CPP_CACHE_DIR?").
std::vector<std::string> unknown_variable_warnings();
/// The first call in the process: unknown_variable_warnings(); every later call: none. The
/// first read of a knob calls it and prints what it gets on stderr.
std::vector<std::string> take_unknown_warnings();
/// The known knob name closest to `name` (fewest single-character edits, a swap of neighbours
/// counting one), the first declared on ties.
std::string closest_name(std::string_view name);

}  // namespace inductor_cpp::knobs
