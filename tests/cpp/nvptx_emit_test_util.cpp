/// \file
/// The NVPTX emitter tests' helpers: see nvptx_emit_test_util.h.
#include "tests/cpp/nvptx_emit_test_util.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ir/ir_text.h"
#include "knobs/knobs.h"

namespace inductor_cpp::codegen::nvptx::emit_test {

namespace fs = std::filesystem;

std::string ptxas_path() {
  for (const std::string& root :
       {knobs::host_env("CUDA_HOME").value_or(""), std::string("/usr/local/cuda")}) {
    if (!root.empty() && fs::exists(root + "/bin/ptxas")) return root + "/bin/ptxas";
  }
  return "";
}

std::string assemble(const std::string& ptx, int sm, const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("nvptx_emit_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path file = dir / (name + "_sm" + std::to_string(sm) + ".ptx");
  std::ofstream(file) << ptx;
  const fs::path log = dir / (name + ".log");
  const std::string command = ptxas_path() + " -arch=sm_" + std::to_string(sm) + " " +
                              file.string() + " -o /dev/null > " + log.string() + " 2>&1";
  const int rc = std::system(command.c_str());
  std::ifstream in(log);
  const std::string output((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  fs::remove_all(dir);
  return rc == 0 ? "" : "ptxas exit " + std::to_string(rc) + ":\n" + output;
}

std::string gpu_schedule_mismatch(const std::string& program_text,
                                  ir::testing::PipelineCheck check) {
  check.options.schedule.target = ir::Target::Gpu;
  check.seeds = {1};
  return ir::testing::pipeline_mismatch(program_text, check);
}

std::vector<ir::Kernel> gpu_scheduled_kernels(const std::string& program_text,
                                              ir::PipelineOptions options) {
  options.schedule.target = ir::Target::Gpu;
  const ir::PipelineResult r = ir::run_pipeline(ir::parse_program(program_text), options);
  std::vector<ir::Kernel> kernels;
  for (const ir::ScheduledStep& s : r.scheduled.steps) {
    if (s.kind == ir::ScheduledStep::Kind::Kernel) kernels.push_back(s.kernel);
  }
  return kernels;
}

namespace {

/// `lines` with a kernel line for each compute, in their order, before the output line.
std::string with_a_kernel_per_compute(const std::string& lines) {
  std::istringstream in(lines);
  std::string line, text, kernels;
  const std::string compute = "  compute ";
  while (std::getline(in, line)) {
    if (line.rfind("  output ", 0) == 0) text += kernels;
    text += line + "\n";
    if (line.rfind(compute, 0) == 0) {
      kernels += "  kernel " +
                 line.substr(compute.size(), line.find(' ', compute.size()) - compute.size()) +
                 "\n";
    }
  }
  return text;
}

}  // namespace

std::vector<ir::Kernel> gpu_kernels(const std::string& program_lines,
                                    const ir::PipelineOptions& options, bool check_semantics) {
  const std::string text = "program {\n" + with_a_kernel_per_compute(program_lines) + "}\n";
  if (check_semantics) {
    EXPECT_EQ(gpu_schedule_mismatch(text), "");
  }
  return gpu_scheduled_kernels(text, options);
}

/// Whether `ptx` has a vector load `ld.global.<plain>` or, for data read once (a reduction's
/// input), the same bytes as `ld.global.L1::no_allocate.<hinted>` (inline PTX, in words).
bool has_vector_load(const std::string& ptx, const std::string& plain, const std::string& hinted) {
  return ptx.find("ld.global." + plain) != std::string::npos ||
         ptx.find("ld.global.L1::no_allocate." + hinted) != std::string::npos;
}

std::string kernels_text(const std::vector<ir::Kernel>& kernels) {
  std::string text;
  for (const ir::Kernel& k : kernels) text += ir::kernel_to_text(k);
  return text;
}

::testing::AssertionResult schedule_has(const std::vector<ir::Kernel>& kernels,
                                        const std::string& what) {
  const std::string text = kernels_text(kernels);
  if (text.find(what) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "no \"" << what << "\" in\n" << text;
}

PtxModule emit_and_assemble(const std::vector<ir::Kernel>& kernels, const std::string& name) {
  PtxModule sm90;
  for (int sm : {80, 90}) {
    GpuTarget target;
    target.sm = sm;
    PtxModule m = emit_ptx(kernels, target, default_libdevice_path());
    EXPECT_EQ(m.launches.size(), kernels.size());
    EXPECT_NE(m.ptx.find(".target sm_" + std::to_string(sm)), std::string::npos);
    EXPECT_EQ(m.ptx.find("__nv_"), std::string::npos) << "libdevice calls must be inlined";
    if (!ptxas_path().empty()) {
      const std::string error = assemble(m.ptx, sm, name);
      EXPECT_EQ(error, "") << name << " sm_" << sm << "\n" << kernels_text(kernels) << m.ptx;
    }
    if (const auto dump = knobs::host_env("NVPTX_TEST_DUMP_DIR"); dump && sm == 90) {
      std::ofstream(fs::path(*dump) / (name + ".ptx")) << kernels_text(kernels) << "\n" << m.ptx;
      std::ofstream(fs::path(*dump) / (name + ".ll")) << m.llvm_ir;
    }
    if (sm == 90) sm90 = std::move(m);
  }
  return sm90;
}

size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

void NvptxEmit::SetUp() {
  if (!fs::exists(default_libdevice_path())) {
    GTEST_SKIP() << "no libdevice at " << default_libdevice_path();
  }
}

}  // namespace inductor_cpp::codegen::nvptx::emit_test
