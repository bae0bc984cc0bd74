/// \file
/// Diagnostic texts of a compile and the build record (see compile_report.h).
#include "inductor/compile_report.h"

#include <cstdio>
#include <set>
#include <sstream>

namespace inductor_cpp::inductor {

using nlohmann::json;

namespace {

std::string ms(double milliseconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, milliseconds < 10 ? "%.2f ms" : "%.0f ms", milliseconds);
  return buf;
}

/// "%3 aten::mul.Tensor (model.py:7 in f: ...)"; the source part only when it differs from
/// `previous_source` (a kernel's nodes often share one line of the user's code).
std::string node_line(int32_t node, const std::vector<std::string>& labels,
                      std::string* previous_source) {
  const bool known = node >= 0 && node < static_cast<int32_t>(labels.size());
  const std::string label = known ? labels[node] : std::string("?");
  const size_t open = label.find(" (");
  std::string line = "%" + std::to_string(node) + " " + label.substr(0, open);
  if (open == std::string::npos) return line;
  const std::string source = label.substr(open);
  if (!previous_source || source != *previous_source) line += source;
  if (previous_source) *previous_source = source;
  return line;
}

double number(const json& j, const char* name) {
  return j.contains(name) ? j.at(name).get<double>() : 0.0;
}

}  // namespace

json make_build_record(const PlanBuild& built, double plan_build_ms,
                       const runtime::CppCompileResult* cxx, const std::string& compile_dir) {
  json passes = json::array();
  for (const ir::PassRecord& p : built.passes) {
    passes.push_back(json{{"name", p.name}, {"ms", p.milliseconds}, {"changed", p.changed}});
  }
  json record{{"plan_build_ms", plan_build_ms},
              {"lowering_ms", built.lowering_ms},
              {"emit_ms", built.emit_ms},
              {"passes", std::move(passes)},
              {"kernels", built.kernels.size()},
              {"codegen_error", built.codegen_error},
              {"cxx", nullptr}};
  if (cxx) {
    record["cxx"] = json{{"command", cxx->command},
                         {"dir", compile_dir},
                         {"seconds", cxx->seconds},
                         {"ok", cxx->ok}};
  }
  return record;
}

std::string fusion_report(const runtime::Plan& plan, const std::vector<std::string>& labels) {
  std::ostringstream body;
  std::set<int32_t> placed;
  int64_t kernels = 0, matrix = 0, aten = 0;
  for (const runtime::Step& step : plan.steps) {
    if (const runtime::LibraryCall* call = step.library()) {  // a matmul / convolution on our matrix library
      ++matrix;
      body << "  matrix::" << call->op << " computes " << call->nodes.size() << " node(s):\n";
      std::string source;
      for (int32_t n : call->nodes) {
        body << "    " << node_line(n, labels, &source) << "\n";
        placed.insert(n);
      }
      continue;
    }
    if (const runtime::KernelLaunch* kernel = step.kernel()) {
      ++kernels;
      body << "  " << kernel->name << " computes " << kernel->nodes.size() << " node(s):\n";
      std::string source;
      for (int32_t n : kernel->nodes) {
        body << "    " << node_line(n, labels, &source) << "\n";
        placed.insert(n);
      }
      continue;
    }
    ++aten;
    body << "  ATen call: " << node_line(step.node, labels, nullptr) << "\n";
    placed.insert(step.node);
  }
  std::vector<int32_t> elsewhere;
  for (int32_t n = 0; n < static_cast<int32_t>(labels.size()); ++n) {
    if (!placed.count(n)) elsewhere.push_back(n);
  }
  if (!elsewhere.empty()) {
    body << "  in no step (folded into indexing, or unused):\n";
    std::string source;
    for (int32_t n : elsewhere) body << "    " << node_line(n, labels, &source) << "\n";
  }
  std::ostringstream head;
  head << labels.size() << " node(s): " << kernels << " kernel(s), ";
  if (matrix) head << matrix << " matrix kernel(s), ";
  head << aten << " ATen call(s)\n";
  std::string text = head.str() + body.str();
  if (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

std::vector<std::string> ir_reports(const std::string& lowered_text,
                                    const std::vector<ir::PassRecord>& passes) {
  std::vector<std::string> out;
  if (lowered_text.empty() && passes.empty()) return out;
  out.push_back("as lowered:\n" + lowered_text);
  for (size_t i = 0; i < passes.size(); ++i) {
    const ir::PassRecord& p = passes[i];
    const std::string head =
        "after pass " + std::to_string(i + 1) + " " + p.name + " (" + ms(p.milliseconds) + ")";
    out.push_back(p.changed ? head + ":\n" + p.ir_after : head + ": unchanged");
  }
  return out;
}

std::string perf_report(const std::string& cache_outcome, const json& timings,
                        const json& build_record, bool built_now) {
  std::ostringstream s;
  s << "compile " << ms(number(timings, "total_ms")) << " (cache " << cache_outcome << "): import "
    << ms(number(timings, "import_ms")) << ", key " << ms(number(timings, "key_ms"));
  if (built_now) {
    s << ", build " << ms(number(timings, "build_ms"));
  }
  s << ", cache and load " << ms(number(timings, "cache_ms"));
  if (build_record.empty()) return s.str();
  s << "\n  " << (built_now ? "build" : "original build") << ": plan "
    << ms(number(build_record, "plan_build_ms")) << " (lowering "
    << ms(number(build_record, "lowering_ms"));
  const json& gpu = build_record.value("gpu", json());
  if (gpu.is_object()) {
    s << ", emit PTX " << ms(number(build_record, "emit_ms")) << " in " << gpu.value("parts", 1) << " part(s))"
      << ", ptxas " << ms(gpu.value("ptxas_ms", 0.0));
  } else {
    s << ", emit C++ " << ms(number(build_record, "emit_ms")) << ")";
  }
  const json& cxx = build_record.value("cxx", json());
  if (cxx.is_object()) {
    s << ", C++ compiler " << ms(1000 * cxx.at("seconds").get<double>()) << " for "
      << build_record.value("kernels", 0) << " kernel(s)"
      << (cxx.value("ok", true) ? "" : " (failed)");
  }
  if (build_record.contains("passes") && !build_record.at("passes").empty()) {
    s << "\n  passes:";
    const char* sep = " ";
    for (const json& p : build_record.at("passes")) {
      s << sep << p.at("name").get<std::string>() << " " << ms(p.at("ms").get<double>());
      sep = ", ";
    }
  }
  if (cxx.is_object()) s << "\n  compiler command: " << cxx.at("command").get<std::string>();
  return s.str();
}

}  // namespace inductor_cpp::inductor
