/// \file microkernel.cpp
/// \brief Descriptor hashing/validation and the process-wide kernel cache (see microkernel.h).
#include "matrix/jit/microkernel.h"

#include <xbyak/xbyak.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "matrix/jit/cpu_features.h"
#include "matrix/jit/fma_kernel_generator.h"

namespace inductor_cpp::xbyak {
namespace {

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}
uint64_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

void validate(const MicroKernelDesc& d) {
  const auto& cpu = cpu_features();
  if (d.isa == Isa::Avx512 && !cpu.avx512) throw std::invalid_argument("microkernel: no AVX-512");
  if (d.isa == Isa::Avx2 && !cpu.avx2) throw std::invalid_argument("microkernel: no AVX2/FMA");
  if (d.nr < 1 || d.mr < 1 || d.mr > max_rows(d.isa, d.nr))
    throw std::invalid_argument("microkernel: tile does not fit the registers: " + d.to_string());
  if (d.k < 0) throw std::invalid_argument("microkernel: negative k");
  if (d.b_panel_cols != 0 &&
      (d.b_layout != BLayout::Packed || d.b_panel_cols % vector_floats(d.isa) != 0 ||
       d.b_panel_cols >= d.nr || 2 * d.b_panel_cols < d.nr))
    throw std::invalid_argument("microkernel: b_panel_cols must split a packed tile in two: " +
                                d.to_string());
  if (d.b_prefetch != 0 && d.b_layout != BLayout::Plain)
    throw std::invalid_argument("microkernel: b_prefetch is for a plain B: " + d.to_string());
}

struct DescHash {
  size_t operator()(const MicroKernelDesc& d) const { return d.hash(); }
};

struct Cache {
  std::mutex mutex;
  std::unordered_map<MicroKernelDesc, std::unique_ptr<Xbyak::CodeGenerator>, DescHash> kernels;
};

Cache& cache() {
  static Cache instance;
  return instance;
}

}  // namespace

bool KernelEpilogueOp::operator==(const KernelEpilogueOp& o) const {
  return kind == o.kind && float_bits(a) == float_bits(o.a) && float_bits(b) == float_bits(o.b) &&
         ld == o.ld;
}

bool MicroKernelDesc::operator==(const MicroKernelDesc& o) const {
  return isa == o.isa && mr == o.mr && nr == o.nr && k == o.k && a_row_stride == o.a_row_stride &&
         a_k_stride == o.a_k_stride && ldb == o.ldb && ldc == o.ldc && b_layout == o.b_layout &&
         accumulate == o.accumulate && float_bits(alpha) == float_bits(o.alpha) &&
         b_panel_cols == o.b_panel_cols && b_prefetch == o.b_prefetch && epilogue == o.epilogue;
}

uint64_t MicroKernelDesc::hash() const {
  uint64_t h = 0;
  for (uint64_t v :
       {uint64_t(isa), uint64_t(mr), uint64_t(nr), uint64_t(k), uint64_t(a_row_stride),
        uint64_t(a_k_stride), uint64_t(ldb), uint64_t(ldc), uint64_t(b_layout),
        uint64_t(accumulate), float_bits(alpha), uint64_t(b_panel_cols), uint64_t(b_prefetch)})
    h = mix(h, v);
  for (const auto& e : epilogue)
    h = mix(mix(mix(mix(h, uint64_t(e.kind)), float_bits(e.a)), float_bits(e.b)), uint64_t(e.ld));
  return h;
}

std::string MicroKernelDesc::to_string() const {
  std::ostringstream s;
  s << (isa == Isa::Avx512 ? "avx512" : "avx2") << " f32 " << mr << "x" << nr << " k=" << k
    << " a_strides=(" << a_row_stride << "," << a_k_stride << ") ldb=" << ldb << " ldc=" << ldc
    << (b_layout == BLayout::Packed ? " packed" : " plain");
  if (b_panel_cols) s << " panels_of=" << b_panel_cols;
  if (b_prefetch) s << " prefetch=" << b_prefetch;
  s << (accumulate ? " acc" : "") << " alpha=" << alpha << " epilogue=" << epilogue.size();
  return s.str();
}

int max_rows(Isa isa, int nr) {
  const int vw = vector_floats(isa);
  const int nv = (nr + vw - 1) / vw;
  const int free_regs = isa == Isa::Avx512 ? 32 - nv - 1 : 16 - nv - 2;
  return free_regs / nv;
}

MicroKernelFn get_microkernel(const MicroKernelDesc& desc) {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  auto it = c.kernels.find(desc);
  if (it == c.kernels.end()) {
    validate(desc);
    it = c.kernels.emplace(desc, generate_fma_kernel(desc)).first;
  }
  return it->second->getCode<MicroKernelFn>();
}

size_t microkernel_cache_size() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.kernels.size();
}

}  // namespace inductor_cpp::xbyak
