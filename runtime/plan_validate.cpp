/// \file
/// validate_plan: what a plan read from a cache entry must satisfy before anything is
/// allocated or launched. The checksums of an entry say its files are the ones meta.json names,
/// not that they are ours (whoever can write the entry can reseal it), so a plan is checked as
/// untrusted input: every slot a step reads, writes or frees inside [0, num_slots), parameter
/// indices inside the kernel's parameters, buffer shapes of at most kMaxDims sizes and strides
/// whose element count fits, GPU launch shapes within CUDA's limits, and every slot a step reads
/// holding a value by then (an input, a constant or an earlier step's output, not yet freed:
/// a rewritten index that stays in range must not reach a kernel as an empty slot). The error
/// names the field ("plan: steps[3].kernel.allocs[0].slot: 99 not in [0, 12)").
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/plan.h"

namespace inductor_cpp::runtime {
namespace {

constexpr int32_t kMaxSlots = 1 << 24;
constexpr size_t kMaxDims = 64;
constexpr int64_t kMaxElements = int64_t{1} << 48;
constexpr size_t kMaxListDepth = 32;
constexpr int32_t kMaxSharedBytes = 232448;  // H100 / H200: 227 KiB per block

[[noreturn]] void bad(const std::string& where, const std::string& what) {
  throw std::runtime_error("plan: " + where + ": " + what);
}

struct Checker {
  const Plan& plan;

  void slot(int32_t s, const std::string& where, bool optional = false) const {
    if (optional && s == -1) return;
    if (s < 0 || s >= plan.num_slots)
      bad(where, std::to_string(s) + " not in [0, " + std::to_string(plan.num_slots) + ")");
  }

  void arg(const PlanArg& a, const std::string& where, size_t depth = 0) const {
    if (depth > kMaxListDepth) bad(where, "lists nested too deeply");
    if (a.kind == PlanArg::Kind::Slot) slot(a.slot, where);
    for (size_t i = 0; i < a.items.size(); ++i)
      arg(a.items[i], where + "[" + std::to_string(i) + "]", depth + 1);
  }

  static void shape(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                    const std::string& where) {
    if (sizes.size() != strides.size()) bad(where, "sizes and strides differ in length");
    if (sizes.size() > kMaxDims) bad(where, "more than " + std::to_string(kMaxDims) + " dims");
    // A negative size or stride is one known only at run time (a symbolic size of a library
    // call's output, "?" in the plan's text): the step checks what it is given then.
    int64_t elements = 1;
    for (size_t d = 0; d < sizes.size(); ++d) {
      if (sizes[d] < 0) continue;
      if (sizes[d] > 0 && elements > kMaxElements / sizes[d]) bad(where, "too many elements");
      elements *= sizes[d];
      if (sizes[d] > 1 && strides[d] > kMaxElements / sizes[d]) bad(where, "a stride too large");
    }
  }

  void alloc(const BufferAlloc& b, const std::string& where) const {
    slot(b.slot, where + ".slot");
    slot(b.reuse_slot, where + ".reuse_slot", /*optional=*/true);
    shape(b.sizes, b.strides, where);
  }

  void kernel(const KernelLaunch& k, const std::string& where) const {
    if (k.name.empty()) bad(where + ".name", "empty");
    for (size_t i = 0; i < k.args.size(); ++i) slot(k.args[i], where + ".args[" + std::to_string(i) + "]");
    for (size_t i = 0; i < k.allocs.size(); ++i) alloc(k.allocs[i], where + ".allocs[" + std::to_string(i) + "]");
    if (k.layouts.size() != k.args.size()) bad(where + ".layouts", "not one per argument");
    // Each buffer the step allocates is a parameter (a slot may be passed more than once, e.g.
    // a buffer read and updated in place), allocated in the layout the kernel was compiled for
    // at every parameter it is (else the kernel would write past a smaller allocation).
    for (size_t a = 0; a < k.allocs.size(); ++a) {
      const BufferAlloc& b = k.allocs[a];
      const std::string at = where + ".allocs[" + std::to_string(a) + "]";
      bool passed = false;
      for (size_t i = 0; i < k.args.size(); ++i) {
        if (k.args[i] != b.slot) continue;
        passed = true;
        if (b.sizes != k.layouts[i].sizes || b.strides != k.layouts[i].strides)
          bad(at, "not in the layout of parameter " + std::to_string(i));
      }
      if (!passed) bad(at, "allocates slot " + std::to_string(b.slot) + ", which is no parameter");
    }
    for (size_t i = 0; i < k.layouts.size(); ++i)
      shape(k.layouts[i].sizes, k.layouts[i].strides, where + ".layouts[" + std::to_string(i) + "]");
    for (int32_t u : k.updates) {
      if (u < 0 || static_cast<size_t>(u) >= k.args.size()) bad(where + ".updates", std::to_string(u) + " is no parameter");
    }
    if (!plan.is_gpu()) return;
    const GpuLaunchDims& g = k.gpu;
    int64_t threads = 1;
    for (int d = 0; d < 3; ++d) {
      if (g.grid[d] < 1 || g.grid[d] > (d == 0 ? int64_t{0x7fffffff} : 65535)) bad(where + ".gpu.grid", "out of range");
      if (g.block[d] < 1 || g.block[d] > 1024) bad(where + ".gpu.block", "out of range");
      threads *= g.block[d];
    }
    if (threads > 1024) bad(where + ".gpu.block", "more than 1024 threads");
    if (g.shared_bytes < 0 || g.shared_bytes > kMaxSharedBytes) bad(where + ".gpu.shared_bytes", "out of range");
    if (g.part < 0 || g.part >= plan.kernel_parts) bad(where + ".gpu.part", "no such image");
  }

  void library(const LibraryCall& c, const std::string& where) const {
    for (int32_t s : c.reads()) slot(s, where + " (an operand)");
    for (const BufferAlloc* b : c.writes()) alloc(*b, where + " (an output)");
  }

  void aten(const AtenCall& c, const std::string& where) const {
    if (c.op.empty()) bad(where + ".op", "empty");
    for (size_t i = 0; i < c.args.size(); ++i) arg(c.args[i], where + ".args[" + std::to_string(i) + "]");
    for (const auto& [name, value] : c.kwargs) arg(value, where + ".kwargs." + name);
    for (size_t i = 0; i < c.outs.size(); ++i)
      slot(c.outs[i], where + ".outs[" + std::to_string(i) + "]", /*optional=*/true);
  }
};

/// Which slots hold a value at each point of the step loop (the executor's order: a step's
/// allocations, then its reads, its outputs, then free_after; a library call's outputs count
/// before its operands, which may name them).
class Liveness {
 public:
  explicit Liveness(const Plan& p) : held_(static_cast<size_t>(p.num_slots), false) {
    for (int32_t s = 0; s < p.num_inputs + p.num_constants; ++s) held_[s] = true;
    for (int32_t s : p.free_at_start) held_[s] = false;
  }

  void read(int32_t s, const std::string& where) const {
    if (!held_[s]) bad(where, "slot " + std::to_string(s) + " holds nothing at this step");
  }
  void read_arg(const PlanArg& a, const std::string& where) const {
    if (a.kind == PlanArg::Kind::Slot) read(a.slot, where);
    for (size_t i = 0; i < a.items.size(); ++i) read_arg(a.items[i], where + "[" + std::to_string(i) + "]");
  }
  void write(int32_t s) {
    if (s >= 0) held_[s] = true;
  }
  void free(int32_t s) { held_[s] = false; }

  void step(const Step& s, const std::string& where) {
    if (const AtenCall* a = s.aten()) {
      for (size_t i = 0; i < a->args.size(); ++i) read_arg(a->args[i], where + ".aten.args[" + std::to_string(i) + "]");
      for (const auto& [name, value] : a->kwargs) read_arg(value, where + ".aten.kwargs." + name);
      for (int32_t o : a->outs) write(o);
    } else if (const KernelLaunch* k = s.kernel()) {
      for (const BufferAlloc& b : k->allocs) write(b.slot);
      for (size_t i = 0; i < k->args.size(); ++i) read(k->args[i], where + ".kernel.args[" + std::to_string(i) + "]");
    } else if (const LibraryCall* l = s.library()) {
      for (const BufferAlloc* b : l->writes()) write(b->slot);
      for (int32_t r : l->reads()) read(r, where + ".library (an operand)");
    }
    for (int32_t f : s.free_after) free(f);
  }

 private:
  std::vector<bool> held_;
};

}  // namespace

void validate_plan(const Plan& p) {
  if (p.num_inputs < 0 || p.num_constants < 0 || p.num_slots < 0 || p.num_slots > kMaxSlots ||
      int64_t{p.num_inputs} + p.num_constants > p.num_slots)
    bad("num_slots", "inconsistent slot counts");
  const Checker check{p};
  for (const Step& s : p.steps) {
    if (s.kernel() && p.kernel_library.empty()) bad("kernel_library", "none, but steps launch kernels");
  }
  for (int32_t s : p.free_at_start) check.slot(s, "free_at_start");
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const std::string where = "steps[" + std::to_string(i) + "]";
    const Step& s = p.steps[i];
    for (int32_t f : s.free_after) check.slot(f, where + ".free_after");
    if (const AtenCall* a = s.aten()) check.aten(*a, where + ".aten");
    if (const KernelLaunch* k = s.kernel()) check.kernel(*k, where + ".kernel");
    if (const LibraryCall* l = s.library()) check.library(*l, where + ".library");
  }
  for (size_t i = 0; i < p.outputs.size(); ++i) check.arg(p.outputs[i], "outputs[" + std::to_string(i) + "]");
  // Every index is in range now; what each step reads must be there when it runs.
  Liveness held(p);
  for (size_t i = 0; i < p.steps.size(); ++i) held.step(p.steps[i], "steps[" + std::to_string(i) + "]");
  for (size_t i = 0; i < p.outputs.size(); ++i) held.read_arg(p.outputs[i], "outputs[" + std::to_string(i) + "]");
}

}  // namespace inductor_cpp::runtime
