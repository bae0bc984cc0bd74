/// \file
/// Verifier of the library calls extern steps carry (library_call.h); the rules are listed in
/// ir/verify.h. Called by the program verifier (verify.cpp) for each such step.
#include <algorithm>
#include <set>
#include <string>

#include "ir/verify_internal.h"

namespace inductor_cpp::ir::verify_detail {

namespace {

struct Arity {
  size_t operands;
  size_t outputs;
};

/// Operand and output counts per op, as library_call.h lists them.
Arity library_arity(LibraryOp op) {
  switch (op) {
    case LibraryOp::mm:
    case LibraryOp::addmm:
    case LibraryOp::bmm:
    case LibraryOp::conv2d:
      return {2, 1};
    case LibraryOp::conv2d_backward:
      return {3, 3};
    case LibraryOp::attention:
      return {4, 2};
    case LibraryOp::attention_backward:
      return {7, 3};
  }
  return {0, 0};
}

bool lists(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

void check_arity(const ExternCall& call, const std::string& where) {
  const LibraryCall& lib = *call.library;
  const Arity arity = library_arity(lib.op);
  const std::string op = library_op_name(lib.op);
  if (lib.operands.size() != arity.operands) {
    fail(where, "library " + op + " has " + std::to_string(lib.operands.size()) +
                    " operands but takes " + std::to_string(arity.operands));
  }
  if (call.outputs.size() != arity.outputs) {
    fail(where, "library " + op + " has " + std::to_string(call.outputs.size()) +
                    " outputs but makes " + std::to_string(arity.outputs));
  }
}

/// The call reads its operands whole, so the step must list them (the passes look no further
/// than `inputs` for what an extern reads).
void check_operands(const ExternCall& call, const std::string& where) {
  for (const std::string& operand : call.library->operands) {
    if (!operand.empty() && !lists(call.inputs, operand)) {
      fail(where, "library operand " + operand + " is not among the step's inputs");
    }
  }
}

/// The buffer whose coordinates the epilogue is written over: the tile's input when there is
/// a tile, else the first output. Null when there is none.
const Buffer* epilogue_space(const LoopProgram& p, const ExternCall& call) {
  const LibraryCall& lib = *call.library;
  if (!lib.tile_input.empty()) return p.find_buffer(lib.tile_input);
  if (call.outputs.empty() || call.outputs[0].empty()) return nullptr;
  return p.find_buffer(call.outputs[0]);
}

void check_epilogue_load(const LoopProgram& p, const ExternCall& call, const ValueNode& n,
                         const std::set<std::string>& vars, const std::string& where) {
  const std::string load = "epilogue load of " + n.name;
  const Buffer* b = p.find_buffer(n.name);
  if (b == nullptr) fail(where, load + ": unknown buffer");
  if (!lists(call.inputs, n.name)) fail(where, load + ": not among the step's inputs");
  if (n.dtype != b->dtype) {
    fail(where, load + " as " + dtype_name(n.dtype) + " but the buffer is " + dtype_name(b->dtype));
  }
  if (n.index.size() != b->sizes.size()) {
    fail(where, load + " has " + std::to_string(n.index.size()) +
                    " indices but the buffer has rank " + std::to_string(b->sizes.size()));
  }
  check_load_exprs(n, vars, where + " epilogue");
}

void check_epilogue(const LoopProgram& p, const ExternCall& call, const std::string& where) {
  const LibraryCall& lib = *call.library;
  if (!lib.epilogue) return;
  if (!library_op_has_epilogue(lib.op)) {
    fail(where, std::string("library ") + library_op_name(lib.op) + " has an epilogue");
  }
  const Buffer* space = epilogue_space(p, call);
  if (space == nullptr) fail(where, "has an epilogue but no known output to apply it over");
  std::set<std::string> vars;  // i<k> over the result's dims, and the program's symbols
  for (size_t k = 0; k < space->sizes.size(); ++k) vars.insert(range_var(k));
  for (const auto& [name, range] : p.symbol_ranges) vars.insert(name);
  for_each_node(lib.epilogue, [&](const ValueNode& n) {
    if (n.kind == ValueKind::Local && (n.name != kEpilogueAccumulator || !is_floating(n.dtype))) {
      fail(where, "epilogue reads local(" + n.name + ", " + dtype_name(n.dtype) +
                      ") (its only local is the result, local(" + kEpilogueAccumulator +
                      ", <floating type>))");
    }
    if (n.kind == ValueKind::IndexValue)
      check_vars(n.index.at(0), vars, where, "epilogue index value");
    if (n.kind == ValueKind::Load) check_epilogue_load(p, call, n, vars, where);
  });
}

/// The tile compute runs inside the call, one output tile at a time: the program keeps it
/// (pointwise, so a tile is a window of its ranges) but no kernel step may store it.
void check_tile(const LoopProgram& p, const ExternCall& call, const std::string& where) {
  const LibraryCall& lib = *call.library;
  if (lib.tile_compute.empty() && lib.tile_input.empty()) return;
  if (lib.tile_compute.empty()) fail(where, "has a tile input but no tile compute");
  if (lib.tile_input.empty())
    fail(where, "has tile compute " + lib.tile_compute + " but no tile input");
  const std::string tile = "tile compute " + lib.tile_compute;
  auto it = p.computes.find(lib.tile_compute);
  if (it == p.computes.end()) fail(where, tile + " is not a compute");
  if (it->second.is_reduction())
    fail(where, tile + " is a reduction (tiles run pointwise computes)");
  for (size_t s = 0; s < p.steps.size(); ++s) {
    if (p.steps[s].kind == Step::Kind::Kernel &&
        lists(p.steps[s].kernel.computes, lib.tile_compute)) {
      fail(where,
           tile + " is also stored by step " + std::to_string(s) + " (the library call runs it)");
    }
  }
  if (!p.find_buffer(lib.tile_input))
    fail(where, "tile input " + lib.tile_input + " is not a buffer");
}

}  // namespace

void check_library_call(const LoopProgram& p, const ExternCall& call, const std::string& where) {
  if (!call.library) return;
  check_arity(call, where);
  check_operands(call, where);
  check_tile(p, call, where);  // before the epilogue: the tile input shapes it
  check_epilogue(p, call, where);
}

}  // namespace inductor_cpp::ir::verify_detail
