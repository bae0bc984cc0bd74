/// \file
/// CompileOptions::from_json.
#include "inductor/options.h"

#include <stdexcept>

#include "inductor/gpu_tuning.h"

namespace inductor_cpp::inductor {

CompileOptions CompileOptions::from_json(const nlohmann::json& j) {
  CompileOptions o;
  if (!j.is_object()) throw std::invalid_argument("compile options must be a JSON object");
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& name = it.key();
    const auto& v = it.value();
    if (name == "strict") {
      if (v == "all") {
        o.strict = Strict::Everything;
      } else if (v.is_boolean()) {
        o.strict = v.get<bool>() ? Strict::Graphs : Strict::Off;
      } else {
        throw std::invalid_argument("option 'strict' must be true, false or \"all\"");
      }
    } else if (name == "cache") {
      o.use_cache = v.is_boolean() ? v.get<bool>()
                                   : throw std::invalid_argument("option 'cache' must be a bool");
    } else if (name == "freezing") {
      o.freezing = v.is_boolean() ? v.get<bool>()
                                  : throw std::invalid_argument("option 'freezing' must be a bool");
      if (o.freezing) o.codegen[name] = true;  // bf16 matmuls are planned on AMX only then
    } else if (name == "gpu_tuning") {
      if (!v.is_string()) throw std::invalid_argument("option 'gpu_tuning' must be a string");
      parse_gpu_tuning(v.get<std::string>());  // names and values checked now, not at a build
      o.codegen[name] = v;
    } else {
      o.codegen[name] = v;
    }
  }
  return o;
}

}  // namespace inductor_cpp::inductor
