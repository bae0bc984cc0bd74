/// \file
/// Random loop programs for semantic tests of the pass pipeline: DAGs of pointwise ops with
/// broadcasting over random shapes and input layouts, reductions (sum, max, min, argmax,
/// argmin, welford_m2, any; some with keepdim views), views (permute, reshape, slice, expand,
/// unsqueeze), cat and pad through masked loads, index_select through indirect loads, and
/// extern "clone" steps; in the form lowering produces (one kernel step per non-view
/// compute). Pipeline options are drawn too, with small thresholds so that small programs
/// still split reductions and run parallel blocks.
#pragma once

#include <cstdint>
#include <string>

#include "tests/cpp/pipeline_check.h"

namespace inductor_cpp::ir::testing {

struct RandomProgram {
  std::string text;     ///< program text (parse_program)
  PipelineCheck check;  ///< inputs' ranges, options, the extern handler
};

/// The same seed gives the same program.
RandomProgram random_program(uint64_t seed);

}  // namespace inductor_cpp::ir::testing
