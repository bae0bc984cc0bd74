/// \file
/// TileKernelCall (tile_kernel_call.h).
#include "runtime/tile_kernel_call.h"

#include <c10/util/Exception.h>

#include "runtime/cpu_pool.h"

namespace inductor_cpp::runtime {

matrix::EpilogueOp TileKernelCall::bind(KernelFn fn, const MatmulEpilogue& e, int32_t out_slot,
                                        const at::Tensor& out, const std::vector<c10::IValue>& slots,
                                        const std::string& label) {
  TORCH_CHECK(fn, "inductor_cpp: ", label, ": tile kernel ", e.kernel, " is not bound");
  bufs.clear();
  for (size_t k = 0; k < e.params.size(); ++k) {
    if (e.params[k] == out_slot) {
      bufs.push_back(static_cast<char*>(out.data_ptr()));
      continue;
    }
    TORCH_CHECK(slots[e.params[k]].isTensor(), "inductor_cpp: ", label, ": tile kernel operand is not a tensor");
    at::Tensor t = slots[e.params[k]].toTensor();
    const ExpectedLayout& want = e.layouts[k];
    TORCH_CHECK(t.sizes() == c10::IntArrayRef(want.sizes) && t.device().is_cpu(), "inductor_cpp: ", label,
                ": tile kernel operand of sizes ", t.sizes(), ", expected ", c10::IntArrayRef(want.sizes));
    if (t.strides() != c10::IntArrayRef(want.strides)) {
      at::Tensor copy = empty_strided_pooled(want.sizes, want.strides, t.options());
      copy.copy_(t);
      t = copy;
    }
    keep.push_back(t);
    bufs.push_back(static_cast<char*>(t.data_ptr()));
  }
  tile.fn = fn;
  tile.bufs = bufs.data();
  matrix::EpilogueOp op{matrix::EpilogueKind::Tile};
  op.tile = &tile;
  return op;
}

void TileKernelCall::check(const std::string& label) const {
  TORCH_CHECK_INDEX(tile.status.load() == 0, "index out of bounds (index out of range in self) in ", label);
}

}  // namespace inductor_cpp::runtime
