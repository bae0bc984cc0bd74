/// \file amx_kernel.cpp
/// \brief Generator and cache of the AMX bf16 micro-kernel (see amx_kernel.h).
#include "matrix/jit/amx_kernel.h"

#include <xbyak/xbyak.h>

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <tuple>

#include "matrix/jit/cpu_features.h"

namespace inductor_cpp::xbyak {
namespace {

using namespace Xbyak;
constexpr int kPrefetchSteps = 3;

class AmxKernel : public CodeGenerator {
 public:
  AmxKernel(int64_t lda, int64_t ldc, bool accumulate) : CodeGenerator(4096, DontSetProtectRWE) {
    const Reg64 args = rdi, a = rax, b0 = rdx, b1 = r8, c = r11, k = rcx, a_stride = rsi,
                b_stride = r10, c_stride = r9;
    Label loop;
    mov(a, ptr[args + offsetof(AmxKernelArgs, a)]);
    mov(b0, ptr[args + offsetof(AmxKernelArgs, b)]);
    mov(b1, b0);
    add(b1, ptr[args + offsetof(AmxKernelArgs, b_group_stride)]);
    mov(c, ptr[args + offsetof(AmxKernelArgs, c)]);
    mov(k, ptr[args + offsetof(AmxKernelArgs, k)]);
    mov(a_stride, lda * 2);
    mov(b_stride, 64);
    mov(c_stride, ldc * 4);

    const int64_t c_lower = 16 * ldc * 4, a_lower = 16 * lda * 2;
    if (accumulate) {
      tileloadd(tmm0, ptr[c + c_stride]);
      tileloadd(tmm1, ptr[c + c_stride + 64]);
      tileloadd(tmm2, ptr[c + c_stride + c_lower]);
      tileloadd(tmm3, ptr[c + c_stride + c_lower + 64]);
    } else {
      for (const Tmm& t : {tmm0, tmm1, tmm2, tmm3}) tilezero(t);
    }
    Label done;
    test(k, k);
    jle(done, T_NEAR);
    L(loop);
    tileloadd(tmm4, ptr[a + a_stride]);
    tileloadd(tmm6, ptr[b0 + b_stride]);
    tileloadd(tmm7, ptr[b1 + b_stride]);
    tdpbf16ps(tmm0, tmm4, tmm6);
    tdpbf16ps(tmm1, tmm4, tmm7);
    tileloadd(tmm5, ptr[a + a_stride + a_lower]);
    tdpbf16ps(tmm2, tmm5, tmm6);
    tdpbf16ps(tmm3, tmm5, tmm7);
    // Tile loads that miss L1 stall the tile unit and the hardware prefetchers follow the 32 A
    // row streams poorly: fetch A and B kPrefetchSteps k-steps ahead (measured +25 %).
    for (int row = 0; row < 32; ++row) prefetcht0(ptr[a + row * lda * 2 + kPrefetchSteps * 64]);
    for (int line = 0; line < 16; ++line) {
      prefetcht0(ptr[b0 + kPrefetchSteps * 1024 + line * 64]);
      prefetcht0(ptr[b1 + kPrefetchSteps * 1024 + line * 64]);
    }
    add(a, 64);
    add(b0, 16 * 64);
    add(b1, 16 * 64);
    sub(k, 32);
    jg(loop, T_NEAR);
    L(done);
    tilestored(ptr[c + c_stride], tmm0);
    tilestored(ptr[c + c_stride + 64], tmm1);
    tilestored(ptr[c + c_stride + c_lower], tmm2);
    tilestored(ptr[c + c_stride + c_lower + 64], tmm3);
    ret();
    ready();
    setProtectModeRE();
  }
};

/// ldtilecfg of the kernels' configuration (palette 1, eight tiles of 16 rows × 64 bytes), or
/// tilerelease.
class TileControl : public CodeGenerator {
 public:
  explicit TileControl(bool configure) : CodeGenerator(256, DontSetProtectRWE) {
    Label config;
    if (configure)
      ldtilecfg(ptr[rip + config]);
    else
      tilerelease();
    ret();
    align(64);
    L(config);
    db(1);
    for (int i = 1; i < 16; ++i) db(0);
    for (int i = 0; i < 16; ++i) dw(i < 8 ? 64 : 0);
    for (int i = 0; i < 16; ++i) db(i < 8 ? 16 : 0);
    ready();
    setProtectModeRE();
  }
};

}  // namespace

AmxKernelFn get_amx_bf16_kernel(int64_t lda, int64_t ldc, bool accumulate) {
  if (!cpu_features().amx_usable) throw std::invalid_argument("AMX bf16 not available");
  static std::mutex mutex;
  static std::map<std::tuple<int64_t, int64_t, bool>, std::unique_ptr<AmxKernel>> kernels;
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = kernels[{lda, ldc, accumulate}];
  if (!slot) slot = std::make_unique<AmxKernel>(lda, ldc, accumulate);
  return slot->getCode<AmxKernelFn>();
}

void amx_configure_tiles() {
  if (!cpu_features().amx_usable) throw std::invalid_argument("AMX bf16 not available");
  static const TileControl configure(true);
  configure.getCode<void (*)()>()();
}

void amx_release_tiles() {
  if (!cpu_features().amx_usable) return;
  static const TileControl release(false);
  release.getCode<void (*)()>()();
}

}  // namespace inductor_cpp::xbyak
