/// \file
/// The knobs registry (see knobs.h): the table generated from knob_list.h, typed reads of the
/// environment, and the once-per-process warning about unknown INDUCTOR_CPP_* variables.
#include "knobs/knobs.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <iostream>

extern char** environ;  // POSIX: the process environment

namespace inductor_cpp::knobs {
namespace {

constexpr std::string_view kPrefix = "INDUCTOR_CPP_";

std::vector<KnobInfo> make_table() {
#define INDUCTOR_CPP_KNOB_INFO(id, name, type, default_value, codegen, scope, option, doc) \
  KnobInfo{Knob::id, name, Type::type, default_value, codegen, Scope::scope, option, doc},
  return {INDUCTOR_CPP_KNOBS(INDUCTOR_CPP_KNOB_INFO)};
#undef INDUCTOR_CPP_KNOB_INFO
}

std::optional<uint64_t> parse_count(const std::string& text) {
  uint64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, err] = std::from_chars(text.data(), end, value);
  if (text.empty() || err != std::errc() || ptr != end) return std::nullopt;
  return value;
}

std::optional<double> parse_float(const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size()) return std::nullopt;
  return value;
}

bool parse_bool(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char ch) { return char(std::tolower(ch)); });
  return !(text == "0" || text == "false" || text == "off" || text == "no");
}

std::string normalized(const KnobInfo& k, const std::string& value) {
  if (k.type == Type::Bool) return parse_bool(value) ? "1" : "0";
  return value;
}

/// Edits turning a into b: insertions, deletions, substitutions and swaps of neighbours.
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

std::atomic<bool> warned{false};

void warn_unknown_once() {
  if (warned.load(std::memory_order_acquire)) return;
  for (const std::string& message : take_unknown_warnings())
    std::cerr << "inductor_cpp: " << message << std::endl;
}

}  // namespace

const std::vector<KnobInfo>& all() {
  static const std::vector<KnobInfo> table = make_table();
  return table;
}

const KnobInfo& info(Knob knob) {
  return all()[static_cast<size_t>(knob)];
}

std::optional<Knob> find(std::string_view name) {
  for (const KnobInfo& k : all()) {
    if (name == k.name) return k.knob;
  }
  return std::nullopt;
}

const char* type_name(Type type) {
  static const char* const names[] = {"bool", "count", "float", "text", "path"};
  return names[static_cast<int>(type)];
}

const char* scope_name(Scope scope) {
  static const char* const names[] = {"compiler",      "runtime", "cache", "logging",
                                      "matrix-tuning", "bench",   "tests", "scripts"};
  return names[static_cast<int>(scope)];
}

std::optional<std::string> raw(Knob knob) {
  warn_unknown_once();
  const char* value = std::getenv(info(knob).name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

std::string get_text(Knob knob) {
  return raw(knob).value_or(info(knob).default_value);
}

bool get_bool(Knob knob) {
  return parse_bool(get_text(knob));
}

std::optional<uint64_t> get_count(Knob knob) {
  if (const auto value = raw(knob)) {
    if (const auto count = parse_count(*value)) return count;
  }
  return parse_count(info(knob).default_value);
}

std::optional<double> get_float(Knob knob) {
  if (const auto value = raw(knob)) {
    if (const auto number = parse_float(*value)) return number;
  }
  return parse_float(info(knob).default_value);
}

bool malformed(Knob knob) {
  const auto value = raw(knob);
  if (!value) return false;
  switch (info(knob).type) {
    case Type::Count:
      return !parse_count(*value);
    case Type::Float:
      return !parse_float(*value);
    default:
      return false;
  }
}

std::string codegen_values() {
  std::string out;
  for (const KnobInfo& k : all()) {
    if (!k.codegen) continue;
    const auto value = raw(k.knob);
    if (!value) continue;
    const std::string v = normalized(k, *value);
    if (v != normalized(k, k.default_value)) out += std::string(k.name) + "=" + v + "\n";
  }
  return out;
}

std::optional<std::string> host_env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

std::vector<std::string> unknown_variable_warnings() {
  std::vector<std::string> names;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    const std::string_view name = text.substr(0, text.find('='));
    if (name.substr(0, kPrefix.size()) == kPrefix && !find(name)) names.emplace_back(name);
  }
  std::sort(names.begin(), names.end());
  std::vector<std::string> messages;
  for (const std::string& name : names)
    messages.push_back(name + " is not a known knob; did you mean " + closest_name(name) + "?");
  return messages;
}

std::vector<std::string> take_unknown_warnings() {
  if (warned.exchange(true, std::memory_order_acq_rel)) return {};
  return unknown_variable_warnings();
}

std::string closest_name(std::string_view name) {
  const KnobInfo* best = nullptr;
  size_t best_distance = 0;
  for (const KnobInfo& k : all()) {
    const size_t distance = edit_distance(name, k.name);
    if (best == nullptr || distance < best_distance) best = &k, best_distance = distance;
  }
  return best->name;
}

}  // namespace inductor_cpp::knobs
