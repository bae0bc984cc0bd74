/// \file
/// Shared by the NVPTX emitter tests (nvptx_emit*_test.cpp, one executable: nvptx_emit_test):
/// loop programs taken through the real pipeline with the GPU schedule, emitted to PTX for
/// sm_80 and sm_90, and assembled with ptxas (`ptxas -arch=sm_XX file.ptx -o /dev/null` must
/// exit 0). No GPU is needed; the numerics run elsewhere (the CUDA runtime's tests). The ptxas
/// part is skipped when ptxas is absent, every NvptxEmit test when libdevice is.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "codegen/nvptx/emit_ptx.h"
#include "ir/loop_ir.h"
#include "ir/passes/pipeline.h"
#include "tests/cpp/pipeline_check.h"

namespace inductor_cpp::codegen::nvptx::emit_test {

/// The ptxas of $CUDA_HOME or /usr/local/cuda; "" when there is none.
std::string ptxas_path();

/// Assembles `ptx` for `sm`; returns ptxas' output on failure, "" on success.
std::string assemble(const std::string& ptx, int sm, const std::string& name);

/// The GPU schedule must compute what the lowered program computes (reference interpreter).
std::string gpu_schedule_mismatch(const std::string& program_text,
                                  ir::testing::PipelineCheck check = {});

/// The kernels of the program `program_text` scheduled for the GPU.
std::vector<ir::Kernel> gpu_scheduled_kernels(const std::string& program_text,
                                              ir::PipelineOptions options);

/// gpu_scheduled_kernels of the program whose body is `program_lines`: its buffer, compute
/// and output lines, each compute given a kernel of its own (as lowering gives them). With
/// `check_semantics`, also expects gpu_schedule_mismatch to find nothing.
std::vector<ir::Kernel> gpu_kernels(const std::string& program_lines,
                                    const ir::PipelineOptions& options = {},
                                    bool check_semantics = true);

/// Whether `ptx` has a vector load `ld.global.<plain>` or, for data read once (a reduction's
/// input), the same bytes as `ld.global.L1::no_allocate.<hinted>` (inline PTX, in words).
bool has_vector_load(const std::string& ptx, const std::string& plain, const std::string& hinted);

std::string kernels_text(const std::vector<ir::Kernel>& kernels);

/// Whether the kernels' text holds `what` (on failure, the message shows the text).
::testing::AssertionResult schedule_has(const std::vector<ir::Kernel>& kernels,
                                        const std::string& what);

/// Emits for sm_80 and sm_90 and assembles both; returns the sm_90 module. With
/// NVPTX_TEST_DUMP_DIR set, the sm_90 kernels' text and PTX go to <dir>/<name>.ptx.
PtxModule emit_and_assemble(const std::vector<ir::Kernel>& kernels, const std::string& name);

size_t occurrences(const std::string& text, const std::string& what);

class NvptxEmit : public ::testing::Test {
 protected:
  void SetUp() override;
};

}  // namespace inductor_cpp::codegen::nvptx::emit_test
