/// \file cpu_features.cpp
/// \brief CPUID / XGETBV probing and the AMX permission request (see cpu_features.h).
#include "matrix/jit/cpu_features.h"

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

namespace inductor_cpp::xbyak {
namespace {

constexpr int kArchGetXcompPerm = 0x1022;
constexpr int kArchReqXcompPerm = 0x1023;
constexpr int kXfeatureXtiledata = 18;

bool bit(unsigned reg, int i) {
  return (reg >> i) & 1u;
}

uint64_t xgetbv0() {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t(hi) << 32) | lo;
}

bool request_amx_permission() {
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) return false;
  unsigned long bitmask = 0;
  if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &bitmask) != 0) return false;
  return (bitmask >> kXfeatureXtiledata) & 1ul;
}

CpuFeatures detect() {
  CpuFeatures f;
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = bit(c, 27), fma = bit(c, 12), avx = bit(c, 28);
  if (!osxsave || !avx) return f;
  const uint64_t xcr0 = xgetbv0();
  const bool ymm_state = (xcr0 & 0x6) == 0x6;
  const bool zmm_state = (xcr0 & 0xe6) == 0xe6;
  const bool tile_state = (xcr0 & (3ull << 17)) == (3ull << 17);
  __cpuid_count(7, 0, a, b, c, d);
  const unsigned ebx7 = b, edx7 = d;
  f.avx2 = ymm_state && fma && bit(ebx7, 5);
  f.avx512 = zmm_state && bit(ebx7, 16) && bit(ebx7, 17) && bit(ebx7, 30) && bit(ebx7, 31);
  __cpuid_count(7, 1, a, b, c, d);
  f.avx512_bf16 = f.avx512 && bit(a, 5);
  f.amx_bf16 = tile_state && bit(edx7, 24) && bit(edx7, 22);
  f.amx_usable = f.amx_bf16 && request_amx_permission();
  return f;
}

}  // namespace

std::string CpuFeatures::describe() const {
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(avx2, "avx2");
  add(avx512, "avx512");
  add(avx512_bf16, "avx512_bf16");
  add(amx_bf16, "amx_bf16");
  add(amx_usable, "amx_usable");
  return s.empty() ? "none" : s;
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

}  // namespace inductor_cpp::xbyak
