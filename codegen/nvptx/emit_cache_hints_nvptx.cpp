/// \file
/// Cache hints on global loads, as inline PTX (LLVM 16 has intrinsics for neither):
///
/// * L1::no_allocate on loads that read their data exactly once in the kernel (sum(-1),
///   sum(0), mean ...): such data has no use for L1, and not allocating it there leaves L1
///   to what is reused. H200, 16384 x 8192 float32, back to back (`python -m inductor_cpp.bench
///   gpu_raw`, 5 processes): sum(-1) 0.1181 -> 0.1175 ms, sum(0) 0.1255 -> 0.1250. A load is read
///   once when its buffer is never stored by the kernel, every load of the buffer sits in the same
///   innermost loop, nested in the kernel's top loop, and its index uses the variable of every
///   enclosing loop (each element visited once; a row read by several loops, softmax's general
///   version, or a bias read for every row, keeps L1).
/// * The L2 evict_last policy of persistent rows stored back (emit_persistent_nvptx.cpp).
#include <llvm/IR/InlineAsm.h>

#include <map>
#include <set>

#include "codegen/nvptx/nvptx_internal.h"

namespace inductor_cpp::codegen::nvptx {

using ir::Stmt;
using ir::StmtKind;

namespace {

struct LoadSite {
  const ir::ValueNode* load = nullptr;
  const Stmt* innermost = nullptr;  ///< the loop the load sits in directly
  bool visits_each_once = false;    ///< the index uses every enclosing loop's variable
};

void collect_sites(const std::vector<Stmt>& body, std::vector<const Stmt*>& loops,
                   std::map<std::string, std::vector<LoadSite>>& sites,
                   std::set<std::string>& stored) {
  for (const Stmt& s : body) {
    if (s.kind == StmtKind::Store) stored.insert(s.buffer);
    if (s.value) {
      for (const ir::Value& l : ir::loads_in(s.value)) {
        LoadSite site{l.node(), loops.empty() ? nullptr : loops.back(), loops.size() >= 2};
        for (const Stmt* loop : loops) {
          site.visits_each_once =
              site.visits_each_once && ir::depends_on(l->index.at(0), loop->var);
        }
        sites[l->name].push_back(site);
      }
    }
    if (s.kind == StmtKind::For) {
      loops.push_back(&s);
      collect_sites(s.body, loops, sites, stored);
      loops.pop_back();
    }
  }
}

}  // namespace

std::set<const ir::ValueNode*> loads_read_once(const ir::Kernel& kernel) {
  std::vector<const Stmt*> loops;
  std::map<std::string, std::vector<LoadSite>> sites;
  std::set<std::string> stored;
  collect_sites(kernel.body, loops, sites, stored);
  std::set<const ir::ValueNode*> out;
  for (const auto& [buffer, list] : sites) {
    if (stored.count(buffer)) continue;
    bool once = true;
    for (const LoadSite& s : list) {
      once = once && s.visits_each_once && s.innermost == list.front().innermost &&
             ir::to_string(s.load->index.at(0)) == ir::to_string(list.front().load->index.at(0));
    }
    if (!once) continue;
    for (const LoadSite& s : list) out.insert(s.load);
  }
  return out;
}

}  // namespace inductor_cpp::codegen::nvptx

namespace inductor_cpp::codegen::nvptx_detail {

llvm::Value* KernelEmitter::inline_ptx_load(llvm::Type* type, llvm::Value* address, int64_t bytes,
                                            const std::string& qualifiers, llvm::Value* policy) {
  const int words = static_cast<int>(bytes / 4);
  if (bytes % 4 != 0 || (words != 1 && words != 2 && words != 4)) return nullptr;
  std::string registers, constraints;
  for (int w = 0; w < words; ++w) {
    registers += (w ? ", $" : "$") + std::to_string(w);
    constraints += "=r,";
  }
  const std::string vector = words == 1 ? "" : ".v" + std::to_string(words);
  std::string text = "ld.global" + qualifiers + vector + ".b32 " +
                     (words == 1 ? registers : "{" + registers + "}") + ", [$" +
                     std::to_string(words) + "]";
  if (policy) text += ", $" + std::to_string(words + 1);
  text += ";";
  llvm::Type* i32 = b_.getInt32Ty();
  llvm::Type* result = words == 1
                           ? i32
                           : static_cast<llvm::Type*>(llvm::StructType::get(
                                 ctx_, std::vector<llvm::Type*>(static_cast<size_t>(words), i32)));
  llvm::Type* i64 = b_.getInt64Ty();
  std::vector<llvm::Type*> operand_types{i64};
  std::vector<llvm::Value*> operands{b_.CreatePtrToInt(address, i64)};
  constraints += "l";
  if (policy) {
    operand_types.push_back(i64);
    operands.push_back(policy);
    constraints += ",l";
  }
  // Marked as having side effects: an inline asm without them (and without a memory clobber)
  // is, for LLVM's machine passes, a pure computation they may hoist above the branches that
  // guard it (an alignment check, a row's tail): misaligned or out-of-range loads on the GPU
  // (OpInfo triplet_margin_loss on 5 x 10 rows). With them it stays in place and in order
  // among the kernel's memory accesses; ptxas still schedules the SASS. No memory clobber:
  // both users read buffers no store of the kernel writes before the load (the persistent
  // row's loads precede its stores; read-once buffers are never stored).
  llvm::InlineAsm* load =
      llvm::InlineAsm::get(llvm::FunctionType::get(result, operand_types, false), text, constraints,
                           /*hasSideEffects=*/true);
  llvm::CallInst* call = b_.CreateCall(load, operands, "hinted");
  call->setDoesNotThrow();
  if (words == 1) return b_.CreateBitCast(call, type);
  llvm::Value* bits = llvm::UndefValue::get(llvm::FixedVectorType::get(i32, words));
  for (int w = 0; w < words; ++w)
    bits = b_.CreateInsertElement(bits, b_.CreateExtractValue(call, w), w);
  return b_.CreateBitCast(bits, type);
}

llvm::Value* KernelEmitter::read_once_load(const ir::ValueNode& n, llvm::Type* type,
                                           llvm::Value* address, int64_t bytes) {
  // L1::no_allocate and the L2 prefetch sizes: PTX ISA 7.4, sm_70 and later.
  static const char* const kQualifiers[] = {"", ".L1::no_allocate", ".L1::no_allocate.L2::256B",
                                            ".nc.L1::no_allocate.L2::256B",
                                            ".L1::no_allocate.L2::128B"};
  const int level = target_.read_once_hints;
  if (level <= 0 || level > 4 || target_.sm < 70 || !read_once_.count(&n)) return nullptr;
  return inline_ptx_load(type, address, bytes, kQualifiers[level], nullptr);
}

}  // namespace inductor_cpp::codegen::nvptx_detail
