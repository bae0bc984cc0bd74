/// \file
/// parse_gpu_tuning / apply_gpu_tuning: the "gpu_tuning" option's names map onto fields of
/// ir::ScheduleOptions (one table, so the parser and the error message agree).
#include "inductor/gpu_tuning.h"

#include <map>
#include <sstream>
#include <stdexcept>

namespace inductor_cpp::inductor {
namespace {

using Setter = void (*)(ir::ScheduleOptions&, int64_t);

const std::map<std::string, Setter>& schedule_fields() {
  static const std::map<std::string, Setter> fields{
      {"max_threads", [](ir::ScheduleOptions& o, int64_t v) { o.gpu_max_threads = static_cast<int>(v); }},
      {"min_threads", [](ir::ScheduleOptions& o, int64_t v) { o.gpu_min_threads = static_cast<int>(v); }},
      {"persistent_chunks", [](ir::ScheduleOptions& o, int64_t v) { o.gpu_persistent_chunks = v; }},
      {"vector_bytes", [](ir::ScheduleOptions& o, int64_t v) { o.gpu_vector_bytes = static_cast<int>(v); }},
      {"column_threads", [](ir::ScheduleOptions& o, int64_t v) { o.gpu_column_threads = v; }},
      {"max_column_rows", [](ir::ScheduleOptions& o, int64_t v) { o.gpu_max_column_rows = static_cast<int>(v); }},
      {"min_rows_per_thread", [](ir::ScheduleOptions& o, int64_t v) { o.gpu_min_rows_per_thread = v; }},
  };
  return fields;
}

using EmitterSetter = void (*)(GpuEmitterTuning&, int64_t);

const std::map<std::string, EmitterSetter>& emitter_fields() {
  static const std::map<std::string, EmitterSetter> fields{
      {"read_once_hints", [](GpuEmitterTuning& e, int64_t v) { e.read_once_hints = static_cast<int>(v); }},
      {"row_unroll", [](GpuEmitterTuning& e, int64_t v) { e.row_unroll = static_cast<int>(v); }},
      {"column_unroll", [](GpuEmitterTuning& e, int64_t v) { e.column_unroll = static_cast<int>(v); }},
      {"max_column_block", [](GpuEmitterTuning& e, int64_t v) { e.max_column_block = static_cast<int>(v); }},
      {"min_column_grid", [](GpuEmitterTuning& e, int64_t v) { e.min_column_grid = v; }},
      {"programmatic_launch", [](GpuEmitterTuning& e, int64_t v) { e.programmatic_launch = static_cast<int>(v); }},
  };
  return fields;
}

std::string known_names() {
  std::string out;
  for (const auto& [name, setter] : schedule_fields()) out += name + ", ";
  for (const auto& [name, setter] : emitter_fields()) out += name + ", ";
  return out.substr(0, out.size() - 2);
}

std::string trimmed(const std::string& s) {
  const size_t first = s.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

}  // namespace

GpuTuning parse_gpu_tuning(const std::string& text) {
  GpuTuning out;
  std::stringstream items(text);
  std::string item;
  while (std::getline(items, item, ',')) {
    item = trimmed(item);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    const std::string name = trimmed(item.substr(0, eq));
    const bool emitter = emitter_fields().count(name) > 0;
    if (eq == std::string::npos || (!emitter && !schedule_fields().count(name)))
      throw std::invalid_argument("gpu_tuning: \"" + item + "\" is not name=value with a known name (" +
                                  known_names() + ")");
    const std::string value = trimmed(item.substr(eq + 1));
    size_t used = 0;
    int64_t v = 0;
    try {
      v = std::stoll(value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != value.size() || v < 0)
      throw std::invalid_argument("gpu_tuning: " + name + " needs a whole number >= 0, not \"" + value + "\"");
    const bool zero_allowed = name == "read_once_hints" || name == "programmatic_launch";
    if (!zero_allowed && v == 0) throw std::invalid_argument("gpu_tuning: " + name + " must be > 0");
    if (name == "programmatic_launch" && v > 3)
      throw std::invalid_argument("gpu_tuning: programmatic_launch is 0 to 3 (emit_ptx.h)");
    if (name == "read_once_hints" && v > 4)
      throw std::invalid_argument("gpu_tuning: read_once_hints is 0 to 4 (emit_ptx.h)");
    if (name == "max_column_block" && (v > 1024 || (v & (v - 1)) != 0))
      throw std::invalid_argument("gpu_tuning: max_column_block must be a power of two <= 1024");
    if (emitter) {
      emitter_fields().at(name)(out.emitter, v);
    } else {
      out.settings.emplace_back(name, v);
    }
  }
  return out;
}

ir::PipelineOptions apply_gpu_tuning(const GpuTuning& tuning, ir::PipelineOptions options) {
  for (const auto& [name, value] : tuning.settings) schedule_fields().at(name)(options.schedule, value);
  return options;
}

}  // namespace inductor_cpp::inductor
