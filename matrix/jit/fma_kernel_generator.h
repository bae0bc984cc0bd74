/// \file fma_kernel_generator.h
/// \brief Private: generates the float32 FMA micro-kernel (AVX-512 or AVX2) for a descriptor.
#pragma once

#include <memory>

#include "matrix/jit/microkernel.h"

namespace Xbyak {
class CodeGenerator;
}

namespace inductor_cpp::xbyak {

/// Generates code for desc (already validated) and returns the owning generator; its getCode()
/// is the MicroKernelFn. The code buffer is read+execute when this returns.
std::unique_ptr<Xbyak::CodeGenerator> generate_fma_kernel(const MicroKernelDesc& desc);

}  // namespace inductor_cpp::xbyak
