/// \file
/// The knobs registry: typed reads (defaults, empty = unset, malformed values), the codegen
/// values the cache key takes, and the warning about unknown INDUCTOR_CPP_* variables.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <set>
#include <string>

#include "knobs/knobs.h"

namespace inductor_cpp::knobs {
namespace {

/// Sets (or, with nullptr, unsets) a variable for the scope; restores it after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name), saved_(host_env(name)) {
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (saved_)
      ::setenv(name_, saved_->c_str(), 1);
    else
      ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> saved_;
};

TEST(Knobs, EveryNameIsDeclaredOnceWithItsPrefixAndADoc) {
  std::set<std::string> names;
  for (const KnobInfo& k : all()) {
    EXPECT_EQ(std::string(k.name).rfind("INDUCTOR_CPP_", 0), 0u) << k.name;
    EXPECT_TRUE(names.insert(k.name).second) << k.name << " declared twice";
    EXPECT_NE(std::string(k.doc), "") << k.name;
    EXPECT_EQ(find(k.name), k.knob);
    EXPECT_EQ(&info(k.knob), &k);
  }
  EXPECT_FALSE(find("INDUCTOR_CPP_NOT_A_KNOB"));
}

TEST(Knobs, DeclaredDefaultsReadAsTheirType) {
  for (const KnobInfo& k : all()) {
    const std::string d = k.default_value;
    if (d.empty()) continue;
    ScopedEnv spelled(k.name, d.c_str());  // the default, spelled out, parses
    EXPECT_FALSE(malformed(k.knob)) << k.name;
    if (k.type == Type::Bool) {
      EXPECT_TRUE(d == "0" || d == "1") << k.name;
    }
  }
}

TEST(Knobs, BoolReadsFalseSpellingsInAnyCase) {
  ScopedEnv cache("INDUCTOR_CPP_CACHE", nullptr);
  EXPECT_TRUE(get_bool(Knob::Cache));  // declared default "1"
  for (const char* off : {"0", "false", "OFF", "No"}) {
    ScopedEnv set("INDUCTOR_CPP_CACHE", off);
    EXPECT_FALSE(get_bool(Knob::Cache)) << off;
  }
  for (const char* on : {"1", "yes", "true", "anything"}) {
    ScopedEnv set("INDUCTOR_CPP_CACHE", on);
    EXPECT_TRUE(get_bool(Knob::Cache)) << on;
  }
  ScopedEnv empty("INDUCTOR_CPP_CACHE", "");  // empty: unset
  EXPECT_TRUE(get_bool(Knob::Cache));
  EXPECT_FALSE(raw(Knob::Cache));
}

TEST(Knobs, CountFallsBackToTheDefaultAndReportsMalformedValues) {
  ScopedEnv unset("INDUCTOR_CPP_CACHE_MAX_BYTES", nullptr);
  EXPECT_EQ(get_count(Knob::CacheMaxBytes), 1ull << 30);
  {
    ScopedEnv set("INDUCTOR_CPP_CACHE_MAX_BYTES", "12345");
    EXPECT_EQ(get_count(Knob::CacheMaxBytes), 12345u);
    EXPECT_FALSE(malformed(Knob::CacheMaxBytes));
  }
  for (const char* bad : {"12k", "-1", " 7", "1.5"}) {
    ScopedEnv set("INDUCTOR_CPP_CACHE_MAX_BYTES", bad);
    EXPECT_EQ(get_count(Knob::CacheMaxBytes), 1ull << 30) << bad;
    EXPECT_TRUE(malformed(Knob::CacheMaxBytes)) << bad;
  }
  ScopedEnv no_default("INDUCTOR_CPP_CPU_POOL_BYTES", "lots");
  EXPECT_EQ(get_count(Knob::CpuPoolBytes), std::nullopt);  // declared without a default
  EXPECT_TRUE(malformed(Knob::CpuPoolBytes));
}

TEST(Knobs, FloatAndText) {
  {
    ScopedEnv unset("INDUCTOR_CPP_PROGRESS", nullptr);
    EXPECT_EQ(get_float(Knob::Progress), 1.0);
  }
  {
    ScopedEnv set("INDUCTOR_CPP_PROGRESS", "0.25");
    EXPECT_EQ(get_float(Knob::Progress), 0.25);
  }
  ScopedEnv bad("INDUCTOR_CPP_PROGRESS", "soon");
  EXPECT_EQ(get_float(Knob::Progress), 1.0);
  EXPECT_TRUE(malformed(Knob::Progress));
  ScopedEnv device("INDUCTOR_CPP_OPINFO_DEVICE", nullptr);
  EXPECT_EQ(get_text(Knob::OpinfoDevice), "cpu");
}

TEST(Knobs, CodegenValuesListOnlyCodegenKnobsAwayFromTheirDefaults) {
  ScopedEnv gpu("INDUCTOR_CPP_GPU_CODEGEN", nullptr);
  ScopedEnv tuning("INDUCTOR_CPP_GPU_TUNING", nullptr);
  const std::string base = codegen_values();
  {
    ScopedEnv same("INDUCTOR_CPP_GPU_CODEGEN", "true");  // the default, spelled otherwise
    EXPECT_EQ(codegen_values(), base);
  }
  {
    ScopedEnv off("INDUCTOR_CPP_GPU_CODEGEN", "off");
    EXPECT_NE(codegen_values().find("INDUCTOR_CPP_GPU_CODEGEN=0\n"), std::string::npos);
  }
  {
    ScopedEnv set("INDUCTOR_CPP_GPU_TUNING", "max_threads=128");
    EXPECT_NE(codegen_values().find("INDUCTOR_CPP_GPU_TUNING=max_threads=128\n"),
              std::string::npos);
  }
  ScopedEnv not_codegen("INDUCTOR_CPP_CACHE_DIR", "/elsewhere");
  EXPECT_EQ(codegen_values(), base);
}

TEST(Knobs, ClosestName) {
  EXPECT_EQ(closest_name("INDUCTOR_CPP_CACHE_DRI"), "INDUCTOR_CPP_CACHE_DIR");
  EXPECT_EQ(closest_name("INDUCTOR_CPP_STRICTT"), "INDUCTOR_CPP_STRICT");
  EXPECT_EQ(closest_name("INDUCTOR_CPP_LOG"), "INDUCTOR_CPP_LOGS");
  EXPECT_EQ(closest_name("INDUCTOR_CPP_GPU_CODGEN"), "INDUCTOR_CPP_GPU_CODEGEN");
}

TEST(Knobs, UnknownVariablesNameTheClosestKnob) {
  ScopedEnv typo("INDUCTOR_CPP_CACHE_DRI", "/tmp/x");
  ScopedEnv other("SOMETHING_ELSE_CACHE_DRI", "1");  // not ours: no warning
  ScopedEnv known("INDUCTOR_CPP_CACHE_DIR", "/tmp/y");
  EXPECT_EQ(unknown_variable_warnings(),
            std::vector<std::string>{"INDUCTOR_CPP_CACHE_DRI is not a known knob; did you mean "
                                     "INDUCTOR_CPP_CACHE_DIR?"});
  take_unknown_warnings();                       // whatever this process had not taken yet
  EXPECT_TRUE(take_unknown_warnings().empty());  // once per process
}

TEST(Knobs, HostEnvReadsOtherVariables) {
  ScopedEnv set("KNOBS_TEST_HOST", "value");
  EXPECT_EQ(host_env("KNOBS_TEST_HOST"), "value");
  ScopedEnv unset("KNOBS_TEST_HOST", nullptr);
  EXPECT_EQ(host_env("KNOBS_TEST_HOST"), std::nullopt);
}

}  // namespace
}  // namespace inductor_cpp::knobs
