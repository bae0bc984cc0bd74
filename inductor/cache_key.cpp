/// \file
/// cache_key(): a versioned, length-delimited concatenation hashed with sha256.
#include "inductor/cache_key.h"

#include "kernels_cache/sha256.h"

namespace inductor_cpp::inductor {

std::string cache_key(const KeyInputs& in) {
  kernels_cache::Sha256 h;
  auto part = [&h](const std::string& name, const std::string& bytes) {
    h.update(name + ":" + std::to_string(bytes.size()) + "\n");
    h.update(bytes);
    h.update("\n");
  };
  part("inductor_cpp-cache-key", "1");
  part("graph", in.canonical_graph.dump());
  part("options", in.codegen_options.dump());
  part("environment", in.environment.dump());
  part("build", in.build_id);
  part("toolchain", in.toolchain.dump());
  if (!in.codegen_knobs.empty()) part("knobs", in.codegen_knobs);  // default keys unchanged
  return h.finish_hex();
}

}  // namespace inductor_cpp::inductor
