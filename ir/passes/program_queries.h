/// \file
/// Read-only questions passes ask about a LoopProgram: who reads a buffer, which step
/// defines it, what a kernel step stores. Shared by the passes so each stays small.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/loop_ir.h"

namespace inductor_cpp::ir {

/// For each buffer, the computes whose bodies read it.
std::map<std::string, std::set<std::string>> compute_readers(const LoopProgram& p);

/// Buffers some extern step reads or the graph returns: these must exist in memory.
std::set<std::string> buffers_needed_in_memory(const LoopProgram& p);

/// The views among `needed` that ATen must materialize (an extern step runs them with their
/// graph node's arguments), and everything they read; their sources are added to `needed`,
/// transitively, since those steps look their inputs up by graph value, not by compute.
std::set<std::string> views_to_materialize(const LoopProgram& p, std::set<std::string>& needed);

/// Computes that library calls run per output tile (LibraryCall::tile_compute): in no kernel
/// step, yet live, and named by the call so they keep their name.
std::set<std::string> tile_computes(const LoopProgram& p);

/// A program with `computes` replaced and the rest copied.
LoopProgram with_computes(const LoopProgram& p, std::map<std::string, Compute> computes);

}  // namespace inductor_cpp::ir
