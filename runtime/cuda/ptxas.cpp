/// \file
/// Running ptxas (see ptxas.h).
#include "runtime/cuda/ptxas.h"

#include "knobs/knobs.h"
#include "runtime/loader/child_process.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <vector>

namespace inductor_cpp::runtime::cuda {

namespace {

bool executable(const std::string& path) {
  return !path.empty() && access(path.c_str(), X_OK) == 0;
}

}  // namespace

std::string find_ptxas() {
  if (const auto p = knobs::raw(knobs::Knob::Ptxas); p && executable(*p)) return *p;
  if (const auto home = knobs::host_env("CUDA_HOME"); home && executable(*home + "/bin/ptxas"))
    return *home + "/bin/ptxas";
  if (executable("/usr/local/cuda/bin/ptxas")) return "/usr/local/cuda/bin/ptxas";
  const std::string dirs = knobs::host_env("PATH").value_or("");
  for (size_t start = 0; start <= dirs.size();) {
    const size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::string candidate = dirs.substr(start, end - start) + "/ptxas";
    if (end > start && executable(candidate)) return candidate;
    start = end + 1;
  }
  return "";
}

const std::string& ptxas_version() {
  static const std::string version = [] {
    const std::string ptxas = find_ptxas();
    if (ptxas.empty()) return std::string("none");
    std::string output;
    try {
      const ProcessResult version = run_process({ptxas, "--version"});
      if (version.exit_code != 0) return std::string("unusable");
      output = version.output;
    } catch (const std::exception&) {
      return std::string("unusable");
    }
    // The last non-empty line carries the release and build.
    std::string last;
    size_t start = 0;
    while (start < output.size()) {
      size_t end = output.find('\n', start);
      if (end == std::string::npos) end = output.size();
      if (end > start) last = output.substr(start, end - start);
      start = end + 1;
    }
    return last;
  }();
  return version;
}

PtxasResult assemble_cubin(const std::string& dir, const std::string& ptx, int sm) {
  PtxasResult result;
  const std::string ptxas = find_ptxas();
  if (ptxas.empty()) {
    result.output = "ptxas not found";
    return result;
  }
  const std::string ptx_path = dir + "/kernels.ptx";
  const std::string cubin_path = dir + "/kernels.cubin";
  {
    std::ofstream out(ptx_path, std::ios::binary | std::ios::trunc);
    out << ptx;
    if (!out.good()) throw std::runtime_error("cannot write " + ptx_path);
  }
  const std::vector<std::string> args = {ptxas,    "-O3", "-arch=sm_" + std::to_string(sm),
                                         ptx_path, "-o",  cubin_path};
  for (const std::string& a : args) result.command += (result.command.empty() ? "" : " ") + a;
  const auto start = std::chrono::steady_clock::now();
  ProcessResult run = run_process(args);
  result.output = std::move(run.output);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (run.exit_code != 0) return result;
  std::ifstream in(cubin_path, std::ios::binary);
  result.cubin.assign(std::istreambuf_iterator<char>(in), {});
  result.ok = !result.cubin.empty();
  if (!result.ok) result.output += "\nptxas wrote no cubin";
  return result;
}

}  // namespace inductor_cpp::runtime::cuda
