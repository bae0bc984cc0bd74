/// \file
/// What the tools outside the compiler need to know about each generated kernel: its
/// parameters (buffer, dtype, layout, read or written), the graph nodes it computes, an
/// estimate of its arithmetic work, and its scheduled IR text.
///
/// Why: `python -m inductor_cpp.bench kernels` runs one kernel alone on random inputs of the
/// recorded layouts and rates it in GB/s and GFLOP/s; `inductor_cpp.explain()` and the
/// `fusion` log say which graph nodes went into which kernel. The list is stored in the cache
/// entry (kernels.json) so that it is there on a cache hit too.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ir/kernel_ir.h"

namespace inductor_cpp::inductor {

struct KernelParamInfo {
  std::string buffer;  ///< IR buffer name ("%in0", "%6")
  std::string dtype;   ///< torch name ("float32")
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;  ///< in elements
  bool written = false;          ///< the kernel stores to it (an output)
};

struct KernelInfo {
  std::string name;  ///< the C symbol in kernels.so
  std::vector<KernelParamInfo> params;
  std::vector<int32_t> graph_nodes;  ///< graph nodes it computes (inlined producers included)
  int64_t flops = 0;                 ///< estimate_flops()
  std::string text;                  ///< its scheduled IR (ir::kernel_to_text)
};

/// Arithmetic operations one call of the kernel executes, estimated from its scheduled IR:
/// for every Let / Accumulate / Store, the number of distinct math nodes in its value (unary,
/// binary and `where` nodes; loads, constants, casts, index values and locals count 0) plus
/// the combine of an Accumulate (1; welford_m2: 4), times the iterations of the loops around
/// it. A loop whose extent depends on an outer loop (the tail of a split loop) counts its
/// upper bound, so the estimate may exceed the truth by at most one block per loop.
int64_t estimate_flops(const ir::Kernel& kernel);

nlohmann::json kernel_infos_to_json(const std::vector<KernelInfo>& kernels);
/// Throws nlohmann::json::exception on malformed input.
std::vector<KernelInfo> kernel_infos_from_json(const nlohmann::json& j);

}  // namespace inductor_cpp::inductor
