/// \file
/// The module around the kernels: NVPTX target machine for sm_XX, libdevice linked in (only
/// the functions used), everything but the kernels internalized, the O3 pipeline, then PTX from
/// the NVPTX backend. Also emit_ptx, the entry point (emit_ptx.h).
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Linker/Linker.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>

#include <cstdlib>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>

#include "codegen/nvptx/emit_ptx.h"
#include "codegen/nvptx/nvptx_internal.h"
#include "knobs/knobs.h"

namespace inductor_cpp::codegen::nvptx {

namespace {

constexpr const char* kTriple = "nvptx64-nvidia-cuda";

void initialize_nvptx() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
}

std::unique_ptr<llvm::TargetMachine> make_target_machine(const GpuTarget& target) {
  initialize_nvptx();
  std::string error;
  const llvm::Target* t = llvm::TargetRegistry::lookupTarget(kTriple, error);
  if (!t) throw std::runtime_error("nvptx: no NVPTX target in this LLVM: " + error);
  const std::string cpu = "sm_" + std::to_string(target.sm);
  const std::string features = "+ptx" + std::to_string(target.ptx_version);
  // Floating-point contraction is per instruction (`contract` on what the kernels emit,
  // KernelEmitter::emit), not AllowFPOpFusion: libdevice stays as NVIDIA compiled it.
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> tm(t->createTargetMachine(
      kTriple, cpu, features, options, std::nullopt, std::nullopt, llvm::CodeGenOpt::Aggressive));
  if (!tm) throw std::runtime_error("nvptx: cannot create a target machine for " + cpu);
  return tm;
}

void link_libdevice(llvm::Module& module, const std::string& path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) throw std::runtime_error("nvptx: cannot read libdevice at " + path);
  llvm::Expected<std::unique_ptr<llvm::Module>> libdevice =
      llvm::parseBitcodeFile((*buffer)->getMemBufferRef(), module.getContext());
  if (!libdevice) {
    throw std::runtime_error("nvptx: bad libdevice bitcode " + path + ": " +
                             llvm::toString(libdevice.takeError()));
  }
  (*libdevice)->setTargetTriple(module.getTargetTriple());
  (*libdevice)->setDataLayout(module.getDataLayout());
  if (llvm::Linker::linkModules(module, std::move(*libdevice), llvm::Linker::LinkOnlyNeeded)) {
    throw std::runtime_error("nvptx: linking libdevice failed");
  }
}

/// Kernels stay external; every other definition (libdevice) becomes internal, so the
/// optimizer inlines it and drops what is unused.
void internalize(llvm::Module& module, const std::set<std::string>& kernels) {
  for (llvm::Function& f : module) {
    if (!f.isDeclaration() && !kernels.count(f.getName().str()))
      f.setLinkage(llvm::GlobalValue::InternalLinkage);
  }
  for (llvm::GlobalVariable& g : module.globals()) {
    if (!g.isDeclaration()) g.setLinkage(llvm::GlobalValue::InternalLinkage);
  }
}

void optimize(llvm::Module& module, llvm::TargetMachine& tm) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(module, mam);
}

std::string to_ptx(llvm::Module& module, llvm::TargetMachine& tm) {
  llvm::SmallString<0> text;
  llvm::raw_svector_ostream out(text);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, out, nullptr, llvm::CGFT_AssemblyFile)) {
    throw std::runtime_error("nvptx: the target machine cannot emit PTX");
  }
  pm.run(module);
  return std::string(text.str());
}

void verify(const llvm::Module& module, const char* when) {
  std::string message;
  llvm::raw_string_ostream out(message);
  if (llvm::verifyModule(module, &out)) {
    out.flush();
    throw std::runtime_error(std::string("nvptx: invalid LLVM IR ") + when + ": " + message);
  }
}

}  // namespace

std::string llvm_version() {
  return LLVM_VERSION_STRING;
}

std::string default_libdevice_path() {
  const std::string cuda_home = knobs::host_env("CUDA_HOME").value_or("");
  return (cuda_home.empty() ? "/usr/local/cuda" : cuda_home) + "/nvvm/libdevice/libdevice.10.bc";
}

PtxModule emit_ptx(const std::vector<ir::Kernel>& kernels, const GpuTarget& target,
                   const std::string& libdevice_path) {
  std::unique_ptr<llvm::TargetMachine> tm = make_target_machine(target);
  llvm::LLVMContext context;
  llvm::Module module("inductor_cpp", context);
  module.setTargetTriple(kTriple);
  module.setDataLayout(tm->createDataLayout());
  // libdevice reads this through NVVMReflect: no flush-to-zero of denormals (torch's default).
  module.addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz", uint32_t{0});

  PtxModule result;
  std::set<std::string> names;
  for (const ir::Kernel& k : kernels) {
    if (!names.insert(k.name).second)
      throw std::runtime_error("nvptx: two kernels named " + k.name);
    nvptx_detail::KernelEmitter emitter(module, k, target);
    result.launches.push_back(emitter.emit());
  }
  verify(module, "as emitted");
  link_libdevice(module, libdevice_path);
  internalize(module, names);
  optimize(module, *tm);
  verify(module, "after optimization");
  llvm::raw_string_ostream ir_text(result.llvm_ir);
  module.print(ir_text, nullptr);
  ir_text.flush();
  result.ptx = to_ptx(module, *tm);
  return result;
}

}  // namespace inductor_cpp::codegen::nvptx
