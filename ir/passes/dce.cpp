/// \file
/// Dead-code elimination over computes, kernel steps and buffers.
#include "ir/passes/dce.h"

#include <set>
#include <vector>

#include "ir/passes/program_queries.h"

namespace inductor_cpp::ir {

namespace {

std::set<std::string> live_computes(const LoopProgram& p) {
  std::set<std::string> live;
  std::vector<std::string> pending;
  for (const std::string& b : buffers_needed_in_memory(p)) pending.push_back(b);
  // A tile compute runs inside its library call, not in a kernel step: the call keeps it,
  // and through it what it reads (followed below like any live compute's reads).
  for (const std::string& t : tile_computes(p)) pending.push_back(t);
  while (!pending.empty()) {
    const std::string name = pending.back();
    pending.pop_back();
    auto it = p.computes.find(name);
    if (it == p.computes.end() || !live.insert(name).second) continue;
    for (const std::string& b : buffers_read(it->second.body)) pending.push_back(b);
  }
  return live;
}

}  // namespace

LoopProgram eliminate_dead_code(const LoopProgram& program) {
  const std::set<std::string> live = live_computes(program);
  LoopProgram out;
  out.outputs = program.outputs;
  out.symbol_ranges = program.symbol_ranges;
  for (const auto& [name, c] : program.computes) {
    if (live.count(name)) out.computes.emplace(name, c);
  }
  std::set<std::string> used;  // buffers some surviving step or compute touches
  for (const Step& s : program.steps) {
    if (s.kind == Step::Kind::Extern) {
      out.steps.push_back(s);
      used.insert(s.call.inputs.begin(), s.call.inputs.end());
      used.insert(s.call.outputs.begin(), s.call.outputs.end());
      continue;
    }
    Step kept = s;
    kept.kernel.computes.clear();
    for (const std::string& c : s.kernel.computes) {
      if (live.count(c)) kept.kernel.computes.push_back(c);
    }
    if (!kept.kernel.computes.empty()) out.steps.push_back(std::move(kept));
  }
  for (const auto& [name, c] : out.computes) {
    used.insert(name);
    for (const std::string& b : buffers_read(c.body)) used.insert(b);
  }
  used.insert(program.outputs.begin(), program.outputs.end());
  for (const Buffer& b : program.buffers) {
    // Inputs and constants stay: their positions are the graph's calling convention.
    if (used.count(b.name) || b.origin == BufferOrigin::Input || b.origin == BufferOrigin::Constant)
      out.buffers.push_back(b);
  }
  return out;
}

}  // namespace inductor_cpp::ir
