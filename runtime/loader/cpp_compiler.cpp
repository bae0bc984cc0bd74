/// \file
/// Builds generated C++ into a shared library: the system compiler as a child process
/// (child_process.h: no shell, output captured).
#include "runtime/loader/cpp_compiler.h"

#include "knobs/knobs.h"
#include "runtime/loader/child_process.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>


namespace inductor_cpp::runtime {
namespace {

std::vector<std::string> split_words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

/// The compiler command: options.compiler, else $CXX, else g++; may carry a launcher before the
/// compiler and flags after it ("ccache g++ -fno-plt").
std::vector<std::string> compiler_command(const CppCompileOptions& options) {
  std::string compiler = options.compiler;
  if (compiler.empty()) {
    const std::string cxx = knobs::host_env("CXX").value_or("");
    compiler = cxx.empty() ? "g++" : cxx;
  }
  std::vector<std::string> words = split_words(compiler);
  if (words.empty()) throw std::runtime_error("empty C++ compiler command");
  return words;
}

std::string base_name(const std::string& path) {
  return path.substr(path.find_last_of('/') + 1);
}

/// A program that runs the compiler given after it (ccache g++ ...).
bool is_launcher(const std::string& word) {
  const std::string name = base_name(word);
  return name == "ccache" || name == "sccache" || name == "distcc" || name == "icecc";
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out.good()) throw std::runtime_error("cannot write " + path);
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

/// The executable's resolved path (PATH search, symlinks followed), or the name itself.
std::string resolve_executable(const std::string& name) {
  auto real = [](const std::string& p) {
    char buf[PATH_MAX];
    return realpath(p.c_str(), buf) ? std::string(buf) : p;
  };
  if (name.find('/') != std::string::npos) return real(name);
  std::istringstream dirs(knobs::host_env("PATH").value_or(""));
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return real(candidate);
  }
  return name;
}

}  // namespace

CppCompileResult compile_shared_library(const std::string& dir, const std::string& source,
                                        const std::string& header_text,
                                        const CppCompileOptions& options) {
  const std::string source_path = dir + "/kernels.cpp";
  write_file(dir + "/ic_runtime.h", header_text);
  write_file(source_path, source);
  std::vector<std::string> args = compiler_command(options);
  args.insert(args.end(), options.flags.begin(), options.flags.end());
  // Stages talk through pipes, not temporary files in $TMPDIR: a missing, unwritable or full
  // TMPDIR must not fail the build (the scratch dir itself may live elsewhere: ScratchDir).
  args.push_back("-pipe");
  args.push_back("-I" + dir);
  args.push_back(source_path);
  args.push_back("-o");
  args.push_back(dir + "/kernels.so");
  args.insert(args.end(), options.libraries.begin(), options.libraries.end());

  CppCompileResult result;
  for (const std::string& a : args) result.command += (result.command.empty() ? "" : " ") + a;
  const auto start = std::chrono::steady_clock::now();
  const ProcessResult process = run_process(args);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.output = process.output;
  result.ok = process.exit_code == 0;
  return result;
}

std::string compiler_path(const CppCompileOptions& options) {
  const std::vector<std::string> command = compiler_command(options);
  size_t at = 0;
  while (at + 1 < command.size() && is_launcher(command[at])) ++at;
  return resolve_executable(command[at]);
}

std::string compiler_identity(const CppCompileOptions& options) {
  const std::vector<std::string> command = compiler_command(options);
  // The compiler proper: the first word after any launchers ("ccache g++ -O3": g++).
  size_t at = 0;
  while (at + 1 < command.size() && is_launcher(command[at])) ++at;
  const std::string& compiler = command[at];
  std::vector<std::string> args = {compiler, "-dumpfullversion"};
  ProcessResult version = run_process(args);
  if (version.exit_code != 0 || trim(version.output).empty()) {
    args[1] = "-dumpversion";
    version = run_process(args);
  }
  std::string identity = base_name(compiler) + " " + trim(version.output) + " " +
                         resolve_executable(compiler);
  // Flags given with the compiler change the code it makes.
  for (size_t i = at + 1; i < command.size(); ++i) identity += " " + command[i];
  return identity;
}

}  // namespace inductor_cpp::runtime
