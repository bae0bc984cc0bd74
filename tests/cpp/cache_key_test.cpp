/// \file
/// Cache key stability: equal graphs (whatever their value names or source lines) give equal
/// keys; anything that changes the artifact changes the key.
#include <gtest/gtest.h>
#include <stdlib.h>

#include "inductor/cache_key.h"
#include "inductor/graph_json.h"

namespace inductor_cpp::inductor {
namespace {

using nlohmann::json;

json description(std::vector<int64_t> sizes, const char* op = "aten::relu",
                 const char* source = "a.py:1") {
  json m = {
      {"sizes", sizes},
      {"strides", sizes.size() == 2 ? std::vector<int64_t>{sizes[1], 1} : std::vector<int64_t>{1}},
      {"offset", 0},
      {"dtype", "float32"},
      {"device", "cpu"}};
  return json{
      {"schema", "inductor_cpp.graph"},
      {"version", 1},
      {"kind", "inference"},
      {"inputs", {m}},
      {"constants", json::array()},
      {"nodes", {{{"op", op}, {"args", {{{"in", 0}}}}, {"outputs", {m}}, {"source", source}}}},
      {"outputs", {{{"val", {0, 0}}}}}};
}

KeyInputs inputs_for(const json& desc) {
  return {graph_to_json(graph_from_json(desc), false), json{{"mode", "default"}},
          json{{"torch", "2.11.0"}, {"python", "cpython-311"}}, "build-1",
          json{{"cxx", "c++"}, {"isa", {"avx2"}}}};
}

TEST(CacheKey, IsStableHex) {
  const std::string key = cache_key(inputs_for(description({4, 8})));
  EXPECT_EQ(key.size(), 64u);
  EXPECT_EQ(key.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(key, cache_key(inputs_for(description({4, 8}))));
}

TEST(CacheKey, IgnoresSourceLocations) {
  EXPECT_EQ(cache_key(inputs_for(description({4, 8}, "aten::relu", "a.py:1"))),
            cache_key(inputs_for(description({4, 8}, "aten::relu", "elsewhere.py:99"))));
}

TEST(CacheKey, ChangesWithEverythingThatMatters) {
  const KeyInputs base = inputs_for(description({4, 8}));
  const std::string k = cache_key(base);
  EXPECT_NE(k, cache_key(inputs_for(description({4, 9}))));
  EXPECT_NE(k, cache_key(inputs_for(description({4, 8}, "aten::sigmoid"))));
  KeyInputs other = base;
  other.codegen_options["mode"] = "max-autotune";
  EXPECT_NE(k, cache_key(other));
  other = base;
  other.build_id = "build-2";
  EXPECT_NE(k, cache_key(other));
  other = base;
  other.toolchain["isa"] = {"avx512f"};
  EXPECT_NE(k, cache_key(other));
  other = base;
  other.environment["torch"] = "2.12.0";
  EXPECT_NE(k, cache_key(other));
}

/// Every knob the registry marks as changing generated code changes the key when set away from
/// its default; a knob that does not (the cache's own directory) leaves it alone.
TEST(CacheKey, ChangesWithEveryCodegenKnob) {
  const std::string k = cache_key(inputs_for(description({4, 8})));
  for (const knobs::KnobInfo& knob : knobs::all()) {
    const std::string other = knob.type == knobs::Type::Bool
                                  ? (std::string(knob.default_value) == "1" ? "0" : "1")
                                  : std::string(knob.default_value) + "7";
    ::setenv(knob.name, other.c_str(), 1);
    EXPECT_EQ(cache_key(inputs_for(description({4, 8}))) != k, knob.codegen) << knob.name;
    ::unsetenv(knob.name);
  }
}

/// A pinned value: if this changes, every user's cache is invalidated — make it deliberate.
TEST(CacheKey, PinnedValue) {
  EXPECT_EQ(cache_key(inputs_for(description({2, 2}))),
            "705a0982e9d244d9b23777b7d56ac9506bd6c57fe63f0ef6a1e9fd661b3074d6");
}

}  // namespace
}  // namespace inductor_cpp::inductor
