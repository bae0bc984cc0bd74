/// \file
/// Read-only queries over a LoopProgram.
#include "ir/passes/program_queries.h"

namespace inductor_cpp::ir {

std::map<std::string, std::set<std::string>> compute_readers(const LoopProgram& p) {
  std::map<std::string, std::set<std::string>> readers;
  for (const auto& [name, c] : p.computes) {
    for (const std::string& b : buffers_read(c.body)) readers[b].insert(name);
  }
  return readers;
}

std::set<std::string> buffers_needed_in_memory(const LoopProgram& p) {
  std::set<std::string> needed;
  for (const Step& s : p.steps) {
    if (s.kind == Step::Kind::Extern) needed.insert(s.call.inputs.begin(), s.call.inputs.end());
  }
  for (const std::string& o : p.outputs) {
    if (!o.empty()) needed.insert(o);
  }
  return needed;
}

std::set<std::string> views_to_materialize(const LoopProgram& p, std::set<std::string>& needed) {
  std::set<std::string> views;
  std::vector<std::string> pending(needed.begin(), needed.end());
  while (!pending.empty()) {
    const std::string name = pending.back();
    pending.pop_back();
    auto it = p.computes.find(name);
    if (it == p.computes.end() || !it->second.view || !views.insert(name).second) continue;
    for (const std::string& src : buffers_read(it->second.body)) {
      needed.insert(src);
      pending.push_back(src);
    }
  }
  return views;
}

std::set<std::string> tile_computes(const LoopProgram& p) {
  std::set<std::string> tiles;
  for (const Step& s : p.steps) {
    if (s.kind != Step::Kind::Extern || !s.call.library) continue;
    if (!s.call.library->tile_compute.empty()) tiles.insert(s.call.library->tile_compute);
  }
  return tiles;
}

LoopProgram with_computes(const LoopProgram& p, std::map<std::string, Compute> computes) {
  LoopProgram out = p;
  out.computes = std::move(computes);
  return out;
}

}  // namespace inductor_cpp::ir
