/// \file
/// `_C.CudaGraphIO` and `_C.is_cuda_graph_output`: the per-call inputs and outputs of a
/// recorded CUDA graph (cuda_graph_io.cpp; the recording itself is python/inductor_cpp/cuda_graphs.py).
#pragma once

#include <pybind11/pybind11.h>

namespace inductor_cpp::python {

void register_cuda_graph_io(pybind11::module_& m);

}  // namespace inductor_cpp::python
