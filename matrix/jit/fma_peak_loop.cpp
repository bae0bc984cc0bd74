/// \file fma_peak_loop.cpp
/// \brief The FMA peak loop (fma_peak_loop.h) as an xbyak code generator: rdi = iterations.
#include "matrix/jit/fma_peak_loop.h"

#include <xbyak/xbyak.h>

namespace inductor_cpp::xbyak {
namespace {

class PeakLoopCode : public Xbyak::CodeGenerator {
 public:
  explicit PeakLoopCode(bool zmm) : CodeGenerator(4096, Xbyak::DontSetProtectRWE) {
    using namespace Xbyak;
    chains_ = zmm ? 24 : 12;
    lanes_ = zmm ? 16 : 8;
    for (int i = 0; i < chains_; ++i) {
      if (zmm)
        vxorps(Zmm(i), Zmm(i), Zmm(i));
      else
        vxorps(Ymm(i), Ymm(i), Ymm(i));
    }
    Label loop;
    L(loop);
    for (int i = 0; i < chains_; ++i) {
      if (zmm)
        vfmadd231ps(Zmm(i), Zmm(30), Zmm(31));
      else
        vfmadd231ps(Ymm(i), Ymm(14), Ymm(15));
    }
    dec(rdi);
    jnz(loop);
    vzeroupper();
    ret();
    ready();
    setProtectModeRE();
  }
  FmaPeakLoop loop() const { return {getCode<void (*)(int64_t)>(), double(chains_) * lanes_ * 2}; }

 private:
  int chains_ = 0, lanes_ = 0;
};

}  // namespace

FmaPeakLoop fma_peak_loop(bool zmm) {
  if (zmm) {
    static const PeakLoopCode code(true);
    return code.loop();
  }
  static const PeakLoopCode code(false);
  return code.loop();
}

}  // namespace inductor_cpp::xbyak
