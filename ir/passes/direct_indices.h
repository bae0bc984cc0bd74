/// \file
/// Direct indices: an indirect load whose index values are computed from the loop indices
/// alone reads through an index expression instead, without the per-lane gather and the run
/// time bounds check (when the ranges prove the index in bounds).
///
/// Why: `torch.roll` (and index_select / gather with computed indices, once inline_producers
/// has inlined the index tensor's producer) reached the kernels as
/// `load(x, [%ind0 + i0*4096], indirect=[fmod(add(index(i1), 4089), 4096)], bounds=[4096])`:
/// a bounds-checked gather per lane, 0.18x stock on 2 threads. As `x[i0*4096 + (i1 + 4089) % 4096]`
/// the CPU schedule splits the loop where the modulo wraps (schedule_cpu.cpp) into two
/// contiguous copies.
///
/// Convertible index values: integer constants, index(e), +, -, *, floordiv / remainder by a
/// positive constant, fmod / truncdiv by one when the dividend is provably >= 0, integer casts
/// that cannot wrap, and where(comparison, a, b) when the ranges decide the comparison (the
/// negative-index wrap of index_select: where(lt(i, 0), i + n, i)). A load converts only when
/// every one of its index values does and each stays provably within its bound.
#pragma once

#include "ir/loop_ir.h"

namespace inductor_cpp::ir {

LoopProgram direct_indices(const LoopProgram& program);

}  // namespace inductor_cpp::ir
